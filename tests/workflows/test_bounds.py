"""Every loop of the cycle is bounded: an exhausted bound ends the run blocked, with the
reason in `status` and in the report; a test green before the implementation is never
recorded as red."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from portwright.gates.checks import check_red_green
from portwright.project import Project
from portwright.workflows import driver
from portwright.workflows.state import RunStatus
from tests.conftest import GitRepo, docker_engine_running
from tests.workflows.conftest import CycleWorld, build_world
from tests.workflows.porter import Plan, porter

pytestmark = pytest.mark.docker

BOUNDS = "\n[bounds]\nspec_attempts = 2\nred_attempts = 2\nimplement_attempts = 2\n" \
         "review_rounds = 1\n"


@pytest.fixture(autouse=True)
def _engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")


def _world(make_repo: Callable[[str], GitRepo], agents: str | None = None) -> CycleWorld:
    w = build_world(make_repo)
    files = {"portwright.toml": (w.repo / "portwright.toml").read_text() + BOUNDS}
    if agents is not None:
        files["AGENTS.md"] = agents
    w.downstream.commit("bounds", files)
    return w


def _run(w: CycleWorld, plan: Plan, run_id: str) -> driver.RunView:
    project = Project.load(w.repo, at="HEAD")
    events: list[dict[str, Any]] = []
    return driver.start(project, "kv-cache", events.append, run_id=run_id,
                        client=porter(plan))


def _status_and_report(w: CycleWorld, run_id: str) -> tuple[dict[str, Any], str]:
    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(w.repo), *args],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    return json.loads(cli("status", run_id, "--json")), cli("report", run_id)


def test_tests_green_before_implementation_are_never_red(
        make_repo: Callable[[str], GitRepo]) -> None:
    w = _world(make_repo)
    plan = w.plan()
    plan.tests = {"tests/test_cache.py": "def test_alloc():\n    assert [0] * 3 == [0, 0, 0]\n"}
    result = _run(w, plan, "green-early")
    assert result.status is RunStatus.BLOCKED
    assert "red bound is exhausted" in result.values["reason"]
    assert result.values["red_commit"] == ""
    nodes = [s["node"] for s in result.values["timeline"]]
    assert nodes.count("verify_gap") == 2  # passing tests sent it back to gap verification
    assert "implement" not in nodes
    store = Project.load(w.repo).store("green-early")
    verdict = check_red_green(w.repo, store, tests=["tests/**"])
    assert not verdict.passed  # nothing the framework saw counts as red
    status, report = _status_and_report(w, "green-early")
    assert status["status"] == "blocked"
    assert "red bound is exhausted" in status["reason"]
    assert "red bound is exhausted" in report


def test_implement_bound(make_repo: Callable[[str], GitRepo]) -> None:
    w = _world(make_repo)
    plan = w.plan()
    plan.implementation = {"kv/__init__.py": "",
                           "kv/cache.py": "def alloc(n, fill=0):\n    return [fill] * (n + 1)\n"}
    result = _run(w, plan, "impl")
    assert result.status is RunStatus.BLOCKED
    assert "implement bound is exhausted (2 attempts)" in result.values["reason"]
    assert "test_alloc" in result.values["reason"]  # the last failure is said
    status, report = _status_and_report(w, "impl")
    assert "implement bound is exhausted" in status["reason"]
    assert "implement bound is exhausted" in report


def test_review_bound(make_repo: Callable[[str], GitRepo]) -> None:
    w = _world(make_repo)
    plan = w.plan()
    changes = {"decision": "changes_requested", "summary": "the error message differs",
               "findings": [{"path": "kv/cache.py", "line": 6, "severity": "major",
                             "message": "use upstream's message"}]}
    plan.reviews = [changes, changes]
    result = _run(w, plan, "review")
    assert result.status is RunStatus.BLOCKED
    assert "review bound is exhausted (1 attempt)" in result.values["reason"]
    redone = [t for t in plan.seen if "The reviewer asked for changes" in t]
    assert redone  # the findings reached the implementer's next turn
    assert "kv/cache.py:6: [major] use upstream's message" in redone[0]


def test_spec_bound(make_repo: Callable[[str], GitRepo]) -> None:
    from tests.workflows.conftest import AGENTS

    agents = AGENTS.format().replace('questions = ["fill_dtype"]',
                                     'questions = ["fill_dtype"]\nsections = ["Surface", '
                                     '"Benchmarks"]')
    w = _world(make_repo, agents)
    result = _run(w, w.plan(), "spec")
    assert result.status is RunStatus.BLOCKED
    assert "spec bound is exhausted (2 attempts)" in result.values["reason"]
    assert "Benchmarks" in result.values["reason"]
