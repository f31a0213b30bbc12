"""How long does the ``portwright`` command take to answer, against Python itself?

Side by side in one run, each command ``--repeat`` times (median and the fastest): the
floor (``python3 -c pass``), typer's own import (``python3 -c "import typer"``), and
``portwright --version``, ``--help``, ``rows`` and ``status RUN`` on a small project built
here (one matrix row, one run that waits for a decision, made by the scripted model).
Goals: ``--version`` and ``--help`` within 2x typer's import; ``status`` within 0.3 s on
a quiet machine. Writes ``benchmarks/results/cli_startup.json``.

    python benchmarks/cli_startup.py [--repeat 15]
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "cli_startup.json"


def _timed(argv: list[str], repeat: int, env: dict[str, str]) -> dict[str, Any]:
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, env=env)
        seconds.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{argv} failed ({done.returncode}): "
                             f"{done.stderr.decode()[-1500:]}")
    return {"median_s": round(statistics.median(seconds), 3),
            "min_s": round(min(seconds), 3)}


def _project(folder: Path) -> tuple[Path, str]:
    """A downstream with one row and a run parked at its spec approval (the suite's own
    world and scripted model, the Docker backend): its path and the run id."""
    sys.path.insert(0, str(ROOT))
    from portwright.project import Project
    from portwright.workflows import driver
    from tests.conftest import GitRepo
    from tests.workflows.conftest import build_world
    from tests.workflows.porter import porter

    world = build_world(lambda name: GitRepo(folder / name),
                        approvals='spec = "always"\nadvance = "always"\npr = "never"\n')
    project = Project.load(world.repo, at="HEAD")
    view = driver.start(project, "kv-cache", lambda event: None, run_id="bench-1",
                        client=porter(world.plan()))
    return world.repo, view.run_id


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="pw-cli-startup-") as scratch:
        os.environ["PORTWRIGHT_STATE_DIR"] = str(Path(scratch) / "state")
        repo, run_id = _project(Path(scratch))
        env = {**os.environ}
        python = sys.executable
        pw = [python, "-m", "portwright", "-C", str(repo)]
        commands = {
            "python -c pass": [python, "-c", "pass"],
            "python -c 'import typer'": [python, "-c", "import typer"],
            "portwright --version": [*pw, "--version"],
            "portwright --help": [*pw, "--help"],
            "portwright rows": [*pw, "rows"],
            f"portwright status {run_id}": [*pw, "status", run_id],
        }
        rows = {name: _timed(argv, args.repeat, env) for name, argv in commands.items()}
    typer_s = rows["python -c 'import typer'"]["median_s"]
    for row in rows.values():
        row["ratio_to_typer"] = round(row["median_s"] / typer_s, 2) if typer_s else None
    results = {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
               "repeat": args.repeat,
               "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                           "load_average_at_start": load_before,
                           "load_average": [round(x, 2) for x in os.getloadavg()]},
               "commands": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"{'command':36} {'median':>8} {'fastest':>8} {'x typer':>8}")
    for name, row in rows.items():
        print(f"{name:36} {row['median_s']:7.3f}s {row['min_s']:7.3f}s "
              f"{row['ratio_to_typer']:7.2f}x")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
