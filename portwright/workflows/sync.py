"""The pin sync as a LangGraph graph (``portwright sync --to REV``)::

    scan → confirm ─blocked→ finish
              │ one Send per row with commits to port
              ▼
           port (N) (each a port run of the cycle, its own thread)   ─none→ integrate
              ▼
           integrate → record → pin_gates → finish → END

A port run is the cycle graph driven by :mod:`.driver` under its own run id (= thread
id), not a subgraph of the sync: it keeps its own worktree, branch, sandbox, lock and
checkpoints, so ``portwright approve CHILD`` answers it like any run, ``resume`` continues
it after a crash, and the sync — resumed or re-entered — reads a finished child's result
instead of running it again. How many port runs go at once is LangGraph's
``max_concurrency`` (``[sync] concurrency``, ``--concurrency``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy

from portwright.agents.llm import LLMClient
from portwright.workflows import sync_confirm, sync_nodes
from portwright.workflows.context import RunContext
from portwright.workflows.sync_state import SyncNode, SyncState, SyncStatus


@dataclass
class SyncContext(RunContext):
    """The sync's run context, and the model client its port runs share (tests give a
    scripted one; otherwise each port run builds its own from the config)."""

    child_client: LLMClient | None = None


def _after_scan(state: SyncState) -> str:
    return SyncNode.FINISH.value if state.status is SyncStatus.BLOCKED else \
        SyncNode.CONFIRM.value


@functools.cache
def build_sync() -> StateGraph[SyncState, SyncContext, SyncState, SyncState]:
    """The uncompiled sync graph; built once per process."""
    graph: StateGraph[SyncState, SyncContext, SyncState, SyncState] = StateGraph(
        SyncState, context_schema=SyncContext)
    retry = RetryPolicy(max_attempts=2, retry_on=OSError)
    graph.add_node(SyncNode.SCAN.value, sync_nodes.scan, retry_policy=retry)
    graph.add_node(SyncNode.CONFIRM.value, sync_confirm.confirm, retry_policy=retry)
    graph.add_node(SyncNode.PORT.value, sync_nodes.port)  # type: ignore[arg-type]
    graph.add_node(SyncNode.INTEGRATE.value, sync_nodes.integrate, retry_policy=retry)
    graph.add_node(SyncNode.RECORD.value, sync_nodes.record, retry_policy=retry)
    graph.add_node(SyncNode.PIN_GATES.value, sync_nodes.pin_gates, retry_policy=retry)
    graph.add_node(SyncNode.FINISH.value, sync_nodes.finish)
    graph.add_edge(START, SyncNode.SCAN.value)
    graph.add_conditional_edges(SyncNode.SCAN.value, _after_scan)
    graph.add_conditional_edges(SyncNode.CONFIRM.value, sync_nodes.fan_out)
    graph.add_edge(SyncNode.PORT.value, SyncNode.INTEGRATE.value)
    graph.add_edge(SyncNode.INTEGRATE.value, SyncNode.RECORD.value)
    graph.add_edge(SyncNode.RECORD.value, SyncNode.PIN_GATES.value)
    graph.add_edge(SyncNode.PIN_GATES.value, SyncNode.FINISH.value)
    graph.add_edge(SyncNode.FINISH.value, END)
    return graph
