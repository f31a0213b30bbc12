"""``portwright doctor`` says where pull requests go and what they still need."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from portwright.doctor import diagnose
from tests.conftest import GitRepo


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


def test_github_without_and_with_a_token(make_repo: Callable[[str], GitRepo],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo("down")
    monkeypatch.delenv("PORT_BOT_TOKEN", raising=False)
    section = 'backend = "github"\nrepository = "octo/port"\ntoken_env = "PORT_BOT_TOKEN"\n'
    status, detail, fix = pr_check(repo, section)
    assert (status, "$PORT_BOT_TOKEN is not set") == ("warn", detail.split(": ", 1)[1])
    assert "export PORT_BOT_TOKEN" in fix
    monkeypatch.setenv("PORT_BOT_TOKEN", "ghp_secret_value")
    status, detail, _ = pr_check(repo, section)
    assert status == "ok"
    assert "ghp_secret_value" not in detail
