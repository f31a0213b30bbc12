"""What every sandbox backend shares: the environment, the working folder, setup
commands, and the frame of ``__enter__`` / ``exec`` / ``__exit__``.

:class:`SandboxBase` checks the worktree, runs ``[sandbox] setup`` and closes the
sandbox again when opening fails; its ``exec`` refuses a closed sandbox and an empty
command, applies the default timeout, builds the environment (:func:`base_env`, then
the config's ``env``, then the caller's), resolves ``cwd`` and opens the command's log,
one command at a time, and calls :meth:`SandboxBase._after_command` once the command is
over. A backend supplies only how it opens and closes, how one command is started, killed
and observed (:meth:`SandboxBase._run`), and what it checks after each one.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Protocol, Self

from portwright.config import SandboxConfig
from portwright.errors import SandboxError
from portwright.sandboxes.base import ExecResult
from portwright.sandboxes.output import LogNamer, OutputSink

logger = logging.getLogger(__name__)

SANDBOX_HOME = "/tmp/home"
"""``HOME`` of commands in an isolating sandbox (inside its ``/tmp`` tmpfs)."""
_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
GIT_ANY_OWNER = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory",
                 "GIT_CONFIG_VALUE_0": "*"}
"""Lets git inside a sandbox use repositories another uid owns: where commands run as an
unprivileged uid in place of root, git's metadata stays root's (and read-only)."""


RUNNER_ENV: dict[str, str] = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONPYCACHEPREFIX": "/tmp/pycache",
    "PYTHONNOUSERSITE": "1",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    "NODE_OPTIONS": "",
    "npm_config_node_options": "",
}
"""What the framework sets, outside every tree, so that a toolchain loads nothing from the
tree on its own (``docs/security.md``, "Hardened runners"):

- ``PYTHONPYCACHEPREFIX``: Python reads and writes bytecode under ``/tmp`` only, never from a
  ``__pycache__`` in the tree (a forged ``.pyc`` whose header matches a source's size and
  time would run instead of the source); ``PYTHONDONTWRITEBYTECODE`` keeps it from writing;
- ``PYTHONNOUSERSITE``: no user site folder (``usercustomize``, ``.pth`` files in it);
- ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``: pytest loads no plugin from package entry points; a
  gate names the plugins it needs (``-p pytest_regressions.plugin``, or ``PYTEST_PLUGINS`` in
  ``[sandbox] env``), as committed;
- ``NODE_OPTIONS`` and npm's ``node-options`` empty: Node preloads nothing an ``.npmrc``
  names.

