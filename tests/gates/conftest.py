from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import GitRepo
from tests.parity.world import World, make_world


@pytest.fixture
def world(make_repo: Callable[[str], GitRepo]) -> World:
    return make_world(make_repo)


@pytest.fixture(autouse=True)
def evidence_key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Evidence is signed with a key of the test's own, never the one in the real home."""
    path = tmp_path / "evidence-key" / "evidence.key"
    monkeypatch.setenv("PORTWRIGHT_EVIDENCE_KEY", str(path))
    return path
