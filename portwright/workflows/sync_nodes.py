"""The pin sync's nodes: scan the range, confirm what the scan cannot decide, port what is
missing (one cycle run per row, fanned out), carry the ports into the sync's branch, record
the rest in the ledger, run the ``pin`` gates and move the pin.

Each node is safe to run again: a resumed or re-entered sync finds what it did (the scan
in its state, confirmations in its folder, port runs by their run id, merges and ledger
entries by their commit trailers and the ledger's upstream column) and does only the rest.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime
from langgraph.types import Send

from portwright.errors import PortwrightError, UsageError
from portwright.evidence.gap import CommitGap, scan_range
from portwright.parity.ledger import LedgerKind, add_entry, load_ledger
from portwright.parity.pin import resolve_pin, write_pin
from portwright.vcs import plumbing
from portwright.vcs.pr import BODY_FILE, PRRequest
from portwright.vcs.pr_backends import open_backend
from portwright.vcs.worktree import (
    branch_name,
    commit_step,
    find_step,
    head,
    reset_to_head,
)
from portwright.workflows.context import RunContext
from portwright.workflows.state import GateRef
from portwright.workflows.steps import emit, gate_refs, judge, save
from portwright.workflows.sync_merge import merge_port
from portwright.workflows.sync_state import (
    ACCOUNTED,
    Account,
    PortResult,
    PortTask,
    SyncCommit,
    SyncNode,
    SyncState,
    SyncStatus,
    SyncStep,
)

logger = logging.getLogger(__name__)

Update = dict[str, Any]
Body = Callable[[SyncState, Runtime[RunContext]], Update]
REPORT = "gap.json"
"""The scan's report in the sync's folder."""
PR_FAILED = "the pull request could not be opened"
"""How the reason of a sync that moved the pin but could not publish it begins."""


def sync_node(name: SyncNode) -> Callable[[Body], Callable[..., Update]]:
    """Time a node into the timeline and report it; a usage or run failure it raises ends
    the sync ``blocked`` with the reason."""

    def wrap(fn: Body) -> Callable[..., Update]:
        @functools.wraps(fn)
        def run(state: SyncState, *, runtime: Runtime[RunContext]) -> Update:
            started = datetime.now(UTC)
            emit("node_started", node=name.value)
            try:
                update = fn(state, runtime)
            except PortwrightError as exc:
                logger.info("sync node %s failed: %s", name, exc)
                update = {"status": SyncStatus.BLOCKED, "reason": f"{name.value}: {exc}"}
            step = SyncStep(node=name, started=started, finished=datetime.now(UTC))
            update["timeline"] = [step]
            emit("node_finished", node=name.value, seconds=round(
                (step.finished - started).total_seconds(), 3),
                status=str(update.get("status", state.status)))
            return update

        return run

    return wrap


def child_id(sync_id: str, row: str) -> str:
    """The run id (= thread id) of the port run of ``row`` in ``sync_id``:
    ``port-<sync id's suffix>-<row>``."""
    return f"port-{sync_id.removeprefix('sync-')}-{row}"


# ---------------------------------------------------------------------------------- scan

def short_evidence(commit: CommitGap) -> list[str]:
    out = []
    for e in commit.evidence:
        where = f"{e.path}:{e.line}" if e.path and e.line else e.where
        out.append(f"{e.kind} {e.signal[:60]!r}: {where}"
                   + (f" (superseded by {e.superseded_by[:12]})" if e.superseded_by else ""))
    return out


@sync_node(SyncNode.SCAN)
def scan(state: SyncState, runtime: Runtime[RunContext]) -> Update:
    """Classify every upstream commit of ``pin..target`` with the gap scan (kept as
    ``gap.json`` in the sync's folder). A sync picked up again keeps its scan."""
    ctx = runtime.context
    if state.commits:
        return {"status": SyncStatus.RUNNING, "reason": ""}
    root, config = ctx.project.root, ctx.project.config
    upstream = ctx.project.upstream()
    pin = resolve_pin(root, config, upstream)
    report = scan_range(upstream, root, pin, state.target, config,
                        cache_dir=ctx.project.gap_cache_dir)
    save(ctx, REPORT, report)
    commits = []
    for item in report.commits:
        downstream = next((e.path for e in item.evidence if e.carried and e.path), "")
        commits.append(SyncCommit(sha=item.sha, subject=item.subject,
                                  scan=item.verdict.value, confidence=item.confidence,
                                  reason=item.reason, evidence=short_evidence(item),
                                  downstream=downstream or ""))
    emit("scanned", commits=len(commits), counts=report.counts())
    return {"sync_id": ctx.run_id, "pin": pin, "base": ctx.commit,
            "branch": branch_name(ctx.run_id), "commits": commits,
            "status": SyncStatus.RUNNING, "reason": ""}


