"""The two modes on a real port (tinystats' moving-average row), in the Docker sandbox, with
scripted models: what each reports is what the framework recorded."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from portwright.agents.llm import CompletionRequest, Message
from portwright.agents.loop import Status
from portwright.agents.offline import ScriptedModel
from portwright.eval.loop import OUTCOME
from portwright.eval.modes import ModelSource, run_mode
from portwright.project import Project
from portwright.vcs import plumbing
from tests.eval.scripted import LoopPlan, loop_agent
from tests.eval.tinystats import TESTS, Tinystats, build_tinystats, needs_engine
from tests.workflows.porter import porter

pytestmark = pytest.mark.docker


@pytest.fixture
def tinystats(tmp_path: Path) -> Tinystats:
    needs_engine()
    return build_tinystats(tmp_path)

ROW = "moving-average"


def test_the_loop_agent_ports_and_the_framework_commits_what_it_left(
        tinystats: Tinystats) -> None:
    project = Project.load(tinystats.repo, at="HEAD")
    model = loop_agent(tinystats.oracle())
    events: list[dict[str, Any]] = []
    outcome = run_mode("loop", project, ROW, run_id="eval-loop",
                       model=ModelSource(client=model), on_event=events.append)
    assert outcome.status == "done"
    assert outcome.failure is None
    assert (outcome.red_observed, outcome.gates_passed, outcome.review) == (None, None, None)
    assert outcome.calls == len(model.requests) == 5  # three writes, the tests, done
    assert outcome.tokens_in > outcome.tokens_out > 0
    # the agent's work is a commit on the run's branch, the user's checkout untouched
    assert outcome.base == plumbing.rev_parse(tinystats.repo, "HEAD")
    changed = plumbing.git(tinystats.repo, "diff", "--name-only", outcome.base,
                           outcome.head).decode().split()
    assert sorted(changed) == sorted([TESTS, "pystats/__init__.py", "pystats/stats.py"])
    assert plumbing.git(tinystats.repo, "status", "--porcelain") == b""
    # it ran the tests in the sandbox and saw them pass
    answers = [m.content or "" for m in model.requests[-1].messages if m.role == "tool"]
    assert answers[-1].startswith("exit code 0"), answers[-1]
    # its prompt: the row, the upstream change, the test command; the `done` tool
    first = model.requests[0]
    task = first.messages[1].content or ""
    assert "Moving average, trailing and centered" in task
    assert "Add movingAverage with trailing and centered windows" in task
    assert "python3 -m pytest -q -p no:cacheprovider tests" in task
    assert "done" in [t.name for t in first.tools]
    assert "submit_result" not in [t.name for t in first.tools]


def test_a_finished_loop_is_not_run_again(tinystats: Tinystats) -> None:
    project = Project.load(tinystats.repo, at="HEAD")
    first = run_mode("loop", project, ROW, run_id="eval-loop",
                     model=ModelSource(client=loop_agent(tinystats.oracle())))
    again = loop_agent(tinystats.oracle())
    second = run_mode("loop", project, ROW, run_id="eval-loop",
                      model=ModelSource(client=again))
    assert again.requests == []
    assert second.head == first.head
    assert second.calls == first.calls


def test_a_loop_cut_by_the_budget_still_leaves_its_work(tinystats: Tinystats) -> None:
    environ = {**os.environ, "PORTWRIGHT_MODEL__BUDGET__CALLS": "2"}
    project = Project.load(tinystats.repo, at="HEAD", environ=environ)
    outcome = run_mode("loop", project, ROW, run_id="eval-loop",
                       model=ModelSource(client=loop_agent(tinystats.oracle())))
    assert outcome.status == Status.BUDGET_EXHAUSTED
    assert outcome.failure == "budget"
    assert outcome.calls == 2
    changed = plumbing.git(tinystats.repo, "diff", "--name-only", outcome.base,
                           outcome.head).decode().split()
    assert sorted(changed) == ["pystats/stats.py", TESTS]  # written before it ran out
    assert (project.run_dir("eval-loop") / OUTCOME).is_file()


def test_the_cycle_reports_red_gates_and_review_from_its_records(
        tinystats: Tinystats) -> None:
    project = Project.load(tinystats.repo, at="HEAD")
    outcome = run_mode("cycle", project, ROW, run_id="eval-cycle",
                       model=ModelSource(client=porter(tinystats.cycle_plan())))
    assert outcome.status == "done", outcome.detail
    assert outcome.failure is None
    assert outcome.red_observed is True
    assert outcome.gates_passed is True
    assert outcome.review == "approve"
    assert outcome.calls >= 6
    assert outcome.tokens_in > 0
    changed = plumbing.git(tinystats.repo, "diff", "--name-only", outcome.base,
                           outcome.head).decode().split()
    assert TESTS in changed
    assert "pystats/stats.py" in changed


def test_a_cycle_whose_tests_pass_at_once_never_sees_red_and_ends_on_the_bound(
        tinystats: Tinystats) -> None:
    passing = {TESTS: "def test_moving_average():\n    assert True\n"}
    project = Project.load(tinystats.repo, at="HEAD")
    outcome = run_mode("cycle", project, ROW, run_id="eval-cycle",
                       model=ModelSource(client=porter(tinystats.cycle_plan(passing))))
    assert outcome.status == "blocked"
    assert outcome.red_observed is False
    assert outcome.gates_passed is False
    assert outcome.review is None
    assert outcome.failure == "bound"
    assert outcome.detail.startswith("the red bound is exhausted")


def test_a_weakening_loop_agent_gets_its_weakened_tests_committed(
        tinystats: Tinystats) -> None:
    """The loop has no gate: what it leaves is committed as it is (hidden tests judge it)."""
    weak = LoopPlan(files={TESTS: "import pytest\n\n\n@pytest.mark.skip\ndef test_it():\n"
                                  "    assert False\n",
                           "pystats/stats.py": (tinystats.repo / "pystats/stats.py")
                           .read_text() + "\n\ndef moving_average(values, *a, **k):\n"
                                          "    return []\n"})
    project = Project.load(tinystats.repo, at="HEAD")
    outcome = run_mode("loop", project, ROW, run_id="eval-loop",
                       model=ModelSource(client=loop_agent(weak)))
    assert outcome.status == "done"
    assert outcome.failure is None
    text = plumbing.show(tinystats.repo, outcome.head, TESTS)
    assert text is not None
    assert b"pytest.mark.skip" in text


def crashing(model: ScriptedModel, *, after: int) -> ScriptedModel:
    """``model``, but the process "dies" (Ctrl-C) at its call number ``after`` + 1."""
    calls: list[int] = []

    def script(request: CompletionRequest) -> Message:
        calls.append(1)
        if len(calls) > after:
            raise KeyboardInterrupt
        return model.complete(request).message

    return ScriptedModel(script, model=model.model)


def test_a_cycle_cut_short_resumes_from_its_checkpoint(tinystats: Tinystats) -> None:
    project = Project.load(tinystats.repo, at="HEAD")
    plan = tinystats.cycle_plan()
    with pytest.raises(KeyboardInterrupt):  # dies in the implementer's first turn
        run_mode("cycle", project, ROW, run_id="eval-cycle",
                 model=ModelSource(client=crashing(porter(plan), after=2)))
    again = porter(tinystats.cycle_plan())
    outcome = run_mode("cycle", project, ROW, run_id="eval-cycle",
                       model=ModelSource(client=again))
    assert outcome.status == "done", outcome.detail
    assert outcome.red_observed is True
    # the gap verifier and the enumerator were not asked again; every call is counted
    assert "You are the gap verifier" not in (again.requests[0].messages[0].content or "")
    assert outcome.calls == 2 + len(again.requests)


def test_a_loop_cut_short_starts_over_from_the_branch(tinystats: Tinystats) -> None:
    project = Project.load(tinystats.repo, at="HEAD")
    with pytest.raises(KeyboardInterrupt):  # dies after writing two files
        run_mode("loop", project, ROW, run_id="eval-loop",
                 model=ModelSource(client=crashing(loop_agent(tinystats.oracle()), after=2)))
    again = loop_agent(tinystats.oracle())
    outcome = run_mode("loop", project, ROW, run_id="eval-loop",
                       model=ModelSource(client=again))
    assert outcome.status == "done"
    assert len(again.requests) == 5  # the whole turn again, from a clean worktree
    assert outcome.calls == 2 + 5    # the cut turn's calls count too
