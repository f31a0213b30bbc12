"""Choosing a backend: Docker when the engine answers, else bubblewrap, else refuse."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from portwright.config import SandboxBackend, SandboxConfig
from portwright.errors import EngineUnavailable
from portwright.sandboxes.base import Sandbox
from portwright.sandboxes.engine import DOCKER_FIX as DOCKER_FIX  # re-exported
from portwright.sandboxes.engine import engine_socket_problem

if TYPE_CHECKING:
    from portwright.sandboxes.envimage import EnvSource
    from portwright.sandboxes.mounts import Mount

logger = logging.getLogger(__name__)

LOCAL_REFUSED = ("configured: backend = \"local\" (no isolation), which the configuration "
                 "alone cannot choose: pass --allow-local to run commands as plain host "
                 "processes")
LOCAL_FIX = ("pass --allow-local if you trust the code this runs (it then sees the network, "
             "the whole file system and your rights); or set backend = \"auto\" under "
             "[sandbox] in portwright.toml")


class Selection(BaseModel):
    """Which backend :func:`open_sandbox` would pick, and why."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    backend: SandboxBackend | None
    """The backend chosen; None when none is usable."""
    configured: SandboxBackend
    """``[sandbox] backend`` from the configuration."""
    docker: str
    """What the Docker probe found (``ok`` or the reason it failed)."""
    bwrap: str
    """What the bubblewrap probe found (``ok`` or the reason it failed)."""
    reason: str
    """One sentence: why this backend."""


def docker_status(timeout: float = 3.0) -> str:
    """``ok`` when a Docker engine answers a ping, else why not."""
    problem = engine_socket_problem()
    if problem is not None:
        return problem
    try:
        import docker
        from docker.errors import DockerException
    except ImportError as exc:  # pragma: no cover - docker is a dependency
        return f"docker SDK not importable: {exc}"
    try:
        client = docker.from_env(timeout=max(1, round(timeout)))
    except DockerException as exc:
        return f"no engine: {exc}"
    try:
        client.ping()
    except Exception as exc:  # the SDK raises requests' and its own errors alike
        return f"engine does not answer: {exc}"
    finally:
        client.close()
    return "ok"


def bwrap_status() -> str:
    """``ok`` when bubblewrap can create its namespaces here, over the same minimal view and
    as the same kind of user as every command (never root: as root, the unprivileged uid
    commands fall back to), else why not."""
    from portwright.sandboxes.ownership import UNPRIVILEGED_UID
    from portwright.sandboxes.view import drop_to, etc_copy, probe_command

    path = shutil.which("bwrap")
    if path is None:
        return "bwrap not installed"
    user = UNPRIVILEGED_UID if os.geteuid() == 0 else os.getuid()
    group = UNPRIVILEGED_UID if os.geteuid() == 0 else os.getgid()
    try:
        with etc_copy() as etc:
            done = subprocess.run(probe_command(path, etc), capture_output=True, timeout=10,
                                  check=False, cwd="/", preexec_fn=drop_to(user, group))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not run: {exc}"
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip() or f"exit {done.returncode}"
        return f"bwrap cannot create namespaces as uid {user}: {message}"
    return "ok"


def select_backend(config: SandboxConfig, *, allow_local: bool = False) -> Selection:
    """Decide the backend for ``config`` without starting anything."""
    configured = config.backend
    if configured == SandboxBackend.LOCAL:
        if allow_local:
            return Selection(backend=SandboxBackend.LOCAL, configured=configured,
                             docker="not probed", bwrap="not probed",
                             reason="configured: backend = \"local\", allowed explicitly")
        return Selection(backend=None, configured=configured, docker="not probed",
                         bwrap="not probed", reason=LOCAL_REFUSED)
    docker = docker_status() if configured in (SandboxBackend.AUTO, SandboxBackend.DOCKER) \
        else "not probed"
    bwrap = bwrap_status() if configured in (SandboxBackend.AUTO, SandboxBackend.BWRAP) or \
        docker != "ok" else "not probed"
    chosen: SandboxBackend | None = None
    if configured == SandboxBackend.DOCKER:
        chosen = SandboxBackend.DOCKER if docker == "ok" else None
        reason = "configured: backend = \"docker\"" + ("" if chosen else f"; {docker}")
    elif configured == SandboxBackend.BWRAP:
        chosen = SandboxBackend.BWRAP if bwrap == "ok" else None
        reason = "configured: backend = \"bwrap\"" + ("" if chosen else f"; {bwrap}")
    elif docker == "ok":
        chosen, reason = SandboxBackend.DOCKER, "auto: the Docker engine answers"
    elif bwrap == "ok":
        chosen, reason = SandboxBackend.BWRAP, f"auto: {docker}; bubblewrap works"
    elif allow_local:
        chosen = SandboxBackend.LOCAL
        reason = f"auto: {docker}; {bwrap}; a plain subprocess was allowed explicitly"
    else:
        reason = f"auto: {docker}; {bwrap}"
    return Selection(backend=chosen, configured=configured, docker=docker, bwrap=bwrap,
                     reason=reason)


def open_sandbox(
    config: SandboxConfig,
    *,
    worktree: Path,
    run_id: str,
    log_dir: Path,
    key_dir: Path,
    upstream: Path | None = None,
    allow_local: bool = False,
    source: EnvSource | None = None,
    cache: Mount | None = None,
) -> Sandbox:
    """The sandbox ``config`` asks for, not yet started: use it as a context manager.

    ``key_dir`` is the evidence key's folder (made by the caller): no sandbox shows it.

    ``auto`` picks Docker when the engine answers, else bubblewrap; a plain subprocess
    only when ``allow_local`` says so (the caller's explicit ``--allow-local``): configured
    (``backend = "local"``) or as the fallback of ``auto``. A configuration is text a
    command in a sandbox may have rewritten; it alone never takes the isolation away.
    Raises :class:`EngineUnavailable` with the fix when nothing usable is there.
    ``source`` says which commit a Docker sandbox's environment image is built from (HEAD
    of ``worktree`` by default) and which state folder keeps its builds; ``cache``, a
    build cache's folder a Docker sandbox mounts besides (others refuse one).
    """
    selection = select_backend(config, allow_local=allow_local)
    logger.info("sandbox backend: %s (%s)", selection.backend, selection.reason)
    if selection.backend is None:
        if selection.reason == LOCAL_REFUSED:
            raise EngineUnavailable(f"refusing to run without isolation: {LOCAL_REFUSED}",
                                    fix=LOCAL_FIX)
        raise EngineUnavailable(f"no sandbox backend is usable ({selection.reason})",
                                fix=DOCKER_FIX)
    if selection.backend == SandboxBackend.DOCKER:
        from portwright.sandboxes.docker import DockerSandbox

        return DockerSandbox(worktree, config=config, run_id=run_id, log_dir=log_dir,
                             key_dir=key_dir, upstream=upstream, source=source, cache=cache)
    if cache is not None:
        raise EngineUnavailable(f"a build cache needs the Docker backend ({selection.reason})",
                                fix=DOCKER_FIX)
    if selection.backend == SandboxBackend.BWRAP:
        from portwright.sandboxes.bwrap import BwrapSandbox

        return BwrapSandbox(worktree, config=config, log_dir=log_dir, key_dir=key_dir,
                            upstream=upstream)
    from portwright.sandboxes.local import LocalSandbox

    return LocalSandbox(worktree, log_dir=log_dir, config=config)
