"""The activities: the cycle's nodes as Temporal's LangGraph plugin runs them, and the
activity that opens a run.

Every node activity opens the run's context from its :class:`~.models.RunRef` (the
plugin carries the LangGraph runtime context across the activity boundary as data):
the run's worktree and branch, the project as committed at the run's base, the run's
folder lock, the store and a sandbox, all closed when the node ends. A node cut short on
one worker runs again from its first line on another; its side effects find what they
already did (commits by trailer, containers by label: ``open_run`` reaps the dead
worker's), as after ``portwright resume``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from langgraph.graph import StateGraph
from langgraph.runtime import Runtime
from temporalio import activity
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from portwright.config import TemporalConfig, apply_overrides
from portwright.dist.policy import check_input
from portwright.dist.models import OPEN_RUN_ACTIVITY, OpenRun, RunRef
from portwright.errors import UsageError
from portwright.project import Project
from portwright.vcs import plumbing
from portwright.vcs.worktree import run_worktree
from portwright.workflows.context import RunContext, open_run
from portwright.workflows.cycle import assemble_cycle
from portwright.workflows.driver import _lock
from portwright.workflows.state import CycleState, Node
from portwright.workflows.steps import NodeFn, Update

logger = logging.getLogger(__name__)

OnEvent = Callable[[dict[str, Any]], None]

__all__ = ["CycleState", "RunContext", "open_run_activity", "temporal_cycle"]
# CycleState and RunContext are named here for the nodes' annotations, which LangGraph
# resolves in this module once a node is wrapped (functools.wraps keeps them)


def _run_project(root: str, run_id: str, base: str,
                 overrides: dict[str, str]) -> tuple[Project, Project]:
    """The project (its main checkout) and the run's project: its worktree, with config
    and rules as committed at the run's base and the command's overrides applied."""
    project = Project.load(Path(root))
    worktree = run_worktree(project.root, project.worktree_dir(run_id), run_id, base)
    loaded = Project.load(worktree, at=base)
    return project, replace(loaded, config=apply_overrides(loaded.config, overrides))


@contextmanager
def run_context(ref: RunRef) -> Iterator[RunContext]:
    """The run's context on this worker, for one node: its sandbox opens when the node
    needs it, never ahead (it closes with the node)."""
    from portwright.agents.offline import ReplayModel

    check_input(ref.root, ref.allow_local, ref.overrides)
    project, run_project = _run_project(ref.root, ref.run_id, ref.base, ref.overrides)
    client = ReplayModel(Path(ref.replay), seek=True) if ref.replay else None
    with _lock(project.run_dir(ref.run_id)), \
            open_run(run_project, ref.command, run_id=ref.run_id, allow_local=ref.allow_local,
                     resume=True, client=client, open_ahead=False) as ctx:
        yield ctx


def _open(request: OpenRun) -> str:
    asked = request.request
    check_input(asked.root, asked.allow_local, asked.overrides)
    store = Project.load(Path(asked.root)).store(request.run_id)
    manifest = store.manifest()
    if manifest is not None:
        if manifest.workflow_id != request.workflow_id:
            raise ApplicationError(f"run {request.run_id} exists already (not started by "
                                   f"workflow {request.workflow_id})", type="RunExists",
                                   non_retryable=True)
        return manifest.commit
    base = asked.base or plumbing.rev_parse(Path(asked.root), "HEAD")
    _, run_project = _run_project(asked.root, request.run_id, base, asked.overrides)
    store.write_manifest(command=f"run {asked.row}", commit=base,
                         rules_digests=run_project.rules().digests(),
                         config=run_project.config, engine="temporal",
                         workflow_id=request.workflow_id)
    return base


@activity.defn(name=OPEN_RUN_ACTIVITY)
async def open_run_activity(request: OpenRun) -> str:
    """Open a run: its worktree and branch, and its manifest (``engine = "temporal"``);
    returns the commit it starts from. Idempotent: a retried or replayed call finds both."""
    try:
        return await asyncio.to_thread(_open, request)
    except UsageError as exc:
        raise ApplicationError(exc.render(), type=type(exc).__name__,
                               non_retryable=True) from exc


async def _heartbeat(every: float) -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(every)


def _as_activity(name: Node, fn: NodeFn, every: float, on_event: OnEvent) -> Any:
    """``fn`` as the body of an activity: the context opened from the reference, the state
    validated again, heartbeats while it runs."""

    def body(state: CycleState, ref: RunRef, runtime: Runtime[Any]) -> Update:
        with run_context(ref) as ctx:
            return fn(state, runtime=runtime.override(context=ctx))

    @functools.wraps(fn)
    async def run(state: Any, *, runtime: Runtime[Any]) -> Update:
        ref = RunRef.model_validate(runtime.context)
        attempt = activity.info().attempt
        event = {"run_id": ref.run_id, "node": name.value, "attempt": attempt,
                 "worker": os.getpid()}
        on_event({"event": "node_started", **event})
        beat = asyncio.create_task(_heartbeat(every))
        try:
            update = await asyncio.to_thread(body, CycleState.model_validate(state), ref,
                                             runtime)
        except BaseException as exc:
            on_event({"event": "node_failed", **event, "error": type(exc).__name__})
            raise
        finally:
            beat.cancel()
        on_event({"event": "node_finished", **event,
                  "status": str(update.get("status", "")) or "running"})
        return update

    return run


def node_options(config: TemporalConfig, name: Node) -> dict[str, Any]:
    """The activity options of one node (the plugin reads them from its metadata)."""
    options: dict[str, Any] = {
        "execute_in": "activity",
        "start_to_close_timeout": timedelta(seconds=config.node_timeout),
        "heartbeat_timeout": timedelta(seconds=config.heartbeat_timeout),
        "retry_policy": RetryPolicy(maximum_attempts=config.max_attempts,
                                    non_retryable_error_types=["RunExists"]),
        "summary": name.value,
    }
    if name.value in config.node_queues:
        options["task_queue"] = config.node_queues[name.value]
    return options


def temporal_cycle(config: TemporalConfig, on_event: OnEvent,
                   ) -> StateGraph[CycleState, Any, CycleState, CycleState]:
    """A new uncompiled cycle for the plugin: every node an activity with the options of
    ``[temporal]``, heartbeating every third of ``heartbeat_timeout``."""
    every = max(0.5, config.heartbeat_timeout / 3)

    def add(graph: StateGraph[CycleState, Any, CycleState, CycleState], name: Node,
            fn: NodeFn) -> None:
        graph.add_node(name.value, _as_activity(name, fn, every, on_event),
                       metadata=node_options(config, name))

    return assemble_cycle(add, context_schema=RunRef, route=_awaitable)


def _awaitable(router: Callable[[Any], Any]) -> Callable[..., Any]:
    """A router LangGraph awaits in the workflow (a sync one it would run in a thread)."""

    @functools.wraps(router)
    async def route(state: Any) -> Any:
        return router(state)

    return route
