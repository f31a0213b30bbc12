"""The project's checkpointer, opened once, and the cycle compiled on it once.

Compiling the cycle costs a few hundred milliseconds and opening the checkpointer a few
more; a page needs neither twice. A server (or a benchmark, or ``report --html``) opens a
:class:`Checkpoints` for its life; reads go through it under one lock (the SQLite saver
has one connection).
"""

from __future__ import annotations

import threading
from contextlib import ExitStack
from types import TracebackType
from typing import Any

from portwright.project import Project
from portwright.workflows import driver


class Checkpoints:
    """An open checkpoint saver and the compiled cycle reading through it."""

    def __init__(self, project: Project) -> None:
        from portwright.workflows.cycle import build_cycle

        self.project = project
        self._stack = ExitStack()
        self.saver: Any = self._stack.enter_context(driver.open_checkpointer(project))
        self.graph: Any = build_cycle().compile(checkpointer=self.saver)
        self.lock = threading.RLock()

    def view(self, run_id: str) -> driver.RunView:
        """Where ``run_id`` stands (:func:`portwright.workflows.driver.view`)."""
        with self.lock:
            return driver.view(self.project, run_id, self.saver, graph=self.graph)

    def pending(self, run_id: str) -> tuple[driver.RunView, str]:
        """Where the run stands, and the id of the interrupt it waits at ('' if none):
        a decision names the interrupt it answers, so an answer to one the run has moved
        past is refused."""
        with self.lock:
            current = driver.view(self.project, run_id, self.saver, graph=self.graph)
        return current, current.waiting_id or ""

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Checkpoints:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
