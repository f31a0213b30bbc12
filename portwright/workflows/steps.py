"""What every node of the cycle does the same way: time itself into the timeline, report
progress on LangGraph's custom stream, run a role, run the gates of a phase, read a file of
the (untrusted) worktree, keep an artifact in the run's folder."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from langgraph.config import get_config, get_stream_writer
from langgraph.runtime import Runtime
from pydantic import BaseModel

from portwright import safefs
from portwright.agents.llm import Message
from portwright.agents.loop import AgentOutcome
from portwright.agents.offline import CassetteMismatch
from portwright.agents.roles.base import Role, RoleContext
from portwright.agents.tools import EvidenceSources, Workspace
from portwright.agents.transcript import Transcript, read_transcript
from portwright.errors import ModelError, PortwrightError, UnsafePath, UsageError
from portwright.gates import run_gates
from portwright.gates._diff import name_status
from portwright.gates.models import GateResult
from portwright.redact import redact, redact_data
from portwright.sandboxes.output import relative_to
from portwright.vcs import plumbing
from portwright.vcs.export import exported, holds
from portwright.workflows import basebuild
from portwright.workflows.context import RUN_SOURCE, RunContext, RunSource
from portwright.workflows.state import CycleState, GateRef, Node, RunStatus, Step

logger = logging.getLogger(__name__)

Update = dict[str, Any]
Body = Callable[[CycleState, Runtime[RunContext]], Update]


class NodeFn(Protocol):
    """A node as LangGraph calls it (the runtime by keyword)."""

    def __call__(self, state: CycleState, *, runtime: Runtime[RunContext]) -> Update: ...
C = TypeVar("C", bound=RoleContext)
R = TypeVar("R", bound=BaseModel)

FILE_CAP = 4 * 1024 * 1024
"""Largest worktree file a node reads back (a spec, a matrix)."""
SURFACE = "surface.json"
"""The upstream surface of the row's symbol at the target, in the run's folder: enumerated
once, by ``prepare``, which must find the symbol defined there anyway."""


def emit(event: str, **data: Any) -> None:
    """A progress event on the custom stream (rendered by the CLI, the web page)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # not inside a graph run (a node called directly in a test)
        return
    writer({"event": event, **data})


def node(name: Node) -> Callable[[Body], NodeFn]:
    """Make a node: time it into the timeline, report start and end; a usage or run
    failure it raises ends the run ``blocked`` with the reason, never a crash."""

    def wrap(fn: Body) -> NodeFn:
        # the body's name and docstring, not its ``__wrapped__`` or string annotations:
        # LangGraph reads a node's signature and hints and walks the code of whatever it
        # wraps for subgraphs when it builds the graph; the wrapper's own are all it needs
        @functools.wraps(fn, assigned=("__module__", "__name__", "__qualname__", "__doc__"),
                         updated=())
        def run(state: CycleState, *, runtime: Runtime[RunContext]) -> Update:
            started = datetime.now(UTC)
            emit("node_started", node=name.value)
            try:
                update = fn(state, with_run_context(runtime, state.row))
            except PortwrightError as exc:
                logger.info("node %s failed: %s", name, exc)
                update = blocked(f"{name.value}: {exc}")
                if resumable(exc):
                    update["retry"] = name
            note = str(update.get("reason", "")) if update.get("status") else ""
            step = Step(node=name, started=started, finished=datetime.now(UTC), note=note)
            update["timeline"] = [step]
            emit("node_finished", node=name.value, seconds=round(
                (step.finished - started).total_seconds(), 3), status=str(
                update.get("status", state.status)))
            return update

        del run.__wrapped__
        run.__annotations__ = _NODE_HINTS
        return run

    return wrap


_NODE_HINTS = {"state": CycleState, "runtime": Runtime[RunContext], "return": Update}


