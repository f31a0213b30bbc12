"""Secrets reach nothing portwright writes: a model endpoint that echoes the API key in its
error, a model that repeats it in its answers, a ``[runs] checkpoint_url`` password and a
``[pr] remote`` with credentials in an upper-case scheme.

Real runs: `portwright run` in a subprocess, the real openai SDK against a local
OpenAI-compatible endpoint, the real graph, Docker sandbox and SQLite checkpoints; then
every file of the state folder (checkpoint database and its log, transcripts, logs,
evidence, ``run.json``, the pull request's body), ``status --json``, ``runs --json``, the
report and the run's page are searched for the secret.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from portwright.project import Project
from tests.conftest import GitRepo, docker_engine_running
from tests.workflows.conftest import CycleWorld, build_world
from tests.workflows.fake_server import PATH, model_config, serve_porter

KEY = "porter-opaque-key-5d1e0c9a77"
"""The model's API key: no token shape, so only the registry of known values masks it."""


def pw(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PORTER_KEY": KEY})


def engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def with_model(make_repo: Callable[[str], GitRepo], server: HTTPServer,
               extra: str = "") -> CycleWorld:
    built = build_world(make_repo)
    config = (built.repo / "portwright.toml").read_text() + model_config(server) + extra
    built.downstream.commit("model endpoint", {"portwright.toml": config})
    return built


def files_holding(secret: str, *roots: Path) -> list[str]:
    """Every regular file under ``roots`` whose bytes hold ``secret``."""
    return [str(path) for root in roots for path in [root, *root.rglob("*")]
            if path.is_file() and not path.is_symlink() and secret.encode() in path.read_bytes()]


def outputs(repo: Path, run_id: str, secret: str) -> dict[str, str]:
    """What each outward command printed, for those that printed ``secret``."""
    said = {" ".join(args): pw(repo, *args) for args in (
        ("status", run_id, "--json"), ("status", run_id), ("runs", "--json"), ("runs",),
        ("report", run_id), ("report", run_id, "--html"), ("log", run_id))}
    for args, done in said.items():
        assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    page = Path(said[f"report {run_id} --html"].stdout.strip()).read_text()
    found = {args: done.stdout + done.stderr for args, done in said.items()
             if secret in done.stdout + done.stderr}
    return {**found, **({"page": page} if secret in page else {})}


@pytest.mark.docker
def test_an_api_key_the_endpoint_echoes_is_nowhere(make_repo: Callable[[str], GitRepo],
                                                   httpserver: HTTPServer) -> None:
    engine()
    w = with_model(make_repo, httpserver)

    def refuse(request: Request) -> Response:
        body = {"error": {"message": f"Incorrect API key provided: {KEY}. Authorization: "
                                     f"Bearer {KEY}", "type": "invalid_request_error",
                          "code": "invalid_api_key"}}
        return Response(json.dumps(body), status=401, content_type="application/json")

    httpserver.expect_request(PATH, method="POST").respond_with_handler(refuse)
    done = pw(w.repo, "run", "kv-cache", "--run-id", "leak-1")
    assert KEY not in done.stdout + done.stderr
    status = json.loads(pw(w.repo, "status", "leak-1", "--json").stdout)
    assert status["status"] == "blocked"
    assert "HTTP 401" in status["reason"]
    assert "Incorrect API key provided: ***" in status["reason"]  # masked, not dropped
    project = Project.load(w.repo)
    assert (project.state_dir / "checkpoints.sqlite").is_file()
    assert files_holding(KEY, project.state_dir, w.repo) == []
    assert outputs(w.repo, "leak-1", KEY) == {}


@pytest.mark.docker
def test_a_key_a_model_repeats_is_in_no_checkpoint_page_or_pull_request(
        make_repo: Callable[[str], GitRepo], httpserver: HTTPServer) -> None:
    engine()
    w = with_model(make_repo, httpserver)
    plan = w.plan()
    plan.gap["reasoning"] += f" (the key was {KEY}, sent as Authorization: Bearer {KEY})"
    plan.review = {**plan.review, "summary": plan.review["summary"] + f" token {KEY}"}
    serve_porter(httpserver, plan)
    done = pw(w.repo, "run", "kv-cache", "--run-id", "leak-2")
    assert done.returncode == 0, done.stdout + done.stderr
    project = Project.load(w.repo)
    body = (project.run_dir("leak-2") / "pr.md").read_text()
    assert "alloc exists upstream only (the key was ***" in body
    assert KEY not in done.stdout + done.stderr
    assert files_holding(KEY, project.state_dir, w.repo) == []
    assert outputs(w.repo, "leak-2", KEY) == {}


PASSWORD = "pg-pass-81d0c3"


@pytest.mark.docker
def test_a_checkpoint_url_password_is_not_in_run_json(make_repo: Callable[[str], GitRepo],
                                                      httpserver: HTTPServer) -> None:
    engine()
    url = f"postgresql://port:{PASSWORD}@127.0.0.1:9/runs"
    w = with_model(make_repo, httpserver, f'\n[runs]\ncheckpoint_url = "{url}"\n')
    done = pw(w.repo, "run", "kv-cache", "--run-id", "pg-1")
    assert done.returncode == 1, done.stderr  # nothing answers on port 9: no run starts
    assert PASSWORD not in done.stdout + done.stderr
    project = Project.load(w.repo)
    assert not project.run_dir("pg-1").exists()
    # a command that needs no checkpoint records the config in its run.json all the same
    pw(w.repo, "gates", "run", "--phase", "spec", "--run-id", "pg-2")
    manifest = json.loads((project.run_dir("pg-2") / "run.json").read_text())
    assert manifest["config"]["runs"]["checkpoint_url"] == \
        "postgresql://port:***@127.0.0.1:9/runs"
    assert files_holding(PASSWORD, project.run_dir("pg-2")) == []


@pytest.mark.parametrize("remote", ["HTTPS://user:pw-9f2c1e@github.com/o/r.git",
                                    "Https://x-access-token:pw-9f2c1e@github.com/o/r",
                                    "GIT+SSH://user:pw-9f2c1e@host/r.git"])
def test_an_upper_case_scheme_with_credentials_is_refused(
        make_repo: Callable[[str], GitRepo], remote: str) -> None:
    repo = make_repo("downstream")
    repo.commit("config", {"portwright.toml": f'[upstream]\nsource = "../upstream"\n\n'
                                              f'[pr]\nremote = "{remote}"\n'})
    done = pw(repo.path, "runs")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "[pr.remote]" in done.stderr
    assert "holds credentials" in done.stderr
    assert "Traceback" not in done.stderr
    assert "pw-9f2c1e" not in done.stdout + done.stderr
