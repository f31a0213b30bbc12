"""Evidence is bound to its run: records replayed from another run, moved out of order or
run on another tree are refused (forged green through replayed records)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from portwright.gates.checks import check_red_green
from portwright.gates.command import run_command
from portwright.project import Project
from portwright.runs import RunStore
from portwright.runs.models import EvidenceKind
from portwright.runs.store import UntrustedEvidence
from portwright.sandboxes.local import LocalSandbox
from tests.gates.test_runner import (
    IDS,
    IGNORE,
    KV,
    KV_TEST,
    PYTEST,
    TESTS,
    _focused,
    _red_then_green,
)
from tests.parity.world import World


def test_records_copied_from_another_run_are_refused(world: World, sandbox: LocalSandbox,
                                                     store: RunStore) -> None:
    _red_then_green(world, sandbox, store)
    assert check_red_green(world.repo, store, tests=TESTS).passed
    other = Project(world.repo, world.config()).store("run-2")
    other.evidence_dir.mkdir(parents=True)
    shutil.copytree(store.logs_dir, other.logs_dir)
    for path in store.evidence_dir.iterdir():
        shutil.copy(path, other.evidence_dir / path.name)
    with pytest.raises(UntrustedEvidence, match="copied from another run"):
        other.records()
    verdict = check_red_green(world.repo, other, tests=TESTS)
    assert not verdict.passed
    assert "copied from another run" in verdict.messages[0]


def test_records_moved_out_of_order_are_refused(world: World, sandbox: LocalSandbox,
                                                store: RunStore) -> None:
    _red_then_green(world, sandbox, store)
    red_file = sorted(store.evidence_dir.iterdir())[0]
    red_file.rename(store.evidence_dir / "0009-focused.json")
    verdict = check_red_green(world.repo, store, tests=TESTS)
    assert not verdict.passed
    assert "moved or replayed out of order" in verdict.messages[0]


def test_red_observed_after_green_is_refused(world: World, sandbox: LocalSandbox,
                                             store: RunStore) -> None:
    """A real red on the tests-only commit, observed only after the green: the order the
    framework saw is what counts."""
    world.downstream.commit("port kv tests", {"tests/test_kv.py": KV_TEST})
    tests_only = world.downstream.head()
    world.downstream.commit("implement kv", {"kv.py": KV})
    _focused(world, sandbox, store, EvidenceKind.GREEN)
    world.downstream.git("checkout", "-q", tests_only)
    _focused(world, sandbox, store, EvidenceKind.RED)
    verdict = check_red_green(world.repo, store, tests=TESTS)
    assert not verdict.passed
    assert any("observed after green" in m for m in verdict.messages)


def test_records_must_be_on_this_runs_commits(world: World, sandbox: LocalSandbox,
                                              store: RunStore) -> None:
    _red_then_green(world, sandbox, store)
    red, green = store.records(EvidenceKind.RED)[-1], store.records(EvidenceKind.GREEN)[-1]
    assert red.tests_failed == IDS
    assert check_red_green(world.repo, store, tests=TESTS, red_commit=red.commit,
                           green_commit=green.commit).passed
    verdict = check_red_green(world.repo, store, tests=TESTS, red_commit=green.commit,
                              green_commit=green.commit)
    assert not verdict.passed
    assert any("not on this run's red commit" in m for m in verdict.messages)


def test_records_carry_run_phase_sequence_and_tree(world: World, sandbox: LocalSandbox,
                                                   store: RunStore) -> None:
    _red_then_green(world, sandbox, store)
    red, green = store.records()
    assert (red.run_id, red.seq, green.run_id, green.seq) == ("run-1", 1, "run-1", 2)
    tree = world.downstream.git("rev-parse", f"{green.commit}^{{tree}}")
    assert green.tree == tree
    assert not green.dirty
    (world.repo / "untracked.py").write_text("x = 1\n")
    _focused(world, sandbox, store, EvidenceKind.GREEN)
    dirty = store.records()[-1]
    assert dirty.dirty  # an untracked file makes the tree dirty
    assert dirty.tree != tree


def test_store_never_writes_through_a_link(tmp_path: Path, world: World,
                                           sandbox: LocalSandbox) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("keep\n")
    store = Project(world.repo, world.config()).store("run-link")
    store.logs_dir.mkdir(parents=True)
    store.evidence_dir.mkdir(parents=True)
    (store.logs_dir / "0001-focused.log").symlink_to(target)
    (store.evidence_dir / "0001-focused.json").symlink_to(target)
    _focused(world, sandbox, store, EvidenceKind.GREEN)
    assert target.read_text() == "keep\n"
    problems = store.untrusted()
    assert [p.file for p in problems] == [str(store.evidence_dir / "0001-focused.json")]
    assert "not a regular file" in problems[0].message


SUITE = f"{PYTEST} tests/test_kv.py tests/test_other.py --junitxml=build/junit.xml"
OTHER = "def test_other():\n    assert 1 + 1 == 2\n"


def _suite(world: World, sandbox: LocalSandbox, store: RunStore, kind: EvidenceKind) -> None:
    run_command(sandbox, SUITE, repo=world.repo, name="suite", kind=kind,
                junit="build/junit.xml", store=store)


def test_a_whole_suite_as_focused_gate_counts_only_what_failed(
        world: World, sandbox: LocalSandbox, store: RunStore) -> None:
    """Tests that passed in red pass in green too: not a mismatch. A test green ran that red
    never ran is."""
    world.downstream.commit("port kv tests", {"tests/test_kv.py": KV_TEST,
                                              "tests/test_other.py": OTHER,
                                              ".gitignore": IGNORE})
    _suite(world, sandbox, store, EvidenceKind.RED)
    world.downstream.commit("implement kv", {"kv.py": KV})
    _suite(world, sandbox, store, EvidenceKind.GREEN)
    red = store.records(EvidenceKind.RED)[-1]
    assert red.tests_passed  # the rest of the suite passed in red already
    verdict = check_red_green(world.repo, store, tests=TESTS)
    assert verdict.passed, verdict.messages


def test_a_test_only_green_ran_is_refused(world: World, sandbox: LocalSandbox,
                                          store: RunStore) -> None:
    world.downstream.commit("port kv tests", {"tests/test_kv.py": KV_TEST,
                                              "tests/test_other.py": OTHER,
                                              ".gitignore": IGNORE})
    _focused(world, sandbox, store, EvidenceKind.RED)
    world.downstream.commit("implement kv", {"kv.py": KV})
    _suite(world, sandbox, store, EvidenceKind.GREEN)
    verdict = check_red_green(world.repo, store, tests=TESTS)
    assert not verdict.passed
    assert any("passing in green but never run in red" in m for m in verdict.messages)
