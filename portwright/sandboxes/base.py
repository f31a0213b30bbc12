"""The :class:`Sandbox` protocol every backend implements, and what one command returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from pydantic import BaseModel, ConfigDict


class ExecResult(BaseModel):
    """What the framework observed of one command."""

    model_config = ConfigDict(frozen=True)

    argv: list[str]
    """The command as run."""
    exit_code: int
    """Exit status (128+N for signal N; -1 when it never started)."""
    duration: float
    """Wall seconds from start to exit (or kill)."""
    timed_out: bool = False
    """The command hit its timeout and was killed with its whole process tree."""
    oom_killed: bool = False
    """The kernel killed a process of the command for memory."""
    capped: bool = False
    """Output exceeded the hard cap; the command was killed."""
    stdout_head: str = ""
    stdout_tail: str = ""
    stderr_head: str = ""
    stderr_tail: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    log_path: str | None = None
    """Full output on disk (stdout and stderr, separately framed), when kept."""
    log_sha256: str | None = None
    """Digest of the full log file."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not (self.timed_out or self.oom_killed or self.capped)


@runtime_checkable
class Sandbox(Protocol):
    """An isolated place to run commands against a run's worktree.

    Used as a context manager: ``__enter__`` starts it, ``__exit__`` removes it.
    """

    name: str
    """Backend name: ``docker``, ``bwrap`` or ``local``."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> ExecResult:
        """Run ``argv`` (no shell unless asked: ``["sh", "-c", ...]``) and wait for it."""
        ...
