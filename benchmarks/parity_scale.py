"""How long do ``portwright rows --json`` and ``portwright ledger check`` take at scale?

Builds, in a temporary folder, an upstream repository (500 files of 60 lines) and a
downstream repository with a 5,000-row coverage matrix and a 5,000-entry parity ledger
whose anchors (each with a quoted excerpt) all resolve at the pin. Then measures, best of
``--repeat`` runs:

* in-process: ``load_rows`` + the JSON the command prints, and ``check_ledger`` with every
  anchor resolved upstream;
* the CLI as a process (``python -m portwright ...``): wall time including interpreter start
  and imports.

Writes ``benchmarks/results/parity_scale.json``. Run: ``python benchmarks/parity_scale.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROWS = 5000
FILES = 500
LINES = 60
ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, capture_output=True,
                          text=True).stdout.strip()


def build(root: Path) -> Path:
    upstream = root / "upstream"
    (upstream / "pkg").mkdir(parents=True)
    for f in range(FILES):
        lines = [f"def func_{f}_{n}(x):  # line {n + 1}" for n in range(LINES)]
        (upstream / "pkg" / f"mod_{f}.py").write_text("\n".join(lines) + "\n")
    git(upstream, "init", "-q", "-b", "main")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "upstream")
    pin = git(upstream, "rev-parse", "HEAD")

    down = root / "downstream"
    (down / "docs" / "parity").mkdir(parents=True)
    (down / "portwright.toml").write_text('[upstream]\nsource = "../upstream"\n')
    (down / "upstream-sync.md").write_text(f"# Sync\n\nPinned commit: `{pin}`\n")
    statuses = ["missing", "partial", "in-progress", "ported", "deferred", "not-applicable"]
    matrix = ["# Coverage", "", "| id | title | status | spec | upstream | notes |",
              "| --- | --- | --- | --- | --- | --- |"]
    ledger = ["# Parity ledger", "", "| change | upstream | kind | cost | notes |",
              "| --- | --- | --- | --- | --- |"]
    for i in range(ROWS):
        f, n = i % FILES, (i // FILES) * 5 + 1
        matrix.append(f"| row-{i} | Feature {i} | {statuses[i % len(statuses)]} | "
                      f"[spec](specs/row-{i}.md) | pkg/mod_{f}.py, func_{f}_{n - 1} | note {i} |")
        kind, cost = ("divergence", "+1% latency") if i % 10 == 0 else ("port", "")
        ledger.append(f"| src/mod_{i}.cc | `pkg/mod_{f}.py:{n}-{n + 2} \"def func_{f}_{n - 1}(x)\"`"
                      f" | {kind} | {cost} | |")
    (down / "docs" / "parity" / "coverage.md").write_text("\n".join(matrix) + "\n")
    (down / "parity-ledger.md").write_text("\n".join(ledger) + "\n")
    (down / "porting-inventory.md").write_text(
        "| item | path | searched | notes |\n| --- | --- | --- | --- |\n"
        "| crc | src/crc.cc | pkg/ | |\n")
    git(down, "init", "-q", "-b", "main")
    git(down, "add", "-A")
    git(down, "commit", "-q", "-m", "downstream")
    return down


def best(fn: object, repeat: int) -> float:
    """Best wall time of ``repeat`` calls."""
    assert callable(fn)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def best_cpu(fn: object, repeat: int) -> float:
    """Best CPU time (user + system) of the child processes of ``repeat`` calls: less
    sensitive than wall time to other work on a shared machine."""
    import resource

    assert callable(fn)
    times = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        fn()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/parity_scale.json")
    args = parser.parse_args()

    from portwright.config import load_config
    from portwright.parity.ledger import check_ledger
    from portwright.parity.matrix import load_rows

    with tempfile.TemporaryDirectory(prefix="parity-scale-") as scratch:
        down = build(Path(scratch))
        config = load_config(down, environ={})

        def rows_json() -> None:
            rows = load_rows(down, config)
            assert len(rows) == ROWS
            json.dumps([r.model_dump(mode="json") for r in rows], indent=2)

        def ledger() -> None:
            entries, problems = check_ledger(down, config)
            assert len(entries) == ROWS
            assert not problems, problems[:3]

        def cli(*argv: str) -> None:
            done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(down), *argv],
                                  capture_output=True, text=True, check=False, cwd=ROOT)
            assert done.returncode == 0, done.stderr

        def startup() -> None:
            subprocess.run([sys.executable, "-c", "import portwright.cli"], check=True, cwd=ROOT)

        results = {
            "rows": ROWS,
            "ledger_entries": ROWS,
            "upstream_files": FILES,
            "in_process_seconds": {
                "rows_json": round(best(rows_json, args.repeat), 4),
                "ledger_check": round(best(ledger, args.repeat), 4),
            },
            "cli_process_seconds": {
                "rows_json": round(best(lambda: cli("rows", "--json"), args.repeat), 4),
                "ledger_check": round(best(lambda: cli("ledger", "check"), args.repeat), 4),
                "interpreter_and_cli_imports_only": round(best(startup, args.repeat), 4),
            },
            "cli_process_cpu_seconds": {
                "rows_json": round(best_cpu(lambda: cli("rows", "--json"), args.repeat), 4),
                "ledger_check": round(best_cpu(lambda: cli("ledger", "check"), args.repeat), 4),
                "interpreter_and_cli_imports_only": round(best_cpu(startup, args.repeat), 4),
            },
            "repeat": args.repeat,
            "statistic": "best of repeat (wall; cpu = user + system of the process)",
            "load_average_1min": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
