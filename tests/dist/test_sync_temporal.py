"""Pin syncs on Temporal, as people run them: a real dev server, a real ``portwright worker``
process, the real Docker sandbox, the sync world's upstream range; the model is the
scripted porter behind a local OpenAI-compatible endpoint.

- a schedule of ``sync --to REV`` started by ``schedule trigger``: the sync finishes on the
  worker, the pin moves on the sync's branch, every missing row has its port run, and the
  pull request goes through the ``[pr]`` backend;
- ``portwright sync --engine temporal`` waits for the workflow and prints the sync as a
  local one does;
- a schedule's command is parsed by ``sync``'s own options;
- a worker killed with SIGKILL while it runs a fanned-out ``port`` node: the other worker
  finishes the sync, with the pin moved and no duplicated commit, ledger row, container or
  pull-request body.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from portwright.agents.llm import CompletionRequest
from portwright.project import Project
from tests.agents.helpers import chat_body
from tests.conftest import GitRepo, docker_engine_running
from tests.dist.conftest import Worker
from tests.dist.test_temporal import final, pw
from tests.workflows.fake_server import PATH, _message, model_config, serve_model
from tests.workflows.sync_world import SyncWorld, build_sync_world, json_lines
from tests.workflows.test_sync import check_complete

pytestmark = [pytest.mark.docker, pytest.mark.temporal, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def served(make_repo: Callable[[str], GitRepo], server: HTTPServer) -> SyncWorld:
    world = build_sync_world(make_repo)
    config = (world.repo / "portwright.toml").read_text() + model_config(server)
    world.downstream.commit("model endpoint", {"portwright.toml": config})
    serve_model(server, world.model())
    return world


def settled(world: SyncWorld, prefix: str, timeout: float = 420) -> dict[str, Any]:
    """``status --json`` of the first sync whose id starts with ``prefix``, once its graph
    has ended."""
    project = Project.load(world.repo)
    deadline = time.monotonic() + timeout
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        found = sorted(p.name for p in project.runs_dir.glob(f"{prefix}*")) \
            if project.runs_dir.is_dir() else []
        if found:
            done = pw(world.repo, "status", found[0], "--json")
            status = json.loads(done.stdout) if done.returncode in (0, 1) and done.stdout \
                else {}
            if status.get("status") in ("done", "blocked", "waiting") and not status["next"]:
                return status
        time.sleep(2)
    raise AssertionError(f"no sync {prefix}* ended: {status}")


def test_a_schedule_starts_a_sync_that_moves_the_pin(
        make_repo: Callable[[str], GitRepo], httpserver: HTTPServer,
        start_worker: Callable[..., Worker]) -> None:
    world = served(make_repo, httpserver)
    worker = start_worker(world.repo)
    made = pw(world.repo, "schedule", "create", "--cron", "0 3 * * *", "--id", "nightly-sync",
              "sync", "--to", world.head, "--concurrency", "2", "--json")
    assert made.returncode == 0, made.stdout + made.stderr
    assert json.loads(made.stdout)["workflow"] == "portwright.sync"
    listed = json.loads(pw(world.repo, "schedule", "list", "--json").stdout)
    mine = [s for s in listed if s["id"] == "nightly-sync"]
    assert [(s["workflow"], s["command"]) for s in mine] == [
        ("portwright.sync", f"sync --to {world.head} --concurrency 2")]
    fired = pw(world.repo, "schedule", "trigger", "nightly-sync")
    assert fired.returncode == 0, fired.stdout + fired.stderr

    status = settled(world, "nightly-sync-")
    assert status["status"] == "done", (status, worker.output())
    assert status["pin_moved"] is True
    sync_id = status["sync_id"]
    report = json.loads(pw(world.repo, "report", sync_id, "--json").stdout)
    check_complete(world, report["state"])  # pin moved, ledger once, each row's port run
    manifest = json.loads((Project.load(world.repo).run_dir(sync_id) / "run.json").read_text())
    assert (manifest["engine"], manifest["command"]) == ("temporal", f"sync --to {world.head}")
    runs = json.loads(pw(world.repo, "runs", "--json").stdout)
    assert sorted(r["row"] for r in runs) == ["kv-cache", "kv-evict", "kv-util"]
    assert all(r["status"] == "done" for r in runs), runs
    # every node of the sync ran on the worker, one step per activity
    nodes = [e["node"] for e in list(worker.events)
             if e.get("event") == "node_finished" and e.get("run_id") == sync_id]
    for node in ("scan", "confirm", "integrate", "record", "pin_gates", "finish"):
        assert node in nodes, nodes
    synced = json.loads(pw(world.repo, "syncs", "--json").stdout)
    assert [(s["sync_id"], s["status"]) for s in synced] == [(sync_id, "done")]
    gone = pw(world.repo, "schedule", "delete", "nightly-sync")
    assert gone.returncode == 0, gone.stderr


def test_sync_engine_temporal_and_bad_schedules(
        make_repo: Callable[[str], GitRepo], httpserver: HTTPServer,
        start_worker: Callable[..., Worker]) -> None:
    world = served(make_repo, httpserver)
    refused = pw(world.repo, "schedule", "create", "--cron", "0 3 * * *", "sync",
                 "--sync-id", "s-1")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "--sync-id is not for a schedule" in refused.stderr
    unknown = pw(world.repo, "schedule", "create", "--cron", "0 3 * * *", "sync", "--nope")
    assert unknown.returncode == 2, unknown.stdout + unknown.stderr
    assert "--nope" in unknown.stderr
    # bad input is refused before any workflow starts, with the local engine's error
    for bad in (["sync", "--to", "no-such-rev"], ["run", "no-such-row"]):
        here = pw(world.repo, *bad, "--engine", "local")
        there = pw(world.repo, *bad, "--engine", "temporal")
        assert (here.returncode, there.returncode) == (2, 2), here.stderr + there.stderr
        assert there.stderr == here.stderr
        assert "Traceback" not in there.stderr
    assert "--to 'no-such-rev'" in pw(world.repo, "sync", "--engine", "temporal", "--to",
                                      "no-such-rev").stderr
    scheduled = pw(world.repo, "schedule", "create", "--cron", "0 3 * * *", "sync", "--to",
                   "no-such-rev")
    assert scheduled.returncode == 2, scheduled.stdout + scheduled.stderr
    assert "--to 'no-such-rev'" in scheduled.stderr
    scheduled = pw(world.repo, "schedule", "create", "--cron", "0 3 * * *", "run",
                   "no-such-row")
    assert scheduled.returncode == 2, scheduled.stdout + scheduled.stderr
    assert "no-such-row" in scheduled.stderr
    listed = json.loads(pw(world.repo, "schedule", "list", "--json").stdout)
    assert [s for s in listed if "no-such" in s["command"]] == []
    assert not Project.load(world.repo).runs_dir.is_dir() \
        or list(Project.load(world.repo).runs_dir.iterdir()) == []
    start_worker(world.repo)
    done = pw(world.repo, "sync", "--engine", "temporal", "--to", world.head,
              "--sync-id", "sync-t", "--json", timeout=480)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    outcome = final(done)
    assert outcome["status"] == "done", outcome
    assert outcome["pin_moved"] is True
    assert outcome["pr_url"].endswith("/sync-t/pr.md")
    # the command followed the workflow through its `view` query, which showed the port
    # runs fanned out: three Sends pending at once
    followed = [e["next"] for e in json_lines(done.stdout) if e.get("event") == "step_done"]
    assert ["port", "port", "port"] in followed, followed
    state = json.loads(pw(world.repo, "report", "sync-t", "--json").stdout)["state"]
    check_complete(world, state)


class HeldImplementer:
    """Serves the sync world's model, but holds the first implementation turn of any port
    run until released, and says which row asked."""

    def __init__(self, world: SyncWorld) -> None:
        self.model = world.model()
        self.rows = list(world.plans())
        self.row = ""
        self.arrived = threading.Event()
        self.release = threading.Event()

    def __call__(self, request: Request) -> Response:
        body = json.loads(request.get_data())
        asked = CompletionRequest(messages=[_message(m) for m in body["messages"]])
        system = asked.messages[0].content or ""
        if ("You are the implementer" in system and "This turn: TESTS ONLY" not in system
                and not self.arrived.is_set()):
            task = "\n".join(m.content or "" for m in asked.messages if m.role == "user")
            self.row = next(r for r in self.rows if f"`{r}`" in task or f" {r}" in task
                            or f"{r}\n" in task)
            self.arrived.set()
            self.release.wait(timeout=120)
            return Response("gone", status=503)  # the worker that asked is dead by now
        reply = self.model.complete(asked).message
        calls = [(c.name, c.arguments) for c in reply.tool_calls]
        return Response(json.dumps(chat_body(content=reply.content, calls=calls)),
                        content_type="application/json")


def _containers(label: str) -> list[str]:
    return subprocess.run(["docker", "ps", "-aq", "--filter", f"label=portwright.run={label}"],
                          capture_output=True, text=True, check=True).stdout.split()


def test_killed_worker_leaves_the_sync_to_the_other(
        make_repo: Callable[[str], GitRepo], httpserver: HTTPServer,
        start_worker: Callable[..., Worker]) -> None:
    world = build_sync_world(make_repo)
    config = (world.repo / "portwright.toml").read_text() + model_config(httpserver)
    world.downstream.commit("model endpoint", {"portwright.toml": config})
    held = HeldImplementer(world)
    httpserver.expect_request(PATH, method="POST").respond_with_handler(held)
    workers = [start_worker(world.repo), start_worker(world.repo)]
    sync = subprocess.Popen([sys.executable, "-m", "portwright", "-C", str(world.repo),
                             "sync", "--engine", "temporal", "--to", world.head,
                             "--sync-id", "sync-k", "--concurrency", "2", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert held.arrived.wait(timeout=300), "no port run reached its implementer"
        holder = [wk for wk in workers if any(
            e.get("event") == "node_started" and e.get("node") == "port"
            and e.get("row") == held.row and e.get("run_id") == "sync-k"
            for e in list(wk.events))]
        assert len(holder) == 1, [wk.events for wk in workers]
        victim = holder[0]
        victim.kill()
        held.release.set()
        out, err = sync.communicate(timeout=480)
    finally:
        held.release.set()
        if sync.poll() is None:
            sync.kill()
    assert sync.returncode == 0, out[-3000:] + err[-3000:]
    outcome = final(subprocess.CompletedProcess([], 0, out, err))
    assert outcome["status"] == "done", outcome
    assert outcome["pin_moved"] is True
    survivor = next(wk for wk in workers if wk is not victim)

    def finished(worker: Worker) -> bool:
        return any(e.get("event") == "node_finished" and e.get("node") == "port"
                   and e.get("row") == held.row and e.get("run_id") == "sync-k"
                   for e in list(worker.events))

    assert finished(survivor), survivor.output()
    assert not finished(victim)
    retried = [e for e in list(survivor.events) if e.get("event") == "node_started"
               and e.get("node") == "port" and e.get("row") == held.row]
    assert max(e["attempt"] for e in retried) >= 2, retried
    state = json.loads(pw(world.repo, "report", "sync-k", "--json").stdout)["state"]
    check_complete(world, state)  # one commit per step, one ledger row, one PR body each
    for run_id in ["sync-k", *(p["run_id"] for p in state["ports"].values())]:
        assert _containers(run_id) == [], run_id
    status = json.loads(pw(world.repo, "status", "sync-k", "--json").stdout)
    assert (status["status"], status["next"]) == ("done", [])


def _terminate(address: str, workflow_id: str) -> None:
    import asyncio

    from temporalio.client import Client

    async def end() -> None:
        client = await Client.connect(address)
        await client.get_workflow_handle(workflow_id).terminate(reason="the test ends it")

    asyncio.run(end())


def test_a_sync_whose_workflow_ended_resumes_here_from_its_checkpoint(
        make_repo: Callable[[str], GitRepo], httpserver: HTTPServer,
        start_worker: Callable[..., Worker], temporal_env: dict[str, str]) -> None:
    """The workflow's checkpoints are the project's: with the port runs fanned out and one
    of them cut short (its worker killed, the workflow terminated), ``portwright resume``
    continues the sync locally from the last checkpoint, port tasks (``Send``) included."""
    world = build_sync_world(make_repo)
    config = (world.repo / "portwright.toml").read_text() + model_config(httpserver)
    world.downstream.commit("model endpoint", {"portwright.toml": config})
    held = HeldImplementer(world)
    httpserver.expect_request(PATH, method="POST").respond_with_handler(held)
    worker = start_worker(world.repo)
    sync = subprocess.Popen([sys.executable, "-m", "portwright", "-C", str(world.repo),
                             "sync", "--engine", "temporal", "--to", world.head,
                             "--sync-id", "sync-r", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert held.arrived.wait(timeout=300), "no port run reached its implementer"
        early = pw(world.repo, "resume", "sync-r")
        assert early.returncode == 2, early.stdout + early.stderr
        assert "its workflow still runs" in early.stderr
        status = json.loads(pw(world.repo, "status", "sync-r", "--json").stdout)
        assert status["status"] == "running"
        assert status["next"] == ["port"] * 3, status  # one task (a Send) per row
        worker.kill()
        _terminate(temporal_env["PORTWRIGHT_TEMPORAL__ADDRESS"], "sync-r")
        held.release.set()
        out, err = sync.communicate(timeout=120)
    finally:
        held.release.set()
        if sync.poll() is None:
            sync.kill()
    assert sync.returncode == 1, out[-3000:] + err[-3000:]
    assert "the workflow ended without finishing" in err
    resumed = pw(world.repo, "resume", "sync-r", "--json", timeout=480)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    outcome = final(resumed)
    assert (outcome["status"], outcome["pin_moved"]) == ("done", True), outcome
    state = json.loads(pw(world.repo, "report", "sync-r", "--json").stdout)["state"]
    check_complete(world, state)
    for run_id in ["sync-r", *(p["run_id"] for p in state["ports"].values())]:
        assert _containers(run_id) == [], run_id
