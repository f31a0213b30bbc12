"""Killing and counting the command user's processes in a sandbox container, from the host.

The host sees the container's cgroup (:mod:`portwright.sandboxes.procs`): who runs in it,
and the kernel's out-of-memory counter, read without asking the engine. To kill, the
:class:`Reaper` freezes the container (``pause``), SIGKILLs every process of the command
user in its cgroup and thaws it: nothing can fork while frozen, so escapees and fork
bombs end too, even when the pids limit is exhausted. Where the host cannot see the
cgroup, or may not signal the command user, it runs ``kill -9 -1`` inside as that user.

A container the engine will not thaw cannot go on and would hold the run's worktree:
it is removed at once, and :attr:`Reaper.lost` says why (the sandbox then raises
:class:`~portwright.errors.SandboxDied`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

import docker
from docker.errors import APIError, NotFound
from docker.models.containers import Container

from portwright.sandboxes.procs import container_cgroup, oom_kill_field, processes_of

logger = logging.getLogger(__name__)

SETTLE = 0.05
"""Seconds given to processes the command's wrapper killed to go before the host kills."""
GONE_WAIT = 2.0
"""Seconds to wait for killed processes to be gone."""


class Reaper:
    """Kills and counts the processes of one container's command user."""

    def __init__(self, container: Container, client: docker.DockerClient, uid: int,
                 gid: int) -> None:
        self.container = container
        self.client = client
        self.uid = uid
        self.gid = gid
        self.lost: str | None = None
        """Why the container was removed under the run (a thaw the engine refused)."""
        self._lock = threading.Lock()
        self._cgroups: dict[str, Path | None] = {}

    def _cgroup(self, controller: str) -> Path | None:
        """The container's cgroup folder for ``controller`` on the host (v1 or v2)."""
        if controller not in self._cgroups:
            self._cgroups[controller] = container_cgroup(str(self.container.id), controller)
        return self._cgroups[controller]

    def oom_count(self) -> int | None:
        """The container's ``oom_kill`` counter (None when it cannot be read)."""
        folder = self._cgroup("memory")
        if folder is None:
            return self._oom_count_inside()
        for name in ("memory.oom_control", "memory.events"):
            path = folder / name
            if path.is_file():
                return oom_kill_field(path.read_text())
        return None

    def _oom_count_inside(self) -> int | None:
        """Fallback when the host cgroup is not visible: read it from inside (one exec)."""
        try:
            _code, out = self.container.exec_run(
                ["sh", "-c", "cat /sys/fs/cgroup/memory/memory.oom_control "
                             "/sys/fs/cgroup/memory.events 2>/dev/null"], user="0")
        except APIError:
            return None
        return oom_kill_field(out.decode(errors="replace")) if isinstance(out, bytes) else None

    def kill_commands(self) -> None:
        """SIGKILL every process of the command user in the container, escapees included."""
        with self._lock:
            self._kill_commands_locked()

    def _kill_commands_locked(self) -> None:
        procs = self._cgroup("pids") or self._cgroup("memory")
        if procs is None:
            self._kill_inside()
            return
        paused = False
        denied = False
        try:
            self.container.pause()
            paused = True
        except (APIError, OSError) as exc:
            logger.info("could not freeze the sandbox before killing: %s", exc)
        try:
            for _ in range(50):
                victims = processes_of(procs, self.uid)
                if not victims:
                    break
                for pid in victims:
                    try:
                        os.kill(pid, 9)
                    except ProcessLookupError:
                        pass
                    except PermissionError:  # a host user other than the command's
                        denied = True
                if paused or denied:
                    break  # frozen: nothing new can start; the kills land on thaw
                time.sleep(0.01)
        finally:
            if paused:
                try:
                    self.container.unpause()
                except (APIError, OSError) as exc:
                    self._abandon(f"the engine did not thaw it after a kill ({exc})")
        if denied and self.lost is None:
            self._kill_inside()

    def _abandon(self, reason: str) -> None:
        """Remove a container that cannot go on (frozen for good): the run must not carry
        on in it, nor leave it to hold the worktree."""
        self.lost = reason
        logger.error("removing the sandbox container %s: %s", self.container.short_id, reason)
        try:
            self.container.remove(force=True)
        except NotFound:
            pass
        except (APIError, OSError) as exc:
            logger.error("could not remove the sandbox container %s either: %s",
                         self.container.short_id, exc)

    def leftovers(self) -> list[int] | None:
        """Live processes of the command user in the container (asked of the engine when the
        host cannot see the cgroup; None when that fails too)."""
        procs = self._cgroup("pids") or self._cgroup("memory")
        if procs is not None:
            return processes_of(procs, self.uid)
        try:
            top = self.client.api.top(str(self.container.id), ps_args="-eo pid,uid,stat")
        except (APIError, OSError) as exc:
            logger.warning("could not list the sandbox's processes: %s", exc)
            return None
        return [int(pid) for pid, uid, state in top.get("Processes") or []
                if uid == str(self.uid) and not state.startswith("Z")]

    def reap_leftovers(self) -> None:
        """After a command: make sure nothing of the command user runs any more."""
        deadline = time.monotonic() + SETTLE
        left = self.leftovers()
        while left and time.monotonic() < deadline:  # the wrapper's kill may be landing
            time.sleep(0.002)
            left = self.leftovers()
        if left is None:
            self._kill_inside()
            return
        if not left:
            return
        logger.warning("the command left %d process(es) running in the sandbox; killing them",
                       len(left))
        self.kill_commands()
        deadline = time.monotonic() + GONE_WAIT
        while self.lost is None and self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.005)

    def _kill_inside(self) -> None:
        try:
            self.container.exec_run(["sh", "-c", "kill -9 -1"], user=f"{self.uid}:{self.gid}")
        except APIError as exc:
            logger.warning("could not kill the sandbox's commands: %s", exc)
