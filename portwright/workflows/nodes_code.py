"""Port the tests, observe them red, implement, observe green, run the full gate, review.

The implementer works in two turns that never mix (tests only, then implementation only:
the workspace enforces it) and each turn's result is committed with the run's trailers.
Red and green are what the framework observed running the rules' ``red`` and ``focused``
gates in the run's sandbox; a ported test that passes before any implementation is not a
red: the run goes back to gap verification.
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from portwright.agents.prompting import Excerpt, cite_around
from portwright.agents.roles import implementer, reviewer
from portwright.evidence.surface import SurfaceReport
from portwright.gates.models import GateResult
from portwright.rules import BuiltinCheck, Phase
from portwright.runs.models import EvidenceKind
from portwright.vcs.worktree import commit_step, fresh_step, head, reset_to_head
from portwright.workflows.context import RunContext
from portwright.workflows.state import CycleState, Node
from portwright.workflows.steps import (
    SURFACE,
    Update,
    blocked,
    bump,
    emit,
    failures,
    gate_refs,
    load,
    messages_of,
    node,
    read_worktree,
    recorded,
    run_phase,
    run_role,
    save,
    turn_failed,
    workspace,
)

PASSES_ALREADY = "the ported tests pass before any implementation"


def test_globs(ctx: RunContext) -> list[str]:
    """Downstream test paths: the red-green gate's ``tests`` option, else the configured
    test path kinds."""
    for gate in ctx.rules.gates():
        option = gate.spec.options.get("tests")
        if gate.spec.check is BuiltinCheck.RED_GREEN and isinstance(option, list):
            return [str(g) for g in option]
    return list(ctx.project.config.upstream.path_kinds.get("tests", ["tests/**"]))


def _excerpts(ctx: RunContext, state: CycleState, *, tests: bool) -> list[Excerpt]:
    report = SurfaceReport.model_validate(load(ctx, SURFACE))
    hits: list[tuple[str, int]] = []
    anchors = [i.anchor for i in report.items if (i.kind == "test") == tests]
    for anchor in ([] if tests else [report.definition]) + anchors:
        path, _, line = anchor.rsplit("@", 1)[0].rpartition(":")
        if path and line.isdigit():
            hits.append((path, int(line)))
    return cite_around(ctx.project.upstream(), state.target, hits[:24], before=2, after=12,
                       why="upstream tests" if tests else "upstream implementation")


def _implementer(ctx: RunContext, state: CycleState, mode: implementer.Mode,
                 focused: list[str]) -> implementer.ImplementerContext:
    return implementer.ImplementerContext(
        rules_prose=ctx.rules.prose_for(None), mode=mode, row=state.row,
        spec=read_worktree(ctx, state.spec_path), test_globs=test_globs(ctx),
        focused_tests=focused, last_failure=state.feedback,
        excerpts=_excerpts(ctx, state, tests=mode == "tests_only"))


@node(Node.PORT_TESTS)
def port_tests(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """The implementer ports the upstream tests of the slice, writing test paths only."""
    ctx = runtime.context
    counted, exhausted = bump(state, "red", ctx.project.config.bounds.red_attempts)
    if exhausted:
        return {**counted, **blocked(exhausted)}
    root = ctx.project.root
    fresh = fresh_step(reset_to_head(root), recorded(state))
    outcome = run_role(ctx, implementer.ROLE, _implementer(ctx, state, "tests_only", []),
                       workspace(ctx, state.target, commands=True))
    if not outcome.ok:
        failed = turn_failed(Node.PORT_TESTS, "implementer (tests)", outcome)
        return failed if "retry" in failed else {**counted, **failed}
    step = f"tests-{counted['attempts']['red']}"
    sha = commit_step(root, ctx.run_id, step, f"tests: port the upstream tests of {state.row}",
                      include=test_globs(ctx), since=state.base, look_up=not fresh)
    if sha is None:
        return {**counted, "feedback": "no test file changed: port the upstream tests into "
                                       f"the test paths ({', '.join(test_globs(ctx))})"}
    return {**counted, "commits": {**state.commits, step: sha}, "feedback": ""}


def _passes_already(results: list[GateResult]) -> bool:
    return any(r.record is not None and r.record.kind is EvidenceKind.RED
               and r.record.exit_code == 0 and not r.record.tests_failed for r in results)


@node(Node.CAPTURE_RED)
def capture_red(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """The rules' ``red`` gates on the tests-only tree: the ported tests must fail."""
    ctx = runtime.context
    if not any(g.spec.run is not None for g in ctx.rules.gates_for(Phase.RED, None)):
        return blocked("no command gate guards the red phase: declare the focused tests "
                       "with phases = [\"red\", \"focused\"] in AGENTS.md")
    results = run_phase(ctx, state, "red")
    refs = gate_refs("red", results)
    if all(r.passed for r in results):
        emit("red", observed=True)
        return {"gates": refs, "red_commit": _observed_on(results) or head(ctx.project.root),
                "feedback": ""}
    if _passes_already(results):
        told = failures(results)
        return {"gates": refs, "feedback": f"{PASSES_ALREADY}: {told}"}
    return {"gates": refs, "feedback": failures(results)}


