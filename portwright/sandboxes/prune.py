"""Leftovers of dead runs: sandbox containers whose process is gone, and the worktrees they
still hold.

A run killed with ``SIGKILL`` (or a host that crashed) leaves its container behind,
running, paused (frozen in the middle of a timeout kill) or stopped. :func:`prune` finds
them by label and removes those whose creating process on this host is gone, or which
no longer run. Where the container's labels say the worktree was handed to an
unprivileged uid (:mod:`portwright.sandboxes.ownership`), it is given back to its owner
once no other container holds it.

The engine may be unable to answer for one container (its lock held by a copy nobody
reads, a kill that hangs): every call about a container has a short timeout, and such a
container is skipped and reported, never waited on.
"""

from __future__ import annotations

import logging
import math
import os
import socket
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, NotFound
from pydantic import BaseModel, ConfigDict, Field

from portwright.errors import SandboxError
from portwright.sandboxes.engine import (
    LABEL_HOST,
    LABEL_IDENTITY,
    LABEL_KEPT,
    LABEL_OWNER,
    LABEL_RUN,
    LABEL_WORKTREE,
    docker_client,
    owner_alive,
)
from portwright.sandboxes.ownership import (
    UNPRIVILEGED_UID,
    Identity,
    KeptFolder,
    give_back,
    kept_from_label,
)

logger = logging.getLogger(__name__)

PRUNE_TIMEOUT = 10.0
"""Seconds the engine gets to answer for one container before it is skipped."""
_ACTIVE = ("running", "paused", "restarting")


class PruneReport(BaseModel):
    """What :func:`prune` did."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    removed: list[str] = Field(default_factory=list)
    """Run ids whose container was removed."""
    skipped: list[str] = Field(default_factory=list)
    """``run R (container C): why`` for each container left alone because of a failure."""
    restored: list[str] = Field(default_factory=list)
    """Worktrees given back to their owner."""


def _hands_back(labels: dict[str, str]) -> tuple[Path, Identity, list[KeptFolder]] | None:
    """The worktree a container's labels say was handed over, to whom it goes back, and the
    folders that were kept."""
    identity = Identity.from_label(labels.get(LABEL_IDENTITY, ""))
    worktree = labels.get(LABEL_WORKTREE, "")
    if identity is None or not identity.mapped or UNPRIVILEGED_UID not in (identity.uid,
                                                                           identity.gid):
        return None
    if not worktree.startswith("/") or worktree == "/":
        return None
    return Path(worktree), identity, kept_from_label(labels.get(LABEL_KEPT, "[]"))


def prune(*, all_runs: bool = False, client: docker.DockerClient | None = None,
          timeout: float = PRUNE_TIMEOUT, run_id: str | None = None) -> PruneReport:
    """Remove sandbox containers whose owning process is gone, and give back what they held.

    A container is left alone while the process that created it (on this host) still
    runs, unless ``all_runs``; running and paused containers of other hosts too. Stopped
    containers are always removed; a created one that has not started yet only when its
    process is gone (a run of the same id may be between its create and its start).
    ``run_id`` limits it to that run's containers. The engine gets ``timeout`` seconds per
    call.
    """
    own = client is None
    client = client or docker_client(timeout=max(1, math.ceil(timeout)))
    api = client.api
    saved = api.timeout
    api.timeout = max(1, math.ceil(timeout))
    report = PruneReport()
    try:
        try:
            label = LABEL_RUN if run_id is None else f"{LABEL_RUN}={run_id}"
            listed: list[dict[str, Any]] = api.containers(all=True, filters={"label": label})
        except (APIError, OSError) as exc:
            raise SandboxError(f"the engine did not list the sandbox containers: {exc}",
                               fix="check the engine (`docker ps`) and try again") from exc
        held: set[str] = set()
        given: list[tuple[Path, Identity, list[KeptFolder]]] = []
        for summary in listed:
            labels = summary.get("Labels") or {}
            outcome = _prune_one(api, summary, all_runs=all_runs, report=report)
            if outcome == "kept":
                held.add(labels.get(LABEL_WORKTREE, ""))
            elif outcome == "removed" and (back := _hands_back(labels)) is not None:
                given.append(back)
        for worktree, identity, kept in given:
            _give_back(worktree, identity, kept, held, report)
    finally:
        api.timeout = saved
        if own:
            client.close()
    return report


def _prune_one(api: Any, summary: dict[str, Any], *, all_runs: bool,
               report: PruneReport) -> str:
    """``removed``, ``kept`` (alive, or skipped: it may still run) or ``gone``."""
    container_id = str(summary["Id"])
    short = container_id[:12]
    run = (summary.get("Labels") or {}).get(LABEL_RUN, short)
    try:
        info: dict[str, Any] = api.inspect_container(container_id)
    except NotFound:
        return "gone"
    except (APIError, OSError) as exc:
        report.skipped.append(f"run {run} (container {short}): the engine did not answer for "
                              f"it within {api.timeout:g} s ({type(exc).__name__}); try again "
                              "later")
        return "kept"
    labels: dict[str, str] = (info.get("Config") or {}).get("Labels") or {}
    state = str((info.get("State") or {}).get("Status", ""))
    mine = labels.get(LABEL_HOST) == socket.gethostname()
    alive = mine and owner_alive(labels.get(LABEL_OWNER, ""))
    if not all_runs and ((state in _ACTIVE and (alive or not mine))
                         or (state == "created" and alive)):
        return "kept"
    try:
        api.remove_container(container_id, force=True)
    except NotFound:
        pass
    except (APIError, OSError) as exc:
        report.skipped.append(f"run {run} (container {short}): the engine did not remove it "
                              f"within {api.timeout:g} s ({exc}); try again later")
        return "kept"
    report.removed.append(run)
    logger.info("removed sandbox container %s of run %s (%s)", short, run, state)
    return "removed"


def _give_back(worktree: Path, identity: Identity, kept: list[KeptFolder], held: set[str],
               report: PruneReport) -> None:
    if str(worktree) in held or not worktree.is_dir() or worktree.is_symlink():
        return
    if os.geteuid() != 0:
        report.skipped.append(f"worktree {worktree}: only root can give it back to uid "
                              f"{identity.owner_uid} (run `sudo portwright sandbox prune`)")
        return
    try:
        give_back(worktree, identity, kept=[k for k in kept
                                            if Path(k.path) == worktree
                                            or worktree in Path(k.path).parents])
    except OSError as exc:
        report.skipped.append(f"worktree {worktree}: could not give it back: {exc}")
        return
    report.restored.append(str(worktree))
