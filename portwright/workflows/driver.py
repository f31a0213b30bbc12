"""Driving the port cycle: start a run, resume it, answer its approvals, read its state.

A run is a LangGraph thread (run id = thread id) checkpointed after every node in SQLite
in the state folder (or Postgres, ``[runs] checkpoint_url``), with its own worktree and
branch, its own run folder and sandbox. Any process may resume it, later: ``resume``
continues from the last checkpoint (a node cut short by a crash runs again from its first
line; its side effects find what they already did), ``answer`` resumes a run parked at an
approval with the person's decision. One process drives a run at a time (a lock in its
folder); answering a run that is not waiting is refused ("already decided"), never a
second resume. ``publish`` opens or updates the pull request of a finished run again
(``portwright pr``), outside the graph, and records it in the run's checkpoint as the
``open_pr`` step.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command, StreamMode
from pydantic import ValidationError

from portwright.agents.llm import LLMClient
from portwright.config import PortwrightConfig
from portwright.errors import RunStateError, UsageError
from portwright.parity.matrix import require_row_at
from portwright.project import Project
from portwright.redact import unredacted
from portwright.runs.models import RunManifest
from portwright.runs.store import RunStore
from portwright.vcs import plumbing
from portwright.vcs.worktree import run_worktree
from portwright.workflows import nodes_finish
from portwright.workflows.checkpoints import _serde as _serde  # re-exported
from portwright.workflows.checkpoints import open_checkpointer as open_checkpointer
from portwright.workflows.context import RunContext, new_run_id, open_run
from portwright.workflows.cycle import build_cycle
from portwright.workflows.state import CycleState, Node, RunStatus, Step
from portwright.workflows.sync_state import COMMAND as SYNC_COMMAND

logger = logging.getLogger(__name__)

Event = dict[str, Any]
OnEvent = Callable[[Event], None]


@dataclass(frozen=True)
class RunView:
    """Where a run stands, from its checkpoint."""

    run_id: str
    status: RunStatus
    values: dict[str, Any]
    """The state's values (JSON-ready)."""
    next: tuple[str, ...]
    """Pending tasks: nodes that run next, or whose writes wait to be applied (empty when
    the run has ended)."""
    waiting: dict[str, Any] | None
    """The approval request it is parked at, if any."""
    waiting_id: str | None = None
    """The id of that interrupt: a decision names the question it answers."""


@contextmanager
def _lock(run_dir: Path) -> Iterator[None]:
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise UsageError(f"run {run_dir.name} is being driven by another process",
                             fix="wait for it to finish or stop, then resume") from exc
        yield
    finally:
        os.close(fd)


