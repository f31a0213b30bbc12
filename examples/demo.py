"""The bundled example, end to end: `make demo`.

Builds ``tinystats`` (a JavaScript library) and ``pystats`` (its Python port) as
real git repositories, then runs portwright on them the way a nightly job would:
doctor, rules, matrix rows, the upstream gap since the pin, the surface of the
missing function, anchors, the gates in a Docker sandbox, and the gap-verifier
agent. No model endpoint is needed: the agent's answers come from a recorded
transcripts (``tinystats/demo-*.cassette.jsonl``), fixtures that the replay model
plays back; every check around it is run for real.

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

sys.path.insert(0, str(Path(__file__).resolve().parent / "tinystats"))
from build import build

console = Console(highlight=False)

# (title, arguments, exit codes that mean the step did what it should)
STEPS: list[tuple[str, list[str], set[int]]] = [
    ("Is this machine and repo ready?", ["doctor"], {0}),
    ("The rules and gates the port is held to", ["rules", "check"], {0}),
    ("Coverage matrix rows", ["rows"], {0}),
    ("Upstream commits since the pin: which are really missing?", ["gap"], {0}),
    ("The whole upstream surface of the missing function",
     ["surface", "movingAverage", "--at", "main"], {0}),
    ("Every anchor resolves at the pin", ["anchors", "check"], {0}),
    ("Every change has its ledger entry, resolved upstream", ["ledger", "check"], {0}),
    ("Gates of the pin phase, run in the sandbox", ["gates", "run", "--phase", "pin"], {0}),
    ("Gap-verifier agent on a row the matrix calls missing (replayed transcript)",
     ["agent", "verify-gap", "--symbol", "movingAverage", "--replay",
      ".portwright/demo/demo-moving-average.cassette.jsonl"], {0}),
    ("Gap-verifier agent on a row that has in fact landed (replayed transcript)",
     ["agent", "verify-gap", "--symbol", "percentile", "--replay",
      ".portwright/demo/demo-percentile.cassette.jsonl"], {0}),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the example here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="portwright-demo-") as scratch:
        dest = args.keep.resolve() if args.keep else Path(scratch)
        dest.mkdir(parents=True, exist_ok=True)
        example = build(dest)
        console.print(Rule("[bold]portwright demo: tinystats (JavaScript) → pystats (Python)"))
        console.print(f"upstream   {example.upstream}\ndownstream {example.downstream}\n"
                      f"pin        {example.pin}")
        failures = 0
        env = {**os.environ, "COLUMNS": os.environ.get("COLUMNS", "120")}
        for number, (title, argv, expected) in enumerate(STEPS, start=1):
            command = ["portwright", "-C", str(example.downstream), *argv]
            console.print(Rule(f"{number}. {title}", align="left"))
            console.print(f"[dim]$ {shlex.join(['portwright', *argv])}[/]")
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
