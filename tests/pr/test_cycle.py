"""The port cycle's ``open_pr`` on the configured backend: a real run (worktree, Docker
sandbox, gates, scripted roles) that pushes its branch to the fake GitHub and opens its
pull request, ``portwright pr`` updating that same pull request, the approval before it,
and a search of everything the run left for the token."""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from portwright.project import Project
from portwright.workflows import driver
from portwright.workflows.state import RunStatus
from tests.conftest import GitRepo, docker_engine_running
from tests.pr.conftest import TOKEN
from tests.pr.fake_github import FakeGitHub
from tests.workflows.conftest import AGENTS, CycleWorld, build_world
from tests.workflows.fake_server import model_config, serve_porter
from tests.workflows.porter import porter

pytestmark = pytest.mark.docker

ENV_GATE = '''
[[gate]]
name = "environment"
run = "env"
phases = ["full"]
timeout = 60
'''
"""A gate that prints the sandbox's whole environment into its log."""


@pytest.fixture(autouse=True)
def _engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def on_github(world: CycleWorld, github: FakeGitHub, extra: str = "") -> None:
    """Point the world's ``[pr]`` at the fake GitHub, which has the port's ``main``."""
    config = (world.repo / "portwright.toml").read_text() + (
        f'\n[pr]\nbackend = "github"\nrepository = "{github.repository}"\n'
        f'api_url = "{github.api_url}"\nlabels = ["portwright"]\nreviewers = ["octocat"]\n'
        + extra)
    agents = AGENTS.format().replace("[spec]", ENV_GATE.strip() + "\n\n[spec]")
    world.downstream.commit("pull requests on GitHub", {"portwright.toml": config,
                                                        "AGENTS.md": agents})
    github.seed(world.repo)


