"""red-green trusts only evidence portwright signed on this machine: a forgery written
from inside the sandbox — record, log and the log's sha256 all made consistent — fails."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from portwright.gates.checks import check_red_green
from portwright.runs import EvidenceKind, EvidenceRecord, RunStore
from portwright.runs.keys import evidence_key
from portwright.sandboxes import LocalSandbox
from tests.gates.test_runner import IDS, IGNORE, KV, KV_TEST, TESTS, _focused
from tests.parity.world import World

FAILING_JUNIT = (
    '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="2">'
    + "".join(f'<testcase classname="tests.test_kv" name="{i.split("::")[1]}">'
              '<failure message="assert"/></testcase>' for i in IDS)
    + "</testsuite></testsuites>\n")


def _passing_red(world: World, sandbox: LocalSandbox, store: RunStore) -> Path:
    """Tests and implementation in one commit: the red run passes, which proves nothing.
    Returns the red record's file."""
    world.downstream.commit("all at once", {"tests/test_kv.py": KV_TEST, "kv.py": KV,
                                            ".gitignore": IGNORE})
    _focused(world, sandbox, store, EvidenceKind.RED)
    world.downstream.commit("docs", {"README.md": "kv\n"})
    _focused(world, sandbox, store, EvidenceKind.GREEN)
    [red_file, _] = sorted(store.evidence_dir.glob("*.json"))
    assert json.loads(red_file.read_text())["kind"] == "red"
    assert not check_red_green(world.repo, store, tests=TESTS).passed
    return red_file


def _forge_consistently(store: RunStore, red_file: Path) -> dict[str, object]:
    """What code in the worktree can do: rewrite the red log to show failing tests,
    recompute its sha256, and rewrite the record to match. The mac is left as it was."""
    data = json.loads(red_file.read_text())
    log = store.dir / data["log"]
    text = log.read_bytes().split(b"\n--- junit ---\n")[0]
    forged_log = text + b"\n--- junit ---\n" + FAILING_JUNIT.encode()
    log.write_bytes(forged_log)
    data.update(exit_code=1, passed=False, tests_failed=IDS, tests_passed=[],
                log_sha256=hashlib.sha256(forged_log).hexdigest())
    red_file.write_text(json.dumps(data, indent=2))
    return data


def _resign(data: dict[str, object], key: bytes) -> dict[str, object]:
    record = EvidenceRecord.model_validate({k: v for k, v in data.items() if k != "mac"})
    return {**data, "mac": record.sign(key)}


def test_signed_red_green_passes(world: World, sandbox: LocalSandbox, store: RunStore,
                                 evidence_key_file: Path) -> None:
    world.downstream.commit("port kv tests", {"tests/test_kv.py": KV_TEST,
                                              ".gitignore": IGNORE})
    _focused(world, sandbox, store, EvidenceKind.RED)
    world.downstream.commit("implement kv", {"kv.py": KV})
    _focused(world, sandbox, store, EvidenceKind.GREEN)
    for path in store.evidence_dir.glob("*.json"):
        assert len(json.loads(path.read_text())["mac"]) == 64
    verdict = check_red_green(world.repo, store, tests=TESTS)
    assert verdict.passed, verdict.messages
    assert evidence_key_file.is_file()


def test_consistent_forgery_fails(world: World, sandbox: LocalSandbox,
                                  store: RunStore) -> None:
    red_file = _passing_red(world, sandbox, store)
    data = _forge_consistently(store, red_file)
    verdict = check_red_green(world.repo, store, tests=TESTS)
    assert not verdict.passed
    assert verdict.messages == [
        f"{red_file}: not written by portwright on this machine: signature mismatch "
        "(edited, forged or signed with another key)\n  fix: evidence files are written by "
        "portwright only; remove the run's evidence and run the gates again"]
    # signed with this machine's key, the forged record verifies on its own; the chain
    # still tells (what came after it signed the original's signature) — a holder of the
    # key could sign the rest again, which is why the key must stay out of the sandbox's reach
    red_file.write_text(json.dumps(_resign(data, evidence_key()), indent=2))
    again = check_red_green(world.repo, store, tests=TESTS)
    assert not again.passed
    assert any("head of the chain does not name" in m or "does not follow" in m
               for m in again.messages), again.messages


def test_forgery_signed_with_another_key_fails(world: World, sandbox: LocalSandbox,
                                               store: RunStore) -> None:
    red_file = _passing_red(world, sandbox, store)
    data = _forge_consistently(store, red_file)
    red_file.write_text(json.dumps(_resign(data, b"\x00" * 32), indent=2))
    messages = check_red_green(world.repo, store, tests=TESTS).messages
    assert len(messages) == 1
    assert messages[0].startswith(f"{red_file}: not written by portwright on this machine: "
                                  "signature mismatch")


def test_forgery_without_mac_fails(world: World, sandbox: LocalSandbox,
                                   store: RunStore) -> None:
    red_file = _passing_red(world, sandbox, store)
    data = _forge_consistently(store, red_file)
    del data["mac"]
    red_file.write_text(json.dumps(data, indent=2))
    messages = check_red_green(world.repo, store, tests=TESTS).messages
    assert len(messages) == 1
    assert messages[0].startswith(f"{red_file}: not written by portwright on this machine: "
                                  "the record is not signed")


def test_every_untrusted_record_is_named(world: World, sandbox: LocalSandbox,
                                         store: RunStore) -> None:
    red_file = _passing_red(world, sandbox, store)
    _forge_consistently(store, red_file)
    green_file = sorted(store.evidence_dir.glob("*.json"))[-1]
    green_file.write_text(green_file.read_text().replace('"dirty": false', '"dirty": true'))
    messages = check_red_green(world.repo, store, tests=TESTS).messages
    assert [m.split(": ", 1)[0] for m in messages] == [str(red_file), str(green_file)]
