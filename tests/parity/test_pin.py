from __future__ import annotations

from pathlib import Path

import pytest

from portwright.config import PortwrightConfig
from portwright.errors import ParityFileError
from portwright.parity.pin import parse_key_path, read_pin, write_pin

SHA = "0123456789abcdef0123456789abcdef01234567"
NEW = "fedcba9876543210fedcba9876543210fedcba98"


def _config(**pin: str) -> PortwrightConfig:
    return PortwrightConfig.model_validate({"upstream": {"source": "../up"}, "pin": pin})


def _roundtrip(tmp_path: Path, name: str, text: str, config: PortwrightConfig) -> None:
    (tmp_path / name).write_bytes(text.encode())
    assert read_pin(tmp_path, config) == SHA[: len(read_pin(tmp_path, config))]
    write_pin(tmp_path, config, NEW)
    after = (tmp_path / name).read_bytes().decode()
    assert read_pin(tmp_path, config) == NEW
    # only the sha's bytes changed
    old_sha = next(s for s in (SHA, SHA[:12], "1234567") if s in text)
    assert after == text.replace(old_sha, NEW, 1)


def test_markdown_pin_round_trip(tmp_path: Path) -> None:
    text = ("# Sync\r\n\r\n> note: keep\r\n\r\n**Pinned commit:** `" + SHA
            + "`\r\n\r\nHistory: 1111111\r\n")
    _roundtrip(tmp_path, "upstream-sync.md", text, _config())


def test_yaml_pin_round_trip_keeps_comments_and_quotes(tmp_path: Path) -> None:
    text = (
        "# port manifest\n"
        "- name: engine   # the main one\n"
        f"  commit: '{SHA}'  # pinned\n"
        "  extra: {a: 1,   b: 2}\n"
        "- name: other\n"
        "  commit: 1111111\n"
    )
    _roundtrip(tmp_path, "port.yaml", text, _config(store="yaml", file="port.yaml",
                                                     key="[0].commit"))


def test_yaml_all_digit_sha_is_read_as_written(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("upstream:\n  commit: 0123456\n")
    config = _config(store="yaml", file="p.yaml", key="upstream.commit")
    assert read_pin(tmp_path, config) == "0123456"


def test_toml_pin_round_trip(tmp_path: Path) -> None:
    text = (
        "# header\n[other]\ncommit = 'xyz'\n\n[upstream]\nname = \"eng\"\n"
        f"commit   =   \"{SHA[:12]}\"   # pin\n"
    )
    _roundtrip(tmp_path, "port.toml", text, _config(store="toml", file="port.toml",
                                                     key="upstream.commit"))


def test_missing_pin_names_file_and_fix(tmp_path: Path) -> None:
    (tmp_path / "upstream-sync.md").write_text("# Sync\n\nnothing here\n")
    with pytest.raises(ParityFileError) as info:
        read_pin(tmp_path, _config())
    assert "upstream-sync.md" in str(info.value)
    assert info.value.fix
    assert "Pinned commit" in info.value.fix


def test_malformed_yaml_pin_names_line(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("upstream:\n  name: x\n  commit: not-a-sha\n")
    with pytest.raises(ParityFileError) as info:
        read_pin(tmp_path, _config(store="yaml", file="p.yaml", key="upstream.commit"))
    assert info.value.line == 3
    assert "not a commit sha" in info.value.message


def test_missing_key_path(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text("upstream:\n  name: x\n")
    with pytest.raises(ParityFileError, match="not found"):
        read_pin(tmp_path, _config(store="yaml", file="p.yaml", key="upstream.commit"))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ParityFileError, match="does not exist"):
        read_pin(tmp_path, _config())


def test_two_pins_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "upstream-sync.md").write_text(f"Pinned commit: {SHA}\n\nPin: {NEW}\n")
    with pytest.raises(ParityFileError) as info:
        read_pin(tmp_path, _config())
    assert info.value.line == 3


def test_write_rejects_non_sha(tmp_path: Path) -> None:
    (tmp_path / "upstream-sync.md").write_text(f"Pinned commit: {SHA}\n")
    with pytest.raises(ParityFileError):
        write_pin(tmp_path, _config(), "main")
    assert SHA in (tmp_path / "upstream-sync.md").read_text()


def test_key_path() -> None:
    assert parse_key_path("[0].commit") == [0, "commit"]
    assert parse_key_path("a.b[2].c") == ["a", "b", 2, "c"]


@pytest.mark.parametrize(("text", "key", "hint"), [
    ("- commit: {sha}\n  name: up\n", "upstream.commit", "[0].commit"),
    ("- upstream:\n    commit: {sha}\n", "upstream.commit", "[0].upstream.commit"),
    ("upstream:\n  - commit: {sha}\n", "upstream.commit", "upstream[0].commit"),
])
def test_yaml_key_through_a_list_hints_the_index_form(tmp_path: Path, text: str, key: str,
                                                      hint: str) -> None:
    (tmp_path / "p.yaml").write_text(text.format(sha=SHA))
    with pytest.raises(ParityFileError) as info:
        read_pin(tmp_path, _config(store="yaml", file="p.yaml", key=key))
    assert "is a list" in info.value.message
    assert info.value.key == key
    assert info.value.fix is not None
    assert f'key = "{hint}"' in info.value.fix
    assert read_pin(tmp_path, _config(store="yaml", file="p.yaml", key=hint)) == SHA


def test_toml_key_through_an_array_hints_the_index_form(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text(f'[[upstream]]\ncommit = "{SHA}"\n')
    with pytest.raises(ParityFileError) as info:
        read_pin(tmp_path, _config(store="toml", file="p.toml", key="upstream.commit"))
    assert "is a list" in info.value.message
    assert info.value.fix is not None
    assert 'key = "upstream[0].commit"' in info.value.fix
    assert read_pin(tmp_path, _config(store="toml", file="p.toml",
                                      key="upstream[0].commit")) == SHA
