"""The two modes of ``portwright eval run`` on one task's workspace, and what each left.

- **cycle**: the port-cycle graph on the task's row with approvals off (``portwright run
  --approve auto``), through :mod:`portwright.workflows.driver`;
- **loop**: the loop agent (:mod:`portwright.eval.loop`) in a run of its own, with the
  same worktree, sandbox, model and budget a cycle run gets (:func:`driver.worktree_run`).

Both run as a run of the task's project (its own worktree and branch, run folder and
sandbox) with a fixed run id, so a task cut short continues where it stopped: the cycle
resumes from its last checkpoint, the loop finds its finished turn or starts it over.

What a mode reports is read from what the framework recorded, never from what an agent
said: red observed from the signed red records on the run's tests-only commit, the
``full`` gates from the checkpointed state, the review from the reviewer's verdict the
framework kept, tokens, cost and calls from the turns' transcripts, and the failure class
from how the run ended (:func:`cycle_failure`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from portwright.agents.llm import LLMClient
from portwright.agents.loop import Status
from portwright.environment import override_environ
from portwright.eval.loop import port_in_loop
from portwright.eval.results import Failure, Mode
from portwright.project import Project
from portwright.runs.models import EvidenceKind
from portwright.runs.report import spend
from portwright.vcs import plumbing
from portwright.vcs.worktree import branch_name
from portwright.workflows import driver
from portwright.workflows.approvals import approve_keys
from portwright.workflows.state import GateRef, RunStatus

logger = logging.getLogger(__name__)

OnEvent = Callable[[dict[str, Any]], None]

AGENT_FAILURE: dict[Status, Failure] = {
    Status.BUDGET_EXHAUSTED: Failure.BUDGET, Status.STEP_LIMIT: Failure.BOUND,
    Status.STUCK: Failure.BOUND, Status.MODEL_ERROR: Failure.ERROR,
    Status.FAILED: Failure.ERROR}
"""The failure class of an agent turn that ended without its result."""


@dataclass(frozen=True)
class ModelSource:
    """Where the agents' model comes from: the task config's ``[model]`` (default), a
    client given in process (a scripted model), or a cassette to play; ``record`` keeps
    every call in a cassette."""

    client: LLMClient | None = None
    replay: Path | None = None
    record: Path | None = None


class ModeOutcome(BaseModel):
    """What one mode left on one task, as the framework observed it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    mode: Mode
    run_id: str
    status: str
    """The run's end: ``done``, ``landed``, ``blocked`` (cycle); the agent turn's status
    (loop: ``done``, ``budget_exhausted``, ``step_limit``, …)."""
    base: str
    """The commit the run started from (the workspace's harness commit)."""
    head: str
    """The head of the run's branch: the tree it left."""
    red_observed: bool | None = None
    """cycle: the framework saw the ported tests fail on the tests-only commit."""
    gates_passed: bool | None = None
    """cycle: every ``full`` gate passed in their last round."""
    review: Literal["approve", "changes_requested"] | None = None
    """cycle: the reviewer's last decision (None: never reviewed)."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    failure: Failure | None = None
    """How the run ended when it did not end well (``budget``, ``bound``, ``gate``,
    ``review``, ``error``; the runner adds ``hidden_tests`` and ``integrity``)."""
    detail: str = ""
    """One line: the run's reason."""


def run_mode(mode: Mode, project: Project, row: str, *, run_id: str,
             target: str | None = None, model: ModelSource | None = None,
             allow_local: bool = False, on_event: OnEvent | None = None) -> ModeOutcome:
    """Run ``mode`` on ``row`` of ``project`` as run ``run_id`` (continued when it exists),
    porting upstream up to ``target`` (default ``[upstream] branch``)."""
    run = run_cycle if Mode(mode) is Mode.CYCLE else run_loop
    return run(project, row, run_id=run_id, target=target, model=model or ModelSource(),
               allow_local=allow_local, on_event=on_event or (lambda event: None))


# -- cycle -----------------------------------------------------------------------------


def run_cycle(project: Project, row: str, *, run_id: str, target: str | None,
              model: ModelSource, allow_local: bool, on_event: OnEvent) -> ModeOutcome:
    """The port cycle on ``row`` with approvals off; resumed when the run exists."""
    environ = {**project.environ, **override_environ(approve_keys("auto"))}
    project = Project.load(project.root, at=project.revision or "HEAD", environ=environ)
    options: dict[str, Any] = {"allow_local": allow_local, "replay": model.replay,
                               "record": model.record, "client": model.client}
    if project.store(run_id).manifest() is None:
        view = driver.start(project, row, on_event, run_id=run_id, target=target, **options)
    else:
        view = driver.resume(project, run_id, on_event, **options)
    return cycle_outcome(project, view)


