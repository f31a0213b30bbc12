"""BwrapSandbox: bubblewrap namespaces, for machines without a Docker engine.

Each command is its own ``bwrap`` invocation: the host root read-only, a fresh
``/dev``, ``/proc`` and size-capped ``/tmp``, the worktree read-write and git
metadata / upstream read-only (see :mod:`portwright.sandboxes.mounts`), every
namespace unshared (no network: only a loopback of its own), no capabilities, no
nested user namespaces, a cleared environment. Its own pid namespace is what makes
kills complete: when the command exits, or bwrap is killed on timeout, the kernel
kills every process left in the namespace, ``setsid`` escapees and daemons included.

Limits are rlimits set before bwrap starts: data (``memory``: heap and private writable
mappings; address space reserved but unused, as V8 and the JVM make, does not count),
file size, no core dumps, and processes (``pids`` on top of what the user already runs; the
kernel does not apply it to root). When the host process runs as root and the
worktree belongs to another user, commands run as that user.

What it does not give: a memory limit that the kernel enforces by killing (an
allocation simply fails; ``oom_killed`` stays False), a cpu limit, or a pids limit
for root.
"""

from __future__ import annotations

import logging
import os
import re
import resource
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from portwright.config import SandboxConfig
from portwright.errors import EngineUnavailable, SandboxError
from portwright.sandboxes.base import ExecResult
from portwright.sandboxes.local import base_env, resolve_cwd, run_setup
from portwright.sandboxes.mounts import sandbox_mounts
from portwright.sandboxes.output import LogNamer, OutputSink, kill_process_group, run_process

logger = logging.getLogger(__name__)

SANDBOX_HOME = "/tmp/home"
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """Docker-style sizes: ``512m``, ``2g``, ``1048576`` → bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)b?\s*", text.lower())
    if match is None:
        raise SandboxError(f"not a size: {text!r}",
                           fix="use a number with an optional unit: 512m, 2g")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _user_process_count(uid: int) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


class BwrapSandbox:
    """Commands in bubblewrap namespaces against the run's worktree."""

    name = "bwrap"

    def __init__(
        self,
        worktree: Path,
        *,
        config: SandboxConfig,
        log_dir: Path,
        upstream: Path | None = None,
    ) -> None:
        self.worktree = worktree.resolve()
        self.upstream = upstream.resolve() if upstream is not None else None
        self.config = config
        self.log_dir = log_dir
        self.setup_results: list[ExecResult] = []
        self._logs = LogNamer(log_dir)
        self._lock = threading.Lock()
        self._bwrap: str | None = None
        self._nproc_base = 0
        self.uid = os.getuid()
        self.gid = os.getgid()

    def __enter__(self) -> Self:
        self._bwrap = shutil.which("bwrap")
        if self._bwrap is None:
            raise EngineUnavailable("bubblewrap is not installed",
                                    fix="apt-get install bubblewrap (or start a Docker engine)")
        if not self.worktree.is_dir():
            raise SandboxError(f"worktree {self.worktree} does not exist",
                               fix="create the run's worktree before opening its sandbox")
        stat = self.worktree.stat()
        if os.geteuid() == 0 and stat.st_uid != 0:
            self.uid, self.gid = stat.st_uid, stat.st_gid
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.setup_results = run_setup(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._bwrap = None

    def command(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> list[str]:
        """The full ``bwrap`` command line that runs ``argv``."""
        assert self._bwrap is not None
        args = [self._bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--size", str(parse_size(self.config.tmpfs_size)), "--tmpfs", "/tmp",
                "--dir", SANDBOX_HOME]
        for mount in sandbox_mounts(self.worktree, self.upstream):
            flag = "--ro-bind" if mount.read_only else "--bind"
            args += [flag, str(mount.path), str(mount.path)]
        args += ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
                 "--new-session", "--cap-drop", "ALL", "--clearenv"]
        if self.config.network:
            args.append("--share-net")
        for key, value in env.items():
            args += ["--setenv", key, value]
        args += ["--chdir", str(cwd), "--", *argv]
        return args

    def _child_setup(self) -> None:
        """Runs in the child before bwrap: rlimits, then the worktree owner's identity."""
        memory = parse_size(self.config.memory)
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cap = max(self.config.output_cap, 1 << 30)
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
        nproc = self.config.pids + self._nproc_base
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        if self.uid != os.getuid():
            os.setgroups([])
            os.setresgid(self.gid, self.gid, self.gid)
            os.setresuid(self.uid, self.uid, self.uid)

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> ExecResult:
        """Run ``argv`` in fresh namespaces and wait; kill the namespace at ``timeout``."""
        if self._bwrap is None:
            raise SandboxError("the bubblewrap sandbox is not open",
                               fix="use it as a context manager: `with sandbox as sb:`")
        if not argv:
            raise SandboxError("empty command", fix="pass the program and its arguments")
        limit = self.config.timeout if timeout is None else timeout
        environment = base_env(SANDBOX_HOME)
        environment.update(self.config.env)
        environment.update(env or {})
        workdir = resolve_cwd(self.worktree, cwd)
        with self._lock:
            self._nproc_base = _user_process_count(self.uid)
            sink = OutputSink(self._logs.next(argv), tail_bytes=self.config.tail_bytes,
                              cap=self.config.output_cap)
            try:
                outcome = run_process(
                    self.command(argv, environment, workdir), sink, timeout=limit,
                    env={"PATH": environment["PATH"]}, cwd=Path("/"),
                    kill=kill_process_group, preexec_fn=self._child_setup,
                )
            except OSError as exc:
                sink.close()
                raise SandboxError(f"bubblewrap did not start: {exc}",
                                   fix="check `bwrap --version`; reinstall bubblewrap") from exc
        return sink.result(argv, exit_code=outcome.exit_code, duration=outcome.duration,
                           timed_out=outcome.timed_out)
