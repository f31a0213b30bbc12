"""The Docker engine: how to reach it, why it cannot be reached, and the labels portwright
puts on its containers (with the owner token they carry). Shared by the Docker backend
(:mod:`.docker`), image building (:mod:`.images`), pruning (:mod:`.prune`) and backend
selection (:mod:`.selection`), which import it and not one another."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import docker
from docker.errors import DockerException

from portwright.errors import EngineUnavailable

__all__ = ["DOCKER_FIX", "LABEL_CREATED", "LABEL_HOST", "LABEL_IDENTITY", "LABEL_KEPT",
           "LABEL_OWNER", "LABEL_RUN", "LABEL_WORKTREE", "docker_client",
           "engine_socket_problem", "owner_alive", "owner_token"]

DOCKER_FIX = (
    "start the Docker engine (`dockerd >/var/log/dockerd.log 2>&1 &`, or "
    "`systemctl start docker`; install it with `apt-get install docker.io`), or install "
    "bubblewrap (`apt-get install bubblewrap`), or pass --allow-local to run without "
    "isolation"
)
LABEL_RUN = "portwright.run"
LABEL_CREATED = "portwright.created-at"
LABEL_OWNER = "portwright.owner"
LABEL_HOST = "portwright.host"
LABEL_WORKTREE = "portwright.worktree"
LABEL_IDENTITY = "portwright.identity"
"""``uid:gid=owner_uid:owner_gid`` (:class:`Identity`): whom to give the worktree back to."""
LABEL_KEPT = "portwright.kept"
"""The repositories' top folders left to root, with their group and mode (JSON)."""

def engine_socket_problem() -> str | None:
    """Why the engine's unix socket cannot be reached (None when it accepts, or is not a
    unix socket). Checked before the SDK connects: it leaks the socket of a failed connect."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        return None
    path = host.removeprefix("unix://")
    if not Path(path).exists():
        return f"no engine: {path} does not exist"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(3)
        try:
            probe.connect(path)
        except OSError as exc:
            return f"no engine listens on {path}: {exc.strerror or exc}"
    return None


def owner_token(pid: int | None = None) -> str:
    """``pid:starttime`` of a process: names it even after its pid is reused."""
    pid = os.getpid() if pid is None else pid
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return f"{pid}:{fields[19]}"


def owner_alive(token: str) -> bool:
    """Whether the process named by an :func:`owner_token` still runs."""
    pid_text, _, _ = token.partition(":")
    try:
        return owner_token(int(pid_text)) == token
    except (ValueError, OSError, IndexError):
        return False


def docker_client(timeout: int = 60) -> docker.DockerClient:
    """A client of the local engine, or :class:`EngineUnavailable` with how to start it."""
    problem = engine_socket_problem()
    if problem is not None:
        raise EngineUnavailable(problem, fix=DOCKER_FIX)
    try:
        client = docker.from_env(timeout=timeout)
    except DockerException as exc:
        raise EngineUnavailable(f"no Docker engine: {exc}", fix=DOCKER_FIX) from exc
    try:
        client.ping()
    except Exception as exc:  # the SDK raises its own and requests' errors alike
        client.close()
        raise EngineUnavailable(f"the Docker engine does not answer: {exc}",
                                fix=DOCKER_FIX) from exc
    return client


BASE_TAG = "portwright/base:bookworm"
"""The image sandboxes start from, built offline by ``portwright sandbox base-image``."""


def missing_image_fix(image: str) -> str:
    """How to get ``image`` when it is missing."""
    if image == BASE_TAG:
        return "build it offline: `portwright sandbox base-image`"
    return (f"build or load it (`docker build -t {image} .` / `docker load`), or set "
            "[sandbox] image in portwright.toml")
