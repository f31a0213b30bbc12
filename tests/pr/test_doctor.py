"""``portwright doctor`` says where pull requests go and what they still need; for GitHub
it reads the repository with the token, so a URL where nothing listens, a token GitHub
rejects or a repository it cannot see is a failure with its fix."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from portwright.doctor import diagnose
from tests.conftest import GitRepo
from tests.pr.conftest import TOKEN
from tests.pr.fake_github import FakeGitHub


def pr_check(repo: GitRepo, section: str) -> tuple[str, str, str]:
    repo.commit("config", {"portwright.toml": f'[upstream]\nsource = "../up"\n\n[pr]\n{section}'})
    [check] = [c for c in diagnose(repo.path) if c.name == "pr"]
    return check.status, check.detail, check.fix


def test_local(make_repo: Callable[[str], GitRepo]) -> None:
    assert pr_check(make_repo("down"), "")[:2] == ("ok", "local: the body in the run's folder")


def test_local_with_an_unknown_remote(make_repo: Callable[[str], GitRepo]) -> None:
    status, detail, fix = pr_check(make_repo("down"), 'remote = "origin"\n')
    assert status == "fail"
    assert "origin" in detail
    assert "git remote add" in fix


def test_github_without_a_token(make_repo: Callable[[str], GitRepo],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo("down")
    monkeypatch.delenv("PORT_BOT_TOKEN", raising=False)
    section = 'backend = "github"\nrepository = "octo/port"\ntoken_env = "PORT_BOT_TOKEN"\n'
    status, detail, fix = pr_check(repo, section)
    assert (status, "$PORT_BOT_TOKEN is not set") == ("warn", detail.split(": ", 1)[1])
    assert "export PORT_BOT_TOKEN" in fix


def test_github_api_where_nothing_listens(make_repo: Callable[[str], GitRepo],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:  # a port of this machine where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("PORT_BOT_TOKEN", "ghp_secret_value")
    api = f"http://127.0.0.1:{port}/api/v3"
    status, detail, fix = pr_check(make_repo("down"), (
        f'backend = "github"\nrepository = "octo/port"\ntoken_env = "PORT_BOT_TOKEN"\n'
        f'api_url = "{api}"\n'))
    assert status == "fail", detail
    assert api in detail
    assert "did not answer" in detail
    assert "[pr] api_url" in fix
    assert "ghp_secret_value" not in detail + fix


@pytest.mark.parametrize(("token", "repository", "status", "said", "fixed"), [
    (TOKEN, "octo/port", "ok", "default branch main", ""),
    ("ghp_revokedToken0123456789abcdefXYZ0000", "octo/port", "fail", "401",
     "the token in GITHUB_TOKEN is wrong"),
    (TOKEN, "octo/elsewhere", "fail", "404", "check [pr] repository (octo/elsewhere)"),
], ids=["accepted", "rejected", "unseen-repository"])
def test_github_is_asked_with_the_token(make_repo: Callable[[str], GitRepo],
                                        monkeypatch: pytest.MonkeyPatch, github: FakeGitHub,
                                        token: str, repository: str, status: str, said: str,
                                        fixed: str) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", token)
    found, detail, fix = pr_check(make_repo("down"), (
        f'backend = "github"\nrepository = "{repository}"\napi_url = "{github.api_url}"\n'))
    assert (found, said in detail, fixed in fix) == (status, True, True), (detail, fix)
    assert token not in detail + fix
    assert [op for op, _ in github.calls] == ["repos/get"]