CMake and CTest read their per-tree files (``CMakeUserPresets.json``, a build folder's
``CTestCustom.cmake``) only from the clean export, where only what the commit holds is, and
those names are protected paths. ``HOME`` is a fresh folder in each sandbox's own ``/tmp``.
The committed ``[sandbox] env`` comes after these and may change them."""


def base_env(home: str, path: str | None = None) -> dict[str, str]:
    """The variables every sandboxed command gets; nothing else comes from the host."""
    return {
        "PATH": path or _DEFAULT_PATH,
        "HOME": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp",
        **RUNNER_ENV,
    }


def resolve_cwd(worktree: Path, cwd: Path | None) -> Path:
    """``cwd`` (relative to the worktree, or absolute inside it); the worktree by default."""
    if cwd is None:
        return worktree
    return cwd if cwd.is_absolute() else worktree / cwd


class _Runs(Protocol):
    name: str
    config: SandboxConfig

    def exec(self, argv: Sequence[str], *, timeout: float | None = None,
             env: Mapping[str, str] | None = None, cwd: Path | None = None) -> ExecResult: ...


NO_IMAGE_SETUP = ("bubblewrap has no images: setup runs in every new sandbox, in the "
                  "worktree, without network — install what needs a download on the host, "
                  "or use the Docker backend, which builds setup into an environment image "
                  "with network")


def run_setup(sandbox: _Runs) -> list[ExecResult]:
    """Run ``[sandbox] setup`` commands in a new sandbox; the first failure is an error.

    Backends without images (bubblewrap, local) do this for every sandbox; Docker builds the
    commands into the environment image instead (:mod:`portwright.sandboxes.envimage`).
    """
    results: list[ExecResult] = []
    for command in sandbox.config.setup:
        result = sandbox.exec(["sh", "-c", command])
        results.append(result)
        if not result.ok:
            offline = f" ({NO_IMAGE_SETUP})" if sandbox.name == "bwrap" else ""
            raise SandboxError(
                f"sandbox setup command failed (exit {result.exit_code}): {command}",
                fix=f"see its log {result.log_path}; fix [sandbox] setup in portwright.toml"
                    + offline,
            )
    return results


class SandboxBase(ABC):
    """The shared frame of the backends; each implements the :class:`Sandbox` protocol."""

    name: str
    """Backend name: ``docker``, ``bwrap`` or ``local``."""
    _not_open: ClassVar[str]
    """The error of ``exec`` on a sandbox that is not open."""
    _not_open_fix: ClassVar[str] = "use it as a context manager: `with sandbox as sb:`"

    def __init__(self, worktree: Path, *, config: SandboxConfig, log_dir: Path) -> None:
        self.worktree = worktree.resolve()
        self.config = config
        self.log_dir = log_dir
        self.setup_results: list[ExecResult] = []
        self._logs = LogNamer(log_dir)
        self._lock = threading.Lock()

    # -- what a backend supplies -----------------------------------------------------

    def _preflight(self) -> None:  # noqa: B027 (optional; most backends need none)
        """Checks before the worktree is looked at (nothing is open yet)."""

    @abstractmethod
    def _open(self) -> None:
        """Acquire what commands need; :meth:`close` releases it if opening fails."""

    @abstractmethod
    def close(self) -> None:
        """Release what :meth:`_open` acquired (safe to call more than once)."""

    @abstractmethod
    def _is_open(self) -> bool: ...

    def _base_env(self) -> dict[str, str]:
        """The variables before the config's and the caller's."""
        return base_env(SANDBOX_HOME)

    @abstractmethod
    def _run(self, argv: list[str], sink: OutputSink, timeout: float, env: dict[str, str],
             cwd: Path) -> ExecResult:
        """Run one command (holding the sandbox's lock), its output into ``sink``."""

    def _setup(self) -> list[ExecResult]:
        """``[sandbox] setup`` in the new sandbox (a backend with images builds it into one
        instead)."""
        return run_setup(self)

    def _after_command(self) -> None:  # noqa: B027 (optional; the local backend needs none)
        """Once a command is over and nothing of it runs any more (still holding the lock)."""

    # -- the shared frame ------------------------------------------------------------

    def __enter__(self) -> Self:
        self._preflight()
        if not self.worktree.is_dir():
            raise SandboxError(f"worktree {self.worktree} does not exist",
                               fix="create the run's worktree before opening its sandbox")
        created = not self.log_dir.exists()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._open()
            self.setup_results = self._setup()
        except BaseException:
            self.close()
            if created and not any(self.log_dir.iterdir()):
                self.log_dir.rmdir()  # a sandbox that never opened leaves no trace
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> ExecResult:
        """Run ``argv`` in the sandbox and wait for it, killing it at ``timeout``."""
        if not self._is_open():
            raise SandboxError(self._not_open, fix=self._not_open_fix)
        if not argv:
            raise SandboxError("empty command", fix="pass the program and its arguments")
        limit = self.config.timeout if timeout is None else timeout
        environment = self._base_env()
        environment.update(self.config.env)
        environment.update(env or {})
        workdir = resolve_cwd(self.worktree, cwd)
        with self._lock:
            sink = OutputSink(self._logs.next(argv), tail_bytes=self.config.tail_bytes,
                              cap=self.config.output_cap)
            try:
                result = self._run(list(argv), sink, limit, environment, workdir)
            finally:
                sink.close()
            self._after_command()
            return result
