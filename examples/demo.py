"""The bundled example, end to end: `make demo`.

Builds ``rmsnorm`` (a pure-Python reference RMSNorm) and ``rmsnorm-cpp`` (its C++17
port) as real git repositories, then runs what a nightly job would: doctor, the matrix
rows, the upstream gap since the pin, and the whole port cycle on the row the matrix
calls missing — the fused residual-add mode: the gap verified, the upstream surface
enumerated and classified, the spec written and checked, the upstream tests ported to
C++ and seen failing, the implementation seen passing, every gate of ``AGENTS.md`` (CMake
build, C++ tests, parity with the Python reference on shared vectors) run in a Docker
sandbox, a fresh review, the ledger and matrix reconciled, and the branch with its pull
request body. It ends by printing that report.

No model endpoint is needed: the agents' answers come from a recorded transcript
(``rmsnorm/demo.cassette.jsonl``), a fixture the replay model plays back; every tool call
in it executes for real, and every red, green, gate and anchor is observed by portwright.

    python examples/demo.py [--keep DEST]
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.rule import Rule

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "rmsnorm"))
from build import build  # noqa: E402

console = Console(highlight=False)
CASSETTE = HERE / "rmsnorm" / "demo.cassette.jsonl"
ROW = "rmsnorm-fused-residual"

# (title, arguments, exit codes that mean the step did what it should)
STEPS: list[tuple[str, list[str], set[int]]] = [
    ("Is this machine and repo ready?", ["doctor"], {0}),
    ("Coverage matrix rows: the fused residual-add mode is missing", ["rows"], {0}),
    ("Upstream commits since the pin: which are really missing?", ["gap"], {0}),
    ("The port cycle on the missing row (agents replayed from a recorded transcript)",
     ["run", ROW, "--replay", str(CASSETTE), "--approve", "auto", "--run-id", "demo"], {0}),
    ("The run's report: the pull request body", ["report", "demo"], {0}),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the example here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="portwright-demo-") as scratch:
        dest = args.keep.resolve() if args.keep else Path(scratch)
        dest.mkdir(parents=True, exist_ok=True)
        example = build(dest)
        console.print(Rule("[bold]portwright demo: rmsnorm (Python) → rmsnorm-cpp (C++17)"))
        console.print(f"upstream   {example.upstream}\ndownstream {example.downstream}\n"
                      f"pin        {example.pin}")
        failures = 0
        # run state of the demo stays beside the example, not in the user's state folder
        env = {**os.environ, "COLUMNS": os.environ.get("COLUMNS", "120"),
               "PORTWRIGHT_STATE_DIR": str(dest / "state")}
        for number, (title, argv, expected) in enumerate(STEPS, start=1):
            command = ["portwright", "-C", str(example.downstream), *argv]
            console.print(Rule(f"{number}. {title}", align="left"))
            shown = [a.replace(str(HERE.parent) + "/", "") for a in argv]
            console.print(f"[dim]$ {shlex.join(['portwright', *shown])}[/]")
            start = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "portwright", *command[1:]], env=env)
            seconds = time.monotonic() - start
            verdict = "ok" if done.returncode in expected else "UNEXPECTED"
            console.print(f"[dim]exit {done.returncode} in {seconds:.1f}s: {verdict}[/]")
            failures += done.returncode not in expected
        console.print(Rule())
        if failures:
            console.print(f"[red]{failures} step(s) did not do what they should[/]")
            return 1
        console.print("[green]demo complete[/]: every step above was checked by portwright")
        return 0


if __name__ == "__main__":
    sys.exit(main())
