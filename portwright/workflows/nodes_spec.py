"""Enumerate the upstream surface, write the row's spec from it, check it, ask for approval.

The framework lists the candidate items (syntax trees over upstream at the pin) and writes
the spec itself: every item's anchor is the place the framework found it, so anchors
resolve at the pin by construction; the enumerator only classifies and answers the
questions the rules ask. ``check_spec`` runs the ``spec`` gates (anchors, spec-complete)
all the same: an edited spec is checked like any other.
"""

from __future__ import annotations

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from portwright import safefs
from portwright.agents.results import ItemClass, SurfaceClassification
from portwright.agents.roles import enumerator
from portwright.evidence.surface import SurfaceReport, enumerate_surface
from portwright.parity.matrix import update_row
from portwright.parity.spec import render_spec
from portwright.vcs.worktree import commit_step, fresh_step, reset_to_head
from portwright.workflows.approvals import (
    EditDecision,
    RejectDecision,
    RespondDecision,
    needs_approval,
    parse_response,
    request,
    unusual_reasons,
)
from portwright.workflows.context import RunContext
from portwright.workflows.state import CycleState, Node
from portwright.workflows.steps import (
    SURFACE,
    Update,
    blocked,
    bump,
    failures,
    gate_refs,
    load,
    node,
    read_worktree,
    recorded,
    run_phase,
    run_role,
    save,
    turn_failed,
    workspace,
)


def _surface(ctx: RunContext, state: CycleState) -> SurfaceReport:
    """The surface ``prepare`` enumerated for the row's symbol at the target, or enumerated
    now when the run's folder does not hold it (a run prepared before it was kept)."""
    try:
        kept = SurfaceReport.model_validate(load(ctx, SURFACE))
    except (OSError, ValueError):
        kept = None
    if kept is not None and kept.symbol == state.symbol and kept.rev == state.target:
        return kept
    return enumerate_surface(ctx.project.upstream(), state.symbol, state.target,
                             path_kinds=ctx.project.config.upstream.path_kinds)


@node(Node.ENUMERATE_SURFACE)
def enumerate_surface_node(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """The framework's candidates, classified by the enumerator (bounded by
    ``spec_attempts`` together with the spec checks)."""
    ctx = runtime.context
    counted, exhausted = bump(state, "spec", ctx.project.config.bounds.spec_attempts)
    if exhausted:
        return {**counted, **blocked(exhausted)}
    report = _surface(ctx, state)
    save(ctx, SURFACE, report)
    context = enumerator.context_from_surface(
        report, ctx.project.upstream(), rules_prose=ctx.rules.prose_for(None),
        row=state.row, questions=ctx.rules.spec.questions, feedback=state.feedback)
    outcome = run_role(ctx, enumerator.ROLE, context, workspace(ctx, state.target))
    if not outcome.ok or outcome.result is None:
        failed = turn_failed(Node.ENUMERATE_SURFACE, "enumerator", outcome)
        return failed if "retry" in failed else {**counted, **failed}
    save(ctx, "classification.json", outcome.result)
    deferred = [i.item for i in outcome.result.items if i.classification is ItemClass.DEFERRED]
    return {**counted, "deferred": deferred, "feedback": ""}


@node(Node.WRITE_SPEC)
def write_spec(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """Render the spec from the surface and its classification; link it from the row;
    commit."""
    ctx = runtime.context
    root = ctx.project.root
    report = SurfaceReport.model_validate(load(ctx, SURFACE))
    classes = SurfaceClassification.model_validate(load(ctx, "classification.json"))
    by_label = {i.item: i for i in classes.items}
    from portwright.agents.evidence import candidate_labels

    rows: list[tuple[str, str, str, str, str]] = []
    for label, item in zip(candidate_labels(report), report.items, strict=True):
        chosen = by_label[label]
        rows.append((item.name, str(item.kind), str(chosen.classification), chosen.reason,
                     f"`{item.anchor.rsplit('@', 1)[0]}`"))
    definition = report.definition.rsplit("@", 1)[0]
    text = render_spec(row=state.row, pin=state.target, slice=classes.slice,
                       title=f"{state.row}: {report.symbol}", surface=rows,
                       answers=classes.answers, anchors=[definition],
                       adaptations=[f"ported from `{definition}` at the pin"])
    fresh = fresh_step(reset_to_head(root), recorded(state))
    safefs.write_file(root, state.spec_path, text.encode("utf-8"))
    update_row(root, ctx.project.config, state.row, spec=state.spec_path)
    attempt = state.attempts.get("spec", 1)
    sha = commit_step(root, ctx.run_id, f"spec-{attempt}",
                      f"spec: {state.row} ({report.symbol} at {state.target[:12]})",
                      allow_empty=True, since=state.base, look_up=not fresh)
    return {"commits": {**state.commits, f"spec-{attempt}": sha or ""}}


@node(Node.CHECK_SPEC)
def check_spec(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """The ``spec`` gates: every anchor resolves at the pin and quotes what it says, every
    surface item classified, the rules' questions answered."""
    ctx = runtime.context
    results = run_phase(ctx, state, "spec", sandbox=False)
    problems = failures(results)
    return {"gates": gate_refs("spec", results), "feedback": problems}


@node(Node.APPROVE_SPEC)
def approve_spec(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """Wait for a person when the policy says so: approve, edit (the spec's new text, then
    checked again) or reject (the message goes back to the enumerator)."""
    ctx = runtime.context
    config = ctx.project.config
    unusual = unusual_reasons(deferred=state.deferred, attempts=state.attempts,
                              bounds=config.bounds, gates_retried=False)
    if not needs_approval(config.approvals.spec, unusual=unusual):
        return {"approvals": {**state.approvals, "spec": "auto"}}
    spec = read_worktree(ctx, state.spec_path)
    asked = request("approve_spec", {"row": state.row, "path": state.spec_path, "spec": spec},
                    _spec_description(state, unusual), ["approve", "edit", "reject",
                                                         "respond"])
    decision = parse_response(interrupt(asked.model_dump()), asked)
    approvals = {**state.approvals, "spec": decision.type}
    if isinstance(decision, EditDecision):
        text = str(decision.edited_action.args.get("spec", ""))
        if not text.strip():
            return {"approvals": approvals, **blocked("an edit of the spec must give its text")}
        reset_to_head(ctx.project.root)
        safefs.write_file(ctx.project.root, state.spec_path, text.encode("utf-8"))
        edits = sum(1 for k in state.commits if k.startswith("spec-edit"))
        sha = commit_step(ctx.project.root, ctx.run_id, f"spec-edit-{edits + 1}",
                          f"spec: {state.row} edited by a reviewer", allow_empty=True,
                          since=state.base)
        return {"approvals": approvals, "commits": {**state.commits,
                                                    f"spec-edit-{edits + 1}": sha or ""}}
    if isinstance(decision, RejectDecision | RespondDecision):
        return {"approvals": approvals, "feedback": decision.message}
    return {"approvals": approvals, "feedback": ""}


def _spec_description(state: CycleState, unusual: list[str]) -> str:
    lines = [f"**Spec of `{state.row}`** (`{state.spec_path}`) passed its checks.", ""]
    if unusual:
        lines += ["Why you are asked:", *[f"- {reason}" for reason in unusual], ""]
    lines.append("Approve to port its tests; edit to replace the spec (it is checked again); "
                 "reject with a message to have the surface classified again.")
    return "\n".join(lines)
