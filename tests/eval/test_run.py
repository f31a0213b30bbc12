"""`eval run` in process, on a small real pair (calc: upstream adds `sub`, the real port adds
it with a test), in the Docker sandbox, with scripted models that port well or make known
mistakes: each task scored by its hidden tests, results written, reruns resumed."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from portwright.agents.llm import LLMClient
from portwright.eval.results import EvalReport, Failure, Mode, TaskResult
from portwright.eval.runner import RunOptions, report_path, result_path, run_suite
from portwright.eval.tasks import PortTask, Suite, load_suite
from tests.eval.calc_plans import ORACLE, WEAKENER, calc_suite, cycle_plan
from tests.eval.conftest import Pair, build_pair, task_toml
from tests.eval.scripted import LoopPlan, both_modes
from tests.eval.tinystats import needs_engine
from tests.workflows.porter import Plan

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture
def calc(tmp_path: Path) -> tuple[Pair, Suite]:
    needs_engine()
    return calc_suite(tmp_path)


def options(tmp: Path, mode: Mode, cycle: Plan, loop: LoopPlan, **more: Any) -> RunOptions:
    models: list[LLMClient] = []

    def client(task: PortTask, mode: Mode) -> LLMClient:
        models.append(both_modes(cycle, loop))
        return models[-1]

    return RunOptions(mode=mode, out=tmp / "out", repos=tmp / "repos", client=client, **more)


def test_the_loop_oracle_resolves_and_a_rerun_skips_it(tmp_path: Path,
                                                      calc: tuple[Pair, Suite]) -> None:
    _, suite = calc
    events: list[dict[str, Any]] = []
    opts = options(tmp_path, Mode.LOOP, cycle_plan(), ORACLE)
    report = run_suite(suite, opts, events.append)
    (result,) = report.results
    assert result.resolved, result.detail
    assert result.failure is None
    assert result.hidden_passed == ["tests/test_sub.py::test_sub"]
    assert result.hidden_failed == []
    assert result.regressions == []
    assert (result.red_observed, result.gates_passed, result.review) == (None, None, None)
    assert result.calls == 4
    assert result.tokens_in > result.tokens_out > 0
    assert result.wall_seconds > 0
    saved = result_path(opts.out, suite.tasks[0], Mode.LOOP)
    assert TaskResult.model_validate_json(saved.read_bytes()) == result
    written = json.loads(report_path(opts.out, Mode.LOOP).read_text())
    assert EvalReport.model_validate(written) == report
    assert written["aggregate"]["resolved"] == 1
    kinds = [e["event"] for e in events]
    assert kinds[0] == "task_started"
    assert "task_finished" in kinds
    assert kinds[-1] == "report"
    # a rerun skips the task: no model call, the same report
    again: list[dict[str, Any]] = []
    assert run_suite(suite, opts, again.append) == report
    assert [e["event"] for e in again] == ["task_skipped", "report"]


def test_a_loop_agent_that_weakens_the_test_is_not_resolved(tmp_path: Path,
                                                            calc: tuple[Pair, Suite]) -> None:
    """It skips the ported test and says every test passes; the hidden test, put back from
    the real port, fails on its wrong `sub`."""
    _, suite = calc
    report = run_suite(suite, options(tmp_path, Mode.LOOP, cycle_plan(), WEAKENER))
    (result,) = report.results
    assert not result.resolved
    assert result.failure is Failure.HIDDEN_TESTS
    assert result.hidden_failed == ["tests/test_sub.py::test_sub"]
    assert "1 of 1 hidden test(s) failed" in result.detail


def test_the_cycle_resolves_with_red_gates_and_review(tmp_path: Path,
                                                      calc: tuple[Pair, Suite]) -> None:
    _, suite = calc
    report = run_suite(suite, options(tmp_path, Mode.CYCLE, cycle_plan(), ORACLE))
    (result,) = report.results
    assert result.resolved, result.detail
    assert result.red_observed is True
    assert result.gates_passed is True
    assert result.review == "approve"
    assert result.calls >= 6


def test_a_cycle_whose_red_is_never_observed_is_reported_so(tmp_path: Path,
                                                            calc: tuple[Pair, Suite]) -> None:
    """The scripted implementer ports a test that passes at once: the framework never sees
    red, the run ends on the red bound, the implementation is never written."""
    _, suite = calc
    passing = {"tests/test_sub.py": "def test_sub():\n    assert True\n"}
    report = run_suite(suite, options(tmp_path, Mode.CYCLE, cycle_plan(passing), ORACLE))
    (result,) = report.results
    assert not result.resolved
    assert result.red_observed is False
    assert result.gates_passed is False
    assert result.failure is Failure.BOUND
    assert result.detail.startswith("the red bound is exhausted")
    assert result.hidden_failed == ["tests/test_sub.py::test_sub"]
    assert report.aggregate.red_observed == 0


def test_a_loop_agent_that_plants_a_test_hook_fails_integrity(tmp_path: Path,
                                                              calc: tuple[Pair, Suite]) -> None:
    """Its tool refuses a root conftest.py; the same file written by a command in the sandbox
    is refused by the step's commit (it steers the test runner), and the task fails
    integrity, though its sub is right: nothing of the agent's is scored."""
    _, suite = calc
    hook = "def pytest_collection_modifyitems(items):\n    items.clear()\n"
    planting = LoopPlan(files=ORACLE.files,
                        commands=[f"printf '{hook}' > conftest.py && echo planted"])
    report = run_suite(suite, options(tmp_path, Mode.LOOP, cycle_plan(), planting))
    (result,) = report.results
    assert not result.resolved
    assert result.failure is Failure.INTEGRITY
    assert "commit is refused: conftest.py steers" in result.detail, result.detail