def with_run_context(runtime: Runtime[RunContext], row: str) -> Runtime[RunContext]:
    """``runtime`` with the run's context: the one the caller gave (``portwright run``,
    the web page, a worker), else the one a server-driven graph carries in its config
    (:data:`~portwright.workflows.context.RUN_SOURCE`, see :mod:`portwright.workflows.studio`)."""
    if isinstance(runtime.context, RunContext):
        return runtime
    try:
        source: RunSource | None = get_config().get("configurable", {}).get(RUN_SOURCE)
    except RuntimeError:  # called outside a graph run
        source = None
    if source is None:
        raise UsageError("the graph was run without a run context",
                         fix="drive it with `portwright run`, or load it the way "
                             "langgraph.json does (portwright/workflows/studio.py)")
    return runtime.override(context=source.context(row))


def blocked(reason: str) -> Update:
    """The update that ends a run ``blocked`` with ``reason`` (redacted: it is kept in the
    checkpoint and shown)."""
    return {"status": RunStatus.BLOCKED, "reason": redact(reason)}


def resumable(exc: BaseException | None) -> bool:
    """Whether a run blocked by ``exc`` can go on from the node it failed in: the model
    endpoint failed (not a cassette that lacks the call: replaying it again fails again)."""
    return isinstance(exc, ModelError) and not isinstance(exc, CassetteMismatch)


def turn_failed(name: Node, label: str, outcome: AgentOutcome[Any]) -> Update:
    """The update of a role's turn that gave no result: the run ends ``blocked`` with why;
    when the model endpoint ended it, ``retry`` names the node, which ``portwright resume``
    runs again once the endpoint answers."""
    update = blocked(f"{label}: {outcome.status}: {outcome.reason}")
    if resumable(outcome.error):
        update["retry"] = name
    return update


def recorded(state: CycleState) -> list[str]:
    """The commits the run has recorded: its base and every step's commit so far."""
    return [state.base, *(sha for sha in state.commits.values() if sha)]


def bump(state: CycleState, loop: str, limit: int) -> tuple[Update, str | None]:
    """Count one more use of a bounded loop; the reason to block when it is exhausted."""
    used = state.attempts.get(loop, 0) + 1
    attempts = {**state.attempts, loop: used}
    if used > limit:
        return {"attempts": attempts}, (f"the {loop} bound is exhausted ({limit} attempt"
                                        f"{'s' if limit != 1 else ''}); last problem: "
                                        f"{state.feedback or 'none recorded'}")
    return {"attempts": attempts}, None


def read_worktree(ctx: RunContext, rel: str) -> str:
    """A text file of the run's worktree, read without following links, capped."""
    try:
        return safefs.read_file(ctx.project.root, rel, cap=FILE_CAP).decode(
            "utf-8", errors="replace")
    except (UnsafePath, OSError) as exc:
        raise UnsafePath(rel, f"cannot be read from the run's worktree ({exc})") from exc


def save(ctx: RunContext, name: str, value: BaseModel | dict[str, Any] | list[Any]) -> str:
    """Keep an artifact (verdict, surface, classification) as JSON in the run's folder,
    redacted; returns its name there."""
    data = redact_data(value.model_dump(mode="json") if isinstance(value, BaseModel)
                       else value)
    (ctx.dir / name).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return name


def load(ctx: RunContext, name: str) -> Any:
    return json.loads((ctx.dir / name).read_text(encoding="utf-8"))


def workspace(ctx: RunContext, pin: str, *, commands: bool = False,
              evidence: EvidenceSources | None = None) -> Workspace:
    """The tools' view of the run: its worktree, the upstream at the pin, and (for the
    implementer) the run's sandbox."""
    return Workspace(worktree=ctx.project.root, upstream=ctx.project.upstream(),
                     pin=pin, sandbox=ctx.sandbox() if commands else None,
                     evidence=evidence)


def transcript_path(ctx: RunContext, role: str) -> Path:
    """``transcript-<role>-<n>.jsonl``: one file per turn, numbered."""
    number = len(list(ctx.dir.glob(f"transcript-{role}-*.jsonl"))) + 1
    return ctx.dir / f"transcript-{role}-{number}.jsonl"


def messages_of(ctx: RunContext, role: str) -> list[Message]:
    """Every message of ``role``'s turns so far (what a fresh reviewer must not see)."""
    out: list[Message] = []
    for path in sorted(ctx.dir.glob(f"transcript-{role}-*.jsonl")):
        for event in read_transcript(path):
            if event.get("event") == "message":
                out.append(Message.model_validate(event["message"]))
    return out


