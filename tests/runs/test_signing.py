"""Evidence records are signed when written and verified when read."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from portwright.runs import EvidenceKind, EvidenceRecord, RunStore, UntrustedEvidence


def _record(gate: str = "unit", **update: object) -> EvidenceRecord:
    record = EvidenceRecord(gate=gate, kind=EvidenceKind.RED, command="pytest -q", exit_code=1,
                            passed=False, duration=0.25, tests_failed=["t::a"],
                            commit="0" * 40, timestamp=datetime.now(UTC))
    return record.model_copy(update=update)


def _edit(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data, indent=2))


def test_add_signs_and_records_verifies(tmp_path: Path, evidence_key_file: Path) -> None:
    store = RunStore(tmp_path / "runs", "run-1")
    log, digest = store.write_log("unit", b"FAILED t::a\n")
    path = store.add(_record(log=log, log_sha256=digest))
    on_disk = json.loads(path.read_text())
    without = {k: v for k, v in on_disk.items() if k != "mac"}
    canonical = json.dumps(without, sort_keys=True, separators=(",", ":")).encode()
    key = evidence_key_file.read_bytes()
    assert on_disk["mac"] == hmac.new(key, canonical, hashlib.sha256).hexdigest()
    [read] = store.records()
    assert read.mac == on_disk["mac"]
    assert read.log_sha256 == digest
    assert store.untrusted() == []
    # a second store of the same run (another process) verifies it with the same key
    assert RunStore(tmp_path / "runs", "run-1").records() == [read]


def test_edited_record_does_not_verify(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs", "run-1")
    path = store.add(_record())
    _edit(path, exit_code=0, passed=True)
    with pytest.raises(UntrustedEvidence, match="signature mismatch") as info:
        store.records()
    assert info.value.file == str(path)
    assert "not written by portwright on this machine" in info.value.render()


def test_unsigned_record_does_not_verify(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs", "run-1")
    path = store.add(_record())
    data = json.loads(path.read_text())
    del data["mac"]
    path.write_text(json.dumps(data))
    with pytest.raises(UntrustedEvidence, match="the record is not signed"):
        store.records()


def test_record_signed_with_another_key_does_not_verify(tmp_path: Path) -> None:
    other = RunStore(tmp_path / "runs", "run-1", key=b"k" * 32)
    path = other.add(_record())
    assert other.records()[0].mac is not None  # valid under the other key
    store = RunStore(tmp_path / "runs", "run-1")
    with pytest.raises(UntrustedEvidence, match="signature mismatch"):
        store.records()
    assert [e.file for e in store.untrusted()] == [str(path)]


def test_untrusted_lists_every_bad_file(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs", "run-1")
    first = store.add(_record("a"))
    store.add(_record("b"))
    third = store.add(_record("c"))
    _edit(first, command="true")
    third.write_text("{}")
    problems = store.untrusted()
    assert [p.file for p in problems] == [str(first), str(third)]
    assert "signature mismatch" in problems[0].message
    assert problems[1].message.startswith("not an evidence record")


def test_a_record_cut_short_by_a_kill_is_never_named(tmp_path: Path) -> None:
    """A writer killed mid-write leaves a hidden ``.partial`` file: the records, the next
    number and a resumed run's reads never see it (a named record is always whole)."""
    store = RunStore(tmp_path / "runs", "run-1")
    first = store.add(_record())
    (store.evidence_dir / f".0002-unit.json.{12345}-1.partial").write_bytes(b"")
    second = store.add(_record(gate="again"))
    assert second.name == "0002-again.json"
    assert [r.gate for r in store.records()] == ["unit", "again"]
    assert json.loads(first.read_text())["gate"] == "unit"
    assert not [p for p in store.evidence_dir.iterdir()
                if p.name.endswith(".partial") and "12345" not in p.name]


def test_a_record_never_lands_on_an_existing_name_or_link(tmp_path: Path) -> None:
    from portwright.runs.store import _write_new

    outside = tmp_path / "outside.json"
    link = tmp_path / "0001-unit.json"
    link.symlink_to(outside)
    with pytest.raises(FileExistsError):
        _write_new(link, b"{}")
    with pytest.raises(UntrustedEvidence):
        _write_new(link, b"{}", replace=True)
    assert not outside.exists()
    assert link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0001-unit.json"]  # no leftovers
