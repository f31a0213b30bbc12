"""Benchmark: finding a run's step commit (``worktree.find_step``) in a large history.

Every step of a run asks whether it was already committed (a resumed run must not commit it
twice): a ``git log --grep`` for the run's trailers. Without a bound that walks the whole
history of the downstream repository at every step; bounded by the run's base
(``since=base``) it walks the run's own commits. Generates a repository of ``--commits``
commits with ``git fast-import`` (one process), then a run's branch of ``--steps`` step
commits on top, and times ``--repeat`` lookups of a step that is not there (the usual case:
a step's first attempt) and of one that is, both ways, asserting the same answers. Writes
``benchmarks/results/step_lookup.json``.

    python benchmarks/step_lookup.py [--commits 50000] [--steps 8] [--repeat 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from portwright.vcs import worktree  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "step_lookup.json"


def _history(repo: Path, commits: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    lines: list[str] = []
    for i in range(commits):
        message = f"change {i}\n"
        blob = f"line {i}\n"
        lines += ["commit refs/heads/main", f"mark :{i + 1}",
                  f"committer Dev <dev@example.com> {1_600_000_000 + i} +0000",
                  f"data {len(message)}", message.rstrip("\n")]
        if i:
            lines.append(f"from :{i}")
        lines += ["M 644 inline file.txt", f"data {len(blob)}", blob.rstrip("\n"), ""]
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"],
                   input="\n".join(lines).encode() + b"\n", check=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "main"], check=True)


def _timed(call: Callable[[], str | None], repeat: int) -> tuple[float, str | None]:
    times: list[float] = []
    answer = None
    for _ in range(repeat):
        start = time.perf_counter()
        answer = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=50_000)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="portwright-steps-") as scratch:
        repo = Path(scratch) / "repo"
        _history(repo, args.commits)
        base = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
        for n in range(args.steps):
            (repo / f"step{n}.txt").write_text(f"{n}\n")
            worktree.commit_step(repo, "run-1", f"step-{n}", f"step {n}", since=base)
        figures: dict[str, float] = {}
        for case, step in (("absent", "step-new"), ("present", "step-0")):
            whole, found = _timed(lambda s=step: worktree.find_step(repo, "run-1", s),
                                  args.repeat)
            bounded, again = _timed(
                lambda s=step: worktree.find_step(repo, "run-1", s, since=base), args.repeat)
            assert found == again, (case, found, again)
            figures[f"{case}_whole_history_ms"] = round(whole * 1000, 2)
            figures[f"{case}_since_base_ms"] = round(bounded * 1000, 2)
            figures[f"{case}_ratio"] = round(whole / bounded, 1)
            print(f"step {case}: whole history {whole * 1000:.1f} ms, since the run's base "
                  f"{bounded * 1000:.1f} ms ({whole / bounded:.1f}x)")
    result = {"commits": args.commits, "steps": args.steps, "repeat": args.repeat,
              "machine": {"python": platform.python_version(),
                          "load_average": list(os.getloadavg())},
              "figures": figures}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
