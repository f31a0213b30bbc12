from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def evidence_key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Evidence is signed with a key of the test's own, never the one in the real home."""
    path = tmp_path / "evidence-key" / "evidence.key"
    monkeypatch.setenv("PORTWRIGHT_EVIDENCE_KEY", str(path))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    return path
