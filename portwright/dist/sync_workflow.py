"""The ``portwright.sync`` workflow: a pin sync driven by Temporal (workflow id = sync id).

The workflow opens the sync (an activity: the target resolved, worktree, branch,
manifest), then advances it one step at a time, each step an activity on some worker
with ``[temporal]``'s timeout, heartbeat timeout and attempts, until the sync's graph
has ended. The sync's state is in the project's checkpoints, not in the workflow: the
``view`` query answers where it stands in short, ``portwright status SYNC`` in full. A
step that fails every attempt ends the workflow with the failure; the sync is then
picked up like any other (``portwright resume SYNC``, or the next start of its schedule).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from portwright.dist.models import (
        OPEN_SYNC_ACTIVITY,
        SYNC_STEP_ACTIVITY,
        SYNC_WORKFLOW,
        VIEW_QUERY,
        OpenedSync,
        OpenSync,
        SyncRef,
        SyncRequest,
        SyncSnapshot,
        run_id_of,
    )

OPEN_TIMEOUT = timedelta(minutes=10)
MAX_STEPS = 1000
"""Steps of one sync before the workflow gives up (its graph has a handful per pass)."""


def _cause(exc: ActivityError) -> str:
    return exc.cause.message if isinstance(exc.cause, ApplicationError) \
        else str(exc.cause or exc)


@workflow.defn(name=SYNC_WORKFLOW)
class SyncWorkflow:
    """One pin sync (workflow id = sync id)."""

    def __init__(self) -> None:
        self._snapshot = SyncSnapshot()

    @workflow.run
    async def run(self, request: SyncRequest) -> SyncSnapshot:
        sync_id = run_id_of(workflow.info().workflow_id)
        self._snapshot = SyncSnapshot(sync_id=sync_id)
        try:
            opened: OpenedSync = await workflow.execute_activity(
                OPEN_SYNC_ACTIVITY, OpenSync(request=request, sync_id=sync_id,
                                             workflow_id=workflow.info().workflow_id),
                result_type=OpenedSync, start_to_close_timeout=OPEN_TIMEOUT,
                retry_policy=RetryPolicy(maximum_attempts=5))
        except ActivityError as exc:
            return self._failed(f"the sync could not open: {_cause(exc)}")
        ref = SyncRef(root=request.root, sync_id=sync_id, overrides=request.overrides,
                      concurrency=request.concurrency, allow_local=request.allow_local)
        for number in range(1, MAX_STEPS + 1):
            try:
                found: SyncSnapshot = await workflow.execute_activity(
                    SYNC_STEP_ACTIVITY, ref, result_type=SyncSnapshot,
                    start_to_close_timeout=timedelta(seconds=opened.node_timeout),
                    heartbeat_timeout=timedelta(seconds=opened.heartbeat_timeout),
                    retry_policy=RetryPolicy(maximum_attempts=opened.max_attempts),
                    summary=f"step {number}")
            except ActivityError as exc:
                return self._failed(f"a step failed on every attempt: {_cause(exc)}")
            self._snapshot = found.model_copy(update={"steps": number})
            if not found.next:
                return self._snapshot
        return self._failed(f"the sync took more than {MAX_STEPS} steps")

    def _failed(self, why: str) -> SyncSnapshot:
        self._snapshot = self._snapshot.model_copy(update={"status": "blocked",
                                                           "reason": why, "failure": why})
        return self._snapshot

    @workflow.query(name=VIEW_QUERY)
    def view(self) -> SyncSnapshot:
        """Where the sync stands: its status, what runs next, the steps taken."""
        return self._snapshot
