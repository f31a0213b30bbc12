"""Command gates in a real sandbox, evidence records, red-green from recorded evidence."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from portwright.config import SandboxConfig
from portwright.errors import RulesError
from portwright.gates import run_command, run_gates
from portwright.gates.checks import check_red_green
from portwright.rules import load_rules
from portwright.runs import EvidenceKind, RunStore
from portwright.runs.keys import evidence_key_dir
from portwright.sandboxes import LocalSandbox
from tests.conftest import docker_engine_running
from tests.parity.world import World

TESTS = ["tests/**"]
KV_TEST = (
    "def test_alloc():\n    import kv\n    assert kv.alloc(2) == [0, 0]\n\n\n"
    "def test_alloc_empty():\n    import kv\n    assert kv.alloc(0) == []\n"
)
KV = "def alloc(n):\n    return [0] * n\n"
PYTEST = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -rA -p no:cacheprovider"
FOCUSED = f"{PYTEST} tests/test_kv.py --junitxml=build/junit.xml"
IGNORE = ".portwright/\nbuild/\n__pycache__/\n"
IDS = ["tests.test_kv::test_alloc", "tests.test_kv::test_alloc_empty"]


def _focused(world: World, sandbox: LocalSandbox, store: RunStore, kind: EvidenceKind) -> None:
    run_command(sandbox, FOCUSED, repo=world.repo, name="focused", kind=kind,
                junit="build/junit.xml", store=store)


def _red_then_green(world: World, sandbox: LocalSandbox, store: RunStore,
                    green_files: dict[str, str] | None = None) -> None:
    world.downstream.commit("port kv tests", {"tests/test_kv.py": KV_TEST,
                                              ".gitignore": IGNORE})
    _focused(world, sandbox, store, EvidenceKind.RED)
    world.downstream.commit("implement kv", {"kv.py": KV, **(green_files or {})})
    _focused(world, sandbox, store, EvidenceKind.GREEN)


def test_red_green_passes_and_records_evidence(world: World, sandbox: LocalSandbox,
                                               store: RunStore) -> None:
    _red_then_green(world, sandbox, store)
    red, green = store.records(EvidenceKind.RED)[0], store.records(EvidenceKind.GREEN)[0]
    assert red.exit_code != 0
    assert red.tests_failed == IDS
    assert green.tests_passed == IDS
    assert green.exit_code == 0
    assert red.commit != green.commit
    assert green.commit == world.downstream.head()
    assert store.log_digest(red) == red.log_sha256
    files = sorted(p.name for p in store.evidence_dir.iterdir())
    assert files == ["0001-focused.json", "0003-focused.json"] or len(files) == 2
    verdict = check_red_green(world.repo, store, tests=TESTS)
    assert verdict.passed, verdict.messages


def test_forged_red_record(world: World, sandbox: LocalSandbox, store: RunStore) -> None:
    world.downstream.commit("port kv tests", {"tests/test_kv.py": KV_TEST})
    red_commit = world.downstream.head()
    world.downstream.commit("implement kv", {"kv.py": KV})
    _focused(world, sandbox, store, EvidenceKind.GREEN)
    green = store.records()[0]
    forged = green.model_copy(update={"kind": EvidenceKind.RED, "exit_code": 1,
                                      "passed": False, "tests_failed": IDS,
                                      "tests_passed": [], "commit": red_commit})
    store.add(forged)
    verdict = check_red_green(world.repo, store, tests=TESTS)
    assert not verdict.passed
    assert verdict.messages == [
        "run-1/red record (focused): the test ids recorded are not those in its log (edited "
        "or forged evidence)",
        "red record #2 was observed after green record #1: red must come first, on the tree "
        "without the implementation"]


def test_edited_log_is_detected(world: World, sandbox: LocalSandbox, store: RunStore) -> None:
    _red_then_green(world, sandbox, store)
    red = store.records(EvidenceKind.RED)[0]
    assert red.log is not None
    (store.dir / red.log).write_text("1 failed\n")
    assert check_red_green(world.repo, store, tests=TESTS).messages == [
        "run-1/red record (focused): the log does not match the digest recorded (edited or "
        "forged evidence)"]


def test_test_file_changed_between_red_and_green(world: World, sandbox: LocalSandbox,
                                                 store: RunStore) -> None:
    _red_then_green(world, sandbox, store, {"tests/test_kv.py": KV_TEST.replace(
        "    assert kv.alloc(0) == []\n", "    kv.alloc(0)\n")})
    messages = check_red_green(world.repo, store, tests=TESTS).messages
    assert messages == [f"tests/test_kv.py:1: test file changed between red "
                        f"({store.records()[0].commit[:12]}) and green "
                        f"({world.downstream.head()[:12]})"]


def test_red_that_passes_proves_nothing(world: World, sandbox: LocalSandbox,
                                        store: RunStore) -> None:
    world.downstream.commit("all at once", {"tests/test_kv.py": KV_TEST, "kv.py": KV})
    _focused(world, sandbox, store, EvidenceKind.RED)
    world.downstream.commit("docs", {"README.md": "kv\n"})
    _focused(world, sandbox, store, EvidenceKind.GREEN)
    messages = check_red_green(world.repo, store, tests=TESTS).messages
    assert messages[0].startswith("red record (focused): the focused tests did not fail on")


def test_missing_records(world: World, store: RunStore) -> None:
    messages = check_red_green(world.repo, store, tests=TESTS).messages
    assert messages[0].endswith("no red and green record; run the focused tests on the tree "
                                "without and with the implementation")


UNIT_GATE = """
[[gate]]
name = "unit"
run = "{pytest} tests/test_kv.py --junitxml=build/junit.xml"
phases = ["full"]
junit = "build/junit.xml"

