"""The fake GitHub holds itself to GitHub's description: a request or an answer that breaks
it is caught, so the backend's tests cannot pass against a lenient fake."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.pr.conftest import TOKEN
from tests.pr.fake_github import FakeGitHub

AUTH = {"Authorization": f"token {TOKEN}", "X-GitHub-Api-Version": "2022-11-28"}


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/repos/octo/port/pulls", {"title": 5, "head": "x", "base": "main"}),
    ("POST", "/repos/octo/port/pulls", {"title": "t", "base": "main"}),
    ("GET", "/repos/octo/port/pulls?per_page=many", None),
    ("GET", "/repos/octo/port/pulls?state=merged", None),
    ("PATCH", "/repos/octo/port/pulls/1", {"state": "merged"}),
    ("POST", "/repos/octo/port/pulls/one/requested_reviewers", {"reviewers": ["a"]}),
    ("DELETE", "/repos/octo/port/pulls/1", None),
])
def test_requests_that_break_githubs_description_are_refused(
        github: FakeGitHub, method: str, path: str, body: Any) -> None:
    answer = httpx.request(method, github.api_url + path, json=body, headers=AUTH)
    assert answer.status_code in (400, 404)
    assert len(github.invalid) == 1, github.invalid
    github.invalid.clear()


def test_answers_that_break_it_are_caught(github: FakeGitHub, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path / "w")], check=True)
    subprocess.run(["git", "-C", str(tmp_path / "w"), "-c", "user.name=a", "-c",
                    "user.email=a@example.invalid", "commit", "-q", "--allow-empty", "-m", "x"],
                   check=True)
    github.seed(tmp_path / "w")
    subprocess.run(["git", "-C", str(tmp_path / "w"), "push", "-q", str(github.bare),
                    "main:refs/heads/topic"], check=True)
    render = FakeGitHub._render

    def without_number(self: FakeGitHub, pull: Any, operation: str) -> dict[str, Any]:
        out = render(self, pull, operation)
        del out["number"]
        return out

    monkeypatch.setattr(FakeGitHub, "_render", without_number)
    answer = httpx.post(github.api_url + "/repos/octo/port/pulls", headers=AUTH,
                        json={"title": "t", "head": "topic", "base": "main"})
    assert answer.status_code == 201
    assert any("'number' is a required property" in p for p in github.invalid), github.invalid
    github.invalid.clear()


def test_a_bad_token_and_an_unknown_api_version(github: FakeGitHub) -> None:
    url = github.api_url + "/repos/octo/port"
    assert httpx.get(url, headers={"Authorization": "token nope"}).status_code == 401
    assert httpx.get(url, headers={**AUTH, "X-GitHub-Api-Version": "2026-03-10"}
                     ).status_code == 400
    assert httpx.get(url, headers=AUTH).json()["default_branch"] == "main"


def test_git_needs_the_token(github: FakeGitHub, tmp_path: Path) -> None:
    done = subprocess.run(["git", "ls-remote", github.git_url], capture_output=True,
                          text=True, env={"GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0
    assert github.git_requests == [("/octo/port.git/info/refs", False)]
