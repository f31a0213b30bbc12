"""A run whose model endpoint misbehaves (:mod:`tests.faults.endpoint`) ends ``blocked``
with a reason that names the endpoint and the fix, never a traceback nor a run left
``running``; once the endpoint answers, ``portwright resume`` runs the step again.
``portwright doctor`` asks the endpoint once, briefly, and says what it answered."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from werkzeug import Request, Response

from portwright.agents.loop import SUBMIT
from portwright.doctor import diagnose
from tests.agents.helpers import chat_body
from tests.bad_input.world import build
from tests.conftest import GitRepo
from tests.faults.endpoint import FaultyEndpoint, model_section

VERDICT = {"status": "landed", "reasoning": "src/attn.py defines fp8_attention already.",
           "evidence": [{"kind": "downstream", "ref": "src/attn.py:1",
                         "detail": "def fp8_attention(q, k, v)"},
                        {"kind": "upstream", "ref": "attn/fp8.py:4-6",
                         "detail": "def fp8_attention(q, k, v)"}]}


@pytest.fixture
def endpoint() -> Iterator[FaultyEndpoint]:
    with FaultyEndpoint() as served:
        yield served


def portwright(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          capture_output=True, text=True, timeout=180, check=False)


def final(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The object ``--json`` ends with, after the event lines."""
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    start = max(i for i, line in enumerate(lines) if line == "{")
    payload: dict[str, Any] = json.loads("\n".join(lines[start:]))
    return payload


def _verdict(request: Request) -> Response:
    return Response(json.dumps(chat_body(calls=[(SUBMIT, VERDICT)])),
                    content_type="application/json")


def test_a_run_ends_blocked_naming_the_endpoint_and_resumes_once_it_answers(
        endpoint: FaultyEndpoint, tmp_path: Path) -> None:
    world = build(tmp_path)
    url = endpoint.base_url("truncated")
    world.config('\n[sandbox]\nbackend = "local"\n' + model_section(url))
    world.git("commit", "-qam", "a model endpoint")

    text = portwright(world.repo, "run", "attn-fp8", "--allow-local", "--run-id", "cut")
    assert "Traceback" not in text.stderr, text.stderr
    assert text.returncode == 1, text.stdout + text.stderr
    for said in ("run cut: blocked", url, "cut off", "fix: see the log", "[model] base_url",
                 "`portwright resume cut` runs verify_gap again"):
        assert said in text.stdout, text.stdout
    endpoint.heal("truncated", _verdict)
    resumed = portwright(world.repo, "resume", "cut", "--allow-local", "--json")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    landed = final(resumed)
    assert (landed["status"], landed["retry"]) == ("landed", None), landed
    assert endpoint.requests == ["truncated"] * 2  # the run's call, the resumed step's


@pytest.mark.parametrize(("fault", "found", "said"), [
    ("html", "ok", "answered in"),
    ("reset", "fail", "reset"),
    ("http-503", "fail", "HTTP 503"),
])
def test_doctor_sends_the_model_endpoint_one_request(
        fault: str, found: str, said: str, endpoint: FaultyEndpoint,
        make_repo: Callable[[str], GitRepo]) -> None:
    if found == "ok":
        endpoint.heal(fault, lambda request: Response(json.dumps(chat_body(content="ok")),
                                                      content_type="application/json"))
    repo = make_repo("down")
    repo.commit("config", {"portwright.toml": '[upstream]\nsource = "../up"\n'
                           + model_section(endpoint.base_url(fault), retries=2)})
    [check] = [c for c in diagnose(repo.path) if c.name == "model"]
    assert (check.status, said in check.detail) == (found, True), check
    assert endpoint.base_url(fault) in check.detail
    assert bool(check.fix) == (found != "ok")
    assert endpoint.requests == [fault]  # no retries: doctor asks once, and briefly
