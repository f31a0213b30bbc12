"""The port cycle for LangGraph's server and Studio (``langgraph dev``).

``langgraph.json`` names :func:`graph`, a graph factory: the server calls it with the
run's config each time it needs the graph (to run it, to read a thread's state, to draw
it) and closes what it opened when it is done with it. It gives the compiled cycle with a
run context that opens on the first node that runs — the run's own worktree and branch,
manifest, store, budget, model client and sandbox, as ``portwright run`` opens them — and
closes with the factory (the run ended, or parked at an approval: answering it from
Studio opens the run again and resumes it). Reading state or the graph's schema opens
nothing.

Where the run happens comes from the config's ``configurable``, else the environment:

- ``repo`` (``PORTWRIGHT_REPO``): the downstream repository; required;
- ``replay`` (``PORTWRIGHT_REPLAY``): play the model from this cassette instead of the
  configured ``[model]``;
- ``thread_id``: the run's id (a new one when the server gives none).

The input is the cycle's own, ``{"row": "<row id>"}``; approvals are answered with
``Command(resume={"decisions": [{"type": "approve"}]})``, as ``portwright approve`` does.
Checkpoints are the server's: a run started here is resumed here.

    PORTWRIGHT_REPO=/path/to/downstream langgraph dev
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from portwright.agents.llm import LLMClient
from portwright.errors import UsageError
from portwright.project import Project
from portwright.vcs import plumbing
from portwright.workflows.context import RUN_SOURCE, RunContext, new_run_id
from portwright.workflows.cycle import build_cycle
from portwright.workflows.state import CycleState

logger = logging.getLogger(__name__)

REPO_ENV = "PORTWRIGHT_REPO"
REPLAY_ENV = "PORTWRIGHT_REPLAY"
"""(Both listed in :data:`portwright.environment.OWN`.)"""

Graph = CompiledStateGraph[CycleState, Any, CycleState, CycleState]


@dataclass(frozen=True)
class StudioSettings:
    """Where a server-driven run happens (from ``configurable``, else the environment)."""

    repo: Path
    """The downstream repository."""
    run_id: str | None
    """The run's id: the server's thread id."""
    replay: Path | None = None
    """Play the model from this cassette."""

    @classmethod
    def from_config(cls, config: RunnableConfig | None,
                    environ: Mapping[str, str] | None = None) -> StudioSettings:
        configurable = (config or {}).get("configurable") or {}
        env = os.environ if environ is None else environ
        repo = configurable.get("repo") or env.get(REPO_ENV)
        if not repo:
            raise UsageError("no downstream repository to run the cycle in", key=REPO_ENV,
                             fix=f"set {REPO_ENV} before `langgraph dev`, or `repo` in the "
                                 "assistant's configurable")
        replay = configurable.get("replay") or env.get(REPLAY_ENV)
        thread = configurable.get("thread_id")
        return cls(repo=Path(str(repo)), run_id=str(thread) if thread else None,
                   replay=Path(str(replay)) if replay else None)


class LazyRun:
    """The :class:`~portwright.workflows.context.RunSource` of one factory call: opens the
    run when a node first asks (on ``stack``, closed with the factory)."""

    def __init__(self, settings: StudioSettings, stack: ExitStack, *,
                 client: LLMClient | None = None) -> None:
        self.settings = settings
        self._stack = stack
        self._client = client
        self._lock = threading.Lock()
        self._context: RunContext | None = None

    def context(self, row: str) -> RunContext:
        with self._lock:
            if self._context is None:
                self._context = self._stack.enter_context(self._open(row))
            return self._context

    def _open(self, row: str) -> AbstractContextManager[RunContext]:
        from portwright.workflows.driver import worktree_run

        project = Project.load(self.settings.repo, at="HEAD")
        run_id = self.settings.run_id or new_run_id("studio")
        manifest = project.store(run_id).manifest()
        base = manifest.commit if manifest else plumbing.rev_parse(project.root, "HEAD")
        logger.info("run %s of row %s from %s", run_id, row, base[:12])
        return worktree_run(project, run_id, base, f"run {row}", resume=manifest is not None,
                            replay=self.settings.replay, client=self._client)


@functools.cache
def _compiled() -> Graph:
    # no context schema: a server passes what its request holds (often ``{}``), which must
    # not be read as a RunContext; the nodes find theirs in the config instead
    return build_cycle().compile().copy(update={"context_schema": None})


@contextmanager
def open_graph(config: RunnableConfig | None = None, *,
               client: LLMClient | None = None) -> Iterator[Graph]:
    """The compiled cycle with a run context that opens on first use (``client``: the
    model, instead of the project's ``[model]``)."""
    settings = StudioSettings.from_config(config)
    with ExitStack() as stack:
        source = LazyRun(settings, stack, client=client)
        yield _compiled().with_config(configurable={RUN_SOURCE: source})


@contextmanager
def graph(config: RunnableConfig) -> Iterator[Graph]:
    """``langgraph.json``'s graph factory (see the module docstring)."""
    with open_graph(config) as compiled:
        yield compiled