def _thread(run_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": run_id}, "recursion_limit": 400}


def view(project: Project, run_id: str, saver: BaseCheckpointSaver[Any], *,
         graph: Any = None) -> RunView:
    """A run's state from its last checkpoint (``graph``: the compiled cycle, when the
    caller has one)."""
    graph = graph if graph is not None else build_cycle().compile(checkpointer=saver)
    snapshot = graph.get_state(_thread(run_id))
    if not snapshot.values:
        raise UsageError(f"no run {run_id!r} in this project", key="RUN",
                         fix="list the runs with `portwright runs`")
    values = CycleState.model_validate(snapshot.values).model_dump(mode="json")
    waiting = snapshot.interrupts[0].value if snapshot.interrupts else None
    waiting_id = snapshot.interrupts[0].id if snapshot.interrupts else None
    status = RunStatus(values["status"])
    if waiting is not None:
        status = RunStatus.WAITING
    # a task whose writes were saved but whose successors were not yet planned (a crash
    # between the two) is still pending: resuming applies its writes and goes on
    pending = tuple(task.name for task in snapshot.tasks)
    return RunView(run_id=run_id, status=status, values=values, next=pending,
                   waiting=waiting, waiting_id=waiting_id)


def _run_project(project: Project, run_id: str, worktree: Path, base: str, *,
                 resume: bool) -> Project:
    """The project a run works on: its worktree, with the config as committed at ``base``
    (and this process's ``PORTWRIGHT_*`` overrides) when it starts, and the config it
    recorded then when it resumes — a resume from another process, without the command
    line's ``--model`` / ``--sandbox`` / ``--approve``, goes on as the run started."""
    # a project read at the run's base, its config as read: the run's worktree, at the same
    # commit, holds the same config, so it is not read and checked again
    run_project = (project.in_worktree(worktree)
                   if project.revision == base and project.as_committed
                   else Project.load(worktree, at=base, environ=project.environ))
    manifest = RunStore(project.runs_dir, run_id).manifest() if resume else None
    if manifest is None:
        return run_project
    try:  # run.json holds the config redacted: a password in it is today's again
        config = PortwrightConfig.model_validate(
            unredacted(manifest.config, run_project.config.model_dump(mode="json")))
    except ValidationError as exc:
        raise UsageError(f"the config run {run_id} recorded at its start no longer reads: "
                         f"{exc.errors()[0]['msg']}", key="RUN",
                         fix="start a new run of its row") from exc
    return replace(run_project, config=config)


@contextmanager
def worktree_run(project: Project, run_id: str, base: str, command: str, *, resume: bool,
                 allow_local: bool = False, replay: Path | None = None,
                 record: Path | None = None, client: LLMClient | None = None
                 ) -> Iterator[RunContext]:
    """The context of run ``run_id`` in its own worktree and branch from ``base`` (made
    when missing), config and rules as committed at ``base``, driven by this process
    alone (a lock in its folder) until it closes."""
    worktree = run_worktree(project.root, project.worktree_dir(run_id), run_id, base)
    run_project = _run_project(project, run_id, worktree, base, resume=resume)
    with _lock(project.run_dir(run_id)), \
            open_run(run_project, command, run_id=run_id, allow_local=allow_local,
                     replay=replay, record=record, resume=resume, client=client) as ctx:
        yield ctx


def _drive(project: Project, run_id: str, base: str, command: str, graph_input: Any,
           on_event: OnEvent, *, resume: bool, allow_local: bool = False,
           replay: Path | None = None, record: Path | None = None,
           client: LLMClient | None = None, answers: str | None = None,
           announce: Event | None = None) -> RunView:
    # the checkpoint store first: one that does not answer leaves no worktree, branch or
    # run folder behind, and the run is not announced (``announce``: a run that starts)
    with open_checkpointer(project) as saver:
        if announce is not None:
            on_event(announce)
        with worktree_run(project, run_id, base, command, resume=resume,
                          allow_local=allow_local, replay=replay, record=record,
                          client=client) as ctx:
            graph = build_cycle().compile(checkpointer=saver)
            if answers is not None:  # checked again under the lock: never a double answer
                _still_waiting(view(project, run_id, saver, graph=graph), answers)
            modes: list[StreamMode] = ["custom", "updates"]
            for mode, chunk in graph.stream(graph_input, _thread(run_id), context=ctx,
                                            stream_mode=modes, durability="sync"):
                if mode == "custom" and isinstance(chunk, dict):
                    on_event(chunk)
                elif isinstance(chunk, dict) and "__interrupt__" in chunk:
                    on_event({"event": "waiting", "run_id": run_id})
                elif isinstance(chunk, dict):
                    for name in chunk:
                        on_event({"event": "step_done", "node": name})
            return view(project, run_id, saver, graph=graph)


def start(project: Project, row: str, on_event: OnEvent, *, run_id: str | None = None,
          allow_local: bool = False, replay: Path | None = None, record: Path | None = None,
          client: LLMClient | None = None, base: str | None = None,
          target: str | None = None) -> RunView:
    """Start a run of the cycle on ``row`` from the repository's HEAD (or ``base``), in its
    own worktree and branch, porting upstream's behaviour at ``upstream.branch`` (or
    ``target``); returns where it stands when it ends or waits."""
    run_id = run_id or new_run_id("run")
    if project.run_dir(run_id).exists():
        raise UsageError(f"run {run_id!r} exists already", key="--run-id",
                         fix=f"resume it with `portwright resume {run_id}`, or pick another id")
    # a project read at HEAD (the CLI's) holds the sha HEAD named then: the run starts there
    base = plumbing.rev_parse(project.root, base or project.revision or "HEAD")
    require_row_at(project.root, project.config, row, base)  # before a run folder exists
    return _drive(project, run_id, base, f"run {row}",
                  CycleState(row=row, target=target or ""), on_event, resume=False,
                  announce={"event": "run_started", "run_id": run_id, "row": row,
                            "base": base},
                  allow_local=allow_local, replay=replay, record=record, client=client)


def _base_of(project: Project, run_id: str) -> str:
    manifest = RunStore(project.runs_dir, run_id).manifest()
    if manifest is None:
        raise UsageError(f"no run {run_id!r} in this project", key="RUN",
                         fix="list the runs with `portwright runs`")
    return manifest.commit


def resume(project: Project, run_id: str, on_event: OnEvent, *,
           allow_local: bool = False, replay: Path | None = None, record: Path | None = None,
          client: LLMClient | None = None) -> RunView:
    """Continue a run from its last checkpoint (after a crash, a kill, a reboot); a run
    blocked by its model endpoint (``retry``) runs that node again."""
    base = _base_of(project, run_id)
    with open_checkpointer(project) as saver:
        current = view(project, run_id, saver)
    if current.waiting is not None:
        raise UsageError(f"run {run_id} waits for a decision",
                         fix=f"answer it: `portwright approve {run_id}`, `reject`, or `edit`")
    retry = current.values.get("retry")
    graph_input: Any = None
    if not current.next and current.status is RunStatus.BLOCKED and retry:
        graph_input = Command(goto=retry, update={"status": RunStatus.RUNNING, "reason": "",
                                                  "retry": None})
    elif not current.next:
        on_event({"event": "finished", "run_id": run_id, "status": str(current.status)})
        return current
    return _drive(project, run_id, base, f"resume {run_id}", graph_input, on_event,
                  resume=True, allow_local=allow_local, replay=replay, record=record,
                  client=client)


def answer(project: Project, run_id: str, decision: dict[str, Any], on_event: OnEvent, *,
           allow_local: bool = False, replay: Path | None = None, record: Path | None = None,
           client: LLMClient | None = None, question: str | None = None) -> RunView:
    """Resume a run parked at an approval with ``decision`` (``{"type": "approve"}``, …).
    With ``question`` (an interrupt id from :func:`view`), only if the run still waits at
    that question; either way the check is made again under the run's lock, so two
    answers to one question never resume it twice."""
    base = _base_of(project, run_id)
    with open_checkpointer(project) as saver:
        current = view(project, run_id, saver)
    _still_waiting(current, question)
    return _drive(project, run_id, base, f"answer {run_id}",
                  Command(resume={"decisions": [decision]}), on_event, resume=True,
                  allow_local=allow_local, replay=replay, record=record,
                  client=client, answers=question or current.waiting_id or "")


def _still_waiting(current: RunView, question: str | None) -> None:
    if current.waiting is None:
        raise UsageError(f"run {current.run_id} is not waiting for a decision (already "
                         f"decided, or {current.status})", key="RUN",
                         fix=f"see `portwright status {current.run_id}`")
    if question and current.waiting_id != question:
        raise UsageError(f"run {current.run_id}: that question was already decided; it waits "
                         f"at another one now", key="RUN",
                         fix=f"see `portwright status {current.run_id}` and answer the new one")


def publish(project: Project, run_id: str, on_event: OnEvent) -> RunView:
    """Open or update the pull request of a run that finished, or that was blocked opening
    it (a bad token, a rate limit), from its branch and report as they are; the run is then
    ``done`` (``landed``) with the pull request recorded as its ``open_pr`` step."""
    base = _base_of(project, run_id)
    with open_checkpointer(project) as saver:
        _check_publishable(view(project, run_id, saver))
    worktree = run_worktree(project.root, project.worktree_dir(run_id), run_id, base)
    run_project = _run_project(project, run_id, worktree, base, resume=True)
    # where the pull request goes is today's setting: a fixed [pr] is what a retry is for
    run_project = replace(run_project, config=run_project.config.model_copy(
        update={"pr": project.config.pr}))
    with _lock(project.run_dir(run_id)), \
            open_run(run_project, f"pr {run_id}", run_id=run_id, resume=True) as ctx, \
            open_checkpointer(project) as saver:
        graph = build_cycle().compile(checkpointer=saver)
        state = CycleState.model_validate(graph.get_state(_thread(run_id)).values)
        started = datetime.now(UTC)
        update = nodes_finish.publish(ctx, state)
        update["timeline"] = [Step(node=Node.OPEN_PR, started=started,
                                   finished=datetime.now(UTC), note="portwright pr")]
        graph.update_state(_thread(run_id), update, as_node=Node.OPEN_PR.value)
        on_event({"event": "pr", "run_id": run_id, "number": update["pr_number"],
                  "url": update["pr_url"]})
        return view(project, run_id, saver, graph=graph)


def _check_publishable(current: RunView) -> None:
    run_id = current.run_id
    if current.waiting is not None:
        raise UsageError(f"run {run_id} waits for a decision", key="RUN",
                         fix=f"answer it: `portwright approve {run_id}` (or reject it)")
    if current.next:
        raise UsageError(f"run {run_id} has not finished (next: {', '.join(current.next)})",
                         key="RUN", fix=f"continue it: `portwright resume {run_id}`")
    reason = str(current.values.get("reason", ""))
    if current.status is RunStatus.BLOCKED and not reason.startswith(f"{Node.OPEN_PR}:"):
        raise UsageError(f"run {run_id} was blocked before its pull request: {reason}",
                         key="RUN", fix="a blocked run has nothing to publish; start a new run "
                                        "once the cause is fixed")


def run_folders(project: Project) -> list[tuple[str, RunManifest | RunStateError]]:
    """The run folders of the cycle's runs (not a gate's, a gap verdict's or a sync's),
    oldest first, each with its manifest, or the error of one that does not read (it may
    be any run's)."""
    if not project.runs_dir.is_dir():
        return []
    found = [p for p in project.runs_dir.iterdir() if (p / "run.json").is_file()
             and not p.name.startswith(("gates-", "verify-gap-"))]
    out: list[tuple[str, RunManifest | RunStateError]] = []
    for folder in sorted(found, key=lambda p: (p / "run.json").stat().st_mtime):
        try:
            manifest = RunStore(project.runs_dir, folder.name).manifest()
        except RunStateError as exc:
            out.append((folder.name, exc))
            continue
        if manifest is not None and manifest.command.split(" ", 1)[0] != SYNC_COMMAND:
            out.append((folder.name, manifest))
    return out


def run_ids(project: Project) -> list[str]:
    """Every run of the cycle in the project whose run folder reads, oldest first (see
    :func:`portwright.workflows.survey.survey` for the others)."""
    return [run_id for run_id, manifest in run_folders(project)
            if not isinstance(manifest, RunStateError)]