def test_a_run_opens_its_pull_request_and_portwright_pr_updates_it(
        cycle_world: CycleWorld, github: FakeGitHub, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    on_github(cycle_world, github)
    project = Project.load(cycle_world.repo, at="HEAD")
    events: list[dict[str, Any]] = []
    done = driver.start(project, "kv-cache", events.append, run_id="gh-1",
                        client=porter(cycle_world.plan()))
    assert done.status is RunStatus.DONE, done.values["reason"]
    assert done.values["pr_number"] == 1
    assert done.values["pr_url"] == "https://github.example.invalid/octo/port/pull/1"
    [pull] = github.pulls
    assert (pull.head, pull.base, pull.draft) == ("portwright/gh-1", "main", True)
    assert (pull.labels, pull.reviewers) == (["portwright"], ["octocat"])
    for heading in ("## Gap verdict", "## Surface", "## Evidence", "## Review",
                    "## Ledger and matrix rows", "## Model use"):
        assert heading in pull.body
    branch_head = cycle_world.downstream.git("rev-parse", "portwright/gh-1")
    assert github.branch_head("portwright/gh-1") == branch_head
    assert next(e for e in events if e["event"] == "pr")["url"] == pull_url(pull.number)

    again = driver.publish(project, "gh-1", events.append)
    assert again.status is RunStatus.DONE
    assert again.values["pr_number"] == 1
    assert len(github.pulls) == 1
    assert [op for op, _ in github.calls].count("pulls/create") == 1
    assert [op for op, _ in github.calls].count("pulls/update") == 1

    run_dir = project.run_dir("gh-1")
    logs = list(run_dir.rglob("*-environment.log"))
    assert logs, "the environment gate never ran"
    assert b"PATH=" in logs[0].read_bytes()
    leaks = token_in(project.state_dir, cycle_world.repo / ".git", cycle_world.repo,
                     github.bare)
    captured = capsys.readouterr()
    for text in (caplog.text, captured.out, captured.err, json.dumps(events)):
        leaks += [text[:80]] if TOKEN in text or basic(TOKEN) in text else []
    assert leaks == []


def pull_url(number: int) -> str:
    return f"https://github.example.invalid/octo/port/pull/{number}"


def basic(token: str) -> str:
    return base64.b64encode(f"x-access-token:{token}".encode()).decode()


def token_in(*roots: Path) -> list[str]:
    """Every file under ``roots`` (checkpoints, transcripts, evidence, logs, reports, git
    configuration and objects, worktrees) that holds the token or its header."""
    found = []
    for root in roots:
        for path in [root, *root.rglob("*")]:
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                if TOKEN.encode() in data or basic(TOKEN).encode() in data:
                    found.append(str(path))
    return found


def test_the_local_backend_pushes_to_its_remote(cycle_world: CycleWorld,
                                                tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    cycle_world.downstream.git("remote", "add", "origin", str(remote))
    config = (cycle_world.repo / "portwright.toml").read_text() + '\n[pr]\nremote = "origin"\n'
    cycle_world.downstream.commit("push runs to origin", {"portwright.toml": config})
    project = Project.load(cycle_world.repo, at="HEAD")
    done = driver.start(project, "kv-cache", lambda e: None, run_id="loc-1",
                        client=porter(cycle_world.plan()))
    assert done.status is RunStatus.DONE, done.values["reason"]
    assert done.values["pr_url"] == (project.run_dir("loc-1") / "pr.md").resolve().as_uri()
    assert done.values["pr_number"] is None
    pushed = subprocess.run(["git", "-C", str(remote), "rev-parse", "portwright/loc-1"],
                            capture_output=True, text=True).stdout.strip()
    assert pushed == cycle_world.downstream.git("rev-parse", "portwright/loc-1")


def pw(repo: Path, *args: str, token: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PORTER_KEY": "not-a-secret", "GITHUB_TOKEN": token}
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          capture_output=True, text=True, timeout=300, env=env)


def last_json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    text = done.stdout
    return dict(json.loads(text[text.rindex("\n{\n") + 1:] if "\n{\n" in text else text))


def test_asked_before_then_blocked_by_a_bad_token_then_published_by_portwright_pr(
        make_repo: Callable[[str], GitRepo], httpserver: HTTPServer,
        github: FakeGitHub) -> None:
    world = build_world(make_repo, approvals='spec = "never"\nadvance = "never"\n'
                                             'pr = "always"\n')
    serve_porter(httpserver, world.plan())
    config = (world.repo / "portwright.toml").read_text() + model_config(httpserver)
    world.downstream.commit("model endpoint", {"portwright.toml": config})
    on_github(world, github, 'draft = false\n')

    parked = pw(world.repo, "run", "kv-cache", "--run-id", "ask-pr", "--json", token=TOKEN)
    assert parked.returncode == 0, parked.stderr
    asked = last_json(parked)["waiting"]["action_requests"][0]
    assert asked["name"] == "approve_pr"
    assert "pull request on GitHub `octo/port`" in asked["description"]
    assert asked["args"]["pr"]["backend"] == "github"

    refused = pw(world.repo, "approve", "ask-pr", "--json", token="ghp_revoked")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    blocked = last_json(refused)
    assert blocked["status"] == "blocked"
    assert "401" in blocked["reason"]
    assert "GITHUB_TOKEN" in blocked["reason"]
    assert "ghp_revoked" not in refused.stdout + refused.stderr
    assert github.pulls == []

    published = pw(world.repo, "pr", "ask-pr", "--json", token=TOKEN)
    assert published.returncode == 0, published.stdout + published.stderr
    outcome = last_json(published)
    assert outcome["status"] == "done"
    assert outcome["pr_url"] == pull_url(1)
    assert outcome["pr_number"] == 1
    assert github.pulls[0].draft is False

    status = json.loads(pw(world.repo, "status", "ask-pr", "--json", token="").stdout)
    assert (status["status"], status["pr_url"], status["reason"]) == ("done", pull_url(1), "")
    runs = json.loads(pw(world.repo, "runs", "--json", token="").stdout)
    assert runs[0]["pr_url"] == pull_url(1)
    report = pw(world.repo, "report", "ask-pr", token="").stdout
    assert pull_url(1) in report

    unknown = pw(world.repo, "pr", "nope", "--json", token=TOKEN)
    assert unknown.returncode == 2
