"""A run's sandbox opens on a thread of its own while the gap is verified: the node that
needs it first takes that one, a sandbox no node took is closed with the run, and what
stopped it opening is raised where it is used, not before."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from portwright.errors import PortwrightError
from portwright.project import Project
from portwright.sandboxes.engine import LABEL_RUN
from portwright.workflows import driver
from portwright.workflows.context import open_run
from portwright.workflows.state import RunStatus
from tests.conftest import GitRepo, docker_engine_running
from tests.workflows.conftest import build_world
from tests.workflows.porter import porter

pytestmark = pytest.mark.docker

AHEAD = "ahead of its first use"


@pytest.fixture(autouse=True)
def _engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def _containers(run_id: str) -> list[str]:
    client = docker.from_env()
    try:
        return [c.id for c in client.containers.list(
            all=True, filters={"label": f"{LABEL_RUN}={run_id}"})]
    finally:
        client.close()


def _owners(root: Path) -> set[int]:
    return {os.lstat(Path(d) / name).st_uid for d, dirs, files in os.walk(root)
            if ".git" not in Path(d).parts for name in [*dirs, *files]}


def test_the_sandbox_warmed_is_the_one_the_run_uses(make_repo: Callable[[str], GitRepo]
                                                    ) -> None:
    world = build_world(make_repo)
    owners = _owners(world.repo)
    project = Project.load(world.repo, at="HEAD")
    with open_run(project, "test", run_id="warm-used") as ctx:
        ctx.warm_sandbox()
        ctx.warm_sandbox()  # opening already: nothing more
        box = ctx.sandbox()
        assert ctx.sandbox() is box
        done = box.exec(["sh", "-c", "echo inside > made.txt && cat made.txt"])
        assert done.ok, done.stderr_tail
        assert len(_containers("warm-used")) == 1
    assert _containers("warm-used") == []
    assert _owners(world.repo) == owners  # the worktree given back


def test_a_sandbox_warmed_and_never_used_is_closed_with_the_run(
        make_repo: Callable[[str], GitRepo]) -> None:
    world = build_world(make_repo)
    owners = _owners(world.repo)
    project = Project.load(world.repo, at="HEAD")
    with open_run(project, "test", run_id="warm-unused") as ctx:
        ctx.warm_sandbox()
    assert _containers("warm-unused") == []
    assert _owners(world.repo) == owners


def test_what_stops_a_warmed_sandbox_is_raised_where_it_is_used(
        make_repo: Callable[[str], GitRepo]) -> None:
    world = build_world(make_repo)
    world.downstream.commit("an image that is not there", {
        "portwright.toml": (world.repo / "portwright.toml").read_text().replace(
            'memory = "512m"', 'memory = "512m"\nimage = "portwright/absent:nowhere"')})
    project = Project.load(world.repo, at="HEAD")
    with open_run(project, "test", run_id="warm-broken") as ctx:
        ctx.warm_sandbox()  # no error yet: nothing needs it
    with open_run(project, "test", run_id="warm-broken-2") as ctx:
        ctx.warm_sandbox()
        with pytest.raises(PortwrightError, match="absent"):
            ctx.sandbox()
    assert _containers("warm-broken") == _containers("warm-broken-2") == []


def test_the_cycle_opens_its_sandbox_while_the_gap_is_verified(
        make_repo: Callable[[str], GitRepo], caplog: pytest.LogCaptureFixture) -> None:
    world = build_world(make_repo)
    project = Project.load(world.repo, at="HEAD")
    with caplog.at_level(logging.INFO, logger="portwright.workflows.context"):
        result = driver.start(project, "kv-cache", lambda event: None, run_id="warm-cycle",
                              client=porter(world.plan()))
    assert result.status is RunStatus.DONE, result.values["reason"]
    assert any(AHEAD in r.getMessage() for r in caplog.records)
    assert _containers("warm-cycle") == []


def test_a_run_that_waits_for_the_spec_opens_no_sandbox_before(
        make_repo: Callable[[str], GitRepo], caplog: pytest.LogCaptureFixture) -> None:
    world = build_world(make_repo, approvals='spec = "always"\nadvance = "never"\n'
                                             'pr = "never"\n')
    project = Project.load(world.repo, at="HEAD")
    with caplog.at_level(logging.INFO, logger="portwright.workflows.context"):
        result = driver.start(project, "kv-cache", lambda event: None, run_id="warm-wait",
                              client=porter(world.plan()))
    assert result.status is RunStatus.WAITING, result.values["reason"]
    assert not any(AHEAD in r.getMessage() for r in caplog.records)
    assert _containers("warm-wait") == []


def test_a_context_of_one_node_opens_nothing_ahead(make_repo: Callable[[str], GitRepo],
                                                   caplog: pytest.LogCaptureFixture) -> None:
    """A Temporal activity opens the run's context for one node and closes it when the node
    ends: a sandbox opened ahead there would be closed unused by every node that asks."""
    pytest.importorskip("temporalio")
    from portwright.dist.activities import run_context
    from portwright.dist.models import RunRef

    world = build_world(make_repo)
    ref = RunRef(root=str(world.repo), run_id="one-node", base=world.downstream.head(),
                 command="run kv-cache")
    with caplog.at_level(logging.INFO, logger="portwright.workflows.context"):
        with run_context(ref) as ctx:
            ctx.warm_sandbox()
            assert not ctx.open_ahead
            assert _containers("one-node") == []
        with open_run(Project.load(world.repo, at="HEAD"), "test", run_id="one-node-2",
                      open_ahead=False) as ctx:
            ctx.warm_sandbox()
            assert _containers("one-node-2") == []
            assert ctx.sandbox().exec(["true"]).ok  # opened on use, as before
    assert not any(AHEAD in r.getMessage() for r in caplog.records)
    assert _containers("one-node") == _containers("one-node-2") == []