def run_role(ctx: RunContext, role: Role[C, R], context: C, ws: Workspace, *,
             forbidden: list[Message] | None = None, max_steps: int | None = None
             ) -> AgentOutcome[R]:
    """One turn of ``role``, charged to the run's budget, its transcript in the run
    folder; at most ``max_steps`` steps (default: ``[model] max_steps``)."""
    model = ctx.project.config.model
    path = transcript_path(ctx, role.name)
    emit("agent_started", role=role.name, transcript=path.name)
    outcome = role.run(context, client=ctx.client(), workspace=ws,
                       budget=ctx.budget().for_role(role.name), transcript=Transcript(path),
                       max_steps=max_steps or model.max_steps, ceiling=model.context_tokens,
                       forbidden=forbidden or [])
    emit("agent_finished", role=role.name, status=str(outcome.status),
         calls=outcome.spent.calls, tokens=outcome.spent.usage.total_tokens)
    return outcome


def gate_refs(phase: str, results: list[GateResult]) -> list[GateRef]:
    return [GateRef(phase=phase, name=r.name, passed=r.passed,
                    record=r.record.seq if r.record is not None else None,
                    message=(r.messages[0] if r.messages and not r.passed else ""))
            for r in results]


def run_phase(ctx: RunContext, state: CycleState, phase: str, *,
              sandbox: bool = True) -> list[GateResult]:
    """The gates of ``phase`` on the commit the run's worktree is at (:func:`judge`),
    measured from the run's base."""
    return judge(ctx, plumbing.head_commit(ctx.project.root), phase, base=state.base,
                 sandbox=sandbox)


def judge(ctx: RunContext, commit: str, phase: str, *, base: str, sandbox: bool = True,
          only: list[str] | None = None) -> list[GateResult]:
    """The gates of ``phase`` (``only`` these, when named) on a clean export of ``commit``
    (:mod:`portwright.vcs.export`), their commands in a fresh sandbox on that export (when
    ``sandbox``), measured from ``base``, recorded in the run's store. Nothing the session
    left in the worktree beside its commits reaches them; the files their messages name are
    named relative to the export (as they are in the commit)."""
    built = ctx.base_build(base) if sandbox else None
    if built is not None and built[1].key not in ctx.reported:
        ctx.reported.add(built[1].key)
        _report_base_build(built[1])
    at = built[0] if built is not None and built[1].outputs is not None else None
    again = at is not None and holds(ctx.project.root, at, commit)
    with exported(ctx.project.root, commit, label=f"{ctx.run_id}-{phase}", at=at) as tree, \
            ExitStack() as stack:
        changed = [c.path for c in name_status(tree, base, commit)]
        if built is not None and not again:
            basebuild.restore(built[1], tree, changed)
        box = stack.enter_context(ctx.fresh_sandbox(tree)) if sandbox else None
        snapshot = (commit, plumbing.tree_of(tree, commit), False)
        results = run_gates(ctx.rules, phase, sandbox=box, repo=tree,
                            config=ctx.project.config, changed=changed, only=only,
                            store=ctx.store, base=base, snapshot=snapshot)
    for result in results:
        emit("gate", phase=phase, name=result.name, passed=result.passed)
    return [r.model_copy(update={"messages": [relative_to(m, tree) for m in r.messages]})
            for r in results]


def _report_base_build(built: basebuild.BaseBuild) -> None:
    """The base build's progress event: once a run, when it was made (or found)."""
    emit("base_build", ok=built.outputs is not None, reused=built.reused, files=built.files,
         seconds=round(built.seconds, 2), exit_code=built.exit_code, log=built.log)


def failures(results: list[GateResult], root: Path | None = None, limit: int = 4000) -> str:
    """The failing gates' messages, for the next agent step; with ``root`` (the worktree the
    gates ran in), the files they name read relative to it (:func:`relative_to`)."""
    lines = [f"gate {r.name}: {m}" for r in results if not r.passed for m in r.messages]
    text = "\n".join(lines)
    if root is not None:
        text = relative_to(text, root)
    return text if len(text) <= limit else text[:limit] + "\n…"
