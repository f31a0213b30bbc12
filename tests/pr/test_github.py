"""The GitHub pull-request backend against the fake GitHub: the real githubkit client, real
git pushing over HTTP, every request and answer validated against GitHub's own OpenAPI
description."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from portwright.config import PRConfig
from portwright.errors import PortwrightError, PullRequestError, RateLimited, UsageError
from portwright.vcs.pr import BODY_LIMIT, PRRequest
from portwright.vcs.pr_backends import open_backend
from tests.conftest import GitRepo
from tests.pr.conftest import TOKEN
from tests.pr.fake_github import FakeGitHub

BRANCH = "portwright/r1"


@pytest.fixture
def port(make_repo: Callable[[str], GitRepo], github: FakeGitHub) -> GitRepo:
    """A downstream repository whose ``main`` GitHub has, with a run's branch on top."""
    repo = make_repo("downstream")
    repo.commit("start", {"README.md": "port\n"})
    github.seed(repo.path)
    repo.git("checkout", "-q", "-b", BRANCH)
    repo.commit("port kv", {"kv.py": "x = 1\n"})
    repo.git("checkout", "-q", "main")
    return repo


def config(github: FakeGitHub, **values: Any) -> PRConfig:
    return PRConfig.model_validate({"backend": "github", "repository": github.repository,
                                    "api_url": github.api_url, **values})


def request(config: PRConfig, body: str = "## Evidence\n\nall green\n",
            title: str = "Port kv-cache") -> PRRequest:
    return PRRequest.from_config(config, branch=BRANCH, title=title, body=body)


def test_opens_a_pull_request_after_pushing_its_branch(github: FakeGitHub, port: GitRepo,
                                                       tmp_path: Path) -> None:
    cfg = config(github, labels=["portwright", "parity"], reviewers=["octocat", "octo/core"])
    backend = open_backend(cfg, repo=port.path, folder=tmp_path / "run")
    result = backend.open_or_update(request(cfg))
    assert (result.number, result.created, result.draft) == (1, True, True)
    assert result.url == "https://github.example.invalid/octo/port/pull/1"
    assert result.base == "main"  # the repository's default branch
    [pull] = github.pulls
    assert (pull.head, pull.base, pull.draft, pull.title) == (BRANCH, "main", True,
                                                              "Port kv-cache")
    assert pull.body.startswith("## Evidence")
    assert pull.labels == ["portwright", "parity"]
    assert (pull.reviewers, pull.teams) == (["octocat"], ["core"])
    # pushed first, over HTTP, with the token in a header
    assert github.branch_head(BRANCH) == port.git("rev-parse", BRANCH)
    assert github.git_requests
    assert all(carried for _, carried in github.git_requests)
    assert [op for op, _ in github.calls].index("pulls/create") > 0
    # the run's folder keeps what was published
    assert (tmp_path / "run" / "pr.md").read_text() == pull.body
    found = backend.find(BRANCH)
    assert found is not None
    assert (found.number, found.url, found.base, found.created) == (1, result.url, "main",
                                                                    False)
    assert backend.find("portwright/other") is None


def test_a_second_run_updates_the_pull_request(github: FakeGitHub, port: GitRepo,
                                               tmp_path: Path) -> None:
    cfg = config(github, draft=False)
    first = open_backend(cfg, repo=port.path, folder=tmp_path / "a").open_or_update(
        request(cfg))
    port.git("checkout", "-q", BRANCH)
    port.commit("review fixes", {"kv.py": "x = 2\n"})
    port.git("checkout", "-q", "main")
    second = open_backend(cfg, repo=port.path, folder=tmp_path / "b").open_or_update(
        request(cfg, body="## Evidence\n\nsecond run\n", title="Port kv-cache (again)"))
    assert (second.number, second.created) == (first.number, False)
    assert len(github.pulls) == 1
    assert github.pulls[0].body == "## Evidence\n\nsecond run\n"
    assert github.pulls[0].title == "Port kv-cache (again)"
    assert github.branch_head(BRANCH) == port.git("rev-parse", BRANCH)
    assert [op for op, _ in github.calls].count("pulls/create") == 1


def test_an_explicit_base_and_a_remote_by_name(github: FakeGitHub, port: GitRepo,
                                               tmp_path: Path) -> None:
    port.git("push", "-q", str(github.bare), "main:refs/heads/release")
    port.git("remote", "add", "upstream-gh", github.git_url)
    cfg = config(github, base="release", remote="upstream-gh")
    result = open_backend(cfg, repo=port.path, folder=tmp_path).open_or_update(request(cfg))
    assert (result.base, github.pulls[0].base) == ("release", "release")
    assert "repos/get" not in [op for op, _ in github.calls]


def test_a_long_report_is_trimmed_to_githubs_limit(github: FakeGitHub, port: GitRepo,
                                                   tmp_path: Path) -> None:
    cfg = config(github)
    body = "# report\n\n" + "| row | cell |\n" * 10_000
    open_backend(cfg, repo=port.path, folder=tmp_path).open_or_update(request(cfg, body))
    sent = github.pulls[0].body
    assert len(sent) <= BODY_LIMIT == 65536
    assert sent.startswith("# report")
    assert "trimmed" in sent
    assert "portwright report" in sent


def _error(github: FakeGitHub, port: GitRepo, tmp_path: Path, **values: Any) -> PortwrightError:
    cfg = config(github, **values)
    with pytest.raises(PortwrightError) as caught:
        open_backend(cfg, repo=port.path, folder=tmp_path).open_or_update(request(cfg))
    assert TOKEN not in str(caught.value)
    return caught.value


