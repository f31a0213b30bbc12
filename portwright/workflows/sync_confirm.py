"""The sync's ``confirm`` node: the scan's verdicts recorded, the gap verifier asked about
each ``uncertain`` commit (its answer recorded only when the evidence allows it, see
:mod:`portwright.evidence.confirm`), and each missing or partial commit given the matrix
row whose port run carries it."""

from __future__ import annotations

import dataclasses
from typing import Any

from langgraph.runtime import Runtime

from portwright.agents.evidence import gap_source
from portwright.agents.results import GapStatus, GapVerdict
from portwright.agents.roles import gap_verifier
from portwright.agents.tools import EvidenceSources, Workspace
from portwright.evidence.confirm import allowed_verdicts, why_not
from portwright.evidence.gap import CommitGap, GapReport, Verdict
from portwright.parity.matrix import MatrixRow, load_rows
from portwright.vcs.worktree import run_worktree
from portwright.workflows.context import RunContext
from portwright.workflows.steps import emit, load, run_role, save, workspace
from portwright.workflows.sync_nodes import REPORT, Update, child_id, short_evidence, sync_node
from portwright.workflows.sync_state import Account, SyncCommit, SyncNode, SyncState

_GAP_TO_VERDICT = {GapStatus.MISSING: Verdict.MISSING, GapStatus.PARTIAL: Verdict.PARTIAL,
                   GapStatus.STALE: Verdict.PARTIAL, GapStatus.LANDED: Verdict.LANDED}


def _confirm_role(commit: CommitGap) -> Any:
    """The gap verifier, with the framework's rule on the verdicts the evidence allows
    added to its own check (a refused verdict is answered back to the model)."""
    base_check = gap_verifier.ROLE.check

    def check(context: gap_verifier.GapContext, verdict: GapVerdict,
              ws: Workspace) -> list[str]:
        problems = base_check(context, verdict, ws) if base_check is not None else []
        refused = why_not(commit, _GAP_TO_VERDICT[verdict.status])
        return problems + ([refused] if refused else [])

    return dataclasses.replace(gap_verifier.ROLE, check=check)


def _evidence_text(commit: CommitGap) -> str:
    files = "\n".join(f"- {f.path} ({f.kind}, {f.status}, +{f.added_lines} "
                      f"-{f.removed_lines}"
                      + (f", no behaviour: {f.no_behaviour})" if f.no_behaviour else ")")
                      for f in commit.files)
    signals = "\n".join(f"- {line}" for line in short_evidence(commit)) or "- none"
    allowed = ", ".join(v.value for v in allowed_verdicts(commit))
    return (f"Upstream commit: {commit.sha} {commit.subject}\n"
            f"The scan could not decide: {commit.reason}\n\nFiles changed:\n{files}\n\n"
            f"Signals searched in the port:\n{signals}\n\n"
            f"Verdicts this evidence allows: {allowed}")


def _symbols(commit: CommitGap) -> list[str]:
    found = [*commit.added, *commit.removed, *commit.tests, *commit.literals]
    return found or [f.path for f in commit.files if f.kind in ("source", "tests")] or \
        [f.path for f in commit.files] or [commit.sha[:12]]


def _confirm_one(ctx: RunContext, state: SyncState, commit: CommitGap) -> tuple[str, str, str]:
    """(verdict, reason, file) of the gap verifier's confirmation, or ("", why, "")."""
    name = f"confirm-{commit.sha[:12]}.json"
    if (ctx.dir / name).is_file():
        kept = GapVerdict.model_validate(load(ctx, name))
        return _GAP_TO_VERDICT[kept.status].value, kept.reasoning, name
    config = ctx.project.config
    upstream = ctx.project.upstream()
    context = gap_verifier.GapContext(
        rules_prose=ctx.rules.prose_for(None), symbols=_symbols(commit),
        upstream_name=config.upstream.name, pin=state.pin,
        row=f"Upstream commit: {commit.sha} {commit.subject}",
        evidence=_evidence_text(commit))
    ws = workspace(ctx, state.pin, evidence=EvidenceSources(
        gap=gap_source(upstream, ctx.project.root, state.pin, config)))
    outcome = run_role(ctx, _confirm_role(commit), context, ws)
    if not outcome.ok or outcome.result is None:
        return "", f"the gap verifier could not confirm it: {outcome.status}: " \
                   f"{outcome.reason}", ""
    save(ctx, name, outcome.result)
    verdict = _GAP_TO_VERDICT[outcome.result.status]
    return verdict.value, outcome.result.reasoning, name


def covering_row(commit: CommitGap, rows: list[MatrixRow]) -> MatrixRow | None:
    """The first matrix row whose Upstream column names a path the commit changed, or a
    name it added or removed."""
    names = {*commit.added, *commit.removed}
    paths = {p for f in commit.files for p in (f.path, f.old_path) if p}
    for row in rows:
        for entry in (u.strip("`").strip() for u in row.upstream):
            if entry in names or entry in paths or (entry.endswith("/") and any(
                    p.startswith(entry) for p in paths)):
                return row
    return None


@sync_node(SyncNode.CONFIRM)
def confirm(state: SyncState, runtime: Runtime[RunContext]) -> Update:
    """Record the scan's verdicts; ask the gap verifier about each ``uncertain`` commit and
    record its answer only when the evidence allows it (:mod:`portwright.evidence.confirm`);
    find the matrix row whose run ports each missing or partial commit."""
    ctx = runtime.context
    report = GapReport.model_validate(load(ctx, REPORT))
    by_sha = {c.sha: c for c in report.commits}
    rows = load_rows(ctx.project.root, ctx.project.config)
    out: list[SyncCommit] = []
    for entry in state.commits:
        item = entry.model_copy()
        gap = by_sha[item.sha]
        if not item.verdict and item.scan == Verdict.UNCERTAIN.value:
            verdict, reason, name = _confirm_one(ctx, state, gap)
            emit("confirmed", commit=item.sha, verdict=verdict or "-")
            if verdict:
                item.verdict, item.reason, item.decided_by = verdict, reason, "gap_verifier"
                item.confirmation = name
            else:
                item.account, item.hold = Account.BLOCKED, reason
        elif not item.verdict:
            item.verdict = item.scan
        if item.verdict == Verdict.NOT_APPLICABLE.value:
            item.account = Account.NOT_APPLICABLE
        elif item.verdict == Verdict.LANDED.value:
            item.account = Account.LANDED
        elif item.verdict in (Verdict.MISSING.value, Verdict.PARTIAL.value) and not item.row:
            row = covering_row(gap, rows)
            if row is None:
                names = ", ".join([*gap.added, *(f.path for f in gap.files)][:6])
                item.account = Account.UNCOVERED
                item.hold = (f"{item.verdict}, and no matrix row covers it: add a row whose "
                             f"Upstream column names one of: {names}")
            else:
                item.row, item.run_id = row.id, child_id(ctx.run_id, row.id)
        out.append(item)
    # the port runs' worktrees, made one after another here: `git worktree add` run in
    # parallel races on the repository's worktree list
    for run_id in dict.fromkeys(c.run_id for c in out if c.run_id):
        run_worktree(ctx.project.root, ctx.project.worktree_dir(run_id), run_id, state.base)
    return {"commits": out}
