"""Opening a run: one context manager for the CLI, the graph's nodes and the web pages.

:func:`open_run` writes the run's manifest (``run.json``: command, commit, the sha256 of
every rules file, the effective config) into the run's folder in the state folder, and
holds what the run's steps share: the :class:`~portwright.project.Project` (config and
rules as committed at the run's start), the run store, the budget, the model client and a
sandbox opened on first use (or ahead of it, on a thread of its own:
:meth:`RunContext.warm_sandbox`) and closed with the run. Graph nodes receive a
:class:`RunContext` as LangGraph's runtime context; none of it goes into checkpointed
state.
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from portwright.errors import RepositoryError
from portwright.project import Project
from portwright.rules import Rules
from portwright.runs.store import RunStore
from portwright.vcs import plumbing

if TYPE_CHECKING:
    from portwright.agents.budget import RunBudget
    from portwright.agents.llm import LLMClient
    from portwright.sandboxes.base import Sandbox
    from portwright.workflows.basebuild import BaseBuild

logger = logging.getLogger(__name__)

_FULL_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")

INTERRUPTED = "interrupted"
"""File written into a run's folder when the run was stopped by a signal (Ctrl-C)."""


def new_run_id(prefix: str) -> str:
    """``<prefix>-<UTC time>-<6 hex digits>``: unique even for runs started in one second."""
    return f"{prefix}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


