"""The evidence key: where it lives, how it is created, what is refused."""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from portwright.errors import UsageError
from portwright.runs.keys import (
    KEY_BYTES,
    EvidenceKeyError,
    evidence_key,
    evidence_key_dir,
    evidence_key_path,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_created_on_first_use_private_and_stable(evidence_key_file: Path) -> None:
    assert not evidence_key_file.exists()
    key = evidence_key()
    assert len(key) == KEY_BYTES
    assert evidence_key_file.read_bytes() == key
    assert _mode(evidence_key_file) == 0o600
    assert _mode(evidence_key_file.parent) == 0o700
    assert evidence_key() == key
    assert [p.name for p in evidence_key_file.parent.iterdir()] == ["evidence.key"]


def test_each_machine_has_its_own_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = evidence_key()
    monkeypatch.setenv("PORTWRIGHT_EVIDENCE_KEY", str(tmp_path / "other" / "evidence.key"))
    assert evidence_key() != first


def test_created_once_when_many_ask_at_once(evidence_key_file: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: evidence_key(), range(16)))
    assert keys == {evidence_key_file.read_bytes()}
    assert [p.name for p in evidence_key_file.parent.iterdir()] == ["evidence.key"]


def test_default_locations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PORTWRIGHT_EVIDENCE_KEY")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert evidence_key_path() == tmp_path / "state" / "portwright" / "evidence.key"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    expected = tmp_path / "home" / ".local" / "state" / "portwright" / "evidence.key"
    assert evidence_key_path() == expected
    evidence_key()
    assert _mode(expected) == 0o600
    assert _mode(expected.parent) == 0o700


def test_relative_variable_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORTWRIGHT_EVIDENCE_KEY", "keys/evidence.key")
    with pytest.raises(EvidenceKeyError, match="must be an absolute path") as info:
        evidence_key()
    assert isinstance(info.value, UsageError)
    assert info.value.key == "PORTWRIGHT_EVIDENCE_KEY"


def test_readable_key_file_is_refused(evidence_key_file: Path) -> None:
    evidence_key()
    evidence_key_file.chmod(0o644)
    with pytest.raises(EvidenceKeyError, match="has mode 0644: others can reach it") as info:
        evidence_key()
    assert info.value.file == str(evidence_key_file)
    assert info.value.fix is not None
    assert "chmod 600" in info.value.fix


def test_open_folder_is_refused(evidence_key_file: Path) -> None:
    evidence_key_file.parent.mkdir(mode=0o755)
    evidence_key_file.parent.chmod(0o755)
    with pytest.raises(EvidenceKeyError, match="folder has mode 0755") as info:
        evidence_key()
    assert info.value.file == str(evidence_key_file.parent)
    assert not evidence_key_file.exists()


def test_key_of_wrong_length_is_refused(evidence_key_file: Path) -> None:
    evidence_key_dir()
    evidence_key_file.write_bytes(b"short")
    evidence_key_file.chmod(0o600)
    with pytest.raises(EvidenceKeyError, match="has 5 bytes, not 32"):
        evidence_key()


def test_symlinked_key_is_refused(evidence_key_file: Path, tmp_path: Path) -> None:
    evidence_key_dir()
    target = tmp_path / "elsewhere"
    target.write_bytes(b"x" * KEY_BYTES)
    evidence_key_file.symlink_to(target)
    with pytest.raises(EvidenceKeyError, match="cannot read the evidence key"):
        evidence_key()


def test_key_inside_a_repository_is_refused(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    monkeypatch.setenv("PORTWRIGHT_EVIDENCE_KEY", str(tmp_path / "repo" / "keys" / "k"))
    with pytest.raises(EvidenceKeyError, match="must not live inside a git repository"):
        evidence_key()
    assert not (tmp_path / "repo" / "keys").exists()


def test_uncreatable_folder_is_a_clear_error(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    monkeypatch.setenv("PORTWRIGHT_EVIDENCE_KEY", str(tmp_path / "a-file" / "keys" / "k"))
    with pytest.raises(EvidenceKeyError, match="cannot create the evidence key's folder") as info:
        evidence_key()
    assert info.value.file == str(tmp_path / "a-file" / "keys")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the folder to another user")
def test_folder_of_another_user_is_refused(evidence_key_file: Path) -> None:
    evidence_key_dir()
    os.chown(evidence_key_file.parent, 12345, 12345)
    with pytest.raises(EvidenceKeyError, match="folder belongs to uid 12345"):
        evidence_key()
