"""What does an ``eval`` workspace's upstream cost, made by a fetch of one commit rather than
by the hard-linked local clone it replaces?

Side by side, for each upstream: **clone** (the former way: ``git clone --local`` of the
task's clone, its objects hard-linked, HEAD detached at the pin) and **fetch** (the
workspace's way, :func:`portwright.eval.workspace._upstream`: a new repository given the
last commit's history by one fetch of its sha, no store) and **seeded** (the same from a
seed already in the validation store: its packs copied). Each is timed ``--repeat`` times
(median) into a new folder, with the disk the repository's objects take (a hard-linked
file counts where it was made: the clone's objects count zero).

The upstreams: the bundled example tasks' (tinystats, rmsnorm: tens of commits), and this
repository's own history as an upstream of some hundreds of commits (``--big``, default
this checkout; it needs its full history).
Writes ``benchmarks/results/eval_workspace.json``.

    python benchmarks/eval_workspace.py [--repeat 7] [--big REPO]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "port-tasks" / "examples"))

from build_repos import build_repos  # noqa: E402

from portwright.eval import workspace  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "eval_workspace.json"
NO_PORT = "0" * 40  # a sha no repository holds: the port is not what is measured here


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def _objects_bytes(repo: Path) -> int:
    """Bytes of the files under ``repo``'s objects made for it (hard links to another
    repository's files count zero: they are not new disk)."""
    total = 0
    for path in (repo / ".git" / "objects").rglob("*"):
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            total += stat.st_size if stat.st_nlink == 1 else 0
    return total


def clone(source: Path, dest: Path, pin: str, target: str) -> None:
    """The former workspace upstream: a local clone (objects hard-linked), at the pin."""
    subprocess.run(["git", "clone", "--quiet", "--local", "--no-checkout", str(source),
                    str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "checkout", "--quiet", "--detach", pin],
                   check=True)


def fetch(source: Path, dest: Path, pin: str, target: str) -> None:
    workspace._upstream(source, dest, pin, target, NO_PORT, None)


def _timed(make: Callable[[Path, Path, str, str], None], source: Path, scratch: Path,
           pin: str, target: str, repeat: int) -> dict[str, Any]:
    seconds: list[float] = []
    size = 0
    for number in range(repeat):
        dest = scratch / f"{make.__name__}-{number}"
        start = time.perf_counter()
        make(source, dest, pin, target)
        seconds.append(time.perf_counter() - start)
        size = _objects_bytes(dest)
        shutil.rmtree(dest)
    return {"median_s": round(statistics.median(seconds), 3),
            "max_s": round(max(seconds), 3), "objects_bytes": size}


def measure(name: str, source: Path, pin: str, target: str, scratch: Path,
            repeat: int) -> dict[str, Any]:
    seeds = scratch / f"seeds-{name}"

    def seeded(source: Path, dest: Path, pin: str, target: str) -> None:
        workspace._upstream(source, dest, pin, target, NO_PORT, seeds)

    workspace._seed(source, target, seeds)  # the store already holds it: later runs
    row = {"upstream": name, "commits": int(_git(source, "rev-list", "--count", target)),
           "clone": _timed(clone, source, scratch, pin, target, repeat),
           "fetch": _timed(fetch, source, scratch, pin, target, repeat),
           "seeded": _timed(seeded, source, scratch, pin, target, repeat)}
    base = row["clone"]["median_s"]
    for way in ("fetch", "seeded"):
        row[way]["ratio_to_clone"] = round(row[way]["median_s"] / base, 2) if base else None
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--big", type=Path, default=ROOT,
                        help="a repository whose history serves as a big upstream")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    load_before = [round(x, 2) for x in os.getloadavg()]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pw-eval-workspace-") as scratch_dir:
        scratch = Path(scratch_dir)
        built = build_repos(scratch / "repos")
        upstreams = {name: path for name, path in built.items()
                     if name in ("tinystats/tinystats", "rmsnorm/upstream")}
        big = args.big.resolve()
        upstreams[f"{big.name} (this history)"] = big
        for name, source in upstreams.items():
            target = _git(source, "rev-parse", "HEAD")
            pin = _git(source, "rev-parse", "HEAD~1")
            rows.append(measure(name.replace("/", "-"), source, pin, target, scratch,
                                args.repeat))
    results = {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
               "repeat": args.repeat,
               "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                           "load_average_at_start": load_before,
                           "load_average": [round(x, 2) for x in os.getloadavg()]},
               "upstreams": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"{'upstream':28} {'commits':>7} {'clone':>16} {'fetch (ratio)':>24} "
          f"{'seeded (ratio)':>24}")
    for row in rows:
        cells = [f"{row['clone']['median_s']:6.3f} s {row['clone']['objects_bytes'] / 1e3:6.0f} KB"]
        for way in ("fetch", "seeded"):
            cell = row[way]
            cells.append(f"{cell['median_s']:6.3f} s ({cell['ratio_to_clone']:4.2f}x) "
                         f"{cell['objects_bytes'] / 1e3:6.0f} KB")
        print(f"{row['upstream']:28} {row['commits']:7} {cells[0]:>16} {cells[1]:>24} "
              f"{cells[2]:>24}")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
