"""LocalSandbox: a plain subprocess on the host. Not isolation; it says so.

What it does keep: the command runs in its own session and process group, which is
killed with SIGKILL on timeout, at the output cap and after the command exits (so
background processes of the group end with it); stdout and stderr are read together
(no deadlock) into a log file, head and tail capped in memory; the environment is an
explicit allow-list (``PATH``, ``HOME``, ``LANG`` and what config and the caller pass);
file size and core dumps are limited by rlimits. What it does not keep: a process
that leaves the group with ``setsid`` survives a timeout, and the command sees the
network, the whole file system and the user's rights.
"""

from __future__ import annotations

import logging
import os
import resource
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self

from portwright.config import SandboxConfig
from portwright.errors import SandboxError
from portwright.sandboxes.base import ExecResult
from portwright.sandboxes.output import (
    LogNamer,
    OutputSink,
    kill_process_group,
    run_process,
)

logger = logging.getLogger(__name__)

_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def base_env(home: str, path: str | None = None) -> dict[str, str]:
    """The variables every sandboxed command gets; nothing else comes from the host."""
    return {
        "PATH": path or _DEFAULT_PATH,
        "HOME": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp",
    }


def resolve_cwd(worktree: Path, cwd: Path | None) -> Path:
    """``cwd`` (relative to the worktree, or absolute inside it); the worktree by default."""
    if cwd is None:
        return worktree
    return cwd if cwd.is_absolute() else worktree / cwd


class _Runs(Protocol):
    config: SandboxConfig

    def exec(self, argv: Sequence[str], *, timeout: float | None = None,
             env: Mapping[str, str] | None = None, cwd: Path | None = None) -> ExecResult: ...


def run_setup(sandbox: _Runs) -> list[ExecResult]:
    """Run ``[sandbox] setup`` commands in a new sandbox; the first failure is an error."""
    results: list[ExecResult] = []
    for command in sandbox.config.setup:
        result = sandbox.exec(["sh", "-c", command])
        results.append(result)
        if not result.ok:
            raise SandboxError(
                f"sandbox setup command failed (exit {result.exit_code}): {command}",
                fix=f"see its log {result.log_path}; fix [sandbox] setup in portwright.toml",
            )
    return results


class LocalSandbox:
    """Runs commands as plain host subprocesses in the worktree (no isolation)."""

    name = "local"

    def __init__(
        self, worktree: Path, *, log_dir: Path, config: SandboxConfig | None = None
    ) -> None:
        self.worktree = worktree.resolve()
        self.log_dir = log_dir
        self.config = config or SandboxConfig()
        self.setup_results: list[ExecResult] = []
        self._logs = LogNamer(log_dir)
        self._home: tempfile.TemporaryDirectory[str] | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> Self:
        logger.warning(
            "local sandbox: commands run as plain host processes in %s, with the network, "
            "the whole file system and your rights; this is not isolation",
            self.worktree,
        )
        if not self.worktree.is_dir():
            raise SandboxError(f"worktree {self.worktree} does not exist",
                               fix="create the run's worktree before opening its sandbox")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._home = tempfile.TemporaryDirectory(prefix="portwright-home-")
        try:
            self.setup_results = run_setup(self)
        except BaseException:
            self._home.cleanup()
            self._home = None
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._home is not None:
            self._home.cleanup()
            self._home = None

    def _env(self, env: Mapping[str, str] | None) -> dict[str, str]:
        home = self._home.name if self._home is not None else tempfile.gettempdir()
        merged = base_env(home, os.environ.get("PATH"))
        merged.update(self.config.env)
        merged.update(env or {})
        return merged

    def _limits(self) -> None:
        """Runs in the child before exec: no core dumps, files no bigger than the cap."""
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cap = max(self.config.output_cap, 1 << 30)
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> ExecResult:
        """Run ``argv`` in the worktree (or ``cwd``) and wait for it, killing it at ``timeout``."""
        if self._home is None:
            raise SandboxError("the local sandbox is not open",
                               fix="use it as a context manager: `with LocalSandbox(...) as sb:`")
        if not argv:
            raise SandboxError("empty command", fix="pass the program and its arguments")
        limit = self.config.timeout if timeout is None else timeout
        sink = OutputSink(self._logs.next(argv), tail_bytes=self.config.tail_bytes,
                          cap=self.config.output_cap)
        workdir = resolve_cwd(self.worktree, cwd)
        with self._lock:
            try:
                outcome = run_process(argv, sink, timeout=limit, env=self._env(env), cwd=workdir,
                                      kill=kill_process_group, preexec_fn=self._limits)
            except OSError as exc:
                logger.info("local sandbox: %s did not start: %s", argv[0], exc)
                sink.feed("stderr", f"portwright: cannot run {argv[0]!r}: {exc}\n".encode())
                return sink.result(argv, exit_code=127 if isinstance(exc, FileNotFoundError)
                                   else 126, duration=0.0)
        return sink.result(argv, exit_code=outcome.exit_code, duration=outcome.duration,
                           timed_out=outcome.timed_out)
