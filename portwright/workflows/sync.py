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

:func:`assemble_sync` builds the graph for both engines: locally with LangGraph's retry on
``OSError``; on Temporal every node is placed as an activity of the LangGraph plugin, the
routers made awaitable, the same edges and ``Send`` fan-out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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


SyncGraph = StateGraph[SyncState, Any, SyncState, SyncState]
AddNode = Callable[[SyncGraph, SyncNode, Callable[..., Any]], None]
"""Places one node of the sync into the graph (:func:`assemble_sync`)."""

_NO_RETRY = (SyncNode.PORT, SyncNode.FINISH)
"""Nodes placed without LangGraph's retry: ``port`` (its run of the cycle retries its own
nodes) and ``finish`` (it opens the pull request)."""


def _add_with_retry(graph: SyncGraph, name: SyncNode, fn: Callable[..., Any]) -> None:
    if name in _NO_RETRY:
        graph.add_node(name.value, fn)
    else:
        graph.add_node(name.value, fn, retry_policy=RetryPolicy(max_attempts=2,
                                                                retry_on=OSError))


def assemble_sync(add_node: AddNode = _add_with_retry,
                  context_schema: type[Any] = SyncContext,
                  route: Callable[[Callable[[SyncState], Any]], Any] | None = None,
                  ) -> SyncGraph:
    """A new uncompiled sync graph: its nodes placed by ``add_node`` (by default with
    LangGraph's retry on ``OSError``; Temporal's plugin places them as activities with its
    own retries), its edges and routers as drawn above, each router wrapped by ``route``
    (a Temporal workflow has no thread pool for LangGraph to run a sync router in)."""
    graph: SyncGraph = StateGraph(SyncState, context_schema=context_schema)
    nodes: dict[SyncNode, Callable[..., Any]] = {
        SyncNode.SCAN: sync_nodes.scan,
        SyncNode.CONFIRM: sync_confirm.confirm,
        SyncNode.PORT: sync_nodes.port,
        SyncNode.INTEGRATE: sync_nodes.integrate,
        SyncNode.RECORD: sync_nodes.record,
        SyncNode.PIN_GATES: sync_nodes.pin_gates,
        SyncNode.FINISH: sync_nodes.finish,
    }
    for name, fn in nodes.items():
        add_node(graph, name, fn)
    wrap = route or (lambda router: router)
    graph.add_edge(START, SyncNode.SCAN.value)
    graph.add_conditional_edges(SyncNode.SCAN.value, wrap(_after_scan))
    graph.add_conditional_edges(SyncNode.CONFIRM.value, wrap(sync_nodes.fan_out))
    graph.add_edge(SyncNode.PORT.value, SyncNode.INTEGRATE.value)
    graph.add_edge(SyncNode.INTEGRATE.value, SyncNode.RECORD.value)
    graph.add_edge(SyncNode.RECORD.value, SyncNode.PIN_GATES.value)
    graph.add_edge(SyncNode.PIN_GATES.value, SyncNode.FINISH.value)
    graph.add_edge(SyncNode.FINISH.value, END)
    return graph


@functools.cache
def build_sync() -> SyncGraph:
    """The uncompiled sync graph; built once per process."""
    return assemble_sync()
