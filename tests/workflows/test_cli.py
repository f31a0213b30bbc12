"""`portwright run` and friends as a user runs them: real subprocesses, the real openai
SDK against a local scripted endpoint, the real Docker sandbox, approvals from a second
process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from portwright.errors import UsageError
from portwright.project import Project
from tests.conftest import GitRepo, docker_engine_running
from tests.workflows.conftest import CycleWorld, build_world
from tests.workflows.fake_server import model_config, serve_porter

pytestmark = pytest.mark.docker


@pytest.fixture(autouse=True)
def _engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def pw(repo: Path, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PORTER_KEY": "not-a-secret"}
    done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          capture_output=True, text=True, timeout=300, env=env)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def world(make_repo: Callable[[str], GitRepo], server: HTTPServer,
          approvals: str = 'spec = "never"\nadvance = "never"\npr = "never"\n') -> CycleWorld:
    built = build_world(make_repo, approvals=approvals)
    config = (built.repo / "portwright.toml").read_text() + model_config(server)
    built.downstream.commit("model endpoint", {"portwright.toml": config})
    serve_porter(server, built.plan())
    return built


def final(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The last JSON object printed (the run's outcome after its event lines)."""
    text = done.stdout
    return dict(json.loads(text[text.rindex("\n{\n") + 1:] if "\n{\n" in text else text))


def test_run_then_status_log_report_runs(make_repo: Callable[[str], GitRepo],
                                         httpserver: HTTPServer) -> None:
    w = world(make_repo, httpserver)
    done = pw(w.repo, "run", "kv-cache", "--run-id", "cli-1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "red observed" in done.stdout
    assert "gate full/red-green" in done.stdout
    assert "run cli-1: done" in done.stdout
    status = json.loads(pw(w.repo, "status", "cli-1", "--json", check=True).stdout)
    assert status["status"] == "done"
    assert [s["node"] for s in status["timeline"]][:3] == ["prepare", "verify_gap",
                                                           "enumerate_surface"]
    assert status["spend"]["implementer"]["calls"] >= 2
    report = pw(w.repo, "report", "cli-1", check=True).stdout
    assert "## Evidence (observed by portwright, signed)" in report
    log = pw(w.repo, "log", "cli-1", check=True)
    assert "red" in log.stdout
    runs = json.loads(pw(w.repo, "runs", "--json", check=True).stdout)
    assert [(r["run_id"], r["status"]) for r in runs] == [("cli-1", "done")]


def test_approval_from_a_second_process(make_repo: Callable[[str], GitRepo],
                                        httpserver: HTTPServer) -> None:
    w = world(make_repo, httpserver, approvals='spec = "never"\nadvance = "always"\n'
                                               'pr = "never"\n')
    first = pw(w.repo, "run", "kv-cache", "--run-id", "ask-1", "--json")
    assert first.returncode == 0, first.stderr
    parked = final(first)
    assert parked["status"] == "waiting"
    request = parked["waiting"]
    assert request["action_requests"][0]["name"] == "approve_advance"
    assert request["review_configs"][0]["allowed_decisions"] == ["approve", "reject",
                                                                 "respond"]
    assert "red and green observed" in request["action_requests"][0]["description"]
    # one row, one run under way: another would make a second branch and pull request
    other = pw(w.repo, "run", "kv-cache", "--run-id", "ask-2", "--json")
    assert other.returncode == 2, other.stdout + other.stderr
    error = json.loads(other.stdout)["error"]
    assert "ask-1 (waiting)" in error["message"]
    assert "--force" in error["fix"]
    assert not Project.load(w.repo).run_dir("ask-2").exists()
    second = pw(w.repo, "approve", "ask-1", "--json")
    assert second.returncode == 0, second.stderr
    assert final(second)["status"] == "done"
    again = pw(w.repo, "approve", "ask-1")
    assert again.returncode == 2
    assert "not waiting for a decision" in again.stderr


def test_rejection_message_reaches_the_redone_step(make_repo: Callable[[str], GitRepo],
                                                   httpserver: HTTPServer) -> None:
    w = world(make_repo, httpserver, approvals='spec = "never"\nadvance = "always"\n'
                                               'pr = "never"\n')
    assert final(pw(w.repo, "run", "kv-cache", "--run-id", "rej-1", "--json"))["status"] \
        == "waiting"
    done = pw(w.repo, "reject", "rej-1", "--message", "keep the upstream docstring verbatim",
              "--json")
    assert done.returncode == 0, done.stderr
    assert final(done)["status"] == "waiting"  # implemented again, asks again
    run_dir = Project.load(w.repo).run_dir("rej-1")
    redone = (run_dir / "transcript-implementer-3.jsonl").read_text()
    assert "keep the upstream docstring verbatim" in redone
    assert final(pw(w.repo, "approve", "rej-1", "--json"))["status"] == "done"


def test_edited_spec_replaces_it_and_is_checked_again(make_repo: Callable[[str], GitRepo],
                                                      httpserver: HTTPServer,
                                                      tmp_path: Path) -> None:
    w = world(make_repo, httpserver, approvals='spec = "always"\nadvance = "never"\n'
                                               'pr = "never"\n')
    parked = final(pw(w.repo, "run", "kv-cache", "--run-id", "ed-1", "--json"))
    assert parked["waiting"]["action_requests"][0]["name"] == "approve_spec"
    spec = parked["waiting"]["action_requests"][0]["args"]["spec"]
    broken = tmp_path / "broken.md"
    broken.write_text(spec.replace("fill_dtype:", "other_key:"))
    done = pw(w.repo, "edit", "ed-1", "--file", str(broken), "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{\"")]
    checks = [e for e in events if e.get("event") == "gate" and e["phase"] == "spec"]
    assert any(not e["passed"] for e in checks)  # the edit was checked, and failed
    assert final(done)["status"] == "waiting"  # re-enumerated, asks again
    branch = json.loads(pw(w.repo, "status", "ed-1", "--json", check=True).stdout)["branch"]
    log = w.downstream.git("log", "--format=%b", branch)
    assert "Portwright-Step: spec-edit-1" in log