def _observed_on(results: list[GateResult]) -> str | None:
    """The commit every recorded gate of ``results`` ran on, when they name one and the
    same, on a clean tree."""
    records = [r.record for r in results if r.record is not None]
    commits = {r.commit for r in records}
    if len(commits) != 1 or any(r.dirty for r in records):
        return None
    return commits.pop()


@node(Node.IMPLEMENT)
def implement(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """The implementer makes the ported tests pass, never touching a test path."""
    ctx = runtime.context
    counted, exhausted = bump(state, "implement", ctx.project.config.bounds.implement_attempts)
    if exhausted:
        return {**counted, **blocked(exhausted)}
    root = ctx.project.root
    fresh = fresh_step(reset_to_head(root), recorded(state))
    reds = [r for r in ctx.store.records(EvidenceKind.RED) if r.commit == state.red_commit]
    focused = sorted({t for r in reds for t in r.tests_failed})
    outcome = run_role(ctx, implementer.ROLE,
                       _implementer(ctx, state, "implementation_only", focused),
                       workspace(ctx, state.target, commands=True))
    if not outcome.ok:
        failed = turn_failed(Node.IMPLEMENT, "implementer", outcome)
        return failed if "retry" in failed else {**counted, **failed}
    step = f"implement-{counted['attempts']['implement']}"
    sha = commit_step(root, ctx.run_id, step, f"port: {state.row}", exclude=test_globs(ctx),
                      since=state.base, look_up=not fresh)
    commits = {**state.commits, step: sha} if sha else state.commits
    return {**counted, "commits": commits, "feedback": ""}


def _gate_step(ctx: RunContext, state: CycleState, phase: str) -> Update:
    results = run_phase(ctx, state, phase)
    update: Update = {"gates": gate_refs(phase, results)}
    update["feedback"] = ("" if all(r.passed for r in results)
                          else failures(results))
    if phase == "focused" and not any(r.record is not None and r.record.kind is
                                      EvidenceKind.GREEN for r in results):
        update["feedback"] = ("no command gate guards the focused phase: declare the "
                              "focused tests with phases = [\"red\", \"focused\"]")
    return update


@node(Node.FOCUSED_GREEN)
def focused_green(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """The rules' ``focused`` gates on the implementation: the same tests must pass."""
    return _gate_step(runtime.context, state, "focused")


@node(Node.FULL_GATE)
def full_gate(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """Every ``full`` gate of the rules, in the sandbox (red-green among them)."""
    return _gate_step(runtime.context, state, "full")


def _evidence_summary(ctx: RunContext, state: CycleState) -> str:
    """The framework's observations for the reviewer: commits named by the run's step
    that made them (the tests-only commit, the implementation), not by sha."""
    names = {sha: step for step, sha in state.commits.items() if sha}
    lines = []
    for record in ctx.store.records():
        if record.kind in (EvidenceKind.RED, EvidenceKind.GREEN) or not record.passed:
            commit = names.get(record.commit, "the run's base" if record.commit ==
                               state.base else record.commit[:12])
            lines.append(f"#{record.seq} {record.phase or '-'} {record.gate}: exit "
                         f"{record.exit_code} on {commit}; failed "
                         f"{', '.join(record.tests_failed) or '-'}; passed "
                         f"{', '.join(record.tests_passed) or '-'}")
    lines += [f"gate {g.phase}/{g.name}: {'passed' if g.passed else 'FAILED'}"
              for g in state.gates[-20:]]
    return "\n".join(lines)


@node(Node.REVIEW)
def review(state: CycleState, runtime: Runtime[RunContext]) -> Update:
    """A reviewer with a fresh context (no implementer message reaches it) judges the
    change from the spec, the diff and the framework's evidence."""
    ctx = runtime.context
    context = reviewer.context_from_change(
        ctx.project.root, state.base, rules=ctx.rules, row=state.row,
        spec=read_worktree(ctx, state.spec_path), evidence=_evidence_summary(ctx, state),
        tests=test_globs(ctx), excerpts=_excerpts(ctx, state, tests=False))
    outcome = run_role(ctx, reviewer.ROLE, context, workspace(ctx, state.target),
                       forbidden=messages_of(ctx, "implementer"))
    if not outcome.ok or outcome.result is None:
        return turn_failed(Node.REVIEW, "reviewer", outcome)
    verdict = outcome.result
    rounds = len(list(ctx.dir.glob("review-*.json"))) + 1
    save(ctx, f"review-{rounds}.json", verdict)
    if verdict.decision == "approve":
        return {"review": verdict.decision, "feedback": ""}
    counted, exhausted = bump(state, "review", ctx.project.config.bounds.review_rounds)
    findings = "\n".join(f"{f.path}:{f.line}: [{f.severity}] {f.message}"
                         for f in verdict.findings)
    update: Update = {**counted, "review": verdict.decision,
                      "feedback": f"The reviewer asked for changes: {verdict.summary}\n"
                                  f"{findings}"}
    return {**update, **blocked(exhausted)} if exhausted else update
