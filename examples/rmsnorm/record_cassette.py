"""Re-record the demo's model transcript (``demo.cassette.jsonl``).

``make demo`` ports the fused residual-add row of this example with the whole cycle and
no model endpoint: the four agents' answers are played from this cassette, a fixture
written by this script. It builds the example, serves a scripted porter on a local
OpenAI-compatible endpoint (127.0.0.1) — it answers each role the way a competent model
would for this row: the gap verdict, every surface item classified, the dtype answers,
the ported C++ tests, then the implementation (the files of ``port-fused-residual/``),
and an approving review — and runs ``portwright run --record`` against it through the
real openai SDK, in the Docker sandbox. Point ``[model]`` at a real endpoint and run
``portwright run ROW --record FILE`` to record a real model instead.

    python examples/rmsnorm/record_cassette.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))
from build import build, port_files  # noqa: E402

ROW = "rmsnorm-fused-residual"
CASSETTE = HERE / "demo.cassette.jsonl"


def _definition_line(upstream: Path, rev: str) -> int:
    text = subprocess.run(["git", "-C", str(upstream), "show", f"{rev}:rmsnorm/norm.py"],
                          capture_output=True, text=True, check=True).stdout
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(r"def rms_norm\(", line):
            return number
    raise SystemExit("rms_norm is not defined upstream at the pin")


def main() -> int:
    from pytest_httpserver import HTTPServer

    from tests.workflows.fake_server import serve_porter
    from tests.workflows.porter import Plan

    with tempfile.TemporaryDirectory(prefix="rmsnorm-record-") as scratch:
        example = build(Path(scratch))
        tests, implementation = port_files(example)
        line = _definition_line(example.upstream, example.pin)
        plan = Plan(
            gap={"status": "missing",
                 "reasoning": "At the pin rms_norm has no residual parameter; upstream adds "
                              "the fused residual-add mode after it, and the port's "
                              "rms_norm takes no residual either.",
                 "evidence": [{"kind": "upstream", "ref": f"rmsnorm/norm.py:{line}",
                               "detail": "rms_norm(x, weight, eps) at the pin: no residual"},
                              {"kind": "note", "ref": "upstream after the pin",
                               "detail": "the fused residual-add mode lands after the pin"}]},
            answers={"accumulation_dtype": "double (upstream accumulates in float64)",
                     "storage_dtype": "float (inputs, weights, outputs and the residual)"},
            tests=tests, implementation=implementation)
        server = HTTPServer(host="127.0.0.1")
        server.start()
        try:
            serve_porter(server, plan)
            env = {**os.environ, "OPENAI_API_KEY": "recording",
                   "PORTWRIGHT_MODEL__BASE_URL": server.url_for("/v1"),
                   "PORTWRIGHT_MODEL__NAME": "demo-model",
                   "PORTWRIGHT_STATE_DIR": str(Path(scratch) / "state")}
            CASSETTE.unlink(missing_ok=True)
            done = subprocess.run([sys.executable, "-m", "portwright", "-C",
                                   str(example.downstream), "run", ROW, "--approve", "auto",
                                   "--run-id", "demo", "--record", str(CASSETTE)], env=env,
                                  check=False)
        finally:
            server.stop()
    print(f"recorded {CASSETTE.relative_to(ROOT)}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