def fan_out(state: SyncState) -> list[Send] | str:
    """One ``port`` task per row with commits to port and no finished run (a row's run
    ports every commit mapped to it); straight to ``integrate`` when there is none."""
    if state.status is SyncStatus.BLOCKED:
        return SyncNode.FINISH.value
    tasks: dict[str, PortTask] = {}
    for commit in state.commits:
        if not commit.row:
            continue
        done = state.ports.get(commit.row)
        if done is not None and done.status in ("done", "landed"):
            continue
        task = tasks.setdefault(commit.row, PortTask(
            sync_id=state.sync_id, row=commit.row, run_id=commit.run_id, base=state.base,
            target=state.target, commits=[]))
        task.commits.append(commit.sha)
    if not tasks:
        return SyncNode.INTEGRATE.value
    return [Send(SyncNode.PORT.value, task) for task in tasks.values()]


# ---------------------------------------------------------------------------------- port

def _last_failed(values: dict[str, Any]) -> list[str]:
    last: dict[str, bool] = {}
    for gate in values.get("gates", []):
        last[f"{gate['phase']}/{gate['name']}"] = bool(gate["passed"])
    return [name for name, passed in last.items() if not passed]


def port(task: PortTask, *, runtime: Runtime[RunContext]) -> Update:
    """Drive the port run of one row through the cycle (:mod:`.driver`: its own run id,
    thread, worktree, branch, sandbox and lock): started when it does not exist, resumed
    when it stopped part-way, read when it has ended or waits for a decision."""
    from portwright.workflows import driver

    ctx = runtime.context
    project = ctx.project
    try:
        writer: Callable[[Any], None] | None = get_stream_writer()
    except RuntimeError:
        writer = None

    here = contextvars.copy_context()  # the writer needs this node's context

    def forward(event: dict[str, Any]) -> None:
        if writer is not None:
            here.run(writer, {**event, "event": f"port.{event.get('event')}",
                              "row": task.row, "run_id": task.run_id})

    if writer is not None:
        writer({"event": "port_started", "row": task.row, "run_id": task.run_id,
                "commits": task.commits})
    client = getattr(ctx, "child_client", None)
    kwargs: dict[str, Any] = {"allow_local": ctx.allow_local, "client": client}
    with driver.open_checkpointer(project) as saver:
        try:
            current: driver.RunView | None = driver.view(project, task.run_id, saver)
        except UsageError:
            current = None
    # a child graph is its own LangGraph run on its own thread, never a subgraph of this
    # one: it starts from an empty context so no checkpoint namespace is inherited
    fresh = contextvars.Context()
    if current is None:
        shutil.rmtree(project.run_dir(task.run_id), ignore_errors=True)  # never checkpointed
        result = fresh.run(driver.start, project, task.row, forward, run_id=task.run_id,
                           base=task.base, target=task.target, **kwargs)
    elif current.next and current.waiting is None:
        result = fresh.run(driver.resume, project, task.run_id, forward, **kwargs)
    else:
        result = current
    values = result.values
    outcome = PortResult(row=task.row, run_id=task.run_id, status=result.status.value,
                         reason=str(values.get("reason", "")),
                         branch=str(values.get("branch", "")),
                         head=str(values.get("commits", {}).get("head", "")),
                         pr=str(values.get("pr", "")), spec=str(values.get("spec_path", "")),
                         failed_gates=_last_failed(values))
    if writer is not None:
        writer({"event": "port_finished", "row": task.row, "run_id": task.run_id,
                "status": outcome.status})
    return {"ports": {task.row: outcome}}


# ----------------------------------------------------------------------------- integrate

@sync_node(SyncNode.INTEGRATE)
def integrate(state: SyncState, runtime: Runtime[RunContext]) -> Update:
    """Merge each finished port run's branch into the sync's branch, in commit order, so the
    ``pin`` gates see the port with every change of the range."""
    ctx = runtime.context
    root = ctx.project.root
    reset_to_head(root)
    merged = list(state.merged)
    holds: dict[str, str] = {}
    for row in dict.fromkeys(c.row for c in state.commits if c.row):
        result = state.ports.get(row)
        if result is None or result.status not in ("done", "landed"):
            continue
        if result.run_id in merged:
            continue
        branch = result.branch or branch_name(result.run_id)
        conflicts = merge_port(root, ctx.project.config, sync_id=ctx.run_id,
                               run_id=result.run_id, branch=branch, base=state.base)
        if conflicts:
            holds[row] = (f"the branch of port run {result.run_id} conflicts with the ports "
                          f"merged before it in: {', '.join(conflicts[:6])}")
            continue
        merged.append(result.run_id)
        emit("merged", row=row, run_id=result.run_id)
    commits = [_account(c, state.ports.get(c.row), holds.get(c.row), state.sync_id)
               for c in state.commits]
    return {"merged": merged, "commits": commits}


