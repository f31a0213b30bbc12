"""The port cycle as a LangGraph graph: nodes in the cycle's order, conditional edges for
its bounded loops, interrupts at the approval points.

::

    prepare → verify_gap ─landed→ record_landed → commit → open_pr
                  │ missing / partial / stale
                  ▼
             enumerate_surface → write_spec → check_spec ─fail→ enumerate_surface
                  ▼
             approve_spec ─edit→ check_spec   ─reject→ enumerate_surface
                  ▼
             port_tests → capture_red ─passes already→ verify_gap  ─fails wrongly→ port_tests
                  ▼
             implement → focused_green ─fail→ implement
                  ▼
             full_gate ─fail→ implement
                  ▼
             review ─changes requested→ implement
                  ▼
             reconcile → check_reconciled → approve_advance ─reject→ implement
                  ▼
             commit → approve_pr → open_pr → END

Every loop counts its uses against ``[bounds]``; an exhausted bound, like any failure a
node cannot recover from, routes to ``blocked`` and ends the run with the reason.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from portwright.workflows import nodes_code, nodes_finish, nodes_gap, nodes_spec
from portwright.workflows.context import RunContext
from portwright.workflows.state import CycleState, Node, RunStatus
from portwright.workflows.steps import NodeFn, Update

Router = Callable[[CycleState], str]
_F = TypeVar("_F", bound=Callable[..., Any])


def _blocked_or(then: str) -> Router:
    def route(state: CycleState) -> str:
        return Node.BLOCKED if state.status is RunStatus.BLOCKED else then

    return route


def _after_gap(state: CycleState) -> str:
    if state.status is RunStatus.BLOCKED:
        return Node.BLOCKED
    return Node.RECORD_LANDED if state.gap == "landed" else Node.ENUMERATE_SURFACE


def _after_check_spec(state: CycleState) -> str:
    if state.status is RunStatus.BLOCKED:
        return Node.BLOCKED
    return Node.ENUMERATE_SURFACE if state.feedback else Node.APPROVE_SPEC


def _after_approve_spec(state: CycleState) -> str:
    if state.status is RunStatus.BLOCKED:
        return Node.BLOCKED
    return {"edit": Node.CHECK_SPEC, "reject": Node.ENUMERATE_SURFACE}.get(
        state.approvals.get("spec", ""), Node.PORT_TESTS)


def _after_port_tests(state: CycleState) -> str:
    if state.status is RunStatus.BLOCKED:
        return Node.BLOCKED
    return Node.PORT_TESTS if state.feedback else Node.CAPTURE_RED


def _after_red(state: CycleState) -> str:
    if state.status is RunStatus.BLOCKED:
        return Node.BLOCKED
    if not state.feedback:
        return Node.IMPLEMENT
    if state.feedback.startswith(nodes_code.PASSES_ALREADY):
        return Node.VERIFY_GAP
    return Node.PORT_TESTS


def _gate_passed(then: str) -> Router:
    def route(state: CycleState) -> str:
        if state.status is RunStatus.BLOCKED:
            return Node.BLOCKED
        return Node.IMPLEMENT if state.feedback else then

    return route


def _after_review(state: CycleState) -> str:
    if state.status is RunStatus.BLOCKED:
        return Node.BLOCKED
    return Node.RECONCILE if state.review == "approve" else Node.IMPLEMENT


def _end_blocked(state: CycleState, *, runtime: Runtime[RunContext]) -> Update:
    return {"status": RunStatus.BLOCKED}


AddNode = Callable[[StateGraph[CycleState, Any, CycleState, CycleState], Node, NodeFn], None]
"""Places one node of the cycle into the graph (:func:`assemble_cycle`)."""


def _add_with_retry(graph: StateGraph[CycleState, Any, CycleState, CycleState], name: Node,
                    fn: NodeFn) -> None:
    graph.add_node(name.value, _opaque(fn),
                   retry_policy=RetryPolicy(max_attempts=2, retry_on=OSError),
                   input_schema=CycleState)


def _opaque(fn: _F) -> _F:
    """``fn`` as LangGraph runs it (same signature, same call), minus what it inspects when
    it compiles a graph: a plain function's globals and bytecode, walked for subgraphs (the
    cycle's nodes hold none), and a router's type hints, evaluated to infer an input schema
    (a router reads the graph's own state). Compiling the cycle took 50 ms that way, 12 ms
    this way: paid by every run, in a fresh process."""
    return cast(_F, functools.partial(fn))


@functools.cache
def build_cycle() -> StateGraph[CycleState, RunContext, CycleState, CycleState]:
    """The uncompiled graph (``langgraph.json``'s factory in
    :mod:`portwright.workflows.studio` compiles it); built once per process."""
    return assemble_cycle()


def assemble_cycle(add_node: AddNode = _add_with_retry,
                   context_schema: type[Any] = RunContext,
                   route: Callable[[Router], Any] | None = None,
                   ) -> StateGraph[CycleState, Any, CycleState, CycleState]:
    """A new uncompiled cycle: its nodes placed by ``add_node`` (by default with LangGraph's
    retry on ``OSError``; Temporal's plugin places them as activities with its own
    retries), its edges and routers as drawn above, each router wrapped by ``route``
    (a Temporal workflow has no thread pool for LangGraph to run a sync router in)."""
    graph: StateGraph[CycleState, Any, CycleState, CycleState] = StateGraph(
        CycleState, context_schema=context_schema)
    nodes: dict[Node, NodeFn] = {
        Node.PREPARE: nodes_gap.prepare,
        Node.VERIFY_GAP: nodes_gap.verify_gap,
        Node.RECORD_LANDED: nodes_gap.record_landed,
        Node.ENUMERATE_SURFACE: nodes_spec.enumerate_surface_node,
        Node.WRITE_SPEC: nodes_spec.write_spec,
        Node.CHECK_SPEC: nodes_spec.check_spec,
        Node.APPROVE_SPEC: nodes_spec.approve_spec,
        Node.PORT_TESTS: nodes_code.port_tests,
        Node.CAPTURE_RED: nodes_code.capture_red,
        Node.IMPLEMENT: nodes_code.implement,
        Node.FOCUSED_GREEN: nodes_code.focused_green,
        Node.FULL_GATE: nodes_code.full_gate,
        Node.REVIEW: nodes_code.review,
        Node.RECONCILE: nodes_finish.reconcile,
        Node.CHECK_RECONCILED: nodes_finish.check_reconciled,
        Node.APPROVE_ADVANCE: nodes_finish.approve_advance,
        Node.COMMIT: nodes_finish.commit,
        Node.APPROVE_PR: nodes_finish.approve_pr,
        Node.OPEN_PR: nodes_finish.open_pr,
    }
    for name, fn in nodes.items():
        add_node(graph, name, fn)
    graph.add_node(Node.BLOCKED.value, _end_blocked, metadata={"execute_in": "workflow"})
    graph.add_edge(START, Node.PREPARE.value)
    edges: dict[Node, Router] = {
        Node.PREPARE: _blocked_or(Node.VERIFY_GAP),
        Node.VERIFY_GAP: _after_gap,
        Node.RECORD_LANDED: _blocked_or(Node.COMMIT),
        Node.ENUMERATE_SURFACE: _blocked_or(Node.WRITE_SPEC),
        Node.WRITE_SPEC: _blocked_or(Node.CHECK_SPEC),
        Node.CHECK_SPEC: _after_check_spec,
        Node.APPROVE_SPEC: _after_approve_spec,
        Node.PORT_TESTS: _after_port_tests,
        Node.CAPTURE_RED: _after_red,
        Node.IMPLEMENT: _blocked_or(Node.FOCUSED_GREEN),
        Node.FOCUSED_GREEN: _gate_passed(Node.FULL_GATE),
        Node.FULL_GATE: _gate_passed(Node.REVIEW),
        Node.REVIEW: _after_review,
        Node.RECONCILE: _blocked_or(Node.CHECK_RECONCILED),
        Node.CHECK_RECONCILED: _blocked_or(Node.APPROVE_ADVANCE),
        Node.APPROVE_ADVANCE: nodes_finish.route_after_advance,
        Node.COMMIT: _blocked_or(Node.APPROVE_PR),
        Node.APPROVE_PR: nodes_finish.route_after_pr_approval,
    }
    for source, router in edges.items():
        graph.add_conditional_edges(source.value, route(router) if route else _opaque(router))
    graph.add_edge(Node.OPEN_PR.value, END)
    graph.add_edge(Node.BLOCKED.value, END)
    return graph
