"""BwrapSandbox: bubblewrap namespaces, for machines without a Docker engine.

Each command is its own ``bwrap`` invocation: the host root read-only, a fresh
``/dev``, ``/proc`` and size-capped ``/tmp``, the worktree read-write and git
metadata / upstream read-only (see :mod:`portwright.sandboxes.mounts`), the folder of
the evidence key covered by an empty tmpfs (the key signs evidence records; opening the
sandbox creates that folder, so no command runs while it could appear unmasked), every
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
from collections.abc import Mapping, Sequence
from pathlib import Path

from portwright.config import SandboxConfig
from portwright.errors import EngineUnavailable, SandboxError
from portwright.sandboxes.base import ExecResult
from portwright.sandboxes.common import SANDBOX_HOME, SandboxBase
from portwright.sandboxes.mounts import masked_dirs, sandbox_mounts
from portwright.sandboxes.output import OutputSink, kill_process_group, run_process

logger = logging.getLogger(__name__)

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
        upstream: Path | None = None,
    ) -> None:
        super().__init__(worktree, config=config, log_dir=log_dir)
        self.upstream = upstream.resolve() if upstream is not None else None
        self._bwrap: str | None = None
        self._nproc_base = 0
        self.uid = os.getuid()
        self.gid = os.getgid()

    def _preflight(self) -> None:
        self._bwrap = shutil.which("bwrap")
        if self._bwrap is None:
            raise EngineUnavailable("bubblewrap is not installed",
                                    fix="apt-get install bubblewrap (or start a Docker engine)")

    def _open(self) -> None:
        from portwright.runs.keys import evidence_key_dir

        evidence_key_dir()  # exists from now on, so every command masks it (see command)
        stat = self.worktree.stat()
        if os.geteuid() == 0 and stat.st_uid != 0:
            self.uid, self.gid = stat.st_uid, stat.st_gid

    def close(self) -> None:
        """Nothing outlives a command; after this, ``exec`` refuses."""
        self._bwrap = None

    def _is_open(self) -> bool:
        return self._bwrap is not None

    def command(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> list[str]:
        """The full ``bwrap`` command line that runs ``argv``."""
        assert self._bwrap is not None
        args = [self._bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--size", str(parse_size(self.config.tmpfs_size)), "--tmpfs", "/tmp",
                "--dir", SANDBOX_HOME]
        binds: list[tuple[Path, list[str]]] = [(m.path, [
            "--ro-bind" if m.read_only else "--bind", str(m.path), str(m.path)])
            for m in sandbox_mounts(self.worktree, self.upstream)]
        binds += [(d, ["--tmpfs", str(d)]) for d in masked_dirs()]
        for _, mount_args in sorted(binds, key=lambda b: len(b[0].parts)):  # outer first
            args += mount_args
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

    def _run(self, argv: list[str], sink: OutputSink, timeout: float, env: dict[str, str],
             cwd: Path) -> ExecResult:
        """One ``bwrap`` process in its own process group; its pid namespace dies with it."""
        self._nproc_base = _user_process_count(self.uid)
        try:
            outcome = run_process(
                self.command(argv, env, cwd), sink, timeout=timeout,
                env={"PATH": env["PATH"]}, cwd=Path("/"),
                kill=kill_process_group, preexec_fn=self._child_setup,
            )
        except OSError as exc:
            raise SandboxError(f"bubblewrap did not start: {exc}",
                               fix="check `bwrap --version`; reinstall bubblewrap") from exc
        return sink.result(argv, exit_code=outcome.exit_code, duration=outcome.duration,
                           timed_out=outcome.timed_out)
