"""Temporal schedules: a cron expression that starts a workflow by name with arguments
(``portwright schedule create --cron "0 3 * * *" run ROW``).

A schedule holds the workflow's type and its argument, nothing portwright-specific: the
CLI says which command starts which workflow (``run`` → ``portwright.run``), so a graph
served by the workers gets its schedules by naming its workflow there. Each start gets
the workflow id ``<schedule id>-<time>``, which (made safe for a branch name) is the run's
id.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
)
from temporalio.service import RPCError, RPCStatusCode

from portwright.dist.cron import EXAMPLE
from portwright.errors import UsageError

CATCHUP = timedelta(minutes=10)
"""Starts missed while the service was down are made up within this window, no later."""


async def create(client: Client, schedule_id: str, cron: str, workflow: str, arg: Any, *,
                 task_queue: str, note: str = "") -> None:
    """A schedule starting ``workflow(arg)`` on ``task_queue`` at every ``cron`` time; a
    start while the previous one still runs is skipped."""
    schedule = Schedule(
        action=ScheduleActionStartWorkflow(workflow, arg, id=schedule_id,
                                           task_queue=task_queue),
        spec=ScheduleSpec(cron_expressions=[cron]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP,
                              catchup_window=CATCHUP),
    )
    try:
        await client.create_schedule(schedule_id, schedule,
                                     memo={"command": note, "cron": cron})
    except ScheduleAlreadyRunningError as exc:
        raise UsageError(f"a schedule {schedule_id!r} exists already", key="--id",
                         fix=f"pick another id, or `portwright schedule delete "
                             f"{schedule_id}` first") from exc
    except RPCError as exc:
        if exc.status == RPCStatusCode.INVALID_ARGUMENT:
            raise UsageError(f"Temporal refused the schedule: {exc.message}", key="--cron",
                             fix=f"give one like {EXAMPLE}") from exc
        raise


async def listing(client: Client) -> list[dict[str, Any]]:
    """Every schedule of the namespace: id, workflow, cron, next start, recent starts."""
    out: list[dict[str, Any]] = []
    async for entry in await client.list_schedules():
        described = await client.get_schedule_handle(entry.id).describe()
        action = described.schedule.action
        spec = described.schedule.spec
        info = described.info
        memo = await described.memo()
        out.append({
            "id": entry.id,
            "workflow": action.workflow if isinstance(action, ScheduleActionStartWorkflow)
            else None,
            # the service keeps a cron expression as calendars: the memo keeps its text
            "cron": [str(memo["cron"])] if memo.get("cron") else list(spec.cron_expressions),
            "command": str(memo.get("command", "")),
            "paused": described.schedule.state.paused,
            "next": [t.isoformat() for t in info.next_action_times[:3]],
            "recent": [a.action.workflow_id for a in info.recent_actions
                       if hasattr(a.action, "workflow_id")],
        })
    return sorted(out, key=lambda s: s["id"])


async def delete(client: Client, schedule_id: str) -> None:
    try:
        await client.get_schedule_handle(schedule_id).delete()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise UsageError(f"no schedule {schedule_id!r}", key="ID",
                             fix="list them with `portwright schedule list`") from exc
        raise


async def trigger(client: Client, schedule_id: str) -> None:
    """Start the schedule's action now."""
    try:
        await client.get_schedule_handle(schedule_id).trigger(
            overlap=ScheduleOverlapPolicy.ALLOW_ALL)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise UsageError(f"no schedule {schedule_id!r}", key="ID",
                             fix="list them with `portwright schedule list`") from exc
        raise
