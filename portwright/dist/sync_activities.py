"""The activities of a pin sync on Temporal: the sync graph's nodes as Temporal's
LangGraph plugin runs them, the activity that opens a sync, and the one that writes the
workflow's checkpoints into the project's.

Every node activity opens the sync's context from its :class:`~.models.SyncRef` (the
plugin carries the LangGraph runtime context across the activity boundary as data): the
sync's worktree at its base, its folder lock, store and sandbox, all closed when the node
ends. A fanned-out ``port`` node (one LangGraph ``Send`` per row, each its own activity,
possibly on different workers) takes no sync lock: it drives its row's port run through
:mod:`portwright.workflows.driver` on the worker, under that run's own lock, worktree and
checkpoints. A node cut short on one worker runs again from its first line on another;
what it did is found, not redone (port runs by run id and their checkpoints, commits of
the port runs by trailer, merges and ledger entries by trailer, containers by label:
``open_run`` reaps the dead worker's).

The sync's state lives where a local sync keeps it, in the project's checkpoints (the
state folder, or ``[runs] checkpoint_url``): each checkpoint the workflow's in-memory
checkpointer saves is written there by :func:`write_checkpoint_activity`, so ``status``,
``report``, ``syncs``, ``pr`` and ``resume`` read a sync on Temporal as they read a local
one.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from langgraph.graph import StateGraph
from langgraph.runtime import Runtime
from temporalio import activity
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

from portwright.config import TemporalConfig
from portwright.dist.activities import OnEvent, _awaitable, _heartbeat
from portwright.dist.policy import check_input
from portwright.dist.models import (
    OPEN_SYNC_ACTIVITY,
    SYNC_CHECKPOINT_ACTIVITY,
    OpenedSync,
    OpenSync,
    SyncCheckpoint,
    SyncRef,
)
from portwright.environment import override_environ
from portwright.errors import UsageError
from portwright.project import Project
from portwright.workflows import sync_driver
from portwright.workflows.driver import _serde, open_checkpointer
from portwright.workflows.sync import SyncContext, assemble_sync
from portwright.workflows.sync_state import PortTask, SyncNode, SyncState

Update = dict[str, Any]

__all__ = ["PortTask", "SyncContext", "SyncState", "open_sync_activity", "temporal_sync",
           "write_checkpoint_activity"]
# PortTask, SyncState and SyncContext are named here for the nodes' annotations


def sync_project(root: str, overrides: dict[str, str]) -> Project:
    """The project as committed at HEAD, with the command's overrides as ``PORTWRIGHT_*``
    variables, so the sync and each port run it starts (which read the config at their
    base) obey them, as a local ``portwright sync --model …`` does."""
    environ = {**os.environ, **override_environ(overrides)}
    return Project.load(Path(root), at="HEAD", environ=environ)


def _non_retryable(exc: UsageError) -> ApplicationError:
    return ApplicationError(exc.render(), type=type(exc).__name__, non_retryable=True)


def _open(request: OpenSync) -> OpenedSync:
    asked = request.request
    check_input(asked.root, asked.allow_local, asked.overrides)
    project = sync_project(asked.root, asked.overrides)
    target, base = sync_driver.open_sync(project, asked.to, request.sync_id,
                                         workflow_id=request.workflow_id)
    return OpenedSync(target=target, base=base,
                      concurrency=asked.concurrency or project.config.sync.concurrency)


@activity.defn(name=OPEN_SYNC_ACTIVITY)
async def open_sync_activity(request: OpenSync) -> OpenedSync:
    """Open a sync: resolve its target, make its worktree and branch, write its manifest
    (``engine = "temporal"``). Idempotent: a retried call finds the sync it opened."""
    try:
        return await asyncio.to_thread(_open, request)
    except UsageError as exc:
        raise _non_retryable(exc) from exc


def _write(saved: SyncCheckpoint) -> None:
    serde = _serde()
    checkpoint = serde.loads_typed((saved.checkpoint[0],
                                    base64.b64decode(saved.checkpoint[1])))
    metadata = serde.loads_typed((saved.metadata[0], base64.b64decode(saved.metadata[1])))
    configurable: dict[str, Any] = {"thread_id": saved.sync_id, "checkpoint_ns": ""}
    if saved.parent:
        configurable["checkpoint_id"] = saved.parent
    with open_checkpointer(sync_project(saved.root, saved.overrides)) as saver:
        # every channel's version: a saver that keeps blobs by version (Postgres) gets them
        # all; one that keeps the whole checkpoint (SQLite) ignores them
        saver.put({"configurable": configurable}, checkpoint, metadata,
                  dict(checkpoint["channel_versions"]))


@activity.defn(name=SYNC_CHECKPOINT_ACTIVITY)
async def write_checkpoint_activity(saved: SyncCheckpoint) -> None:
    """Write one checkpoint of a sync's graph into the project's checkpoints (idempotent:
    the same checkpoint id is written again)."""
    await asyncio.to_thread(_write, saved)


def _as_activity(name: SyncNode, fn: Callable[..., Update], every: float,
                 on_event: OnEvent) -> Any:
    """``fn`` as the body of an activity: the sync's context opened from the reference,
    the input validated again (the state, or a port run's task), heartbeats while it runs."""
    model: type[SyncState] | type[PortTask] = PortTask if name is SyncNode.PORT \
        else SyncState

    def body(given: Any, ref: SyncRef, runtime: Runtime[Any]) -> Update:
        check_input(ref.root, ref.allow_local, ref.overrides)
        project = sync_project(ref.root, ref.overrides)
        with sync_driver.sync_context(project, ref.sync_id, ref.base, f"resume {ref.sync_id}",
                                      resume=True, allow_local=ref.allow_local,
                                      lock=name is not SyncNode.PORT) as ctx:
            return fn(given, runtime=runtime.override(context=ctx))

    @functools.wraps(fn)
    async def run(state: Any, *, runtime: Runtime[Any]) -> Update:
        ref = SyncRef.model_validate(runtime.context)
        given = model.model_validate(state)
        event = {"run_id": ref.sync_id, "node": name.value,
                 "attempt": activity.info().attempt, "worker": os.getpid()}
        if isinstance(given, PortTask):
            event["row"] = given.row
        on_event({"event": "node_started", **event})
        beat = asyncio.create_task(_heartbeat(every))
        try:
            update = await asyncio.to_thread(body, given, ref, runtime)
        except UsageError as exc:
            on_event({"event": "node_failed", **event, "error": type(exc).__name__})
            raise _non_retryable(exc) from exc
        except BaseException as exc:
            on_event({"event": "node_failed", **event, "error": type(exc).__name__})
            raise
        finally:
            beat.cancel()
        on_event({"event": "node_finished", **event,
                  "status": str(update.get("status", "")) or "running"})
        return update

    return run


def node_options(config: TemporalConfig, name: SyncNode) -> dict[str, Any]:
    """The activity options of one node of the sync (the plugin reads them from its
    metadata): ``[temporal]``'s timeout, heartbeat timeout and attempts."""
    return {
        "execute_in": "activity",
        "start_to_close_timeout": timedelta(seconds=config.node_timeout),
        "heartbeat_timeout": timedelta(seconds=config.heartbeat_timeout),
        "retry_policy": RetryPolicy(maximum_attempts=config.max_attempts),
        "summary": f"sync {name.value}",
    }


def temporal_sync(config: TemporalConfig, on_event: OnEvent,
                  ) -> StateGraph[SyncState, Any, SyncState, SyncState]:
    """A new uncompiled sync graph for the plugin: every node an activity with the options
    of ``[temporal]``, heartbeating every third of ``heartbeat_timeout``."""
    every = max(0.5, config.heartbeat_timeout / 3)

    def add(graph: StateGraph[SyncState, Any, SyncState, SyncState], name: SyncNode,
            fn: Callable[..., Any]) -> None:
        graph.add_node(name.value, _as_activity(name, fn, every, on_event),
                       metadata=node_options(config, name))

    return assemble_sync(add, context_schema=SyncRef, route=_awaitable)
