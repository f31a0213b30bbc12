"""What the cassette recorders of the bundled suite share: a scripted model served on a
local OpenAI-compatible endpoint (127.0.0.1), and ``portwright eval run --record`` against
it in each mode, through the real openai SDK and the Docker sandbox, as a person with a
model endpoint would (``--model``, ``PORTWRIGHT_MODEL__BASE_URL``, ``OPENAI_API_KEY``).

Every cassette of the suite is kept in one folder, :data:`CASSETTES`
(``cassettes/<task slug>.<mode>.jsonl``), so that ``portwright eval run
benchmarks/port-tasks --replay benchmarks/port-tasks/cassettes`` replays the whole suite.
A recorder replaces the cassettes of the tasks it records, and no other.

Used by ``examples/record_cassettes.py`` (the bundled examples) and ``record_cassettes.py``
(the real pairs).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from portwright.agents.offline import ScriptedModel

CASSETTES = HERE / "cassettes"
MODES = ("cycle", "loop")
MODEL = "example-model"


def show(repo: Path, rev: str, path: str) -> str:
    """The text of ``path`` at ``rev`` in ``repo``."""
    return subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def record(suites: Sequence[Path], repos: Path, model: ScriptedModel, scratch: Path, *,
           modes: Sequence[str] = MODES, cassettes: Path = CASSETTES) -> int:
    """Serve ``model`` and run ``eval run --record cassettes`` on each of ``suites`` (a task
    file or folder) in each mode, ``--out scratch/out``; the cassettes of those suites'
    tasks in those modes are replaced. Prints the wall time of each run; returns the first
    non-zero exit status, else 0."""
    from pytest_httpserver import HTTPServer

    from portwright.eval.tasks import load_suite
    from tests.workflows.fake_server import serve_model

    server = HTTPServer(host="127.0.0.1")
    server.start()
    code = 0
    try:
        serve_model(server, model)
        env = {**os.environ, "OPENAI_API_KEY": "recording",
               "PORTWRIGHT_MODEL__BASE_URL": server.url_for("/v1"),
               "PORTWRIGHT_STATE_DIR": str(scratch / "state")}
        env.pop("PORTWRIGHT_REFUSE_REAL_MODELS", None)
        for mode in modes:
            for suite in suites:
                for task in load_suite(suite).tasks:
                    (cassettes / f"{task.slug}.{mode}.jsonl").unlink(missing_ok=True)
                started = time.monotonic()
                done = subprocess.run(
                    [sys.executable, "-m", "portwright", "eval", "run", str(suite), "--mode",
                     mode, "--model", MODEL, "--repos", str(repos), "--out",
                     str(scratch / "out"), "--record", str(cassettes), "--jobs", "1"],
                    env=env, check=False)
                print(f"{suite.name} {mode}: exit {done.returncode} in "
                      f"{time.monotonic() - started:.0f} s", flush=True)
                code = code or done.returncode
    finally:
        server.stop()
    return code
