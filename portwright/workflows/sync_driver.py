"""Driving a pin sync: start it, pick it up again, read where it stands.

A sync is a LangGraph thread (sync id = thread id) checkpointed like a run, with its own
worktree and branch (``portwright/<sync id>``), folder, sandbox and lock. Its port runs
are ordinary runs of the cycle (see :mod:`.sync`). ``resume`` continues a sync from its
last checkpoint; a sync that ended waiting or blocked is *re-entered*: its graph runs
again on the same thread, and every node finds what it already did. ``start`` with a
target a sync already has re-enters that sync instead of beginning another.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, fields, replace
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import StreamMode

from portwright.agents.llm import LLMClient
from portwright.errors import RepositoryError, RevisionError, UsageError
from portwright.project import Project
from portwright.runs.store import RunStore
from portwright.vcs import plumbing
from portwright.vcs.worktree import run_worktree
from portwright.workflows.context import RunContext, new_run_id, open_run
from portwright.workflows.driver import OnEvent, _lock, open_checkpointer
from portwright.workflows.sync import SyncContext, build_sync
from portwright.workflows.sync_state import (
    COMMAND,
    SyncNode,
    SyncState,
    SyncStatus,
    is_sync,
)

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class SyncView:
    """Where a sync stands, from its checkpoint."""

    sync_id: str
    status: SyncStatus
    values: dict[str, Any]
    next: tuple[str, ...]


def _thread(sync_id: str, concurrency: int | None = None) -> RunnableConfig:
    config: RunnableConfig = {"configurable": {"thread_id": sync_id}, "recursion_limit": 200}
    if concurrency is not None:
        # LangGraph's thread pool has max_concurrency workers, and a streamed run keeps one
        # of them waiting on its output queue: one more, or a concurrency of 1 deadlocks
        config["max_concurrency"] = concurrency + 1
    return config


def view(project: Project, sync_id: str, saver: BaseCheckpointSaver[Any], *,
         graph: Any = None) -> SyncView:
    graph = graph if graph is not None else build_sync().compile(checkpointer=saver)
    snapshot = graph.get_state(_thread(sync_id))
    if not snapshot.values or not is_sync(project, sync_id):
        raise UsageError(f"no sync {sync_id!r} in this project", key="SYNC",
                         fix="list the syncs with `portwright syncs`")
    values = SyncState.model_validate(snapshot.values).model_dump(mode="json")
    return SyncView(sync_id=sync_id, status=SyncStatus(values["status"]), values=values,
                    next=tuple(task.name for task in snapshot.tasks))


def sync_ids(project: Project) -> list[str]:
    """Every sync of the project, oldest first."""
    if not project.runs_dir.is_dir():
        return []
    found = [p for p in project.runs_dir.iterdir() if (p / "run.json").is_file()
             and is_sync(project, p.name)]
    return [p.name for p in sorted(found, key=lambda p: (p / "run.json").stat().st_mtime)]


def resolve_target(project: Project, to: str) -> tuple[str, str]:
    """``(pin, target)`` as full upstream shas: ``to`` must name an upstream commit that
    descends from the recorded pin."""
    from portwright.evidence.gap import upstream_repo
    from portwright.parity.pin import resolve_pin

    upstream = upstream_repo(project)
    try:
        target = plumbing.rev_parse(upstream, to)
    except RevisionError as exc:
        raise RevisionError(f"--to {to!r}: {exc.message}", file=upstream, key="--to",
                            fix=exc.fix or "pass an upstream branch, tag or commit") from exc
    pin = resolve_pin(project.root, project.config, upstream)
    if not plumbing.is_ancestor(upstream, pin, target):
        raise RevisionError(
            f"--to {to!r} ({target[:12]}) does not descend from the pin {pin[:12]}: a sync "
            "only moves the pin forward along upstream's history", file=upstream, key="--to",
            fix=f"pass a revision that contains {pin[:12]} (`git -C {upstream} branch "
                f"--contains {pin[:12]}`)")
    return pin, target


def check_target(project: Project, to: str) -> tuple[str, str]:
    """:func:`resolve_target`, and the downstream checkout must have no uncommitted change
    to a tracked file (a sync works from HEAD)."""
    pin, target = resolve_target(project, to)
    dirty = plumbing.git(project.root, "status", "--porcelain", "--untracked-files=no"
                         ).decode("utf-8", "replace").splitlines()
    if dirty:
        raise RepositoryError(
            f"the downstream checkout has uncommitted changes ({dirty[0][3:]}"
            f"{f' and {len(dirty) - 1} more' if len(dirty) > 1 else ''}); a sync works from "
            "the last commit and would leave them out", file=project.root,
            fix="commit or stash them, then sync again")
    return pin, target


def _open_sync(project: Project, sync_id: str, base: str) -> Project:
    worktree = run_worktree(project.root, project.worktree_dir(sync_id), sync_id, base)
    return replace(Project.load(worktree, at=base, environ=project.environ),
                   config=project.config)


@contextmanager
def sync_context(project: Project, sync_id: str, base: str, command: str, *, resume: bool,
                 allow_local: bool = False, client: LLMClient | None = None,
                 lock: bool = True) -> Iterator[SyncContext]:
    """The context of an opened sync's nodes: its worktree at its base, its folder lock
    (``lock``: a fanned-out port run on a worker of Temporal takes only its own run's), its
    store and sandbox, closed when the block ends."""
    sync_project = _open_sync(project, sync_id, base)
    with _lock(project.run_dir(sync_id)) if lock else nullcontext(), \
            open_run(sync_project, command, run_id=sync_id, allow_local=allow_local,
                     resume=resume, client=client) as opened:
        yield SyncContext(**{f.name: getattr(opened, f.name) for f in fields(RunContext)},
                          child_client=client)


def _drive(project: Project, sync_id: str, base: str, command: str, graph_input: Any,
           on_event: OnEvent, *, resume: bool, concurrency: int | None,
           allow_local: bool = False, client: LLMClient | None = None) -> SyncView:
    with sync_context(project, sync_id, base, command, resume=resume, allow_local=allow_local,
                      client=client) as ctx, open_checkpointer(project) as saver:
        graph = build_sync().compile(checkpointer=saver)
        modes: list[StreamMode] = ["custom", "updates"]
        limit = concurrency or project.config.sync.concurrency
        for mode, chunk in graph.stream(graph_input, _thread(sync_id, limit), context=ctx,
                                        stream_mode=modes, durability="sync"):
            if mode == "custom" and isinstance(chunk, dict):
                on_event(chunk)
            elif isinstance(chunk, dict):
                for name in chunk:
                    on_event({"event": "step_done", "node": name})
        return view(project, sync_id, saver, graph=graph)


def _base_of(project: Project, sync_id: str) -> str:
    manifest = RunStore(project.runs_dir, sync_id).manifest()
    if manifest is None or not is_sync(project, sync_id):
        raise UsageError(f"no sync {sync_id!r} in this project", key="SYNC",
                         fix="list the syncs with `portwright syncs`")
    return manifest.commit


def _towards(project: Project, target: str) -> str | None:
    """The newest sync towards ``target``, if any (a finished one is read, not redone)."""
    with open_checkpointer(project) as saver:
        for sync_id in reversed(sync_ids(project)):
            try:
                current = view(project, sync_id, saver)
            except UsageError:
                continue
            if current.values["target"] == target:
                return sync_id
    return None


def start(project: Project, to: str, on_event: OnEvent, *, sync_id: str | None = None,
          concurrency: int | None = None, allow_local: bool = False,
          client: LLMClient | None = None) -> SyncView:
    """Sync towards upstream ``to``: a new sync from the repository's HEAD, or the sync
    that already has that target, picked up where it stopped (read, when it is done)."""
    _, target = check_target(project, to)
    found = sync_id if sync_id is not None and project.run_dir(sync_id).exists() \
        else _towards(project, target) if sync_id is None else None
    if found is not None:
        on_event({"event": "sync_resumed", "sync_id": found, "target": target})
        return resume(project, found, on_event, concurrency=concurrency,
                      allow_local=allow_local, client=client)
    sync_id = sync_id or new_run_id("sync")
    project.store(sync_id)  # refuses an id that is not one
    base = plumbing.rev_parse(project.root, "HEAD")
    on_event({"event": "sync_started", "sync_id": sync_id, "target": target, "base": base})
    return _drive(project, sync_id, base, f"{COMMAND} --to {target}", SyncState(target=target),
                  on_event, resume=False, concurrency=concurrency, allow_local=allow_local,
                  client=client)


def resume(project: Project, sync_id: str, on_event: OnEvent, *,
           concurrency: int | None = None, allow_local: bool = False,
           client: LLMClient | None = None) -> SyncView:
    """Continue a sync from its last checkpoint; re-enter one that ended without moving
    the pin (its port runs may have been approved or unblocked since)."""
    base = _base_of(project, sync_id)
    current = _current(project, sync_id)  # None: killed before its first checkpoint
    if current is not None and current.status is SyncStatus.DONE and not current.next:
        on_event({"event": "finished", "sync_id": sync_id, "status": "done"})
        return current
    if current is None:
        graph_input: Any = SyncState(target=_target_of(project, sync_id))
    else:
        graph_input = None if current.next else {"status": SyncStatus.RUNNING}
    return _drive(project, sync_id, base, f"resume {sync_id}", graph_input, on_event,
                  resume=True, concurrency=concurrency, allow_local=allow_local,
                  client=client)


def _target_of(project: Project, sync_id: str) -> str:
    manifest = RunStore(project.runs_dir, sync_id).manifest()
    assert manifest is not None
    return manifest.command.split("--to ", 1)[1].split()[0]


def _current(project: Project, sync_id: str) -> SyncView | None:
    with open_checkpointer(project) as saver:
        try:
            return view(project, sync_id, saver)
        except UsageError:
            return None  # opened, never checkpointed


def open_sync(project: Project, to: str, sync_id: str, *,
              workflow_id: str) -> tuple[str, str]:
    """Open a sync that a Temporal workflow drives: its worktree and branch from the
    repository's HEAD, and its manifest (``engine = "temporal"``); returns ``(target,
    base)``: the upstream sha it moves the pin to, the downstream commit it starts from.
    Idempotent: a sync this workflow opened already is found."""
    store = project.store(sync_id)
    manifest = store.manifest()
    if manifest is not None:
        if manifest.workflow_id != workflow_id or not is_sync(project, sync_id):
            raise UsageError(f"run {sync_id} exists already (not started by workflow "
                             f"{workflow_id})", key="SYNC", fix="pick another id")
        return _target_of(project, sync_id), manifest.commit
    _, target = check_target(project, to)
    base = plumbing.rev_parse(project.root, "HEAD")
    sync_project = _open_sync(project, sync_id, base)
    store.write_manifest(command=f"{COMMAND} --to {target}", commit=base,
                         rules_digests=sync_project.rules().digests(), config=project.config,
                         engine="temporal", workflow_id=workflow_id)
    return target, base


def publish(project: Project, sync_id: str, on_event: OnEvent) -> SyncView:
    """Open or update the pull request of a sync that moved the pin (held for approval by
    ``[approvals] pr``, or blocked opening it: a bad token, a rate limit), on the backend
    of today's ``[pr]``; the sync is then ``done``."""
    from portwright.workflows import sync_nodes

    base = _base_of(project, sync_id)
    current = _current(project, sync_id)
    if current is None or current.next:
        raise UsageError(f"sync {sync_id} has not finished", key="SYNC",
                         fix=f"continue it: `portwright resume {sync_id}`")
    values = current.values
    failed = str(values.get("reason", "")).startswith(sync_nodes.PR_FAILED)
    if not values.get("pin_commit") or values["pin"] == values["target"] \
            or not (current.status is SyncStatus.DONE or failed):
        raise UsageError(f"sync {sync_id} has not moved the pin ({current.status}): it has "
                         "no pull request to open", key="SYNC",
                         fix=f"see what holds it back: `portwright status {sync_id}`")
    sync_project = _open_sync(project, sync_id, base)
    with _lock(project.run_dir(sync_id)), \
            open_run(sync_project, f"pr {sync_id}", run_id=sync_id, resume=True) as opened, \
            open_checkpointer(project) as saver:
        graph = build_sync().compile(checkpointer=saver)
        update = sync_nodes.publish(opened, SyncState.model_validate(values))
        graph.update_state(_thread(sync_id), {**update, "status": SyncStatus.DONE,
                                              "reason": ""},
                           as_node=SyncNode.FINISH.value)
        on_event({"event": "pr", "sync_id": sync_id, "number": update["pr_number"],
                  "url": update["pr_url"]})
        return view(project, sync_id, saver, graph=graph)


__all__ = ["SyncView", "check_target", "is_sync", "open_sync", "publish", "resolve_target",
           "resume", "start", "sync_context", "sync_ids", "view"]
