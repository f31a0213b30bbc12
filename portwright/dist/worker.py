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

import concurrent.futures
import logging
import os
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
                  activity_executor=concurrent.futures.ThreadPoolExecutor(
                      config.max_concurrent_nodes + 1))


async def serve(project: Project, queue: str | None, on_event: OnEvent) -> None:
    """Run a worker until the process is stopped."""
    config = project.config.temporal
    check_queues(project)
    client = await connect(config)
    worker = build_worker(client, project, queue, on_event)
    on_event({"event": "worker_started", "queue": queue or config.task_queue,
              "address": config.address, "namespace": config.namespace, "pid": os.getpid()})
    await worker.run()
