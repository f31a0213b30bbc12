"""Run the gates of a phase: commands in the sandbox, built-in checks in-process.

Every gate's outcome becomes an :class:`~portwright.runs.EvidenceRecord` (written to the
run store when one is given): the command, exit code, duration, test ids passed and failed
(from JUnit XML where the gate declares ``junit``, else from the test runner's output), the
sha256 of the full log and the downstream commit it ran on.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from portwright.config import PortwrightConfig
from portwright.errors import GateFailed, RulesError, UsageError
from portwright.gates.checks import BUILTINS, RUNS_COMMANDS
from portwright.gates.command import IDS_CAPPED, run_command
from portwright.gates.models import GateContext, GateResult
from portwright.rules import Phase, ResolvedGate, Rules
from portwright.runs.models import EvidenceKind, EvidenceRecord
from portwright.runs.store import RunStore
from portwright.sandboxes.base import Sandbox
from portwright.vcs import plumbing

if TYPE_CHECKING:
    from portwright.vcs.git import Repo

logger = logging.getLogger(__name__)

__all__ = ["GateContext", "run_command", "run_gate", "run_gates"]


Snapshot = tuple[str, str, bool]
"""``(HEAD sha, tree sha, dirty)`` of the worktree (:func:`portwright.vcs.plumbing.snapshot`)."""


def run_gate(gate: ResolvedGate, ctx: GateContext, *,
             snapshot: Snapshot | None = None) -> GateResult:
    """Run one gate. A built-in check records the worktree as ``snapshot`` shows it, and a
    command records it as the tree it ran on (taken now when not given: pass one only when
    nothing can have changed the worktree since)."""
    spec = gate.spec
    if spec.run is not None:
        if ctx.sandbox is None:
            return GateResult(name=gate.name, passed=False, command=spec.run,
                              messages=["no sandbox to run the command in"])
        kind = {Phase.RED: EvidenceKind.RED, Phase.FOCUSED: EvidenceKind.GREEN}.get(
            ctx.phase, EvidenceKind.GATE) if ctx.phase is not None else EvidenceKind.GATE
        record, output = run_command(
            ctx.sandbox, spec.run, repo=ctx.repo, name=gate.name, kind=kind,
            directory=gate.directory, timeout=spec.timeout, junit=spec.junit, store=ctx.store,
            phase=ctx.phase.value if ctx.phase is not None else None, snapshot=snapshot,
        )
        messages = list(record.messages)
        if kind is EvidenceKind.RED:
            # red: the ported tests must fail on the tree without the implementation
            proves = (record.exit_code != 0 and bool(record.tests_failed)
                      and not any("timed out" in m or m.startswith(IDS_CAPPED)
                                  for m in record.messages))
            if not proves:
                messages.append(
                    f"`{spec.run}` exited {record.exit_code} with "
                    f"{len(record.tests_failed)} failing test(s) on the tree without the "
                    "implementation: a red gate needs tests that fail (a test that passes "
                    "already proves nothing)")
            else:
                messages += [f"fails as required: {ident}" for ident in record.tests_failed]
            return GateResult(name=gate.name, passed=proves, messages=messages,
                              command=spec.run, record=record)
        if record.exit_code != 0:
            tail = output.strip().splitlines()[-5:]
            messages.append(f"`{spec.run}` exited {record.exit_code}"
                            + (": " + " / ".join(tail) if tail else ""))
        messages += [f"test failed: {ident}" for ident in record.tests_failed]
        return GateResult(name=gate.name, passed=record.passed, messages=messages,
                          command=spec.run, record=record)
    assert spec.check is not None
    started = time.monotonic()
    sha, tree, dirty = snapshot if snapshot is not None else plumbing.snapshot(ctx.repo)
    try:
        verdict = BUILTINS[spec.check](ctx)
    except UsageError as exc:  # a record the check cannot read fails it, naming the file
        verdict = GateResult(name=gate.name, passed=False, messages=[exc.render()])
    verdict = verdict.model_copy(update={"name": gate.name, "check": spec.check.value})
    record = EvidenceRecord(
        gate=gate.name, phase=ctx.phase.value if ctx.phase is not None else None,
        command=f"check:{spec.check.value}", tree=tree,
        exit_code=0 if verdict.passed else 1, passed=verdict.passed,
        duration=round(time.monotonic() - started, 3), commit=sha, dirty=dirty,
        sandbox="", timestamp=datetime.now(UTC), messages=verdict.messages,
    )
    if ctx.store is not None:
        _, record = ctx.store.append(record)
    return verdict.model_copy(update={"record": record})


def run_gates(
    rules: Rules,
    phase: Phase | str,
    *,
    sandbox: Sandbox | None,
    repo: Path,
    config: PortwrightConfig,
    changed: list[str] | None = None,
    only: str | list[str] | None = None,
    store: RunStore | None = None,
    base: str | None = None,
    upstream: Repo | None = None,
    snapshot: Snapshot | None = None,
) -> list[GateResult]:
    """Run every gate the rules declare for ``phase`` (filtered by ``changed`` paths and by
    name with ``only``), in declaration order. Never raises for a failing gate: read
    ``passed`` of each result (:func:`require_passed` turns failures into ``GateFailed``).
    ``snapshot``: the worktree as the caller saw it just now (:func:`plumbing.snapshot`),
    for the gates before the first command (nothing else changes the tree)."""
    phase = Phase(phase)
    gates = rules.gates_for(phase, changed)
    if only is not None:
        names = {only} if isinstance(only, str) else set(only)
        known = {g.name for g in rules.gates()} | {g.spec.name for g in rules.gates()}
        unknown = sorted(names - known)
        if unknown:
            raise RulesError(f"no gate named {', '.join(map(repr, unknown))}",
                             file=repo / "AGENTS.md",
                             fix="see the gates with `portwright rules check`")
        gates = [g for g in gates if g.name in names or g.spec.name in names]
    results: list[GateResult] = []
    shared = snapshot  # the tree as the gates since the last command see it
    for gate in gates:
        logger.info("gate %s (%s)", gate.name, gate.spec.run or gate.spec.check)
        if gate.spec.check is not None and shared is None:
            shared = plumbing.snapshot(repo)
        ctx = GateContext(repo=repo, config=config, rules=rules, gate=gate, base=base,
                          head=shared[0] if shared is not None else "HEAD",
                          changed=changed, sandbox=sandbox, store=store, phase=phase,
                          _upstream=upstream)
        results.append(run_gate(gate, ctx, snapshot=shared))
        if gate.spec.check is None or gate.spec.check in RUNS_COMMANDS:
            shared = None  # the command may have changed the tree
    return results


def require_passed(results: list[GateResult]) -> None:
    """Raise :class:`GateFailed` naming every gate that did not pass."""
    failed = [r for r in results if not r.passed]
    if failed:
        raise GateFailed("; ".join(f"{r.name}: {r.messages[0] if r.messages else 'failed'}"
                                   for r in failed))
