"""Reconcile the records, check them, ask before advancing, commit, open the pull request.

``open_pr`` hands the run's report to the ``[pr]`` backend (:mod:`portwright.vcs.pr`):
``local`` keeps it as ``pr.md`` in the run's folder (and pushes the branch to a remote
when one is set), ``github`` pushes the branch and opens its pull request, or updates the
one it opened before. :func:`publish` is that step, for the graph and for
``portwright pr``.
"""

from __future__ import annotations

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from portwright.evidence.surface import SurfaceReport
from portwright.gates._diff import name_status
from portwright.globs import match_any
from portwright.parity.ledger import LedgerKind, add_entry, load_ledger
from portwright.parity.matrix import update_row
from portwright.project import record_globs
from portwright.runs.report import render_report
from portwright.vcs import plumbing
from portwright.vcs.pr import BODY_FILE, PRRequest, describe
from portwright.vcs.pr_backends import open_backend
from portwright.vcs.worktree import commit_step, fresh_step, head, reset_to_head, tidy
from portwright.workflows.approvals import (
    RejectDecision,
    RespondDecision,
    needs_approval,
    parse_response,
    request,
    unusual_reasons,
)
from portwright.workflows.context import RunContext
from portwright.workflows.nodes_code import test_globs
from portwright.workflows.state import CycleState, Node, RunStatus
from portwright.workflows.steps import (
    SURFACE,
    Update,
    blocked,
    emit,
    failures,
    gate_refs,
    load,
    node,
    recorded,
    run_phase,
)


