"""LocalSandbox: a plain subprocess on the host. Not isolation; it says so.

What it does keep: the command runs in its own session and process group, which is
killed with SIGKILL on timeout, at the output cap and after the command exits (so
background processes of the group end with it); stdout and stderr are read together
(no deadlock) into a log file, head and tail capped in memory; the environment is an
explicit allow-list (``PATH``, ``HOME``, ``LANG`` and what config and the caller pass);
file size and core dumps are limited by rlimits. What it does not keep: a process
that leaves the group with ``setsid`` survives a timeout, and the command sees the
network, the whole file system and the user's rights — the evidence key too
(:mod:`portwright.runs.keys`), so code run here could sign forged evidence: use it only
for code you trust.
"""

from __future__ import annotations

import logging
import os
import resource
import tempfile
from pathlib import Path

from portwright.config import SandboxConfig
from portwright.sandboxes.base import ExecResult
from portwright.sandboxes.common import SandboxBase, base_env, resolve_cwd, run_setup
from portwright.sandboxes.output import OutputSink, kill_process_group, run_process

logger = logging.getLogger(__name__)

__all__ = ["LocalSandbox", "base_env", "resolve_cwd", "run_setup"]  # the last three: re-exported


class LocalSandbox(SandboxBase):
    """Runs commands as plain host subprocesses in the worktree (no isolation)."""

    name = "local"
    _not_open = "the local sandbox is not open"
    _not_open_fix = "use it as a context manager: `with LocalSandbox(...) as sb:`"

    def __init__(
        self, worktree: Path, *, log_dir: Path, config: SandboxConfig | None = None
    ) -> None:
        super().__init__(worktree, config=config or SandboxConfig(), log_dir=log_dir)
        self._home: tempfile.TemporaryDirectory[str] | None = None

    def _preflight(self) -> None:
        logger.warning(
            "local sandbox: commands run as plain host processes in %s, with the network, "
            "the whole file system and your rights; this is not isolation",
            self.worktree,
        )

    def _open(self) -> None:
        self._home = tempfile.TemporaryDirectory(prefix="portwright-home-")

    def close(self) -> None:
        """Remove the commands' temporary home folder."""
        if self._home is not None:
            self._home.cleanup()
            self._home = None

    def _is_open(self) -> bool:
        return self._home is not None

    def _base_env(self) -> dict[str, str]:
        home = self._home.name if self._home is not None else tempfile.gettempdir()
        # bytecode in the commands' own home, not a /tmp every host process shares
        return {**base_env(home, os.environ.get("PATH")),
                "PYTHONPYCACHEPREFIX": str(Path(home) / ".pycache")}

    def _limits(self) -> None:
        """Runs in the child before exec: no core dumps, files no bigger than the cap."""
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cap = max(self.config.output_cap, 1 << 30)
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))

    def _run(self, argv: list[str], sink: OutputSink, timeout: float, env: dict[str, str],
             cwd: Path) -> ExecResult:
        """A host subprocess in its own process group, killed with the group."""
        try:
            outcome = run_process(argv, sink, timeout=timeout, env=env, cwd=cwd,
                                  kill=kill_process_group, preexec_fn=self._limits)
        except OSError as exc:
            logger.info("local sandbox: %s did not start: %s", argv[0], exc)
            sink.feed("stderr", f"portwright: cannot run {argv[0]!r}: {exc}\n".encode())
            return sink.result(argv, exit_code=127 if isinstance(exc, FileNotFoundError)
                               else 126, duration=0.0)
        return sink.result(argv, exit_code=outcome.exit_code, duration=outcome.duration,
                           timed_out=outcome.timed_out)
