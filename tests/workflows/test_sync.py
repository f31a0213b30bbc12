"""`portwright sync --to REV` end to end on a generated upstream range: real git repos,
the real Docker sandbox, port runs of the real cycle; only the model is scripted."""

from __future__ import annotations

import collections
import re
from collections.abc import Callable
from typing import Any

import pytest

from portwright.parity.ledger import parse_ledger
from portwright.parity.pin import MarkdownPinStore
from portwright.project import Project
from portwright.vcs import plumbing
from portwright.workflows import sync_driver
from portwright.workflows.sync_state import SyncStatus
from tests.conftest import GitRepo, docker_engine_running
from tests.workflows.sync_world import SyncWorld, build_sync_world

pytestmark = [pytest.mark.docker, pytest.mark.slow]

PIN_PATTERN = r"Pinned commit: `(?P<sha>[0-9a-f]{7,40})`"


@pytest.fixture(autouse=True)
def _engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def pin_on(world: SyncWorld, branch: str) -> str:
    text = plumbing.show(world.repo, branch, "upstream-sync.md")
    assert text is not None
    store = MarkdownPinStore(world.repo / "upstream-sync.md", PIN_PATTERN)
    return store.locate(text.decode()).sha


def ledger_on(world: SyncWorld, branch: str) -> str:
    text = plumbing.show(world.repo, branch, "parity-ledger.md")
    assert text is not None
    return text.decode()


def step_counts(world: SyncWorld, branch: str) -> collections.Counter[str]:
    bodies = plumbing.git(world.repo, "log", "--format=%b%x00", branch).decode().split("\0")
    return collections.Counter(
        f"{run}/{step}" for body in bodies
        for run, step in re.findall(r"Portwright-Run: (\S+)\nPortwright-Step: (\S+)", body))


def check_complete(world: SyncWorld, values: dict[str, Any]) -> None:
    """The pin moved on the sync's branch; every commit is in the ledger once, with its
    evidence; each missing commit has its own port (branch + PR body); nothing twice."""
    project = Project.load(world.repo)
    branch = values["branch"]
    assert pin_on(world, branch) == world.head
    assert pin_on(world, "main") == world.pin  # the user's checkout is untouched
    ledger = ledger_on(world, branch)
    entries, problems = parse_ledger(ledger, "parity-ledger.md")
    assert problems == []
    for name, sha in world.shas.items():
        mine = [e for e in entries if e.commit == sha[:12]]
        assert len(mine) == 1, (name, ledger)
        assert mine[0].notes, name  # the evidence, in words
    kinds = {name: next(e.kind.value for e in entries if e.commit == sha[:12])
             for name, sha in world.shas.items()}
    assert kinds == {"docs": "not-applicable", "ci": "not-applicable", "util": "port",
                     "cache": "port", "evict": "port", "tune": "port"}
    landed = next(e for e in entries if e.commit == world.shas["util"][:12])
    assert landed.change == "kv/util.py"
    by_sha = {c["sha"]: c for c in values["commits"]}
    assert by_sha[world.shas["tune"]]["decided_by"] == "gap_verifier"
    assert by_sha[world.shas["util"]]["account"] == "landed"
    ports = values["ports"]
    assert sorted(ports) == ["kv-cache", "kv-evict", "kv-util"]
    for row, port in ports.items():
        assert port["status"] == "done", port
        body = (project.run_dir(port["run_id"]) / "pr.md").read_text()
        assert body.count("# portwright run") == 1
        assert f"`{row}`" in body
        assert plumbing.run(world.repo, "rev-parse", "--verify", "--quiet",
                            port["branch"]).returncode == 0
        steps = step_counts(world, port["branch"])
        assert max(steps.values()) == 1, steps
    steps = step_counts(world, branch)
    assert max(steps.values()) == 1, steps
    assert (project.run_dir(values["sync_id"]) / "pr.md").read_text().count(
        "# portwright sync") == 1
    # the pull request went through the [pr] backend (local: the body in the sync's folder)
    assert values["pr_url"] == (project.run_dir(values["sync_id"]) / "pr.md").as_uri()
    assert (project.run_dir(values["sync_id"]) / "pr.json").is_file()


