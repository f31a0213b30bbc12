from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from portwright.project import Project
from portwright.runs import RunStore
from portwright.sandboxes import LocalSandbox
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


@pytest.fixture
def sandbox(world: World, tmp_path: Path) -> Iterator[LocalSandbox]:
    """A local sandbox on the test world's downstream repo."""
    with LocalSandbox(world.repo, log_dir=tmp_path / "sandbox-logs") as box:
        yield box


@pytest.fixture
def store(world: World) -> RunStore:
    """The run store of run ``run-1`` in the world's repo."""
    return Project(world.repo, world.config()).store("run-1")
