"""The activities of a pin sync on Temporal: open the sync, and advance it by one step.

A sync's state lives where a local sync keeps it, in the project's checkpoints (the
state folder, or ``[runs] checkpoint_url``), so ``status``, ``report``, ``syncs`` and the
port runs' own commands read it as they do for any sync. Each step activity opens the
sync's context on its worker (worktree, lock, sandbox), runs one superstep of the sync
graph from the last checkpoint (a node, or every port run fanned out together), and
heartbeats while it runs. A worker killed in the middle of a step stops reporting; the
retried step starts again from the checkpoint and its nodes find what they already did
(port runs by run id and their own checkpoints, merges and ledger entries by trailer).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from portwright.dist.models import (
    OPEN_SYNC_ACTIVITY,
    SYNC_STEP_ACTIVITY,
    OpenedSync,
    OpenSync,
    SyncRef,
    SyncSnapshot,
)
from portwright.environment import override_environ
from portwright.errors import UsageError
from portwright.project import Project
from portwright.workflows import sync_driver

logger = logging.getLogger(__name__)

OnEvent = Callable[[dict[str, Any]], None]


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
    project = sync_project(asked.root, asked.overrides)
    target = sync_driver.open_sync(project, asked.to, request.sync_id,
                                   workflow_id=request.workflow_id)
    config = project.config.temporal
    return OpenedSync(target=target, heartbeat_timeout=config.heartbeat_timeout,
                      node_timeout=config.node_timeout, max_attempts=config.max_attempts)


@activity.defn(name=OPEN_SYNC_ACTIVITY)
async def open_sync_activity(request: OpenSync) -> OpenedSync:
    """Open a sync: resolve its target, make its worktree and branch, write its manifest
    (``engine = "temporal"``). Idempotent: a retried call finds the sync it opened."""
    try:
        return await asyncio.to_thread(_open, request)
    except UsageError as exc:
        raise _non_retryable(exc) from exc


def sync_step_activity(on_event: OnEvent) -> Callable[..., Any]:
    """The step activity, reporting each node the sync finishes through ``on_event``."""

    def body(ref: SyncRef) -> SyncSnapshot:
        project = sync_project(ref.root, ref.overrides)
        attempt = activity.info().attempt

        def forward(event: dict[str, Any]) -> None:
            if event.get("event") == "node_finished" and "node" in event:
                on_event({"event": "node_finished", "run_id": ref.sync_id,
                          "node": event["node"], "attempt": attempt, "worker": os.getpid(),
                          "status": str(event.get("status", ""))})

        current = sync_driver.step(project, ref.sync_id, forward,
                                   concurrency=ref.concurrency, allow_local=ref.allow_local)
        values = current.values
        return SyncSnapshot(sync_id=ref.sync_id, status=current.status.value,
                            reason=str(values.get("reason", "")), next=list(current.next),
                            pr_url=str(values.get("pr_url", "")))

    @activity.defn(name=SYNC_STEP_ACTIVITY)
    async def sync_step(ref: SyncRef) -> SyncSnapshot:
        """Advance the sync by one step of its graph, heartbeating while it runs."""
        info = activity.info()
        every = max(0.5, (info.heartbeat_timeout.total_seconds() / 3)
                    if info.heartbeat_timeout else 20.0)
        on_event({"event": "node_started", "run_id": ref.sync_id, "node": "sync_step",
                  "attempt": info.attempt, "worker": os.getpid()})
        beat = asyncio.create_task(_heartbeat(every))
        try:
            return await asyncio.to_thread(body, ref)
        except UsageError as exc:
            raise _non_retryable(exc) from exc
        finally:
            beat.cancel()

    return sync_step


async def _heartbeat(every: float) -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(every)
