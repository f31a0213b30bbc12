"""The cycle's first nodes: prepare the run, verify the gap, record a gap already closed."""

from __future__ import annotations

from pathlib import Path

from langgraph.runtime import Runtime

from portwright.agents.evidence import gap_source
from portwright.agents.roles import gap_verifier
from portwright.agents.tools import EvidenceSources
from portwright.evidence.gap import row_evidence
from portwright.evidence.surfacemodels import SurfaceReport
from portwright.parity.ledger import LedgerKind, add_entry, load_ledger
from portwright.parity.matrix import find_row, spec_path, update_row
from portwright.parity.pin import read_pin
from portwright.vcs import plumbing
from portwright.vcs.worktree import branch_name, commit_step, reset_to_head
from portwright.workflows.context import RunContext
from portwright.workflows.state import CycleState, Node, RunStatus
from portwright.workflows.steps import (
    SURFACE,
    Update,
    blocked,
    emit,
    node,
    run_role,
    save,
    turn_failed,
    workspace,
)


def _is_path(item: str) -> bool:
    """A path of the Upstream column, not a symbol (``path::name`` is a symbol qualified by
    the file that defines it)."""
    if "::" in item:
        return False
    return "/" in item or ("." in item and not item.replace(".", "").isidentifier())


def _warm_sandbox(ctx: RunContext) -> None:
    """Start opening the run's sandbox, which the tests' port needs first: it opens while
    the row is read and the gap verified (:meth:`RunContext.warm_sandbox`). Not when the
    policy stops every run at its spec for a person: the sandbox opens after that. A run
    that ends before the port (its gap found closed, its row unusable) closes it unused."""
    if ctx.project.config.approvals.spec != "always":
        ctx.warm_sandbox()


@node(Node.PREPARE)
def prepare(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """Find the row, its upstream names and spec, and the pin, in the run's worktree; the
    run's sandbox starts opening meanwhile (:func:`_warm_sandbox`)."""
    ctx = runtime.context
    _warm_sandbox(ctx)
    root, config = ctx.project.root, ctx.project.config
    row = find_row(root, config, state.row)
    symbols = [u.strip("`") for u in row.upstream if u.strip("`") and not _is_path(u)]
    if not symbols:
        return blocked(f"row {row.id!r} ({row.file}:{row.line}) names no upstream symbol in "
                       "its Upstream column; add the function or class it ports")
    upstream = ctx.project.upstream()
    pin, target = plumbing.rev_parse_many(
        upstream, [read_pin(root, config), state.target or config.upstream.branch])
    found = next((r for r in (_surface(upstream, s, target, ctx) for s in symbols)
                  if r is not None), None)
    if found is None:
        return blocked(f"none of the row's upstream names ({', '.join(symbols)}) is defined "
                       f"upstream at {target[:12]} ({config.upstream.branch}); put the "
                       "function or class it ports first in the row's Upstream column")
    save(ctx, SURFACE, found)  # enumerate_surface classifies it without enumerating again
    symbol = found.symbol
    spec = spec_path(root, row) or f"{config.artifacts.specs.rstrip('/')}/{row.id}.md"
    emit("prepared", row=row.id, symbols=symbols, pin=pin, target=target)
    return {"run_id": ctx.run_id, "base": ctx.commit, "branch": branch_name(ctx.run_id),
            "pin": pin, "target": target, "symbols": symbols, "symbol": symbol,
            "spec_path": spec}


def _surface(upstream: Path, symbol: str, rev: str, ctx: RunContext) -> SurfaceReport | None:
    """The surface of ``symbol`` at ``rev``; None when upstream does not define it there."""
    from portwright.errors import PortwrightError
    from portwright.evidence.surface import enumerate_surface

    try:
        return enumerate_surface(upstream, symbol, rev,
                                 path_kinds=ctx.project.config.upstream.path_kinds)
    except PortwrightError:
        return None


@node(Node.VERIFY_GAP)
def verify_gap(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """The framework gathers the evidence (upstream at the pin, downstream HEAD and
    history); the gap verifier judges it; the framework re-establishes every ref it cites."""
    ctx = runtime.context
    root, config = ctx.project.root, ctx.project.config
    _warm_sandbox(ctx)  # a run resumed here: prepare did not run in this process
    upstream = ctx.project.upstream()
    found = row_evidence(upstream, root, state.symbols, state.pin, config)
    context = gap_verifier.context_from_evidence(
        found, upstream, rules_prose=ctx.rules.prose_for(None),
        upstream_name=config.upstream.name, row=state.row)
    ws = workspace(ctx, state.pin, evidence=EvidenceSources(
        gap=gap_source(upstream, root, state.pin, config)))
    outcome = run_role(ctx, gap_verifier.ROLE, context, ws)
    if not outcome.ok or outcome.result is None:
        return turn_failed(Node.VERIFY_GAP, "gap verifier", outcome)
    verdict = outcome.result
    save(ctx, "gap.json", verdict)
    emit("gap", status=str(verdict.status))
    return {"gap": str(verdict.status)}


@node(Node.RECORD_LANDED)
def record_landed(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """The gap was closed already: the ledger says where it landed (with the evidence the
    verifier cited), the matrix row says ported."""
    ctx = runtime.context
    root, config = ctx.project.root, ctx.project.config
    from portwright.agents.results import GapVerdict
    from portwright.workflows.steps import load

    verdict = GapVerdict.model_validate(load(ctx, "gap.json"))
    reset_to_head(root)
    downstream = next((e.ref.split(":")[0] for e in verdict.evidence
                       if e.kind == "downstream" and ":" in e.ref), None)
    upstream = next((e.ref for e in verdict.evidence if e.kind == "upstream"), None)
    if downstream is not None and upstream is not None:
        entries, _ = load_ledger(root, config, strict=False)
        if not any(e.change == downstream for e in entries):
            add_entry(root, config, change=downstream,
                      upstream=f"{upstream}@{state.target[:12]}",
                      kind=LedgerKind.PORT, notes=f"already landed (run {ctx.run_id})")
    update_row(root, config, state.row, status=_done_status(ctx))
    sha = commit_step(root, ctx.run_id, "record-landed",
                      f"parity: {state.row} already landed upstream's behaviour",
                      allow_empty=True, since=state.base)
    return {"commits": {**state.commits, "record-landed": sha or ""},
            "status": RunStatus.LANDED, "reason": verdict.reasoning}


def _done_status(ctx: RunContext) -> str:
    statuses = ctx.project.config.artifacts.statuses
    return "ported" if "ported" in statuses else ctx.project.config.artifacts.done_statuses[0]