@dataclass
class RunContext:
    """What the steps of one run share. Resources are opened lazily and closed with it."""

    project: Project
    """The project, config and rules as committed when the run started."""
    run_id: str
    """The run's id (the graph's thread id)."""
    store: RunStore
    """Evidence records, logs and the manifest of this run."""
    rules: Rules
    """``AGENTS.md`` rules as committed when the run started."""
    commit: str
    """Downstream HEAD when the run started."""
    allow_local: bool = False
    """Whether the caller explicitly allowed the unisolated ``local`` backend."""
    record: Path | None = None
    """Record every model call into this cassette."""
    replay: Path | None = None
    """Play the model from this cassette."""
    open_ahead: bool = True
    """Whether :meth:`warm_sandbox` opens the sandbox ahead of use: a context that spans the
    run's nodes (the in-process driver). Not one opened for a single node (a Temporal
    activity), which would close it unused when the node ends."""
    _stack: ExitStack = field(default_factory=ExitStack, repr=False)
    _sandbox: Sandbox | None = field(default=None, repr=False)
    _opening: Future[Sandbox] | None = field(default=None, repr=False)
    _client: LLMClient | None = field(default=None, repr=False)
    _budget: RunBudget | None = field(default=None, repr=False)
    reported: set[str] = field(default_factory=set, repr=False)
    """Keys of the base builds whose progress this run has reported."""
    _slot: Path | bool | None = field(default=False, repr=False)
    _base_builds: dict[str, Future[BaseBuild]] = field(default_factory=dict, repr=False)

    @property
    def dir(self) -> Path:
        return self.store.dir

    def sandbox(self) -> Sandbox:
        """The run's sandbox, started on first use (it needs an engine or bubblewrap), or
        the one :meth:`warm_sandbox` started opening, once open (what stopped it opening is
        raised here, as it would have been had it opened now)."""
        if self._sandbox is None:
            if self._opening is not None:
                opening, self._opening = self._opening, None
                box = opening.result()
                self._sandbox = box
                self._stack.push(box.__exit__)
            else:
                self._sandbox = self._stack.enter_context(self._sandbox_opener()())
        return self._sandbox

    def warm_sandbox(self) -> None:
        """Start opening the run's sandbox on a thread of its own (the engine creating and
        starting its container takes a few hundred milliseconds), so that the nodes before
        the first that needs it run meanwhile; that node waits for it (:meth:`sandbox`).
        The thread touches no state of the run's: what a sandbox is opened with (the
        worktree, the upstream's path, the environment's source) is decided here. The
        base build (``[sandbox] base_build``) of the run's start commit starts on another
        thread too. Opened and never used: closed with the run; its error, if it could not
        open, is logged and not raised (nothing needed it). Nothing when it is open or
        opening already, or when the context lives for one node only
        (:attr:`open_ahead`)."""
        if not self.open_ahead or self._sandbox is not None or self._opening is not None:
            return
        new_sandbox = self._sandbox_opener()
        opening: Future[Sandbox] = Future()

        def open_it() -> None:
            try:
                opening.set_result(new_sandbox().__enter__())
            except BaseException as exc:  # raised again where it is used (sandbox())
                opening.set_exception(exc)

        logger.info("opening the sandbox of run %s ahead of its first use", self.run_id)
        threading.Thread(target=open_it, name=f"sandbox-{self.run_id}", daemon=True).start()
        self._opening = opening
        self._stack.callback(self._close_unused)
        if self.project.config.sandbox.base_build is not None \
                and self.commit not in self._base_builds:
            slot = self._held_slot()
            if slot is not None:
                self._base_builds[self.commit] = self._building(slot, self.commit, ahead=True)

    def _close_unused(self) -> None:
        """The sandbox :meth:`warm_sandbox` opened, if no node took it: closed (after it
        opened: a container being created is removed once it exists)."""
        opening, self._opening = self._opening, None
        if opening is None:
            return
        try:
            box = opening.result()
        except Exception as exc:  # nothing used it: nothing failed
            logger.info("the sandbox opened ahead of use could not open: %s", exc)
            return
        box.__exit__(None, None, None)

    def fresh_sandbox(self, tree: Path) -> Sandbox:
        """A sandbox of the run's on ``tree`` (a clean export a gate phase judges), not yet
        opened: a fresh one for each phase, never the agents' (:meth:`sandbox`), so nothing
        an agent's command left in it (a file in ``/tmp``, the home folder) reaches the
        gates. Its logs go with the run's."""
        return self._sandbox_opener(tree)()

    def base_build(self, base: str) -> tuple[Path, BaseBuild] | None:
        """The slot the run's gate phases export into and the outputs of ``base``'s build
        in it (:mod:`portwright.workflows.basebuild`; built on first use, once per base,
        or ahead of it: :meth:`warm_sandbox`), or None: no ``[sandbox] base_build``, an
        empty base, or every slot of the repository held by other processes. The slot is
        the run's until it ends."""
        from portwright.gates._diff import EMPTY_TREE

        if self.project.config.sandbox.base_build is None or base == EMPTY_TREE:
            return None
        slot = self._held_slot()
        if slot is None:
            return None
        base = plumbing.rev_parse(self.project.root, base)  # a name (HEAD~1) moves
        for pending in self._base_builds.values():
            pending.exception()  # one build at a time in the slot, and none under a phase
        if base not in self._base_builds:
            self._base_builds[base] = self._building(slot, base)
        return slot, self._base_builds[base].result()

    def _held_slot(self) -> Path | None:
        from portwright.vcs.export import slot

        if self._slot is False:
            self._slot = self._stack.enter_context(slot(self.project.root))
        return self._slot if isinstance(self._slot, Path) else None

    def _building(self, slot: Path, base: str, *, ahead: bool = False) -> Future[BaseBuild]:
        """``base``'s build (:func:`portwright.workflows.basebuild.ensure`), done now, or
        ``ahead`` on a thread of its own (the run waits for it before it ends)."""
        from portwright.workflows import basebuild

        config, root, state = self.project.config.sandbox, self.project.root, \
            self.project.state_dir
        opener = self._sandbox_factory()
        done: Future[BaseBuild] = Future()

        def build() -> None:
            try:
                done.set_result(basebuild.ensure(root, base, config, slot, state, opener))
            except BaseException as exc:  # raised again where it is used (base_build())
                done.set_exception(exc)

        if not ahead:
            build()
            return done
        logger.info("building the base of run %s ahead of its first gate", self.run_id)
        threading.Thread(target=build, name=f"base-build-{self.run_id}", daemon=True).start()
        self._stack.callback(lambda: done.exception())  # the slot outlives its build
        return done

    def _sandbox_opener(self, worktree: Path | None = None) -> Callable[[], Sandbox]:
        """What makes the run's sandbox (not yet opened; the engine asked which backend),
        on the run's worktree unless ``worktree`` names another tree."""
        return partial(self._sandbox_factory(), worktree or self.project.root)

    def _sandbox_factory(self) -> Callable[[Path], Sandbox]:
        """What makes a sandbox of the run's on a tree it is given (not yet opened): what
        else it is opened with (the upstream's path, the environment's source) decided
        now, so that another thread can call it."""
        from portwright.runs.keys import evidence_key_dir
        from portwright.sandboxes import open_sandbox
        from portwright.sandboxes.envimage import EnvSource

        try:
            upstream: Path | None = self.project.upstream()
        except RepositoryError:
            upstream = None  # command gates can run without the upstream mounted
        source = EnvSource(self.project.root, self.project.revision or self.commit,
                           self.project.state_dir)
        config, log_dir = self.project.config.sandbox, self.dir / "sandbox-logs"

        def make(tree: Path) -> Sandbox:
            return open_sandbox(config, worktree=tree, run_id=self.run_id, log_dir=log_dir,
                                key_dir=evidence_key_dir(), upstream=upstream,
                                allow_local=self.allow_local, source=source)

        return make

    def client(self) -> LLMClient:
        """The model client ([model] of the config, or the cassette)."""
        if self._client is None:
            from portwright.agents.models import build_client

            self._client = build_client(self.project.config.model, self.project.root,
                                        record=self.record, replay=self.replay)
            close = getattr(self._client, "close", None)
            if callable(close):
                self._stack.callback(close)
        return self._client

    def budget(self) -> RunBudget:
        """The run's budget and its roles' budgets."""
        if self._budget is None:
            from portwright.agents.budget import RunBudget

            model = self.project.config.model
            self._budget = RunBudget(model.budget, model.role_budgets, model.prices)
        return self._budget


