"""The port cycle end to end on a real port: worktree, sandbox, gates, roles (scripted)."""

from __future__ import annotations

from typing import Any

import pytest

from portwright.project import Project
from portwright.runs.models import EvidenceKind
from portwright.vcs import plumbing
from portwright.workflows import driver
from portwright.workflows.state import RunStatus
from tests.conftest import docker_engine_running
from tests.workflows.conftest import CycleWorld
from tests.workflows.porter import porter

pytestmark = pytest.mark.docker


@pytest.fixture(autouse=True)
def _engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def test_a_row_goes_from_gap_to_a_reviewable_branch(cycle_world: CycleWorld) -> None:
    project = Project.load(cycle_world.repo, at="HEAD")
    events: list[dict[str, Any]] = []
    head_before = cycle_world.downstream.head()
    result = driver.start(project, "kv-cache", events.append, run_id="r1",
                          client=porter(cycle_world.plan()))
    assert result.status is RunStatus.DONE, result.values["reason"]
    # the user's checkout is untouched; the work is on the run's branch
    assert cycle_world.downstream.head() == head_before
    assert cycle_world.downstream.git("status", "--porcelain") == ""
    branch = result.values["branch"]
    log = cycle_world.downstream.git("log", "--format=%s%n%b", branch)
    assert "Portwright-Step: tests-1" in log
    assert "Portwright-Step: implement-1" in log
    store = project.store("r1")
    reds = store.records(EvidenceKind.RED)
    greens = store.records(EvidenceKind.GREEN)
    assert reds[-1].tests_failed  # observed failing on the tests-only commit
    assert greens[-1].passed
    assert reds[-1].commit == result.values["red_commit"]
    assert [e["node"] for e in events if e["event"] == "node_finished"][-1] == "open_pr"
    body = (project.run_dir("r1") / "pr.md").read_text()
    for heading in ("## Gap verdict", "## Surface", "## Evidence", "## Review",
                    "## Model use", "## Timeline"):
        assert heading in body
    matrix = plumbing.show(cycle_world.repo, branch, "docs/parity/kernels.md")
    assert matrix is not None
    assert b"| kv-cache | KV cache | ported |" in matrix
