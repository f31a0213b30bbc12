"""Benchmark: ``portwright gap`` on a real upstream range, cold and warm, against a
``git log -S`` per searched name (CPU time counts the git processes too).

For one labelled pair (default: the one with the most commits), the scan runs three times
with a fresh cache folder: *cold* (nothing cached: the range is read and every commit
judged), *warm upstream* (the per-commit upstream analysis is cached, the downstream is
judged again, as after a downstream commit) and *warm* (an unchanged downstream: the report
is read back). The downstream history index is built once beforehand and is not timed (it
is shared with every other command and has its own benchmark). The baseline runs ``git log
-S TEXT`` in the downstream once per name, literal and test title the scan searched — what
a scan without an index would do. Wall and CPU seconds, per 100 commits too, go to
``benchmarks/results/gap_real.json``.

    PORTWRIGHT_REAL_REPOS=~/src/real python benchmarks/gap_real.py [--pair commonmark]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import real_repos  # noqa: E402

from portwright.config import PortwrightConfig, UpstreamConfig  # noqa: E402
from portwright.evidence.gap import GapReport, scan_range  # noqa: E402
from portwright.evidence.history import HistoryIndex  # noqa: E402

OUT = HERE / "results" / "gap_real.json"


def _cpu() -> float:
    """CPU seconds of this process and of the git processes it waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(run: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), _cpu()
    result = run()
    return result, time.perf_counter() - wall, _cpu() - cpu


def _baseline(downstream: Path, report: GapReport) -> tuple[int, float]:
    texts = sorted({e.signal for c in report.commits for e in c.evidence
                    if e.kind in ("name", "literal", "test")})
    started = time.perf_counter()
    for text in texts:
        subprocess.run(["git", "-C", str(downstream), "log", "-S", text, "--format=%H", "HEAD"],
                       capture_output=True, check=True)
    return len(texts), time.perf_counter() - started


def run(pair: str | None, out: Path | None) -> dict[str, Any]:
    labels = sorted((HERE / "labels" / "gap").glob("*.json"))
    chosen = [json.loads(p.read_text()) for p in labels if pair is None or p.stem == pair]
    label = max(chosen, key=lambda lab: len(lab["commits"]))
    up = real_repos.repo(label["upstream"]["repo"])
    if up is None:
        raise SystemExit(f"no clone of {label['upstream']['repo']} under ${real_repos.ENV}")
    with tempfile.TemporaryDirectory(prefix="pw-gap-real-") as tmp:
        cache = Path(tmp)
        down = real_repos.checkout(label["downstream"]["repo"], label["downstream"]["sha"],
                                   cache / "checkouts")
        config = PortwrightConfig(upstream=UpstreamConfig(source=str(up), **label["config"]))
        index = HistoryIndex.open(down, "HEAD", cache / "index")
        base, head = label["upstream"]["base"], label["upstream"]["head"]

        def scan(folder: str) -> GapReport:
            return scan_range(up, down, base, head, config, index=index,
                              cache_dir=cache / folder)

        report, cold_wall, cold_cpu = _timed(lambda: scan("gap"))
        (cache / "gap" / "again").mkdir(parents=True)
        for cached in (cache / "gap").glob("upstream-*.json"):
            (cache / "gap" / "again" / cached.name).write_bytes(cached.read_bytes())
        _, judge_wall, judge_cpu = _timed(lambda: scan("gap/again"))
        warm, warm_wall, warm_cpu = _timed(lambda: scan("gap"))
        assert warm == report, "a warm run must give the cold run's answers"
        searched, baseline_wall = _baseline(down, report)
    commits = len(report.commits)
    per100 = 100 / commits

    def both(wall: float, cpu: float) -> dict[str, float]:
        return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                "wall_per_100_commits_s": round(wall * per100, 3),
                "cpu_per_100_commits_s": round(cpu * per100, 3)}

    results: dict[str, Any] = {
        "pair": label["pair"], "upstream": label["upstream"]["repo"],
        "downstream": label["downstream"]["repo"], "commits": commits,
        "cold": both(cold_wall, cold_cpu),
        "warm_upstream_cache": both(judge_wall, judge_cpu),
        "warm": both(warm_wall, warm_cpu),
        "baseline_git_log_S": {"searches": searched, "wall_s": round(baseline_wall, 3),
                               "wall_per_100_commits_s": round(baseline_wall * per100, 3)},
        "goal": {"cold_per_100_commits_s": 2.0, "warm_per_100_commits_s": 0.3},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average": [round(x, 2) for x in os.getloadavg()]},
    }
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", help="a labelled pair (default: the largest)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if real_repos.root() is None:
        print(f"set {real_repos.ENV} to a folder of clones (see benchmarks/real_repos.py)")
        return 2
    results = run(args.pair, args.out)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
