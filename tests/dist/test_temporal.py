"""Scale-out on Temporal, as people run it: a real dev server, real ``portwright worker``
processes, the real Docker sandbox; the model is the scripted porter behind a local
OpenAI-compatible endpoint.

- a worker killed with SIGKILL in the middle of a node: the other worker finishes the run,
  with no duplicated commit, ledger row, container or pull-request body;
- a run parked at an approval resumes on the update ``portwright approve`` sends from
  another process;
- a schedule starts a run.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from portwright.agents.llm import CompletionRequest
from portwright.project import Project
from portwright.vcs import plumbing
from tests.agents.helpers import chat_body
from tests.conftest import GitRepo, docker_engine_running
from tests.dist.conftest import Worker
from tests.workflows.conftest import CycleWorld, build_world
from tests.workflows.fake_server import PATH, _message, model_config
from tests.workflows.porter import porter

pytestmark = [pytest.mark.docker, pytest.mark.temporal, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def pw(repo: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ})


def final(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    text = done.stdout
    return dict(json.loads(text[text.rindex("\n{\n") + 1:] if "\n{\n" in text else text))


class Gate:
    """Holds the first implementation turn of the porter until released."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.release = threading.Event()


def serve(server: HTTPServer, world: CycleWorld, gate: Gate | None = None) -> None:
    model = porter(world.plan())

    def handle(request: Request) -> Response:
        body = json.loads(request.get_data())
        asked = CompletionRequest(messages=[_message(m) for m in body["messages"]])
        system = asked.messages[0].content or ""
        implementing = ("You are the implementer" in system
                        and "This turn: TESTS ONLY" not in system)
        if gate is not None and implementing and not gate.arrived.is_set():
            gate.arrived.set()
            gate.release.wait(timeout=120)
            return Response("gone", status=503)  # the worker that asked is dead by now
        reply = model.complete(asked).message
        calls = [(c.name, c.arguments) for c in reply.tool_calls]
        return Response(json.dumps(chat_body(content=reply.content, calls=calls)),
                        content_type="application/json")

    server.expect_request(PATH, method="POST").respond_with_handler(handle)


def temporal_world(make_repo: Callable[[str], GitRepo], server: HTTPServer, *,
                   approvals: str = 'spec = "never"\nadvance = "never"\npr = "never"\n',
                   engine_in_config: bool = False) -> CycleWorld:
    built = build_world(make_repo, approvals=approvals)
    config = (built.repo / "portwright.toml").read_text() + model_config(server)
    if engine_in_config:
        config += '\n[runs]\nengine = "temporal"\n'
    built.downstream.commit("model endpoint", {"portwright.toml": config})
    return built


def assert_once(repo: Path, run_id: str) -> None:
    """One commit per step, one ledger row per change, one PR body, no container left."""
    branch = f"portwright/{run_id}"
    bodies = plumbing.git(repo, "log", "--format=%b%x00", branch).decode().split("\0")
    steps = collections.Counter(line.removeprefix("Portwright-Step: ") for body in bodies
                                for line in body.splitlines()
                                if line.startswith("Portwright-Step: "))
    assert steps
    assert max(steps.values()) == 1, steps
    ledger = plumbing.show(repo, branch, "parity-ledger.md")
    assert ledger is not None
    changes = [row.split("|")[1].strip() for row in ledger.decode().splitlines()
               if row.startswith("| ") and not row.startswith(("| change", "| ---"))]
    assert changes
    assert len(changes) == len(set(changes)), changes
    body = (Project.load(repo).run_dir(run_id) / "pr.md").read_text()
    assert body.count("# portwright run") == 1
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=portwright.run={run_id}"],
                          capture_output=True, text=True, check=True).stdout.split()
    assert left == []


