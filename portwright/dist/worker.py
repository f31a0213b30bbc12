"""``portwright worker``: one process that polls one task queue of the Temporal service and
runs the port cycle's workflows and nodes, and pin syncs and their nodes, found there
(both graphs registered with Temporal's LangGraph plugin).

Start one per machine and class of sandbox: ``portwright worker`` polls ``[temporal]
task_queue`` (workflows and ordinary nodes), ``portwright worker --queue gpu`` the nodes
that ``node_queues`` sends to ``gpu``. Workers are interchangeable: any may continue a run
another started, so they need the same repositories at the same paths and the same state
folder (one machine, or a shared filesystem).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import signal
from datetime import timedelta
from typing import Any

from temporalio.langgraph import LangGraphPlugin
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from portwright.config import CONFIG_FILE
from portwright.dist.activities import OnEvent, open_run_activity, temporal_cycle
from portwright.dist.client import connect
from portwright.dist.models import GRAPH, SYNC_GRAPH
from portwright.dist.sync_activities import (
    open_sync_activity,
    temporal_sync,
    write_checkpoint_activity,
)
from portwright.dist.sync_workflow import SyncWorkflow
from portwright.dist.workflow import PortCycleWorkflow
from portwright.errors import ConfigError
from portwright.project import Project
from portwright.workflows.state import Node

logger = logging.getLogger(__name__)


def check_queues(project: Project) -> None:
    """``node_queues`` names nodes of the cycle (the names belong to the graph)."""
    known = {n.value for n in Node if n is not Node.BLOCKED}
    for name in project.config.temporal.node_queues:
        if name not in known:
            raise ConfigError(f"node_queues names {name!r}, which is not a node of the cycle",
                              file=project.config.origin("temporal.node_queues",
                                                         project.root / CONFIG_FILE),
                              key="temporal.node_queues",
                              fix=f"use one of: {', '.join(sorted(known))}")


def build_worker(client: Any, project: Project, queue: str | None,
                 on_event: OnEvent) -> Worker:
    """A worker for ``queue`` (default ``[temporal] task_queue``) of ``project``'s service."""
    config = project.config.temporal
    check_queues(project)
    plugin = LangGraphPlugin(graphs={GRAPH: temporal_cycle(config, on_event),
                                     SYNC_GRAPH: temporal_sync(config, on_event)})
    # portwright's own modules are deterministic data and functions: shared with the
    # workflow sandbox rather than imported again for every workflow run (and rich, which
    # the CLI's log handler imports lazily, whichever thread logs)
    runner = SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(
            "portwright", "pydantic", "pydantic_core", "annotated_types", "rich"))
    return Worker(client, task_queue=queue or config.task_queue,
                  workflows=[PortCycleWorkflow, SyncWorkflow],
                  activities=[open_run_activity, open_sync_activity,
                              write_checkpoint_activity],
                  plugins=[plugin], workflow_runner=runner,
                  max_concurrent_activities=config.max_concurrent_nodes + 1,
                  graceful_shutdown_timeout=STOP_GRACE,
                  activity_executor=concurrent.futures.ThreadPoolExecutor(
                      config.max_concurrent_nodes + 1))


STOP_GRACE = timedelta(seconds=30)
"""How long a stopping worker lets the nodes it runs go on before they are cancelled (a
node cancelled, or left when the process ends, is run again by another worker)."""


async def serve(project: Project, queue: str | None, on_event: OnEvent) -> None:
    """Run a worker until SIGINT or SIGTERM; then stop taking work, let the nodes it runs
    finish (up to :data:`STOP_GRACE`) and return, without waiting for the polls the service
    holds open: an idle poll is abandoned (the service lets it lapse, and a task it hands
    to a poller that is gone is handed out again), which can take up to a minute to drain."""
    config = project.config.temporal
    check_queues(project)
    client = await connect(config)
    running: dict[tuple[str, str], int] = {}

    def tracked(event: dict[str, Any]) -> None:
        key = (str(event.get("run_id")), str(event.get("node")))
        if event.get("event") == "node_started":
            running[key] = running.get(key, 0) + 1
        elif event.get("event") in ("node_finished", "node_failed") and running.get(key):
            running[key] -= 1
            if not running[key]:
                del running[key]
        on_event(event)

    worker = build_worker(client, project, queue, tracked)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    on_event({"event": "worker_started", "queue": queue or config.task_queue,
              "address": config.address, "namespace": config.namespace, "pid": os.getpid()})
    polling = asyncio.create_task(worker.run())
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait({polling, stopped}, return_when=asyncio.FIRST_COMPLETED)
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.remove_signal_handler(signum)
    if polling.done():
        stopped.cancel()
        polling.result()  # a worker that failed says why
        return
    on_event({"event": "worker_stopping", "pid": os.getpid(),
              "nodes": [f"{run} {node}" for run, node in running]})
    shutdown = asyncio.create_task(worker.shutdown())
    deadline = loop.time() + STOP_GRACE.total_seconds() + 5
    while running and not polling.done() and loop.time() < deadline:
        await asyncio.sleep(0.2)
    # the results of the last nodes reach the service before the process goes
    await asyncio.wait({polling, shutdown}, timeout=2)
    on_event({"event": "worker_stopped", "pid": os.getpid(),
              "left": [f"{run} {node}" for run, node in running]})