def _account(commit: SyncCommit, result: PortResult | None, conflict: str | None,
             sync_id: str) -> SyncCommit:
    if not commit.row or commit.account in (Account.UNCOVERED,):
        return commit
    item = commit.model_copy()
    if result is None:
        item.account, item.hold = Account.BLOCKED, f"port run {commit.run_id} has not run"
    elif conflict is not None:
        item.account, item.hold = Account.BLOCKED, conflict
    elif result.status in ("done", "landed"):
        item.account, item.hold = (Account.PORTED if result.status == "done"
                                   else Account.LANDED), ""
    elif result.status == "waiting":
        item.account = Account.WAITING
        item.hold = (f"port run {result.run_id} waits for a decision: `portwright approve "
                     f"{result.run_id}` (or reject), then `portwright resume {sync_id}`")
    else:
        gates = f"; gate {', '.join(result.failed_gates)} failed" if result.failed_gates \
            else ""
        item.account = Account.BLOCKED
        item.hold = f"port run {result.run_id} {result.status}{gates}: {result.reason}"
    return item


# -------------------------------------------------------------------------------- record

def _ledger_entry(commit: SyncCommit, state: SyncState) -> tuple[str, LedgerKind, str]:
    """(change, kind, notes) of the ledger entry of an accounted commit."""
    evidence = "; ".join(commit.evidence[:3])
    by = f" (confirmed by the gap verifier: {commit.confirmation})" \
        if commit.decided_by == "gap_verifier" else ""
    if commit.account is Account.NOT_APPLICABLE:
        return "-", LedgerKind.NOT_APPLICABLE, f"sync {state.sync_id}: {commit.reason}{by}"
    if commit.account is Account.PORTED or commit.run_id:
        result = state.ports.get(commit.row)
        how = "ported" if commit.account is Account.PORTED else "already landed"
        return ((result.spec if result and result.spec else "-"), LedgerKind.PORT,
                f"sync {state.sync_id}: {how} by run {commit.run_id} on "
                f"{result.branch if result else branch_name(commit.run_id)}{by}")
    return (commit.downstream or "-", LedgerKind.PORT,
            f"sync {state.sync_id}: already landed: {evidence or commit.reason}{by}")


@sync_node(SyncNode.RECORD)
def record(state: SyncState, runtime: Runtime[RunContext]) -> Update:
    """One ledger entry per accounted commit (its upstream column is the commit's sha, its
    notes the evidence), never twice: an entry already naming the commit is kept."""
    ctx = runtime.context
    root, config = ctx.project.root, ctx.project.config
    reset_to_head(root)
    entries, _ = load_ledger(root, config, strict=False)
    known = {e.commit for e in entries if e.commit}
    added = 0
    for commit in state.commits:
        if commit.account not in ACCOUNTED or any(commit.sha.startswith(k) for k in known):
            continue
        change, kind, notes = _ledger_entry(commit, state)
        add_entry(root, config, change=change, upstream=commit.sha[:12], kind=kind,
                  notes=notes)
        known.add(commit.sha[:12])
        added += 1
    if added:
        number = 1
        while find_step(root, ctx.run_id, f"records-{number}") is not None:
            number += 1
        commit_step(root, ctx.run_id, f"records-{number}",
                    f"parity: {added} upstream commit(s) of {state.target[:12]} recorded")
    return {}


# ----------------------------------------------------------------------------- pin gates

