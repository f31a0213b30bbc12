"""`portwright sync` as a user runs it: a real subprocess, the real openai SDK against a
local scripted endpoint, the real Docker sandbox; kill -9 in the middle of the range, then
`portwright resume SYNC` and `portwright sync --to REV` again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable

import pytest
from pytest_httpserver import HTTPServer

from tests.conftest import GitRepo, docker_engine_running
from tests.workflows.fake_server import model_config, serve_model
from tests.workflows.sync_world import SyncWorld, build_sync_world
from tests.workflows.test_cli import final, pw
from tests.workflows.test_sync import check_complete, pin_on

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def served(make_repo: Callable[[str], GitRepo], server: HTTPServer, **kwargs: str) -> SyncWorld:
    world = build_sync_world(make_repo, **kwargs)
    config = (world.repo / "portwright.toml").read_text() + model_config(server)
    world.downstream.commit("model endpoint", {"portwright.toml": config})
    serve_model(server, world.model())
    return world


def test_kill_mid_range_then_resume(make_repo: Callable[[str], GitRepo],
                                    httpserver: HTTPServer) -> None:
    world = served(make_repo, httpserver)
    env = {**os.environ, "PORTER_KEY": "not-a-secret"}
    proc = subprocess.Popen([sys.executable, "-m", "portwright", "-C", str(world.repo), "sync",
                             "--to", world.head, "--sync-id", "sync-k", "--concurrency", "1",
                             "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    killed = False
    for line in proc.stdout:
        if line.startswith('{"event"') and json.loads(line)["event"] == "port_finished":
            os.kill(proc.pid, signal.SIGKILL)  # one port run done, the others not
            killed = True
            break
    proc.wait(timeout=120)
    proc.stdout.close()
    assert killed, "no port run finished"
    assert proc.returncode == -signal.SIGKILL

    done = pw(world.repo, "resume", "sync-k", "--json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert final(done)["status"] == "done", done.stdout[-3000:]
    state = json.loads(pw(world.repo, "report", "sync-k", "--json", check=True).stdout)["state"]
    check_complete(world, state)

    again = pw(world.repo, "sync", "--to", world.head, "--json")
    assert again.returncode == 0, again.stderr[-2000:]
    assert final(again)["sync_id"] == "sync-k"
    state = json.loads(pw(world.repo, "report", "sync-k", "--json", check=True).stdout)["state"]
    check_complete(world, state)
    status = json.loads(pw(world.repo, "status", "sync-k", "--json", check=True).stdout)
    assert [c["account"] for c in status["commits"]] == [
        "not_applicable", "ported", "landed", "ported", "ported", "not_applicable"]
    assert status["pin_moved"] is True
    runs = json.loads(pw(world.repo, "runs", "--json", check=True).stdout)
    assert sorted(r["row"] for r in runs) == ["kv-cache", "kv-evict", "kv-util"]


def test_red_gate_exit_code_and_holds(make_repo: Callable[[str], GitRepo],
                                      httpserver: HTTPServer) -> None:
    red = ('\n[[gate]]\nname = "evict-bench"\nrun = "python3 -c \'raise SystemExit(3)\'"\n'
           'phases = ["full"]\npaths = ["kv/evict.py"]\n')
    world = served(make_repo, httpserver, extra_gates=red, bounds="implement_attempts = 1\n")
    done = pw(world.repo, "sync", "--to", world.head, "--sync-id", "sync-r", "--json")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    outcome = final(done)
    assert outcome["status"] == "blocked"
    assert outcome["pin_moved"] is False
    held = [c for c in outcome["commits"] if c["hold"]]
    assert [c["commit"] for c in held] == [world.shas["evict"][:12]]
    assert "full/evict-bench" in held[0]["hold"]
    assert pin_on(world, outcome["branch"]) == world.pin
    text = pw(world.repo, "status", "sync-r").stdout
    assert world.shas["evict"][:12] in text
    assert "evict-bench" in text