@node(Node.RECONCILE)
def reconcile(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """The matrix row says what the run ported; each file the change introduced gets a
    ledger entry against the upstream definition at the pin (existing entries are kept:
    a resumed step adds nothing twice)."""
    ctx = runtime.context
    root, config = ctx.project.root, ctx.project.config
    at = reset_to_head(root) or head(root)
    report = SurfaceReport.model_validate(load(ctx, SURFACE))
    definition = report.definition.rsplit("@", 1)[0]
    tests_anchor = next((i.anchor.rsplit("@", 1)[0] for i in report.items if i.kind == "test"),
                        definition)
    skip = [*record_globs(config), ".gitignore", "**/.gitignore"]
    changed = [c for c in _changed(ctx, state, at) if not match_any(c, skip)]
    entries, _ = load_ledger(root, config, strict=False)
    known = {e.change for e in entries}
    for path in changed:
        if path in known:
            continue
        is_test = match_any(path, test_globs(ctx))
        add_entry(root, config, change=path,
                  upstream=f"{tests_anchor if is_test else definition}@{state.target[:12]}",
                  kind=LedgerKind.PORT, notes=f"run {ctx.run_id}")
    statuses = config.artifacts.statuses
    status = "partial" if state.deferred and "partial" in statuses else "ported"
    update_row(root, config, state.row, status=status)
    sha = commit_step(root, ctx.run_id, "reconcile", f"parity: {state.row} {status}",
                      allow_empty=True, since=state.base,
                      look_up=not fresh_step(at, recorded(state)))
    return {"commits": {**state.commits, "reconcile": sha or ""}}


def _changed(ctx: RunContext, state: CycleState, at: str) -> list[str]:
    """The files the run added, modified or renamed (to) from its base to ``at``, named as
    git names them (the gates' diff of the same commits: asked of git once)."""
    return [c.path for c in name_status(ctx.project.root, state.base, at, exact=True)
            if c.status in "AMR"]


@node(Node.CHECK_RECONCILED)
def check_reconciled(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """The ``reconcile`` gates: every change in the ledger, every affected row updated."""
    results = run_phase(runtime.context, state, "reconcile", sandbox=False)
    if all(r.passed for r in results):
        return {"gates": gate_refs("reconcile", results)}
    return {"gates": gate_refs("reconcile", results),
            **blocked("the records do not reconcile: "
                      f"{failures(results)}")}


def _ask(ctx: RunContext, state: CycleState, point: str, name: str,
         description: str, **args: object) -> tuple[Update, str]:
    config = ctx.project.config
    retried = any(not g.passed for g in state.gates if g.phase in ("focused", "full"))
    unusual = unusual_reasons(deferred=state.deferred, attempts=state.attempts,
                              bounds=config.bounds, gates_retried=retried)
    if not needs_approval(getattr(config.approvals, point), unusual=unusual):
        return {"approvals": {**state.approvals, point: "auto"}}, "auto"
    why = "".join(f"\n- {reason}" for reason in unusual)
    asked = request(name, {"row": state.row, "branch": state.branch, "head": head(
        ctx.project.root), "gates": [g.model_dump() for g in state.gates[-12:]], **args},
        description + (f"\n\nWhy you are asked:{why}" if why else ""),
        ["approve", "reject", "respond"])
    decision = parse_response(interrupt(asked.model_dump()), asked)
    update: Update = {"approvals": {**state.approvals, point: decision.type}}
    if isinstance(decision, RejectDecision | RespondDecision):
        update["feedback"] = decision.message
    return update, decision.type


@node(Node.APPROVE_ADVANCE)
def approve_advance(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """Wait for a person (per policy) before the change counts as done: approve, or reject
    with a message that reaches the implementer's next turn."""
    update, _ = _ask(runtime.context, state, "advance", "approve_advance",
                     f"**`{state.row}`** is ported on `{state.branch}`: red and green "
                     "observed, every gate green, the review approved, the records "
                     "reconciled. Approve to finish the run; reject with a message to send it "
                     "back to the implementer.")
    return update


@node(Node.COMMIT)
def commit(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """Nothing of the run is left uncommitted; the branch's head is the run's result."""
    ctx = runtime.context
    sha = reset_to_head(ctx.project.root) or head(ctx.project.root)
    tidy(ctx.project.root)  # the steps' commits asked for no maintenance each
    return {"commits": {**state.commits, "head": sha}}


@node(Node.APPROVE_PR)
def approve_pr(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """Wait for a person (per policy) before anything leaves this machine: the request says
    where the pull request goes."""
    pr = runtime.context.project.config.pr
    update, _ = _ask(runtime.context, state, "pr", "approve_pr",
                     f"Open the pull request of **`{state.row}`** from `{state.branch}`: "
                     f"{describe(pr)}?",
                     pr={"backend": str(pr.backend), "repository": pr.repository,
                         "base": pr.base, "draft": pr.draft, "remote": pr.remote})
    return update


@node(Node.OPEN_PR)
def open_pr(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """The run's pull request on the configured backend, its body the run's report; run
    again (a resumed step), it updates the pull request it opened."""
    return publish(runtime.context, state)


def publish(ctx: RunContext, state: CycleState) -> Update:
    """Open or update the pull request of the run's branch with the run's report; the
    state's update (status ``done``, or ``landed`` for a gap found closed)."""
    config = ctx.project.config
    landed = state.status is RunStatus.LANDED or state.gap == "landed"
    final = RunStatus.LANDED if landed else RunStatus.DONE
    # a run blocked by an earlier attempt at this step is done once it succeeds
    reason = "" if state.status is RunStatus.BLOCKED else state.reason
    values = {**state.model_dump(mode="json"), "status": str(final), "reason": reason,
              "pr_url": ""}
    ledger = plumbing.git(ctx.project.root, "diff", "--no-color", state.base, "HEAD", "--",
                          config.artifacts.ledger,
                          *config.artifacts.matrices).decode("utf-8", "replace")
    body = render_report(ctx.dir, values, ctx.store.records(), ledger_diff=ledger)
    title = (f"Record {state.row} as landed" if final is RunStatus.LANDED else
             f"Port {state.row} from {config.upstream.name}")
    backend = open_backend(config.pr, repo=ctx.project.root, folder=ctx.dir)
    result = backend.open_or_update(PRRequest.from_config(
        config.pr, branch=state.branch, title=title, body=body, run_id=ctx.run_id))
    emit("pr", backend=result.backend, number=result.number, url=result.url,
         created=result.created)
    return {"pr": BODY_FILE, "pr_url": result.url, "pr_number": result.number,
            "status": final, "reason": reason}


def route_after_advance(state: CycleState) -> str:
    if state.status is RunStatus.BLOCKED:
        return Node.BLOCKED
    if state.approvals.get("advance") == "reject":
        return Node.IMPLEMENT
    return Node.COMMIT


def route_after_pr_approval(state: CycleState) -> str:
    if state.approvals.get("pr") == "reject":
        return Node.BLOCKED
    return Node.OPEN_PR


__all__ = ["approve_advance", "approve_pr", "check_reconciled", "commit", "open_pr",
           "publish", "reconcile", "route_after_advance", "route_after_pr_approval"]