def test_a_missing_token_names_its_variable(github: FakeGitHub, port: GitRepo,
                                            tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    error = _error(github, port, tmp_path)
    assert isinstance(error, UsageError)
    assert "GITHUB_TOKEN" in error.render()
    assert error.key == "pr.token_env"
    assert github.calls == []
    assert github.git_requests == []


def test_the_token_variable_is_configurable(github: FakeGitHub, port: GitRepo,
                                            tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    monkeypatch.setenv("PORT_BOT_TOKEN", TOKEN)
    cfg = config(github, token_env="PORT_BOT_TOKEN")
    assert open_backend(cfg, repo=port.path, folder=tmp_path).open_or_update(
        request(cfg)).number == 1


def test_401_a_bad_token(github: FakeGitHub, port: GitRepo, tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_wrong")
    error = _error(github, port, tmp_path)
    assert isinstance(error, PullRequestError)
    text = error.render()
    assert "401" in text
    assert "GITHUB_TOKEN" in text
    assert "fix:" in text
    assert "ghp_wrong" not in text


@pytest.mark.parametrize(("status", "message", "says"), [
    (403, "Resource not accessible by personal access token",
     ("403", "Resource not accessible", "Pull requests", "fix:")),
    (404, "Not Found", ("404", "octo/port", "pr.repository", "fix:")),
])
def test_403_and_404(github: FakeGitHub, port: GitRepo, tmp_path: Path, status: int,
                     message: str, says: tuple[str, ...]) -> None:
    github.fail(status, message, operation="pulls/list")
    text = _error(github, port, tmp_path).render()
    for part in says:
        assert part in text


def test_404_an_unknown_repository(github: FakeGitHub, port: GitRepo, tmp_path: Path) -> None:
    port.git("remote", "add", "origin", github.git_url)
    text = _error(github, port, tmp_path, repository="octo/elsewhere", remote="origin",
                  base="main").render()
    assert "octo/elsewhere" in text
    assert "pr.repository" in text


def test_422_says_what_github_refused(github: FakeGitHub, port: GitRepo,
                                      tmp_path: Path) -> None:
    text = _error(github, port, tmp_path, base="no-such-branch").render()
    assert "422" in text
    assert "base branch no-such-branch does not exist" in text
    assert "pr.base" in text


def test_422_of_a_reviewer(github: FakeGitHub, port: GitRepo, tmp_path: Path) -> None:
    github.fail(422, "Reviews may only be requested from collaborators.",
                operation="pulls/request-reviewers")
    text = _error(github, port, tmp_path, reviewers=["stranger"]).render()
    assert "collaborators" in text
    assert "pr.reviewers" in text
    assert len(github.pulls) == 1  # the pull request itself was opened


def test_primary_rate_limit_says_when_it_resets(github: FakeGitHub, port: GitRepo,
                                                tmp_path: Path) -> None:
    reset = 1_900_000_000
    github.fail(403, "API rate limit exceeded for user ID 1.", operation="pulls/list",
                headers={"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
                         "x-ratelimit-reset": str(reset)})
    error = _error(github, port, tmp_path)
    assert isinstance(error, RateLimited)
    when = datetime.fromtimestamp(reset, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    assert when in str(error)
    assert "fix:" in str(error)


@pytest.mark.parametrize("status", [403, 429])
def test_secondary_rate_limit_says_how_long_to_wait(github: FakeGitHub, port: GitRepo,
                                                    tmp_path: Path, status: int) -> None:
    github.fail(status, "You have exceeded a secondary rate limit.", operation="pulls/create",
                headers={"retry-after": "120"})
    error = _error(github, port, tmp_path)
    assert isinstance(error, RateLimited)
    assert "120 s" in str(error)


def test_the_push_needs_the_token_too(github: FakeGitHub, port: GitRepo, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    port.git("remote", "add", "origin", github.git_url)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_wrong")
    text = _error(github, port, tmp_path, remote="origin", base="main").render()
    assert "push" in text
    assert "ghp_wrong" not in text
    assert github.branch_head(BRANCH) is None


def test_the_token_is_nowhere_but_in_the_environment(github: FakeGitHub, port: GitRepo,
                                                     tmp_path: Path) -> None:
    cfg = config(github, labels=["portwright"])
    open_backend(cfg, repo=port.path, folder=tmp_path / "run").open_or_update(request(cfg))
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    for root in (port.path, tmp_path / "run", github.bare):
        for path in root.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                assert TOKEN.encode() not in data, path
                assert basic.encode() not in data, path
    assert github.token_on_command_line == []
    assert os.environ["GITHUB_TOKEN"] == TOKEN


@pytest.mark.parametrize(("api_url", "remote"), [
    ("https://api.github.com", "https://github.com/octo/port.git"),
    ("https://ghe.example.com/api/v3", "https://ghe.example.com/octo/port.git"),
    ("https://api.acme.ghe.com", "https://acme.ghe.com/octo/port.git"),
])
def test_the_branch_goes_to_the_repository_on_the_apis_server(api_url: str, remote: str,
                                                              tmp_path: Path) -> None:
    from portwright.vcs.pr_github import GitHubBackend

    cfg = PRConfig(backend="github", repository="octo/port", api_url=api_url)
    backend = GitHubBackend(cfg, repo=tmp_path, folder=tmp_path, environ={})
    assert backend._remote() == remote
    assert TOKEN not in repr(backend)