def test_approve_ask_on_the_command_line_holds_for_the_whole_run(
        make_repo: Callable[[str], GitRepo], httpserver: HTTPServer) -> None:
    """`run --approve ask` waits at every approval point although the committed config says
    never, and keeps doing so when the run is answered from another process."""
    w = world(make_repo, httpserver)  # every point "never" in portwright.toml
    parked = final(pw(w.repo, "run", "kv-cache", "--run-id", "ask-cli", "--approve", "ask",
                      "--json"))
    assert parked["status"] == "waiting", parked
    assert parked["waiting"]["action_requests"][0]["name"] == "approve_spec"
    after_spec = final(pw(w.repo, "approve", "ask-cli", "--json"))
    assert after_spec["status"] == "waiting", after_spec
    assert after_spec["waiting"]["action_requests"][0]["name"] == "approve_advance"


def test_a_second_answer_to_one_question_is_refused(make_repo: Callable[[str], GitRepo],
                                                    httpserver: HTTPServer) -> None:
    """An answer naming a question the run has moved past never resumes it."""
    from portwright.workflows import driver

    w = world(make_repo, httpserver, approvals='spec = "always"\nadvance = "always"\n'
                                               'pr = "never"\n')
    assert final(pw(w.repo, "run", "kv-cache", "--run-id", "twice", "--json"))["status"] \
        == "waiting"
    proj = Project.load(w.repo, at="HEAD")
    with driver.open_checkpointer(proj) as saver:
        asked = driver.view(proj, "twice", saver).waiting_id
    assert asked
    assert final(pw(w.repo, "approve", "twice", "--json"))["status"] == "waiting"  # advance
    with pytest.raises(UsageError, match="already decided"):
        driver.answer(proj, "twice", {"type": "approve"}, lambda event: None, question=asked)
    with driver.open_checkpointer(proj) as saver:
        still = driver.view(proj, "twice", saver)
    assert still.waiting is not None
    assert still.waiting["action_requests"][0]["name"] == "approve_advance"