[[gate]]
name = "runtime"
check = "runtime-config"
phases = ["full"]
options.command = "echo 'INFO engine: kv cache dtype resolved to {dtype}'"
options.spec = "specs/attn-fp8.md"

[[runtime]]
name = "kv_cache_dtype"
pattern = "kv cache dtype resolved to (?P<value>\\\\w+)"
"""


def _rules_with_unit(world: World, dtype: str = "fp8_e4m3") -> None:
    text = (world.repo / "AGENTS.md").read_text().replace(
        "[spec]", UNIT_GATE.format(pytest=PYTEST, dtype=dtype) + "\n[spec]")
    world.downstream.commit("gates", {"AGENTS.md": text, "tests/test_kv.py": KV_TEST,
                                      "kv.py": KV, ".gitignore": IGNORE})


def test_command_gate_and_runtime_config(world: World, sandbox: LocalSandbox,
                                         store: RunStore) -> None:
    _rules_with_unit(world)
    results = run_gates(load_rules(world.repo), "full", sandbox=sandbox, repo=world.repo,
                        config=world.config(), store=store, only=["unit", "runtime"])
    assert [(r.name, r.passed) for r in results] == [("unit", True), ("runtime", True)]
    unit = results[0].record
    assert unit is not None
    assert unit.tests_passed == IDS
    assert unit.commit == world.downstream.head()
    assert unit.sandbox == "local"
    on_disk = [json.loads(p.read_text()) for p in sorted(store.evidence_dir.glob("*.json"))]
    assert [r["gate"] for r in on_disk] == ["unit", "runtime-config", "runtime"]
    assert on_disk[0]["log_sha256"] == store.log_digest(unit)


def test_failing_command_gate_and_runtime_mismatch(world: World, sandbox: LocalSandbox,
                                                   store: RunStore) -> None:
    _rules_with_unit(world, dtype="bf16")
    world.downstream.commit("break", {"kv.py": "def alloc(n):\n    return [1] * n\n"})
    results = run_gates(load_rules(world.repo), "full", sandbox=sandbox, repo=world.repo,
                        config=world.config(), store=store, only=["unit", "runtime"])
    unit, runtime = results
    assert not unit.passed
    assert unit.record is not None
    assert unit.record.tests_failed == [IDS[0]]
    assert "test failed: tests.test_kv::test_alloc" in unit.messages
    assert runtime.messages == ["specs/attn-fp8.md:2: the spec declares kv_cache_dtype = "
                                "'fp8_e4m3', but the running program logged 'bf16'"]


def test_unknown_gate_name(world: World, sandbox: LocalSandbox) -> None:
    with pytest.raises(RulesError, match="no gate named 'nope'"):
        run_gates(world.rules(), "full", sandbox=sandbox, repo=world.repo,
                  config=world.config(), only="nope")


def test_builtin_gates_by_phase(world: World) -> None:
    results = run_gates(world.rules(), "spec", sandbox=None, repo=world.repo,
                        config=world.config())
    assert [(r.name, r.passed) for r in results] == [("anchors", True), ("spec-complete", True)]


@pytest.mark.docker
def test_command_gate_in_docker(world: World, tmp_path: Path, store: RunStore) -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers (start dockerd to run this test)")
    from portwright.sandboxes import open_sandbox

    text = (world.repo / "AGENTS.md").read_text().replace("[spec]", (
        '[[gate]]\nname = "unit"\nrun = "python3 -m pytest -q -rA -p no:cacheprovider '
        'tests/test_kv.py --junitxml=build/junit.xml"\nphases = ["full"]\n'
        'junit = "build/junit.xml"\n\n[spec]'))
    world.downstream.commit("gates", {"AGENTS.md": text, "tests/test_kv.py": KV_TEST,
                                      "kv.py": KV, ".gitignore": IGNORE})
    config = SandboxConfig(backend="docker", memory="512m")
    with open_sandbox(config, worktree=world.repo, run_id="run-1",
                      key_dir=evidence_key_dir(), log_dir=tmp_path / "docker-logs") as box:
        results = run_gates(load_rules(world.repo), "full", sandbox=box, repo=world.repo,
                            config=world.config(), store=store, only="unit")
    assert results[0].passed, results[0].messages
    record = results[0].record
    assert record is not None
    assert record.sandbox == "docker"
    assert record.tests_passed == IDS


RED_GREEN_GATES = """
[[gate]]
name = "focused"
run = "{pytest} tests/test_kv.py --junitxml=build/junit.xml"
phases = ["red", "focused"]
junit = "build/junit.xml"

