"""``portwright eval run`` as a person with a model endpoint runs it: the real command, the
real openai SDK against a local OpenAI-compatible server (``--model``,
``PORTWRIGHT_MODEL__BASE_URL``, ``OPENAI_API_KEY``), the Docker sandbox; its JSON output
and its report in the format docs/eval.md gives; bad input exits 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from portwright.agents.llm import CompletionRequest
from portwright.eval.results import EvalReport, TaskResult
from tests.agents.helpers import chat_body
from tests.eval.calc_plans import ORACLE, calc_suite, cycle_plan
from tests.eval.scripted import both_modes
from tests.eval.tinystats import needs_engine
from tests.workflows.fake_server import PATH, _message

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "eval.md"


def eval_run(cwd: Path, *args: str, env: dict[str, str] | None = None
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "eval", "run", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT),
                               **(env or {})})


def documented(header: str) -> set[str]:
    """The field names of the docs/eval.md table whose header row is ``header``."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    start = lines.index(header) + 2
    names: set[str] = set()
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        names.update(re.findall(r"`(\w+)`", line.split("|")[1]))
    return names


def test_a_model_endpoint_through_the_openai_sdk(tmp_path: Path,
                                                 httpserver: HTTPServer) -> None:
    needs_engine()
    calc_suite(tmp_path)
    model = both_modes(cycle_plan(), ORACLE)
    seen: list[dict[str, Any]] = []

    def handle(request: Request) -> Response:
        body = json.loads(request.get_data())
        seen.append({"model": body["model"], "key": request.headers.get("Authorization")})
        reply = model.complete(CompletionRequest(
            messages=[_message(m) for m in body["messages"]])).message
        calls = [(c.name, c.arguments) for c in reply.tool_calls]
        return Response(json.dumps(chat_body(content=reply.content, calls=calls,
                                             model="served-model")),
                        content_type="application/json")

    httpserver.expect_request(PATH, method="POST").respond_with_handler(handle)
    out = tmp_path / "out"
    done = eval_run(tmp_path, "suite", "--mode", "loop", "--model", "my-model", "--repos",
                    "repos", "--out", str(out), "--json",
                    env={"PORTWRIGHT_MODEL__BASE_URL": httpserver.url_for("/v1"),
                         "OPENAI_API_KEY": "sk-local-test"})
    assert done.returncode == 0, done.stdout + done.stderr
    # every call went to the endpoint with the model asked for and the key of the variable
    assert len(seen) == 4
    assert all(s == {"model": "my-model", "key": "Bearer sk-local-test"} for s in seen)
    # --json: one event a line while it runs, then the report
    text = done.stdout
    events = [json.loads(line) for line in text[: text.index("\n{\n") + 1].splitlines()]
    assert events[0]["event"] == "task_started"
    assert {"task_finished", "report"} <= {e["event"] for e in events}
    printed = json.loads(text[text.index("\n{\n") + 1:])
    written = json.loads((out / "report.loop.json").read_text())
    assert printed == written
    # the report's format is the documented one
    assert set(written) == {"suite", "mode", "model", "budget", "results", "missing",
                            "aggregate"}
    assert set(written["aggregate"]) == documented("| aggregate | meaning |")
    (result,) = written["results"]
    assert set(result) == documented("| field | meaning |")
    assert set(written["budget"]) == {"tokens", "cost_usd", "calls", "wall_seconds"}
    assert (written["suite"], written["mode"], written["model"]) == ("suite", "loop",
                                                                     "my-model")
    assert result["resolved"] is True
    assert result["calls"] == 4
    assert (result["tokens_in"], result["tokens_out"]) == (400, 80)  # the server's usage
    assert EvalReport.model_validate(written).results[0] == TaskResult.model_validate(
        json.loads((out / "results" / "calc--sub.loop.json").read_text()))


@pytest.mark.parametrize("as_json", [False, True])
def test_bad_input_exits_2_naming_the_fix(tmp_path: Path, as_json: bool) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "t.toml").write_text(
        'id = "a/b"\ntitle = "T"\n[upstream]\nrepo = "o/up"\ncommits = ["main"]\n'
        '[downstream]\nrepo = "o/down"\nparent = "main^"\nport = "main"\n'
        '[hidden]\ntests = ["t::x"]\n[environment]\ntest = "pytest {tests}"\n')
    (tmp_path / "repos").mkdir()
    (tmp_path / "tapes").mkdir()
    flag = ["--json"] if as_json else []
    cases = [
        (["--mode", "both"], "--mode"),
        (["--replay", "tapes", "--record", "tapes"], "exclude each other"),
        (["--replay", "nowhere"], "not a folder of cassettes"),
        (["--repos", "nowhere"], "does not exist"),
        (["--repos", "repos"], "the upstream repository o/up is not there"),
    ]
    for args, message in cases:
        done = eval_run(tmp_path, "suite", *args, *flag)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        assert message in done.stderr, (args, done.stderr)
        if as_json:
            error = json.loads(done.stdout.splitlines()[-1])["error"]
            assert error["fix"], args