def test_killed_worker_leaves_the_run_to_the_other(
        make_repo: Callable[[str], GitRepo], httpserver: HTTPServer,
        start_worker: Callable[..., Worker]) -> None:
    w = temporal_world(make_repo, httpserver)
    gate = Gate()
    serve(httpserver, w, gate)
    workers = [start_worker(w.repo), start_worker(w.repo)]
    run = subprocess.Popen([sys.executable, "-m", "portwright", "-C", str(w.repo), "run",
                            "kv-cache", "--engine", "temporal", "--run-id", "tk-1", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert gate.arrived.wait(timeout=180), "the implementer was never asked"
        holder = [wk for wk in workers if wk.ran("implement", "tk-1")]
        assert len(holder) == 1, [wk.events for wk in workers]
        victim = holder[0]
        victim.kill()
        gate.release.set()
        out, err = run.communicate(timeout=300)
    finally:
        gate.release.set()
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, out[-3000:] + err[-3000:]
    assert final(subprocess.CompletedProcess([], 0, out, err))["status"] == "done", out[-3000:]
    survivor = next(wk for wk in workers if wk is not victim)
    assert survivor.ran("implement", "tk-1", event="node_finished")
    assert survivor.ran("open_pr", "tk-1", event="node_finished")
    assert not victim.ran("implement", "tk-1", event="node_finished")
    assert_once(w.repo, "tk-1")
    status = json.loads(pw(w.repo, "status", "tk-1", "--json").stdout)
    assert status["status"] == "done"
    assert status["engine"] == "temporal"


def test_parked_run_resumes_on_approve_from_another_process(
        make_repo: Callable[[str], GitRepo], httpserver: HTTPServer,
        start_worker: Callable[..., Worker]) -> None:
    w = temporal_world(make_repo, httpserver, engine_in_config=True,
                       approvals='spec = "never"\nadvance = "always"\npr = "never"\n')
    serve(httpserver, w)
    start_worker(w.repo)
    first = pw(w.repo, "run", "kv-cache", "--run-id", "ta-1", "--json")
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    parked = final(first)
    assert parked["status"] == "waiting"
    assert parked["waiting"]["action_requests"][0]["name"] == "approve_advance"
    status = json.loads(pw(w.repo, "status", "ta-1", "--json").stdout)
    assert status["status"] == "waiting"
    assert status["engine"] == "temporal"
    assert status["waiting"]["action_requests"][0]["name"] == "approve_advance"
    listed = json.loads(pw(w.repo, "runs", "--json").stdout)
    assert [(r["run_id"], r["status"]) for r in listed] == [("ta-1", "waiting")]
    wrong = pw(w.repo, "edit", "ta-1", "--file", str(w.repo / "AGENTS.md"), "--json")
    assert wrong.returncode == 2, wrong.stdout + wrong.stderr
    assert "not allowed" in wrong.stderr
    answered = pw(w.repo, "approve", "ta-1", "--json")
    assert answered.returncode == 0, answered.stdout[-2000:] + answered.stderr[-2000:]
    assert final(answered)["status"] == "done"
    again = pw(w.repo, "approve", "ta-1")
    assert again.returncode == 2
    assert "not waiting for a decision" in again.stderr
    assert_once(w.repo, "ta-1")


def test_schedule_starts_a_run(make_repo: Callable[[str], GitRepo], httpserver: HTTPServer,
                               start_worker: Callable[..., Worker]) -> None:
    w = temporal_world(make_repo, httpserver)
    serve(httpserver, w)
    start_worker(w.repo)
    made = pw(w.repo, "schedule", "create", "--cron", "0 3 * * *", "--id", "nightly-kv",
              "run", "kv-cache", "--json")
    assert made.returncode == 0, made.stdout + made.stderr
    listed = json.loads(pw(w.repo, "schedule", "list", "--json").stdout)
    mine = [s for s in listed if s["id"] == "nightly-kv"]
    assert mine
    assert mine[0]["workflow"] == "portwright.run"
    assert mine[0]["cron"] == ["0 3 * * *"]
    fired = pw(w.repo, "schedule", "trigger", "nightly-kv")
    assert fired.returncode == 0, fired.stdout + fired.stderr
    project = Project.load(w.repo)
    deadline = time.monotonic() + 240
    run_id = None
    while time.monotonic() < deadline:
        found = [p.name for p in project.runs_dir.glob("nightly-kv-*")] \
            if project.runs_dir.is_dir() else []
        if found:
            run_id = found[0]
            status = json.loads(pw(w.repo, "status", run_id, "--json").stdout or "{}")
            if status.get("status") in ("done", "blocked"):
                break
        time.sleep(1)
    assert run_id is not None, "the schedule started no run"
    assert status["status"] == "done", status
    assert_once(w.repo, run_id)
    gone = pw(w.repo, "schedule", "delete", "nightly-kv")
    assert gone.returncode == 0, gone.stderr
    listed = json.loads(pw(w.repo, "schedule", "list", "--json").stdout)
    assert all(s["id"] != "nightly-kv" for s in listed)
