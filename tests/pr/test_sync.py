"""The pin sync's pull request on the configured backend: a real sync (worktrees, Docker
sandbox, port runs of the real cycle, scripted roles) whose branch is pushed to the fake
GitHub and opened as a pull request, ``portwright pr SYNC`` updating that same pull
request, and a sync held by ``[approvals] pr = "always"`` that ``portwright pr SYNC``
publishes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from portwright.errors import UsageError
from portwright.project import Project
from portwright.workflows import sync_driver
from portwright.workflows.sync_state import SyncStatus
from tests.conftest import GitRepo, docker_engine_running
from tests.pr.fake_github import FakeGitHub
from tests.workflows.sync_world import SyncWorld, build_sync_world

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(autouse=True)
def _engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def on_github(make_repo: Callable[[str], GitRepo], github: FakeGitHub,
              approvals: str) -> SyncWorld:
    world = build_sync_world(make_repo, approvals=approvals)
    config = (world.repo / "portwright.toml").read_text() + (
        f'\n[pr]\nbackend = "github"\nrepository = "{github.repository}"\n'
        f'api_url = "{github.api_url}"\nlabels = ["pin"]\n')
    world.downstream.commit("pull requests on GitHub", {"portwright.toml": config})
    github.seed(world.repo)
    return world


def test_a_sync_opens_its_pull_request_and_portwright_pr_updates_it(
        make_repo: Callable[[str], GitRepo], github: FakeGitHub) -> None:
    world = on_github(make_repo, github, 'spec = "never"\nadvance = "never"\npr = "never"\n')
    project = Project.load(world.repo, at="HEAD")
    events: list[dict[str, object]] = []
    done = sync_driver.start(project, world.head, events.append, sync_id="sync-gh",
                             client=world.model())
    assert done.status is SyncStatus.DONE, done.values["reason"]
    by_head = {p.head: p for p in github.pulls}
    # one pull request per port run, and the pin advance's own
    assert sorted(by_head) == sorted([*(p["branch"] for p in done.values["ports"].values()),
                                      "portwright/sync-gh"])
    pull = by_head["portwright/sync-gh"]
    assert (pull.base, pull.labels) == ("main", ["pin"])
    assert pull.title == f"Move the upstream pin to {world.head[:12]}"
    assert pull.body.startswith("# portwright sync `sync-gh`")
    assert done.values["pr_number"] == pull.number
    assert done.values["pr_url"].endswith(f"/pull/{pull.number}")
    assert github.branch_head("portwright/sync-gh") == world.downstream.git(
        "rev-parse", "portwright/sync-gh")
    assert (project.run_dir("sync-gh") / "pr.json").is_file()

    again = sync_driver.publish(project, "sync-gh", events.append)
    assert again.status is SyncStatus.DONE
    assert again.values["pr_number"] == pull.number
    assert len(github.pulls) == 4
    assert [op for op, _ in github.calls].count("pulls/create") == 4


def test_a_sync_held_for_approval_is_published_by_portwright_pr(
        make_repo: Callable[[str], GitRepo], github: FakeGitHub) -> None:
    # port runs publish on their own (their approvals say never); the sync is asked first
    world = on_github(make_repo, github, 'spec = "never"\nadvance = "never"\npr = "never"\n')
    project = Project.load(world.repo, at="HEAD")
    held = project.config.model_copy(update={"approvals": project.config.approvals.model_copy(
        update={"pr": "always"})})
    done = sync_driver.start(replace(project, config=held), world.head, lambda e: None,
                             sync_id="sync-held", client=world.model())
    assert done.status is SyncStatus.DONE, done.values["reason"]
    assert done.values["pr_url"] == ""
    assert "portwright/sync-held" not in {p.head for p in github.pulls}
    assert (project.run_dir("sync-held") / "pr.md").is_file()

    published = sync_driver.publish(project, "sync-held", lambda e: None)
    assert published.status is SyncStatus.DONE
    assert published.values["pr_url"].endswith(f"/pull/{published.values['pr_number']}")
    assert "portwright/sync-held" in {p.head for p in github.pulls}


def test_portwright_pr_refuses_a_sync_that_did_not_move_the_pin(
        make_repo: Callable[[str], GitRepo]) -> None:
    red = ('\n[[gate]]\nname = "evict-bench"\nrun = "python3 -c \'raise SystemExit(3)\'"\n'
           'phases = ["full"]\npaths = ["kv/evict.py"]\n')
    world = build_sync_world(make_repo, extra_gates=red, bounds="implement_attempts = 1\n")
    project = Project.load(world.repo, at="HEAD")
    result = sync_driver.start(project, world.head, lambda e: None, sync_id="sync-red",
                               client=world.model())
    assert result.status is SyncStatus.BLOCKED
    assert result.values["pr_url"] == ""
    assert (project.run_dir("sync-red") / "pr.md").is_file()
    assert not (project.run_dir("sync-red") / "pr.json").exists()
    with pytest.raises(UsageError, match="has not moved the pin"):
        sync_driver.publish(project, "sync-red", lambda e: None)