def test_a_task_without_model_calls_is_recorded_and_replayed(tmp_path: Path) -> None:
    """A cycle blocked before its first role (the upstream change defines no function or
    class for the row to port) makes no model call; --record still writes its cassette,
    empty, so that --replay runs the suite rather than refusing it for a missing
    cassette."""
    needs_engine()
    pair = build_pair(tmp_path / "repos")
    docs = pair.upstream.commit("docs", {"README.md": "calc, documented\n"})
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "sub.toml").write_text(task_toml(
        pair, up=f'[upstream]\nrepo = "acme/calc-js"\ncommits = ["{docs}"]'))
    suite = load_suite(tmp_path / "suite")
    tapes = tmp_path / "tapes"
    environ = {**os.environ, "OPENAI_API_KEY": "unused",
               "PORTWRIGHT_MODEL__BASE_URL": "http://127.0.0.1:9/v1"}
    recorded = run_suite(suite, RunOptions(mode=Mode.CYCLE, out=tmp_path / "out",
                                           repos=pair.repos, record=tapes, environ=environ))
    (result,) = recorded.results
    assert (result.failure, result.calls) == (Failure.ERROR, 0)
    assert "Upstream column" in result.detail  # blocked at prepare, before any role
    cassette = tapes / f"{suite.tasks[0].slug}.cycle.jsonl"
    assert cassette.read_text() == ""
    replayed = run_suite(suite, RunOptions(mode=Mode.CYCLE, out=tmp_path / "again",
                                           repos=pair.repos, replay=tapes))
    (again,) = replayed.results
    assert (again.failure, again.detail, again.hidden_failed) == (
        result.failure, result.detail, result.hidden_failed)


def test_the_parents_history_is_fetched_once_for_validation_and_run(
        tmp_path: Path, calc: tuple[Pair, Suite], monkeypatch: pytest.MonkeyPatch) -> None:
    """The validation's workspace fetches the parent into the validation store's seed; the
    run's workspace, and those of later runs in other output folders, copy it."""
    from portwright.eval.validate import seed_dir, store_dir
    from portwright.vcs import plumbing

    pair, suite = calc
    fetched: list[str] = []
    real = plumbing.git

    def counted(repo: Path, *args: str, **kwargs: Any) -> bytes:
        if "fetch" in args:
            fetched.append(args[-1])
        return real(repo, *args, **kwargs)

    monkeypatch.setattr(plumbing, "git", counted)
    first = options(tmp_path, Mode.LOOP, cycle_plan(), ORACLE)
    (result,) = run_suite(suite, first).results
    assert result.resolved, result.detail
    assert fetched.count(pair.parent) == 1
    assert (seed_dir(store_dir()) / f"{pair.parent}.git").is_dir()
    later = dataclasses.replace(options(tmp_path, Mode.LOOP, cycle_plan(), ORACLE),
                                out=tmp_path / "later")
    (again,) = run_suite(suite, later).results
    assert again.resolved, again.detail
    assert fetched.count(pair.parent) == 1
    for out in (first.out, later.out):
        for ws in (out / "work", out / "runs" / "loop"):
            (downstream,) = ws.glob("*/downstream/*")
            assert plumbing.run(downstream, "cat-file", "-e", pair.port).returncode != 0
