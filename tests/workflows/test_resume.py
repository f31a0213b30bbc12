"""Crash safety: kill -9 of `portwright run` after each node of the cycle, then
`portwright resume`: the run completes with no duplicated commit, ledger row, PR body or
sandbox container."""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable

import pytest
from pytest_httpserver import HTTPServer

from portwright.project import Project
from portwright.vcs import plumbing
from tests.conftest import GitRepo, docker_engine_running
from tests.workflows.test_cli import final, pw, world

pytestmark = [pytest.mark.docker, pytest.mark.slow]

NODES = ["prepare", "verify_gap", "enumerate_surface", "write_spec", "check_spec",
         "approve_spec", "port_tests", "capture_red", "implement", "focused_green",
         "full_gate", "review", "reconcile", "check_reconciled", "approve_advance", "commit",
         "approve_pr"]


@pytest.mark.parametrize("node", NODES)
def test_kill_after_each_node_then_resume(node: str, make_repo: Callable[[str], GitRepo],
                                          httpserver: HTTPServer) -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")
    w = world(make_repo, httpserver)
    run_id = f"kill-{node.replace('_', '-')}"
    env = {**os.environ, "PORTER_KEY": "not-a-secret"}
    proc = subprocess.Popen([sys.executable, "-m", "portwright", "-C", str(w.repo), "run",
                             "kv-cache", "--run-id", run_id, "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    killed = False
    for line in proc.stdout:
        if line.startswith("{\"event\""):
            event = json.loads(line)
            if event["event"] == "step_done" and event["node"] == node:
                os.kill(proc.pid, signal.SIGKILL)
                killed = True
                break
    proc.wait(timeout=120)
    proc.stdout.close()
    assert killed, f"the run never finished {node}"
    assert proc.returncode == -signal.SIGKILL

    done = pw(w.repo, "resume", run_id, "--json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert final(done)["status"] == "done", done.stdout[-3000:]

    project = Project.load(w.repo)
    branch = f"portwright/{run_id}"
    bodies = plumbing.git(w.repo, "log", "--format=%b%x00", branch).decode().split("\0")
    steps = collections.Counter(line.removeprefix("Portwright-Step: ") for body in bodies
                                for line in body.splitlines()
                                if line.startswith("Portwright-Step: "))
    assert steps
    assert max(steps.values()) == 1, steps
    ledger = plumbing.show(w.repo, branch, "parity-ledger.md")
    assert ledger is not None
    changes = [row.split("|")[1].strip() for row in ledger.decode().splitlines()
               if row.startswith("| ") and not row.startswith(("| change", "| ---"))]
    assert len(changes) == len(set(changes)), changes
    body = (project.run_dir(run_id) / "pr.md").read_text()
    assert body.count("# portwright run") == 1
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=portwright.run={run_id}"],
                          capture_output=True, text=True, check=True).stdout.split()
    assert left == []
