"""BwrapSandbox: bubblewrap namespaces, for machines without a Docker engine.

Each command is its own ``bwrap`` invocation over a minimal read-only view of the host
(:mod:`portwright.sandboxes.view`: ``/usr``, the ``/bin`` and ``/lib*`` links, a copy of
the ``/etc`` entries toolchains read — no ``shadow``, ``sudoers`` or ``ssh`` — and nothing
of ``/home``, ``/root``, ``/var`` or ``/run``: no engine socket), a fresh ``/dev``,
``/proc`` (``/proc/sys`` read-only) and size-capped ``/tmp``, the root itself read-only;
the worktree read-write
and every ``.git`` in it, git metadata and the upstream read-only (see
:mod:`portwright.sandboxes.mounts`), all ``nosuid,nodev``. The evidence key's folder (the
caller makes it and passes it in as ``key_dir``) is not in the view, and where a mounted
folder holds it an empty tmpfs covers it. Every namespace is unshared (no network: only a
loopback of its own), no capabilities, no nested user namespaces, a cleared environment. Its own pid
namespace is what makes kills complete: when the command exits, or bwrap is killed on
timeout, the kernel kills every process left in the namespace, ``setsid`` escapees and
daemons included — and :meth:`BwrapSandbox.exec` returns only once they are gone.

Commands never run as root. bubblewrap runs as the user of this process; when that is
root it first drops to the worktree's owner, or, when root owns the worktree, to
:data:`~portwright.sandboxes.ownership.UNPRIVILEGED_UID` (the worktree handed to that uid
while the sandbox is open, see :mod:`portwright.sandboxes.ownership`). Where bubblewrap
cannot create its namespaces as that user (no unprivileged user namespaces, a folder on
the way it may not enter), opening the sandbox fails and says why.

Limits are rlimits set before bwrap starts: data (``memory``: heap and private writable
mappings; address space reserved but unused, as V8 and the JVM make, does not count),
file size, no core dumps, and processes (``pids`` on top of what the user already runs).

What it does not give: a memory limit that the kernel enforces by killing (an
allocation simply fails; ``oom_killed`` stays False), a cpu limit, GPUs (``[sandbox] gpus``
is refused), or an environment image: ``[sandbox] setup`` runs in every new sandbox, in the
worktree, without network (``lockfiles`` play no part).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import resource
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from portwright.config import SandboxConfig
from portwright.errors import ConfigError, EngineUnavailable, SandboxError
from portwright.sandboxes.base import ExecResult
from portwright.sandboxes.common import GIT_ANY_OWNER, SANDBOX_HOME, SandboxBase
from portwright.sandboxes.mounts import (
    Mount,
    masked_dirs,
    read_only_paths,
    repository_tops,
    sandbox_mounts,
)
from portwright.sandboxes.output import OutputSink, kill_process_group, run_process
from portwright.sandboxes.ownership import (
    Identity,
    KeptFolder,
    SetidSweeper,
    command_identity,
    give_back,
    hand_over,
    host_identity,
)
from portwright.sandboxes.procs import process_alive
from portwright.sandboxes.view import (
    ISOLATION,
    KERNEL,
    drop_to,
    etc_copy,
    shown_paths,
    system_view,
)

logger = logging.getLogger(__name__)

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_GONE_WAIT = 2.0
"""Seconds to wait, after bwrap exits, for the kernel to end its pid namespace."""
_USERNS_FIX = ("let unprivileged users create user namespaces (`sysctl -w "
               "user.max_user_namespaces=15000`, and `kernel.unprivileged_userns_clone=1` on "
               "kernels that have it), or use the Docker backend")


_EXEC = ("/bin/sh", "-c", 'exec "$@"', "portwright-exec")
"""How bwrap starts a command: through a shell that replaces itself with it, so a program
that is not there exits 127 and one that cannot run 126, as in the Docker sandbox (bwrap's
own ``execvp`` failure exits 1)."""


def parse_size(text: str) -> int:
    """Docker-style sizes: ``512m``, ``2g``, ``1048576`` → bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)b?\s*", text.lower())
    if match is None:
        raise SandboxError(f"not a size: {text!r}",
                           fix="use a number with an optional unit: 512m, 2g")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def _user_process_count(uid: int) -> int:
    count = 0
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                try:
                    if entry.stat(follow_symlinks=False).st_uid == uid:
                        count += 1
                except OSError:
                    continue
    return count