[[gate]]
name = "red-green"
check = "red-green"
phases = ["focused"]
options.tests = ["tests/**"]
"""


def test_red_and_focused_phases_record_the_evidence_red_green_reads(
        world: World, sandbox: LocalSandbox, store: RunStore) -> None:
    text = (world.repo / "AGENTS.md").read_text().replace(
        "[spec]", RED_GREEN_GATES.format(pytest=PYTEST) + "\n[spec]")
    world.downstream.commit("port kv tests", {"AGENTS.md": text, "tests/test_kv.py": KV_TEST,
                                              ".gitignore": IGNORE})
    red = run_gates(load_rules(world.repo), "red", sandbox=sandbox, repo=world.repo,
                    config=world.config(), store=store)
    assert [(r.name, r.passed) for r in red] == [("focused", True)]
    assert red[0].record is not None
    assert red[0].record.kind is EvidenceKind.RED
    world.downstream.commit("implement kv", {"kv.py": KV})
    green = run_gates(load_rules(world.repo), "focused", sandbox=sandbox, repo=world.repo,
                      config=world.config(), store=store)
    assert [(r.name, r.passed) for r in green] == [("focused", True), ("red-green", True)]
    again = run_gates(load_rules(world.repo), "red", sandbox=sandbox, repo=world.repo,
                      config=world.config(), store=store)
    assert not again[0].passed
    assert "a test that passes already proves nothing" in again[0].messages[-1]


def test_command_timeout_fails_the_gate(world: World, sandbox: LocalSandbox) -> None:
    record, _ = run_command(sandbox, "echo started; sleep 5", repo=world.repo, name="slow",
                            timeout=0.5)
    assert not record.passed
    assert record.messages == ["timed out after 0.5s and was killed"]
    assert record.duration < 4


def test_consecutive_checks_share_one_snapshot(world: World, sandbox: LocalSandbox,
                                               store: RunStore,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks only read the tree: consecutive ones record one snapshot, taken before the
    first; a command (a command gate, the runtime-config check) makes the next one retake
    it."""
    from portwright.vcs import plumbing

    taken: list[str] = []
    original = plumbing.snapshot

    def counted(repo: Path) -> tuple[str, str, bool]:
        taken.append(str(repo))
        return original(repo)

    monkeypatch.setattr(plumbing, "snapshot", counted)
    results = run_gates(world.rules(), "spec", sandbox=None, repo=world.repo,
                        config=world.config(), store=store)
    assert [r.name for r in results] == ["anchors", "spec-complete"]
    assert len(taken) == 1
    first, second = (r.record for r in results)
    assert first is not None
    assert second is not None
    assert (first.commit, first.tree, first.dirty) == (second.commit, second.tree, second.dirty)

    _rules_with_unit(world)
    taken.clear()
    results = run_gates(load_rules(world.repo), "full", sandbox=sandbox, repo=world.repo,
                        config=world.config(), store=store, only=["unit", "runtime"])
    # the unit command's own, the runtime-config check's, and the one its command runs on
    assert [r.name for r in results] == ["unit", "runtime"]
    assert len(taken) == 3
