"""The ``portwright.sync`` workflow: a pin sync driven by Temporal (workflow id = sync id).

The workflow opens the sync (an activity: the target resolved, worktree, branch,
manifest), then runs the sync graph as Temporal's LangGraph plugin compiles it, as
:mod:`.workflow` runs the cycle: the routers and LangGraph's loop here, every node an
activity on some worker with ``[temporal]``'s timeout, heartbeat timeout and attempts.
The fan-out works as it does locally: ``confirm``'s router returns one LangGraph
``Send`` per row to port, and the plugin runs each ``port`` task as its own activity, at
most ``concurrency`` at once (LangGraph's ``max_concurrency``), possibly on different
workers.

What the plugin does not give, and how this workflow stands without it:

- a node's ``Send`` payload and its update cross the activity boundary as JSON: each node
  activity validates its input again (:class:`~portwright.workflows.sync_state.SyncState`,
  or a port run's :class:`~portwright.workflows.sync_state.PortTask`);
- subgraphs cannot be activities (the plugin wraps only function nodes): a port run is
  not a subgraph but a run of the cycle that its ``port`` activity drives on the worker
  through the local driver, with its own run id, lock, worktree and checkpoints — so it
  is one activity, heartbeating, retried whole on another worker (it then resumes from
  its own last checkpoint);
- the plugin keeps the graph's checkpoints in the workflow's memory (rebuilt from its
  history on replay). A sync's state belongs in the project's checkpoints, where
  ``status``, ``report``, ``syncs``, ``pr`` and ``resume`` read it: the checkpointer here
  writes every checkpoint it saves there too, through an activity, before the next
  superstep runs. Writes of a superstep's finished tasks are not copied until the
  superstep ends; a ``resume`` after a failed workflow runs that superstep again and its
  nodes find what they did.

The ``view`` query answers where the sync stands in short; ``portwright status SYNC`` in
full. A node that fails every attempt ends the workflow with the failure; the sync is then
picked up like any other (``portwright resume SYNC``, or the next start of its schedule).
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata, ChannelVersions
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.errors import GraphRecursionError
    from temporalio.langgraph import graph

    from portwright.dist.models import (
        OPEN_SYNC_ACTIVITY,
        SYNC_CHECKPOINT_ACTIVITY,
        SYNC_GRAPH,
        SYNC_WORKFLOW,
        VIEW_QUERY,
        OpenedSync,
        OpenSync,
        SyncCheckpoint,
        SyncRef,
        SyncRequest,
        SyncSnapshot,
        run_id_of,
    )
    from portwright.workflows.driver import _serde
    from portwright.workflows.sync_state import SyncState

OPEN_TIMEOUT = timedelta(minutes=10)
CHECKPOINT_TIMEOUT = timedelta(minutes=2)
RECURSION_LIMIT = 200
"""Supersteps of one sync before the workflow gives up (its graph has seven per pass)."""

Mirror = Callable[[RunnableConfig, Checkpoint, CheckpointMetadata], Awaitable[None]]


class _MirroredSaver(InMemorySaver):
    """The workflow's checkpointer: in memory, each checkpoint also handed to ``mirror``
    (which writes it into the project's checkpoints) before LangGraph goes on."""

    def __init__(self, mirror: Mirror) -> None:
        super().__init__(serde=_serde())
        self._mirror = mirror

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions,
                   ) -> RunnableConfig:
        saved = self.put(config, checkpoint, metadata, new_versions)
        await self._mirror(config, checkpoint, metadata)
        return saved


def _cause(exc: ActivityError) -> str:
    return exc.cause.message if isinstance(exc.cause, ApplicationError) \
        else str(exc.cause or exc)


def _typed(serde: Any, value: Any) -> tuple[str, str]:
    kind, data = serde.dumps_typed(value)
    return kind, base64.b64encode(data).decode("ascii")


@workflow.defn(name=SYNC_WORKFLOW)
class SyncWorkflow:
    """One pin sync (workflow id = sync id)."""

    def __init__(self) -> None:
        self._snapshot = SyncSnapshot()
        self._app: Any = None
        self._config: RunnableConfig = {}
        self._request: SyncRequest | None = None
        self._serde = _serde()

    @workflow.run
    async def run(self, request: SyncRequest) -> SyncSnapshot:
        sync_id = run_id_of(workflow.info().workflow_id)
        self._request = request
        self._snapshot = SyncSnapshot(sync_id=sync_id)
        try:
            opened: OpenedSync = await workflow.execute_activity(
                OPEN_SYNC_ACTIVITY, OpenSync(request=request, sync_id=sync_id,
                                             workflow_id=workflow.info().workflow_id),
                result_type=OpenedSync, start_to_close_timeout=OPEN_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=5))
        except ActivityError as exc:
            return self._failed(f"the sync could not open: {_cause(exc)}")
        ref = SyncRef(root=request.root, sync_id=sync_id, base=opened.base,
                      overrides=request.overrides, allow_local=request.allow_local)
        self._app = graph(SYNC_GRAPH).compile(checkpointer=_MirroredSaver(self._write))
        self._config = {"configurable": {"thread_id": sync_id},
                        "recursion_limit": RECURSION_LIMIT,
                        "max_concurrency": opened.concurrency}
        try:
            await self._app.ainvoke(SyncState(target=opened.target), self._config,
                                     context=ref, durability="sync")
        except ActivityError as exc:
            return self._failed(f"a node failed on every attempt: {_cause(exc)}")
        except GraphRecursionError:
            return self._failed(f"the sync took more than {RECURSION_LIMIT} supersteps")
        return self.view()

    async def _write(self, config: RunnableConfig, checkpoint: Checkpoint,
                     metadata: CheckpointMetadata) -> None:
        """Write one checkpoint into the project's checkpoints (an activity)."""
        assert self._request is not None
        parent = (config.get("configurable") or {}).get("checkpoint_id")
        await workflow.execute_activity(
            SYNC_CHECKPOINT_ACTIVITY,
            SyncCheckpoint(root=self._request.root, sync_id=self._snapshot.sync_id,
                           overrides=self._request.overrides, parent=parent,
                           checkpoint=_typed(self._serde, checkpoint),
                           metadata=_typed(self._serde, metadata)),
            start_to_close_timeout=CHECKPOINT_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=5),
            summary=f"checkpoint {metadata.get('step')}")
        self._snapshot = self._snapshot.model_copy(update={"steps": self._snapshot.steps + 1})

    def _failed(self, why: str) -> SyncSnapshot:
        self._snapshot = self.view().model_copy(update={"status": "blocked", "reason": why,
                                                        "failure": why})
        return self._snapshot

    @workflow.query(name=VIEW_QUERY)
    def view(self) -> SyncSnapshot:
        """Where the sync stands: its status, what runs next, the checkpoints written."""
        if self._app is None or self._snapshot.failure:
            return self._snapshot
        snapshot = self._app.get_state(self._config)
        if not snapshot.values:
            return self._snapshot
        values = SyncState.model_validate(snapshot.values)
        tasks: Sequence[Any] = snapshot.tasks
        return self._snapshot.model_copy(update={
            "status": values.status.value, "reason": values.reason,
            "next": [t.name for t in tasks], "pr_url": values.pr_url})
