"""upstream.source: a local checkout, or a URL cloned once into the state folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.config import PortwrightConfig
from portwright.errors import ConfigError, RepositoryError
from portwright.evidence.gap import upstream_repo
from portwright.vcs.upstream import is_url, upstream_path
from tests.conftest import GitRepo


def config(source: str) -> PortwrightConfig:
    return PortwrightConfig.model_validate({"upstream": {"source": source}})


@pytest.mark.parametrize(("source", "url"), [
    ("../upstream", False), ("/abs/upstream", False), ("https://example.invalid/u.git", True),
    ("file:///srv/upstream", True), ("git@example.invalid:org/u.git", True),
])
def test_is_url(source: str, url: bool) -> None:
    assert is_url(source) is url


def test_local_path_is_resolved_against_the_downstream(make_repo: type[GitRepo]) -> None:
    upstream = make_repo("upstream")
    upstream.commit("one", {"a.py": "A = 1\n"})
    down = make_repo("down")
    assert upstream_path(down.path, config("../upstream")) == upstream.path.resolve()


def test_url_is_cloned_once_into_the_state_folder(make_repo: type[GitRepo]) -> None:
    upstream = make_repo("upstream")
    first = upstream.commit("one", {"a.py": "A = 1\n"})
    down = make_repo("down")
    cfg = config(f"file://{upstream.path}")
    clone = upstream_repo(down.path, cfg)
    assert clone == down.path / ".portwright" / "upstream"
    assert (clone / "a.py").read_text() == "A = 1\n"
    second = upstream.commit("two", {"a.py": "A = 2\n"})
    assert upstream_path(down.path, cfg) == clone  # no network on the second call
    from portwright.vcs.plumbing import git

    assert git(clone, "rev-parse", "HEAD").decode().strip() == first
    upstream_path(down.path, cfg, fetch=True)
    assert second in git(clone, "rev-parse", "--all").decode()


def test_missing_checkout_names_the_key_and_fix(tmp_path: Path) -> None:
    with pytest.raises(RepositoryError) as info:
        upstream_path(tmp_path, config("../nowhere"))
    assert info.value.key == "upstream.source"
    assert "clone the upstream" in (info.value.fix or "")
    with pytest.raises(ConfigError) as wrapped:
        upstream_repo(tmp_path, config("../nowhere"))
    assert wrapped.value.key == "upstream.source"


def test_unreachable_url_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RepositoryError) as info:
        upstream_path(tmp_path, config(f"file://{tmp_path}/missing.git"))
    assert "could not clone" in info.value.message
    assert not (tmp_path / ".portwright" / "upstream").exists()