def cycle_outcome(project: Project, view: driver.RunView) -> ModeOutcome:
    """What a cycle run left, read from its checkpoint, run store and run folder."""
    values = view.values
    run_id = view.run_id
    red_commit = str(values.get("red_commit") or "")
    reds = project.store(run_id).records(EvidenceKind.RED) if red_commit else []
    red = any(r.commit == red_commit and r.exit_code != 0 and r.tests_failed for r in reds)
    gates = [GateRef.model_validate(g) for g in values.get("gates") or []]
    failure, detail = cycle_failure(view.status, str(values.get("reason") or ""), gates)
    return ModeOutcome(
        mode=Mode.CYCLE, run_id=run_id, status=view.status.value,
        base=str(values.get("base") or ""), head=_branch_head(project, run_id),
        red_observed=red, gates_passed=full_gates_passed(gates),
        review=values.get("review") or None, failure=failure, detail=detail,
        **_spent(project, run_id))


def full_gates_passed(gates: list[GateRef]) -> bool:
    """Whether the last round of ``full`` gates (the refs one ``full_gate`` step added
    together) all passed; False when the gates never ran."""
    last: list[GateRef] = []
    for ref in reversed(gates):
        if ref.phase != "full":
            if last:
                break
            continue
        last.append(ref)
    return bool(last) and all(ref.passed for ref in last)


_BOUND = re.compile(r"the (?P<loop>\w+) bound is exhausted")
_AGENT_END = re.compile(r"[\w ()]+: (?P<status>[a-z_]+): ")
_GATE_BLOCKS = ("the records do not reconcile",)


def cycle_failure(status: RunStatus, reason: str, gates: list[GateRef]
                  ) -> tuple[Failure | None, str]:
    """The failure class of a cycle run that ended ``status`` with ``reason`` (the
    framework's own text, matched at its start only: what follows quotes agents and
    commands), and the one-line detail.

    ``budget``: an agent's turn ran out of the run's budget; ``bound``: an attempt bound of
    the cycle (red, spec) or an agent's step limit; ``gate``: the implement bound spent on
    a failing gate, or records that do not reconcile; ``review``: the review bound spent
    on requested changes; ``error``: anything else (a model error, a node that failed, a
    run that did not end)."""
    detail = reason.splitlines()[0] if reason else ""
    if status in (RunStatus.DONE, RunStatus.LANDED):
        return None, detail
    if status is not RunStatus.BLOCKED:
        said = f": {detail}" if detail else ""
        return Failure.ERROR, f"the run did not end ({status.value}){said}"
    bound = _BOUND.match(reason)
    if bound is not None:
        loop = bound["loop"]
        if loop == "review":
            return Failure.REVIEW, detail
        if loop == "implement" and gates and not gates[-1].passed:
            return Failure.GATE, detail
        return Failure.BOUND, detail
    agent = _AGENT_END.match(reason)
    if agent is not None and agent["status"] in set(Status):
        return AGENT_FAILURE.get(Status(agent["status"]), Failure.ERROR), detail
    if reason.startswith(_GATE_BLOCKS):
        return Failure.GATE, detail
    return Failure.ERROR, detail


# -- loop ------------------------------------------------------------------------------


def run_loop(project: Project, row: str, *, run_id: str, target: str | None,
             model: ModelSource, allow_local: bool, on_event: OnEvent) -> ModeOutcome:
    """The loop agent on ``row`` in a run of its own; a turn that ended is not run again."""
    manifest = project.store(run_id).manifest()
    base = manifest.commit if manifest is not None else plumbing.rev_parse(project.root,
                                                                           "HEAD")
    on_event({"event": "run_started", "run_id": run_id, "row": row, "base": base,
              "mode": "loop"})
    with driver.worktree_run(project, run_id, base, f"eval loop {row}",
                             resume=manifest is not None, allow_local=allow_local,
                             replay=model.replay, record=model.record,
                             client=model.client) as ctx:
        end = port_in_loop(ctx, row, target)
    on_event({"event": "agent_finished", "role": "loop", "status": end.status.value})
    failure = (None if end.status is Status.DONE
               else AGENT_FAILURE.get(end.status, Failure.ERROR))
    return ModeOutcome(mode=Mode.LOOP, run_id=run_id, status=end.status.value, base=base,
                       head=_branch_head(project, run_id), failure=failure,
                       detail=end.reason.splitlines()[0] if end.reason else "",
                       **_spent(project, run_id))


# -- shared ----------------------------------------------------------------------------


def _branch_head(project: Project, run_id: str) -> str:
    return plumbing.rev_parse(project.root, f"refs/heads/{branch_name(run_id)}")


def _spent(project: Project, run_id: str) -> dict[str, Any]:
    """Tokens in and out, cost and calls over every turn of the run (its transcripts)."""
    roles = spend(project.run_dir(run_id)).values()
    return {"tokens_in": int(sum(v["tokens_in"] for v in roles)),
            "tokens_out": int(sum(v["tokens_out"] for v in roles)),
            "cost_usd": round(sum(v["cost_usd"] for v in roles), 6),
            "calls": int(sum(v["calls"] for v in roles))}