@sync_node(SyncNode.PIN_GATES)
def pin_gates(state: SyncState, runtime: Runtime[RunContext]) -> Update:
    """When every commit is accounted for: move the pin through the pin store in a commit
    of its own and run the ``pin`` gates on it (on a clean export: :func:`judge`). A red
    gate takes the commit back off the branch: the pin stays where it was."""
    ctx = runtime.context
    root, config = ctx.project.root, ctx.project.config
    if any(c.account not in ACCOUNTED for c in state.commits):
        return {"gates": []}
    if state.target == state.pin:
        return {"pin_commit": head(root), "gates": []}
    reset_to_head(root)
    step = f"pin-{state.target[:12]}"
    if find_step(root, ctx.run_id, step) is None:
        before = head(root)
        write_pin(root, config, state.target)
        commit_step(root, ctx.run_id, step, f"parity: pin {state.pin[:12]} → "
                                            f"{state.target[:12]}")
    else:
        before = plumbing.rev_parse(root, f"{find_step(root, ctx.run_id, step)}^")
    from portwright.rules import BuiltinCheck, Phase

    selected = ctx.rules.gates_for(Phase.PIN, None)
    needs_sandbox = any(g.spec.run is not None or g.spec.check is BuiltinCheck.RUNTIME_CONFIG
                        for g in selected)
    results = judge(ctx, head(root), Phase.PIN.value, base=state.base, sandbox=needs_sandbox)
    refs: list[GateRef] = gate_refs("pin", results)
    if all(r.passed for r in results):
        return {"gates": refs, "pin_commit": head(root)}
    candidate = head(root)
    plumbing.git(root, "reset", "--quiet", "--hard", before)
    failed = ", ".join(f"pin/{r.name}" for r in results if not r.passed)
    return {"gates": refs, "pin_commit": "", "status": SyncStatus.BLOCKED,
            "reason": f"gate {failed} failed on the pin candidate {candidate[:12]}: the pin "
                      f"stays at {state.pin[:12]}"}


# -------------------------------------------------------------------------------- finish

@sync_node(SyncNode.FINISH)
def finish(state: SyncState, runtime: Runtime[RunContext]) -> Update:
    """The sync's outcome and its pull request: once the pin moved, the sync's branch goes
    to the ``[pr]`` backend with the report as its body (unless ``[approvals] pr`` is
    ``always``: then ``portwright pr SYNC`` opens it); otherwise the report is kept as
    ``pr.md`` in the sync's folder and nothing is published."""
    from portwright.runs.sync_report import render_sync_report

    ctx = runtime.context
    status, reason = outcome(state)
    values = {**state.model_dump(mode="json"), "status": status.value, "reason": reason}
    config = ctx.project.config
    if status is SyncStatus.DONE and state.target != state.pin \
            and config.approvals.pr != "always":
        try:
            return {**publish(ctx, state), "status": status, "reason": reason}
        except PortwrightError as exc:
            status, reason = SyncStatus.BLOCKED, f"{PR_FAILED}: {exc}"
            values = {**values, "status": status.value, "reason": reason}
    (ctx.dir / BODY_FILE).write_text(render_sync_report(values), encoding="utf-8")
    return {"status": status, "reason": reason, "pr": BODY_FILE}


def outcome(state: SyncState) -> tuple[SyncStatus, str]:
    """How the sync ends, and why (empty when it is done)."""
    open_commits = [c for c in state.commits if c.account not in ACCOUNTED]
    if state.status is SyncStatus.BLOCKED and state.reason:
        return SyncStatus.BLOCKED, state.reason
    if any(c.account is Account.WAITING for c in open_commits):
        return SyncStatus.WAITING, (f"{len(open_commits)} commit(s) wait for port runs "
                                    "parked at a decision")
    if open_commits:
        return SyncStatus.BLOCKED, (f"{len(open_commits)} of {len(state.commits)} commit(s) "
                                    f"not accounted for: the pin stays at {state.pin[:12]}")
    if state.target and state.target == state.pin:
        return SyncStatus.DONE, f"the pin is already at {state.target[:12]}: nothing to sync"
    if state.pin_commit:
        return SyncStatus.DONE, ""
    return SyncStatus.BLOCKED, "the pin gates did not run"


def publish(ctx: RunContext, state: SyncState) -> Update:
    """Open or update the pull request of the sync's branch on the ``[pr]`` backend, its
    body the sync's report (kept as ``pr.md`` and ``pr.json`` in the sync's folder); run
    again, it updates the pull request it opened. A backend that fails (a bad token, a rate
    limit) raises: the sync ends blocked and ``portwright pr SYNC`` tries again."""
    from portwright.runs.sync_report import render_sync_report

    config = ctx.project.config
    values = {**state.model_dump(mode="json"), "status": SyncStatus.DONE.value, "reason": ""}
    body = render_sync_report(values)
    title = f"Move the {config.upstream.name} pin to {state.target[:12]}"
    backend = open_backend(config.pr, repo=ctx.project.root, folder=ctx.dir)
    result = backend.open_or_update(PRRequest.from_config(
        config.pr, branch=state.branch, title=title, body=body, run_id=ctx.run_id))
    emit("pr", backend=result.backend, number=result.number, url=result.url,
         created=result.created)
    return {"pr": BODY_FILE, "pr_url": result.url, "pr_number": result.number}