RUN_SOURCE = "__portwright_run__"
"""Key of the graph's ``configurable`` under which a server-driven graph carries its
:class:`RunSource` (``__``: LangGraph keeps it out of checkpoint metadata and traces)."""


class RunSource(Protocol):
    """Where a graph that a server drives (``langgraph dev``, Studio) gets its run context:
    opened for the run's row on the first node that needs it."""

    def context(self, row: str) -> RunContext: ...


def _reap_dead_sandboxes(run_id: str) -> None:
    """Containers this run left when its process died (a killed run being resumed):
    removed, so a resumed run never has two. Best effort: an engine that does not answer
    is reported, not fatal."""
    from portwright.sandboxes.selection import docker_status

    if docker_status() != "ok":
        return
    from portwright.sandboxes.images import prune

    try:
        removed = prune(run_id=run_id)
    except Exception as exc:  # the SDK raises requests' errors and its own alike
        logger.warning("could not reap the dead sandboxes of run %s: %s", run_id, exc)
        return
    if removed:
        logger.info("removed the sandboxes of dead runs: %s", ", ".join(removed))


@contextmanager
def open_run(
    project: Project,
    command: str,
    *,
    run_id: str | None = None,
    prefix: str = "run",
    allow_local: bool = False,
    record: Path | None = None,
    replay: Path | None = None,
    resume: bool = False,
    client: LLMClient | None = None,
    open_ahead: bool = True,
) -> Iterator[RunContext]:
    """Open a run of ``command`` on ``project``: write its manifest (kept as it was when
    ``resume`` continues a run), yield its context, and close what it opened (sandbox,
    client) however it ends; ``open_ahead=False`` for a context of one node
    (:attr:`RunContext.open_ahead`). A run stopped by Ctrl-C leaves an ``interrupted`` mark
    in its folder."""
    run_id = run_id or new_run_id(prefix)
    store = project.store(run_id)
    rules = project.rules()
    revision = project.revision or "HEAD"
    # Project.load holds the full sha it resolved the revision to: not resolved again
    commit = revision if _FULL_SHA.fullmatch(revision) else plumbing.rev_parse(project.root,
                                                                               revision)
    if not (resume and store.manifest() is not None):
        store.write_manifest(command=command, commit=commit, rules_digests=rules.digests(),
                             config=project.config)
    (store.dir / INTERRUPTED).unlink(missing_ok=True)
    if resume:  # a killed process left its container: it goes before anything runs
        _reap_dead_sandboxes(run_id)
    context = RunContext(project=project, run_id=run_id, store=store, rules=rules,
                         commit=commit, allow_local=allow_local, record=record, replay=replay,
                         open_ahead=open_ahead, _client=client)
    with context._stack:
        try:
            yield context
        except KeyboardInterrupt:
            (store.dir / INTERRUPTED).write_text(
                f"{datetime.now(UTC).isoformat(timespec='seconds')}\n", encoding="utf-8")
            raise
