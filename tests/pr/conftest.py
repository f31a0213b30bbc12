"""The fake GitHub for every test of this folder: skipped where GitHub's OpenAPI
description was never fetched (``scripts/github-openapi.sh``), an error where CI promises
it (``PORTWRIGHT_REQUIRE_ENGINE=1``, checked at the session's start)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import GitRepo
from tests.pr import openapi
from tests.pr.fake_github import FakeGitHub
from tests.workflows.conftest import CycleWorld, build_world

TOKEN = "ghp_portwrightTestToken0123456789abcdefXYZ"
"""The token the fake accepts: a value that can be searched for in every artifact."""


@pytest.fixture
def github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    """A fake GitHub with ``GITHUB_TOKEN`` set to its token; no request it saw may have
    broken GitHub's description, nor any of its answers."""
    if not openapi.cached_description().is_file():
        pytest.skip(f"GitHub's OpenAPI description is not at {openapi.cached_description()}: "
                    "run scripts/github-openapi.sh")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with FakeGitHub(tmp_path / "github", TOKEN) as fake:
        yield fake
    assert fake.invalid == []
    assert fake.token_on_command_line == []


@pytest.fixture
def cycle_world(make_repo: Callable[[str], GitRepo]) -> CycleWorld:
    """The port cycle's small real port (:mod:`tests.workflows.conftest`)."""
    return build_world(make_repo)