def test_sync_ports_what_is_missing_and_moves_the_pin(
        make_repo: Callable[[str], GitRepo]) -> None:
    world = build_sync_world(make_repo)
    project = Project.load(world.repo, at="HEAD")
    events: list[dict[str, Any]] = []
    result = sync_driver.start(project, world.head, events.append, sync_id="sync-a",
                               concurrency=2, client=world.model())
    assert result.status is SyncStatus.DONE, [
        (c["subject"], c["account"], c["hold"]) for c in result.values["commits"]]
    assert world.confirmed == [world.shas["tune"]], [  # only the uncertain one was asked
        (c["subject"], c["scan"], c["decided_by"]) for c in result.values["commits"]]
    check_complete(world, result.values)
    assert {e["row"] for e in events if e["event"] == "port_started"} == {
        "kv-cache", "kv-evict", "kv-util"}
    gates = result.values["gates"]
    assert {g["name"] for g in gates} == {"tests", "anchors"}
    assert all(g["passed"] for g in gates)
    # again: nothing is redone, nothing is written twice
    again = sync_driver.start(project, world.head, events.append, client=world.model())
    assert again.sync_id == "sync-a"
    assert again.status is SyncStatus.DONE
    check_complete(world, again.values)


def test_a_red_gate_holds_the_pin_and_says_which_commit(
        make_repo: Callable[[str], GitRepo]) -> None:
    red = ('\n[[gate]]\nname = "evict-bench"\nrun = "python3 -c \'raise SystemExit(3)\'"\n'
           'phases = ["full"]\npaths = ["kv/evict.py"]\n')
    world = build_sync_world(make_repo, extra_gates=red, bounds="implement_attempts = 1\n")
    project = Project.load(world.repo, at="HEAD")
    result = sync_driver.start(project, world.head, lambda e: None, sync_id="sync-red",
                               client=world.model())
    assert result.status is SyncStatus.BLOCKED
    assert pin_on(world, result.values["branch"]) == world.pin
    by_sha = {c["sha"]: c for c in result.values["commits"]}
    evict = by_sha[world.shas["evict"]]
    assert evict["account"] == "blocked"
    assert "full/evict-bench" in evict["hold"]
    held = [c for c in result.values["commits"] if c["hold"]]
    assert [c["sha"] for c in held] == [world.shas["evict"]]
    report = (project.run_dir("sync-red") / "pr.md").read_text()
    assert world.shas["evict"][:12] in report
    assert "evict-bench" in report
    assert "not moved" in report


def test_a_sync_to_the_pin_itself_moves_nothing_and_says_so(
        make_repo: Callable[[str], GitRepo]) -> None:
    world = build_sync_world(make_repo)
    project = Project.load(world.repo, at="HEAD")
    result = sync_driver.start(project, world.pin, lambda e: None, sync_id="sync-none",
                               client=world.model())
    assert result.status is SyncStatus.DONE
    assert result.values["commits"] == []
    assert "already at" in result.values["reason"]
    assert not result.values.get("pr_url")
    assert pin_on(world, result.values["branch"]) == world.pin
    report = (project.run_dir("sync-none") / "pr.md").read_text()
    assert "nothing to move" in report
    assert "moved to" not in report


def test_port_runs_parked_at_an_approval_then_the_sync_picks_up(
        make_repo: Callable[[str], GitRepo]) -> None:
    from portwright.workflows import driver

    world = build_sync_world(make_repo, approvals='spec = "never"\nadvance = "always"\n'
                                                  'pr = "never"\n')
    project = Project.load(world.repo, at="HEAD")
    parked = sync_driver.start(project, world.head, lambda e: None, sync_id="sync-ask",
                               client=world.model())
    assert parked.status is SyncStatus.WAITING
    waiting = [c for c in parked.values["commits"] if c["account"] == "waiting"]
    assert len(waiting) == 3
    assert all("portwright approve" in c["hold"] for c in waiting)
    assert pin_on(world, parked.values["branch"]) == world.pin
    for port in parked.values["ports"].values():
        answered = driver.answer(project, port["run_id"], {"type": "approve"}, lambda e: None,
                                 client=world.model())
        assert answered.status.value == "done"
    done = sync_driver.resume(project, "sync-ask", lambda e: None, client=world.model())
    assert done.status is SyncStatus.DONE, done.values["reason"]
    check_complete(world, done.values)
