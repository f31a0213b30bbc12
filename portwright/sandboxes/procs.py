"""Host-side views of a container's processes: its cgroup folders, who runs in them, and
the kernel's out-of-memory counter. Read from ``/proc`` and ``/sys/fs/cgroup`` (v1 or v2)
without asking the engine, so they cost no exec and work while the container is frozen.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def container_cgroup(container_id: str, controller: str) -> Path | None:
    """The container's cgroup folder for ``controller`` on the host (None when not visible)."""
    candidates = [
        CGROUP_ROOT / controller / "docker" / container_id,
        CGROUP_ROOT / controller / "system.slice" / f"docker-{container_id}.scope",
        CGROUP_ROOT / "system.slice" / f"docker-{container_id}.scope",
        CGROUP_ROOT / "docker" / container_id,
    ]
    return next((p for p in candidates if p.is_dir()), None)


def oom_kill_field(text: str) -> int | None:
    """The ``oom_kill`` count of ``memory.oom_control`` (v1) or ``memory.events`` (v2)."""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            with contextlib.suppress(ValueError):
                return int(value)
    return None


def process_alive(pid: int) -> bool:
    """Whether host process ``pid`` runs (a zombie does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :][:1] not in ("Z", "X")


def cgroup_pids(folder: Path) -> list[int]:
    """Host pids of the processes in a cgroup folder."""
    try:
        text = (folder / "cgroup.procs").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def uid_of(pid: int) -> int | None:
    """Real uid of host process ``pid`` (None when it is gone or a zombie)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    uid: int | None = None
    for line in status.splitlines():
        if line.startswith("State:") and line.split()[1:2] in (["Z"], ["X"]):
            return None
        if line.startswith("Uid:"):
            with contextlib.suppress(ValueError, IndexError):
                uid = int(line.split()[1])
    return uid


def processes_of(folder: Path, uid: int) -> list[int]:
    """Host pids in the cgroup ``folder`` that run as ``uid`` (zombies left out)."""
    return [pid for pid in cgroup_pids(folder) if uid_of(pid) == uid]
