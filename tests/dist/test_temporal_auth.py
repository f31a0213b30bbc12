"""Control planes authenticate: portwright reaches Temporal only through a frontend that
checks TLS, a client certificate (mTLS) and an API key, and a decision answers the
question the run asks.

The dev server has neither TLS nor authentication, so the frontend here is
:class:`tests.dist.authfront.Front` in front of it (one for the module, and the session's
dev server behind it). Everything portwright runs goes through it, configured with
``[temporal] tls``, ``server_ca``, ``client_cert``, ``client_key``, ``server_name`` and
``api_key_env`` (as ``PORTWRIGHT_TEMPORAL__*`` variables, as a worker fleet sets them):

- two ``portwright worker`` processes run a run to its approval and, once approved, to
  its end; a ``decide`` update naming another question is refused ("the question
  changed"); stopped, each ends at once (it does not wait for the polls the service
  holds open);
- a client that starts ``portwright.run`` with ``allow_local`` is refused by the worker;
- a client without the key, with another key, without a client certificate, or without
  TLS is refused: exit 2, a message naming the setting, no traceback.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError

from portwright.dist import client
from portwright.dist.models import DECIDE_UPDATE, RUN_WORKFLOW, Decide, RunRequest, RunSnapshot
from portwright.dist.client import connect
from portwright.project import Project
from tests.conftest import GitRepo, docker_engine_running
from tests.dist.authfront import PKI, Front
from tests.dist.conftest import Worker
from tests.dist.test_temporal import assert_once, final, pw, serve, temporal_world

pytestmark = [pytest.mark.docker, pytest.mark.temporal, pytest.mark.slow]

KEY = f"pw-test-{uuid.uuid4().hex}"
KEY_VAR = "TEMPORAL_TEST_API_KEY"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return PKI(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def front(temporal_address: str, pki: PKI) -> Iterator[Front]:
    with Front(temporal_address, pki, KEY) as started:
        yield started


@pytest.fixture
def temporal_env(front: Front, pki: PKI, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every portwright process of a test reaches Temporal through the front, with TLS, a
    client certificate and the key (the conftest's fixture of the same name, secured)."""
    env = {"PORTWRIGHT_TEMPORAL__ADDRESS": front.address,
           "PORTWRIGHT_TEMPORAL__TLS": "true",
           "PORTWRIGHT_TEMPORAL__SERVER_CA": str(pki.path("ca.pem")),
           "PORTWRIGHT_TEMPORAL__SERVER_NAME": pki.server_name,
           "PORTWRIGHT_TEMPORAL__CLIENT_CERT": str(pki.path("client.pem")),
           "PORTWRIGHT_TEMPORAL__CLIENT_KEY": str(pki.path("client.key")),
           "PORTWRIGHT_TEMPORAL__API_KEY_ENV": KEY_VAR,
           KEY_VAR: KEY,
           "PORTWRIGHT_TEMPORAL__TASK_QUEUE": f"auth-{uuid.uuid4().hex[:8]}",
           "PORTWRIGHT_TEMPORAL__HEARTBEAT_TIMEOUT": "4",
           "PORTER_KEY": "not-a-secret"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def _waiting_world(make_repo: Callable[[str], GitRepo], httpserver: HTTPServer) -> Path:
    world = temporal_world(make_repo, httpserver, engine_in_config=True,
                           approvals='spec = "never"\nadvance = "always"\npr = "never"\n')
    serve(httpserver, world)
    return world.repo


def test_workers_behind_the_front_run_a_run_and_decisions_name_its_question(
        engine: None, make_repo: Callable[[str], GitRepo], httpserver: HTTPServer,
        start_worker: Callable[..., Worker], front: Front) -> None:
    repo = _waiting_world(make_repo, httpserver)
    workers = [start_worker(repo), start_worker(repo)]
    first = pw(repo, "run", "kv-cache", "--run-id", "auth-1", "--json")
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    parked = final(first)
    assert parked["status"] == "waiting"
    assert parked["waiting"]["action_requests"][0]["name"] == "approve_advance"
    project = Project.load(repo)
    question = asyncio.run(client.view(project, "auth-1")).waiting_id
    assert question

    async def stale() -> str:
        handle = (await connect(project.config.temporal)).get_workflow_handle("auth-1")
        with pytest.raises(WorkflowUpdateFailedError) as caught:
            await handle.execute_update(
                DECIDE_UPDATE, Decide(question="a-question-asked-before",
                                      decision={"type": "approve"}), result_type=int)
        return str(getattr(caught.value.cause, "message", caught.value.cause))

    assert "the question changed" in asyncio.run(stale())
    again = asyncio.run(client.view(project, "auth-1"))
    assert again.status.value == "waiting"
    assert again.waiting_id == question

    answered = pw(repo, "approve", "auth-1", "--json")
    assert answered.returncode == 0, answered.stdout[-2000:] + answered.stderr[-2000:]
    assert final(answered)["status"] == "done"
    assert_once(repo, "auth-1")
    assert all(w.proc.poll() is None for w in workers), [w.output() for w in workers]
    assert any(w.ran("implement", "auth-1", event="node_finished") for w in workers)
    assert front.forwarded > 0
    # a stopped worker does not wait for the polls the service holds open (up to a minute)
    for worker in workers:
        worker.proc.send_signal(signal.SIGTERM)
    for worker in workers:
        assert worker.proc.wait(timeout=15) == 0, worker.output()
        assert any(e.get("event") == "worker_stopped" and e["left"] == []
                   for e in worker.events), worker.output()


def test_a_client_that_asks_for_allow_local_is_refused_by_the_worker(
        engine: None, make_repo: Callable[[str], GitRepo], httpserver: HTTPServer,
        start_worker: Callable[..., Worker]) -> None:
    repo = _waiting_world(make_repo, httpserver)
    start_worker(repo)

    async def start() -> str:
        handle = await (await connect(Project.load(repo).config.temporal)).start_workflow(
            RUN_WORKFLOW, RunRequest(root=str(repo.resolve()), row="kv-cache",
                                     allow_local=True),
            id=f"auth-local-{uuid.uuid4().hex[:6]}",
            task_queue=os.environ["PORTWRIGHT_TEMPORAL__TASK_QUEUE"],
            result_type=RunSnapshot)
        with pytest.raises(WorkflowFailureError) as caught:
            await asyncio.wait_for(handle.result(), timeout=120)
        cause: BaseException | None = caught.value
        messages = []
        while cause is not None:
            messages.append(str(getattr(cause, "message", cause)))
            cause = cause.__cause__ or getattr(cause, "cause", None)
        return " / ".join(messages)

    refused = asyncio.run(start())
    assert "allow_local" in refused
    assert "only the worker decides" in refused


def _plain_repo(make_repo: Callable[[str], GitRepo]) -> Path:
    make_repo("upstream").commit("up", {"a.py": "x = 1\n"})
    down = make_repo("downstream")
    down.commit("cfg", {"portwright.toml": '[upstream]\nsource = "../upstream"\n'})
    return down.path


@pytest.mark.parametrize(("change", "says", "refusal"), [
    ({"PORTWRIGHT_TEMPORAL__API_KEY_ENV": None}, "api_key_env", "no authorization"),
    ({KEY_VAR: "another-key"}, "api_key_env", "wrong key"),
    ({"PORTWRIGHT_TEMPORAL__CLIENT_CERT": None, "PORTWRIGHT_TEMPORAL__CLIENT_KEY": None},
     "client_cert", None),
    ({"PORTWRIGHT_TEMPORAL__CLIENT_CERT": "{stranger.pem}",
      "PORTWRIGHT_TEMPORAL__CLIENT_KEY": "{stranger.key}"}, "client_cert", None),
    ({"PORTWRIGHT_TEMPORAL__SERVER_CA": None}, "server_ca", None),
    ({"PORTWRIGHT_TEMPORAL__TLS": "false", "PORTWRIGHT_TEMPORAL__SERVER_CA": None,
      "PORTWRIGHT_TEMPORAL__SERVER_NAME": None, "PORTWRIGHT_TEMPORAL__CLIENT_CERT": None,
      "PORTWRIGHT_TEMPORAL__CLIENT_KEY": None}, "tls", None),
], ids=["no-key", "wrong-key", "no-client-cert", "cert-of-another-ca", "no-server-ca",
        "no-tls"])
def test_a_client_without_its_credentials_is_refused(
        make_repo: Callable[[str], GitRepo], temporal_env: dict[str, str], pki: PKI,
        front: Front, change: dict[str, str | None], says: str, refusal: str | None) -> None:
    repo = _plain_repo(make_repo)
    env = {**os.environ}
    for name, value in change.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = str(pki.path(value[1:-1])) if value.startswith("{") else value
    refused = len(front.refusals)
    # a worker and a client connect the same way (portwright.dist.client.connect)
    for command in [("worker", "--json") if says == "api_key_env" else ("schedule", "list")]:
        done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *command],
                              capture_output=True, text=True, timeout=120, env=env)
        said = " ".join(done.stderr.split())
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr, done.stderr
        assert f"temporal.{says}" in said, done.stderr
        assert "refused" in said or "not trusted" in said, done.stderr
    if refusal is not None:
        assert front.refusals[refused:] == [refusal]
