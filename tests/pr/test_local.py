"""The local pull-request backend: the branch pushed to a configured remote (a bare
repository here), the body kept in the run's folder; run again, it finds its own."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from portwright.config import PRConfig
from portwright.errors import PullRequestError
from portwright.vcs.pr import PRRequest
from portwright.vcs.pr_backends import open_backend
from tests.conftest import GitRepo

BRANCH = "portwright/r1"


@pytest.fixture
def port(make_repo: Callable[[str], GitRepo]) -> GitRepo:
    repo = make_repo("downstream")
    repo.commit("start", {"README.md": "port\n"})
    repo.git("checkout", "-q", "-b", BRANCH)
    repo.commit("port kv", {"kv.py": "x = 1\n"})
    return repo


def bare(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    return path


def head_of(repo: Path, branch: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", f"refs/heads/{branch}"],
                          capture_output=True, text=True).stdout.strip()


def test_pushes_to_a_named_remote_and_keeps_the_body(port: GitRepo, tmp_path: Path) -> None:
    remote = bare(tmp_path)
    port.git("remote", "add", "origin", str(remote))
    backend = open_backend(PRConfig(remote="origin"), repo=port.path, folder=tmp_path / "run")
    first = backend.open_or_update(PRRequest(branch=BRANCH, title="Port kv", body="one\n"))
    assert (first.backend, first.number, first.created) == ("local", None, True)
    assert first.pushed_to == str(remote)
    assert first.url == (tmp_path / "run" / "pr.md").resolve().as_uri()
    assert head_of(remote, BRANCH) == port.head()
    assert (tmp_path / "run" / "pr.md").read_text() == "one\n"

    port.commit("review fixes", {"kv.py": "x = 2\n"})
    second = backend.open_or_update(PRRequest(branch=BRANCH, title="Port kv", body="two\n"))
    assert second.created is False
    assert head_of(remote, BRANCH) == port.head()
    assert (tmp_path / "run" / "pr.md").read_text() == "two\n"
    found = backend.find(BRANCH)
    assert found is not None
    assert found.url == first.url
    assert backend.find("portwright/other") is None


def test_an_absolute_path_is_a_remote_too(port: GitRepo, tmp_path: Path) -> None:
    remote = bare(tmp_path)
    backend = open_backend(PRConfig(remote=str(remote)), repo=port.path, folder=tmp_path)
    backend.open_or_update(PRRequest(branch=BRANCH, title="Port kv", body="b\n"))
    assert head_of(remote, BRANCH) == port.head()


def test_without_a_remote_only_the_body_is_kept(port: GitRepo, tmp_path: Path) -> None:
    result = open_backend(PRConfig(), repo=port.path, folder=tmp_path).open_or_update(
        PRRequest(branch=BRANCH, title="Port kv", body="b\n"))
    assert result.pushed_to == ""
    assert port.git("remote") == ""
    assert (tmp_path / "pr.md").read_text() == "b\n"


def test_an_unknown_remote_names_the_key(port: GitRepo, tmp_path: Path) -> None:
    port.git("remote", "add", "origin", str(bare(tmp_path)))
    backend = open_backend(PRConfig(remote="upstream"), repo=port.path, folder=tmp_path)
    with pytest.raises(PullRequestError) as caught:
        backend.open_or_update(PRRequest(branch=BRANCH, title="Port kv", body="b\n"))
    assert caught.value.key == "pr.remote"
    assert "origin" in caught.value.render()
    assert not (tmp_path / "pr.md").exists()


def test_a_diverged_remote_branch_is_refused_with_a_fix(port: GitRepo, tmp_path: Path,
                                                        make_repo: Callable[[str], GitRepo]
                                                        ) -> None:
    remote = bare(tmp_path)
    other = make_repo("other")
    other.commit("elsewhere", {"x": "1\n"})
    other.git("push", "-q", str(remote), f"main:refs/heads/{BRANCH}")
    backend = open_backend(PRConfig(remote=str(remote)), repo=port.path, folder=tmp_path)
    with pytest.raises(PullRequestError) as caught:
        backend.open_or_update(PRRequest(branch=BRANCH, title="Port kv", body="b\n"))
    assert caught.value.key == "pr.remote"
    assert "fix:" in caught.value.render()