class BwrapSandbox(SandboxBase):
    """Commands in bubblewrap namespaces against the run's worktree."""

    name = "bwrap"
    _not_open = "the bubblewrap sandbox is not open"

    def __init__(
        self,
        worktree: Path,
        *,
        config: SandboxConfig,
        log_dir: Path,
        key_dir: Path,
        upstream: Path | None = None,
    ) -> None:
        super().__init__(worktree, config=config, log_dir=log_dir)
        self.upstream = upstream.resolve() if upstream is not None else None
        self.key_dir = key_dir
        """The evidence key's folder (made by the caller, so every command masks it)."""
        self._bwrap: str | None = None
        self._nproc_base = 0
        self._mounts: list[Mount] = []
        self._read_only: frozenset[str] = frozenset()
        self._sweeper: SetidSweeper | None = None
        self._kept: list[KeptFolder] = []
        self._resources = contextlib.ExitStack()
        self._view: list[str] = []
        self._bind_args: list[str] = []
        self.identity: Identity | None = None
        self.uid = os.getuid()
        """Who commands run as (set when the sandbox opens)."""
        self.gid = os.getgid()

    def _preflight(self) -> None:
        if self.config.gpus is not None:
            raise ConfigError(
                "[sandbox] gpus: the bubblewrap sandbox gives no GPUs (it would have to bind "
                "the host's /dev/nvidia* devices and driver libraries, outside its minimal "
                "view)", file=self.worktree / "portwright.toml", key="sandbox.gpus",
                fix="use the Docker backend (backend = \"docker\", with the NVIDIA container "
                    "toolkit) for GPU gates, or remove [sandbox] gpus")
        if shutil.which("bwrap") is None:
            raise EngineUnavailable("bubblewrap is not installed",
                                    fix="apt-get install bubblewrap (or start a Docker engine)")

    def _open(self) -> None:
        self._mounts = sandbox_mounts(self.worktree, self.upstream, key_dir=self.key_dir)
        self._read_only = read_only_paths(self._mounts)
        self._sweeper = SetidSweeper(self.worktree, self._read_only)
        self._view = system_view(self._resources.enter_context(etc_copy()))
        self._bind_args = self._binds()
        identity = command_identity(self.worktree) if os.geteuid() == 0 else host_identity()
        self.uid, self.gid = identity.uid, identity.gid
        self._bwrap = shutil.which("bwrap")
        self.identity = identity
        if identity.mapped:
            self._kept = hand_over(self.worktree, identity, self._read_only,
                                    repository_tops(self.worktree, self._mounts))
        if (self.uid, self.gid) != (os.getuid(), os.getgid()):
            self._check_drop()

    def _check_drop(self) -> None:
        """Run ``true`` as the commands will run: bwrap must set up as the unprivileged user."""
        argv = self.command(["true"], {"PATH": "/usr/bin:/bin"}, self.worktree)
        try:
            done = subprocess.run(argv, capture_output=True, timeout=30, check=False,
                                  preexec_fn=drop_to(self.uid, self.gid), cwd="/")
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxError(f"bubblewrap did not start as uid {self.uid}: {exc}",
                               fix=_USERNS_FIX) from exc
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
            fix = _USERNS_FIX
            if "Permission denied" in message or "Can't find source path" in message:
                fix = (f"let uid {self.uid} enter every folder above the worktree and the "
                       "upstream (`chmod o+x` on them), or keep them under a folder others "
                       "can enter, or use the Docker backend")
            raise SandboxError(
                f"bubblewrap cannot run commands as uid {self.uid} here (never as root): "
                f"{message}", fix=fix)

    def close(self) -> None:
        """Nothing outlives a command; give the worktree back. After this, ``exec`` refuses."""
        self._bwrap = None
        self._resources.close()
        identity, self.identity = self.identity, None
        if identity is not None:
            give_back(self.worktree, identity, self._read_only, self._kept)

    def _is_open(self) -> bool:
        return self._bwrap is not None

    def _base_env(self) -> dict[str, str]:
        env = super()._base_env()
        if self.identity is not None and self.identity.mapped:
            env.update(GIT_ANY_OWNER)
        return env

    def _binds(self) -> list[str]:
        """The run's mounts, and tmpfs covers over masked folders a mount would show."""
        binds: list[tuple[Path, list[str]]] = [(m.path, [
            "--ro-bind" if m.read_only else "--bind", str(m.path), str(m.path)])
            for m in self._mounts]
        shown = [m.path for m in self._mounts] + shown_paths()
        binds += [(d, ["--tmpfs", str(d)]) for d in masked_dirs(self.key_dir)
                  if any(d == p or p in d.parents for p in shown)]
        args: list[str] = []
        for _, mount_args in sorted(binds, key=lambda b: len(b[0].parts)):  # outer first
            args += mount_args
        return args

    def command(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path,
                info_fd: int | None = None) -> list[str]:
        """The full ``bwrap`` command line that runs ``argv``."""
        assert self._bwrap is not None
        args = [self._bwrap, *self._view, *KERNEL,
                "--size", str(parse_size(self.config.tmpfs_size)), "--tmpfs", "/tmp",
                "--dir", SANDBOX_HOME, *self._bind_args, "--remount-ro", "/", *ISOLATION]
        if self.config.network:
            args.append("--share-net")
        if info_fd is not None:
            args += ["--info-fd", str(info_fd)]
        for key, value in env.items():
            args += ["--setenv", key, value]
        args += ["--chdir", str(cwd), "--", *_EXEC, *argv]
        return args

    def _child_setup(self) -> None:
        """Runs in the child before bwrap: rlimits, then the commands' identity."""
        memory = parse_size(self.config.memory)
        resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        cap = max(self.config.output_cap, 1 << 30)
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
        nproc = self.config.pids + self._nproc_base
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        drop_to(self.uid, self.gid)()

    def _run(self, argv: list[str], sink: OutputSink, timeout: float, env: dict[str, str],
             cwd: Path) -> ExecResult:
        """One ``bwrap`` process in its own process group; its pid namespace dies with it."""
        self._nproc_base = _user_process_count(self.uid)
        info_read, info_write = os.pipe()
        try:
            try:
                outcome = run_process(
                    self.command(argv, env, cwd, info_write), sink, timeout=timeout,
                    env={"PATH": env["PATH"]}, cwd=Path("/"),
                    kill=kill_process_group, preexec_fn=self._child_setup,
                    pass_fds=(info_write,),
                )
            except OSError as exc:
                raise SandboxError(f"bubblewrap did not start: {exc}",
                                   fix="check `bwrap --version`; reinstall bubblewrap") from exc
            os.close(info_write)
            info_write = -1
            self._wait_namespace_gone(info_read)
        finally:
            for fd in (info_read, info_write):
                if fd >= 0:
                    os.close(fd)
        return sink.result(argv, exit_code=outcome.exit_code, duration=outcome.duration,
                           timed_out=outcome.timed_out)

    def _wait_namespace_gone(self, info_read: int) -> None:
        """bwrap reports the command's exit before the kernel has ended the rest of its pid
        namespace: wait until the namespace's first process (whose end ends it) is gone."""
        os.set_blocking(info_read, False)
        with contextlib.suppress(OSError):
            data = os.read(info_read, 4096)
            try:
                child = int(json.loads(data.decode())["child-pid"])
            except (ValueError, KeyError, TypeError):
                return
            deadline = time.monotonic() + _GONE_WAIT
            while process_alive(child) and time.monotonic() < deadline:
                time.sleep(0.001)
            if process_alive(child):
                logger.warning("bubblewrap's pid namespace (pid %d) outlived its command", child)

    def _after_command(self) -> None:
        """Strip set-id bits a command left on the worktree's files."""
        if self._sweeper is not None:
            self._sweeper.sweep()
