"""DockerSandbox: one long-lived, hardened container per run; one ``exec`` per command.

The container's main process is ``sleep infinity`` under ``tini`` (``init=True``),
running as an unprivileged uid that differs from the command user. Commands are
exec'd as the worktree owner's ``uid:gid`` (files they write stay the host user's) —
never as root: a worktree root owns is handed to an unprivileged uid while the sandbox
is open (:mod:`portwright.sandboxes.ownership`) — with no network, a read-only root, a
size-capped ``nosuid,nodev`` ``/tmp`` tmpfs, every capability dropped,
``no-new-privileges``, pids / memory (swap included) / cpu limits and no log driver.
Every ``.git`` in the worktree is mounted read-only (:mod:`portwright.sandboxes.mounts`).
The engine's API has no ``nosuid`` for bind mounts; set-id bits are stripped from the
worktree after every command instead. Nothing of the host environment passes in: only
:func:`base_env`, the config's ``env`` and what the caller gives.

Each command runs under a small ``sh`` wrapper that, once the command exits, kills
every process of the command user (``kill -9 -1`` reaches all of that uid's processes
in the container except the caller and init): background daemons and ``setsid``
escapees end with their command. The command can kill that wrapper first, so after
every command the host also looks into the container's cgroup and kills what of the
command user is still there. On timeout or at the output cap the host freezes the
container (``pause``), SIGKILLs every process of the command user found in the
container's cgroup and thaws it; this works when the pids limit is exhausted and
leaves the container usable. A container the engine will not thaw is removed at once
(the command ends :class:`SandboxDied`). An out-of-memory kill is read from the
container's memory cgroup counter (``oom_kill``), because an exec'd command killed for
memory only shows exit 137.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, ImageNotFound, NotFound
from docker.models.containers import Container
from docker.types import CancellableStream, DeviceRequest, LogConfig
from docker.types import Mount as DockerMount

from portwright.config import SandboxConfig
from portwright.errors import (
    ConfigError,
    ImageMissing,
    SandboxDied,
    SandboxError,
)
from portwright.sandboxes.base import ExecResult
from portwright.sandboxes.common import GIT_ANY_OWNER, SandboxBase
from portwright.sandboxes.common import SANDBOX_HOME as SANDBOX_HOME  # re-exported
from portwright.sandboxes.engine import (
    LABEL_CREATED,
    LABEL_HOST,
    LABEL_IDENTITY,
    LABEL_KEPT,
    LABEL_OWNER,
    LABEL_RUN,
    LABEL_WORKTREE,
    docker_client,
    owner_token,
)
from portwright.sandboxes.envimage import EnvSource
from portwright.sandboxes.mounts import (
    Mount,
    cache_mount,
    read_only_paths,
    repository_tops,
    sandbox_mounts,
)
from portwright.sandboxes.output import OutputSink
from portwright.sandboxes.ownership import (
    Identity,
    KeptFolder,
    SetidSweeper,
    command_identity,
    give_back,
    hand_over,
    kept_label,
)
from portwright.sandboxes.procs import process_alive
from portwright.sandboxes.reaper import Reaper

logger = logging.getLogger(__name__)

_WRAPPER = (
    '[ -d "$HOME" ] || mkdir -p "$HOME" 2>/dev/null; "$@"; rc=$?; kill -9 -1 2>/dev/null; '
    "exit $rc"
)
_POLL = 0.25
"""Seconds between checks that the container's init still runs while a command runs."""
_INSPECT_EVERY = 8
"""Every this many checks, also ask the engine whether the exec still runs."""


class DockerSandbox(SandboxBase):
    """A hardened container for one run; commands by ``exec`` as the worktree owner."""

    name = "docker"
    _not_open = "the Docker sandbox is not open"

    def __init__(
        self,
        worktree: Path,
        *,
        config: SandboxConfig,
        run_id: str,
        log_dir: Path,
        key_dir: Path,
        upstream: Path | None = None,
        image: str | None = None,
        source: EnvSource | None = None,
        cache: Mount | None = None,
    ) -> None:
        super().__init__(worktree, config=config, log_dir=log_dir)
        self.cache = cache
        """A build cache's folder to mount besides (:func:`~portwright.sandboxes.mounts.
        cache_mount`), read-only or not as it says."""
        self.upstream = upstream.resolve() if upstream is not None else None
        self.key_dir = key_dir
        """The evidence key's folder, which no mount may show."""
        self.run_id = run_id
        self.image = image
        """The image to run; None: ``[sandbox] image``, or the environment image built from
        ``source`` when ``[sandbox] setup`` or ``dockerfile`` asks for one."""
        self.source = source
        """Where the environment image's files are read (HEAD of the worktree by default)."""
        self.container: Container | None = None
        self._client: docker.DockerClient | None = None
        self.uid = os.getuid()
        """Who commands run as: the worktree's owner, never root (set when it starts)."""
        self.gid = os.getgid()
        self.identity: Identity | None = None
        self._mounts: list[Mount] = []
        self._read_only: frozenset[str] = frozenset()
        self._sweeper: SetidSweeper | None = None
        self._kept: list[KeptFolder] = []
        self._reaper: Reaper | None = None
        self._main_pid = 0

    # -- lifecycle -------------------------------------------------------------------

    def _open(self) -> None:
        self._mounts = sandbox_mounts(self.worktree, self.upstream, key_dir=self.key_dir)
        if self.cache is not None:
            self._mounts.append(cache_mount(self.cache.path, self.worktree,
                                            read_only=self.cache.read_only,
                                            key_dir=self.key_dir))
        self._read_only = read_only_paths(self._mounts)
        self._sweeper = SetidSweeper(self.worktree, self._read_only)
        identity = command_identity(self.worktree)
        self.uid, self.gid = identity.uid, identity.gid
        self._client = docker_client()
        self.identity = identity
        if identity.mapped:
            self._kept = hand_over(self.worktree, identity, self._read_only,
                                    repository_tops(self.worktree, self._mounts))
        self._start()

    def _is_open(self) -> bool:
        return self.container is not None and self._client is not None

    def _base_env(self) -> dict[str, str]:
        env = super()._base_env()
        if self.identity is not None and self.identity.mapped:
            env.update(GIT_ANY_OWNER)
        return env

    def _image(self) -> str:
        if self.image is not None:
            return self.image
        from portwright.sandboxes.images import ensure_image

        assert self._client is not None
        self.image = ensure_image(self.config, self.worktree, client=self._client,
                                  source=self.source)
        return self.image

    def _setup(self) -> list[ExecResult]:
        """Nothing: ``[sandbox] setup`` is built into the environment image."""
        return []

    def _start(self) -> None:
        assert self._client is not None
        image = self._image()
        main_user = 65534 if self.uid != 65534 else 65533
        assert self.identity is not None
        mounts = [DockerMount(target=str(m.path), source=str(m.path), type="bind",
                              read_only=m.read_only) for m in self._mounts]
        labels = {
            LABEL_RUN: self.run_id,
            LABEL_CREATED: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            LABEL_OWNER: owner_token(),
            LABEL_HOST: socket.gethostname(),
            LABEL_WORKTREE: str(self.worktree),
            LABEL_IDENTITY: self.identity.label(),
            LABEL_KEPT: kept_label(self._kept),
        }
        try:
            self.container = self._client.containers.create(
                image,
                ["sleep", "infinity"],
                detach=True,
                init=True,
                user=f"{main_user}:{main_user}",
                network_mode="bridge" if self.config.network else "none",
                read_only=True,
                tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={self.config.tmpfs_size},mode=1777"},
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                pids_limit=self.config.pids,
                mem_limit=self.config.memory,
                memswap_limit=self.config.memory,
                nano_cpus=int(self.config.cpus * 1e9),
                log_config=LogConfig(type="none"),
                labels=labels,
                mounts=mounts,
                working_dir=str(self.worktree),
                stdin_open=False,
                device_requests=gpu_requests(self.config.gpus),
            )
            self.container.start()  # created first: close() removes it if it cannot start
        except ImageNotFound as exc:
            raise ImageMissing(f"sandbox image {image!r} does not exist",
                               fix="build it: `portwright sandbox base-image`") from exc
        except APIError as exc:
            if self.config.gpus is not None and _no_gpu_runtime(exc):
                raise gpu_error(self.worktree, str(exc.explanation or exc),
                                self.source or EnvSource(self.worktree)) from exc
            raise SandboxError(f"cannot start the sandbox container: {exc.explanation or exc}",
                               fix=_api_fix(exc)) from exc
        self._reaper = Reaper(self.container, self._client, self.uid, self.gid)
        try:
            self.container.reload()
            self._main_pid = int(self.container.attrs["State"]["Pid"])
        except (APIError, KeyError, TypeError, ValueError):
            self._main_pid = 0
        logger.info("sandbox container %s started for run %s (%s)",
                    self.container.short_id, self.run_id, image)

    def close(self) -> None:
        """Remove the container (and everything still running in it), then give the
        worktree back to its owner, set-id bits stripped."""
        container, self.container = self.container, None
        self._reaper = None
        removed = True
        if container is not None:
            try:
                container.remove(force=True)
            except NotFound:
                pass
            except (APIError, OSError) as exc:
                removed = False
                logger.warning("could not remove sandbox container %s: %s",
                               container.short_id, exc)
        if self._client is not None:
            self._client.close()
            self._client = None
        identity, self.identity = self.identity, None
        if identity is None:
            return
        if removed:
            give_back(self.worktree, identity, self._read_only, self._kept)
        else:  # commands may still run in it: `portwright sandbox prune` gives it back
            logger.warning("the worktree %s stays with uid %d until `portwright sandbox "
                           "prune` removes the container", self.worktree, identity.uid)

    # -- commands --------------------------------------------------------------------

    def _run(self, argv: list[str], sink: OutputSink, timeout: float, env: dict[str, str],
             cwd: Path) -> ExecResult:
        """One ``exec`` in the container; its process tree killed from the host."""
        assert self.container is not None
        assert self._client is not None
        assert self._reaper is not None
        reaper = self._reaper
        if reaper.lost is not None:
            raise SandboxDied(f"the sandbox container was removed: {reaper.lost}",
                              fix="the run can resume with a new sandbox")
        api = self._client.api
        oom_before = reaper.oom_count()
        start = time.monotonic()
        try:
            exec_id = api.exec_create(
                self.container.id, ["sh", "-c", _WRAPPER, "portwright-exec", *argv],
                user=f"{self.uid}:{self.gid}", environment=env, workdir=str(cwd),
            )["Id"]
            stream: CancellableStream[Any] = api.exec_start(exec_id, stream=True, demux=True)
        except APIError as exc:
            raise self._died(exc) from exc
        capped = threading.Event()
        failure: list[BaseException] = []

        def pump() -> None:
            try:
                for out, err in stream:
                    full = bool(out) and not sink.feed("stdout", out or b"")
                    full = (bool(err) and not sink.feed("stderr", err or b"")) or full
                    if full and not capped.is_set():
                        capped.set()
                        reaper.kill_commands()
            except Exception as exc:  # the connection broke: reported below
                failure.append(exc)
            finally:
                _close_stream(stream)

        reader = threading.Thread(target=pump, name="sandbox-exec-reader", daemon=True)
        reader.start()
        timed_out = self._wait(reader, stream, exec_id, start + timeout)
        if timed_out:
            reaper.kill_commands()
            reader.join(10)
            if reader.is_alive():  # the engine keeps the stream open: give up on it
                _close_stream(stream)
                reader.join(5)
            self._check_alive()
        duration = time.monotonic() - start
        try:
            info: dict[str, Any] = api.exec_inspect(exec_id)
        except APIError as exc:
            raise self._died(exc) from exc
        if failure:
            logger.warning("sandbox output stream broke: %s", failure[0])
            self._check_alive()
        exit_code = info.get("ExitCode")
        oom = reaper.oom_count()
        oom_killed = oom is not None and oom_before is not None and oom > oom_before
        explained = timed_out or oom_killed or capped.is_set()
        if (exit_code is None or exit_code == 137) and not explained:
            # SIGKILL from nowhere: the container may have been killed under the command
            # (the command can die a moment before init shows as gone)
            for _ in range(10):
                if not self._main_pid or not process_alive(self._main_pid):
                    break
                time.sleep(0.02)
            self._check_alive()
        return sink.result(argv, exit_code=-1 if exit_code is None else int(exit_code),
                           duration=duration, timed_out=timed_out and not capped.is_set(),
                           oom_killed=oom_killed)

    def _wait(self, reader: threading.Thread, stream: CancellableStream[Any], exec_id: str,
              deadline: float) -> bool:
        """Wait for the output stream to end; True when ``deadline`` came first.

        While waiting, the container's init process is watched (a cheap ``/proc`` read)
        and every few seconds the engine is asked whether the command still runs: a
        stream the engine leaves open after its process ended, or after the container
        died under it, is closed instead of waited on until the timeout.
        """
        assert self._client is not None
        polls = 0
        while reader.is_alive():
            now = time.monotonic()
            if now >= deadline:
                return True
            reader.join(min(_POLL, deadline - now))
            if not reader.is_alive():
                break
            polls += 1
            if self._main_pid and not process_alive(self._main_pid):
                _close_stream(stream)
                reader.join(5)
                self._check_alive()
            if polls % _INSPECT_EVERY:
                continue
            try:
                running = bool(self._client.api.exec_inspect(exec_id).get("Running"))
            except APIError:
                running = False
            if not running:
                reader.join(1.0)
                if reader.is_alive():
                    logger.warning("the engine left an exec stream open after its command "
                                   "ended; closing it")
                    _close_stream(stream)
                    reader.join(5)
                self._check_alive()
        return False

    def _after_command(self) -> None:
        """Kill what the command left running (its wrapper may have been killed before it
        could), then strip set-id bits from the worktree."""
        if self._reaper is not None and self._reaper.lost is None:
            self._reaper.reap_leftovers()
        if self._sweeper is not None:
            self._sweeper.sweep()

    def _check_alive(self) -> None:
        assert self.container is not None
        if self._reaper is not None and self._reaper.lost is not None:
            raise SandboxDied(f"the sandbox container was removed: {self._reaper.lost}",
                              fix="the run can resume with a new sandbox")
        if self._main_pid and not process_alive(self._main_pid):
            raise SandboxDied("the sandbox container's init process is gone (the container "
                              "was killed or stopped)",
                              fix="see `docker events`; the run can resume with a new sandbox")
        try:
            self.container.reload()
        except NotFound as exc:
            raise SandboxDied("the sandbox container vanished",
                              fix="see `docker events`; the run can resume with a new sandbox"
                              ) from exc
        if self.container.status != "running":
            raise SandboxDied(f"the sandbox container is {self.container.status}",
                              fix="see `docker inspect`; the run can resume with a new sandbox")

    def _died(self, exc: APIError) -> SandboxError:
        try:
            self._check_alive()
        except SandboxDied as died:
            return died
        return SandboxError(f"the engine refused the command: {exc.explanation or exc}",
                            fix=_api_fix(exc))


def gpu_requests(gpus: str | int | list[str] | None) -> list[DeviceRequest]:
    """``[sandbox] gpus`` as the engine's device requests (``docker run --gpus``)."""
    if gpus is None:
        return []
    if isinstance(gpus, list):
        return [DeviceRequest(device_ids=gpus, capabilities=[["gpu"]])]
    return [DeviceRequest(count=-1 if gpus == "all" else int(gpus), capabilities=[["gpu"]])]


def _no_gpu_runtime(exc: APIError) -> bool:
    text = str(exc.explanation or exc).lower()
    return "device driver" in text or "nvidia" in text or "gpu" in text


GPU_FIX = ("install the NVIDIA Container Toolkit on the engine's host and register it "
           "(`nvidia-ctk runtime configure --runtime=docker`, then restart dockerd), or "
           "remove [sandbox] gpus from portwright.toml")


def gpu_problem(client: docker.DockerClient, config: SandboxConfig) -> str | None:
    """Why this engine cannot give ``[sandbox] gpus`` (None when a container asking for them
    starts, or nothing is asked): a real container of ``config.image`` is tried and removed.
    """
    if config.gpus is None:
        return None
    try:
        container = client.containers.create(
            config.image, ["true"], network_mode="none", labels={LABEL_RUN: "gpu-probe"},
            device_requests=gpu_requests(config.gpus), log_config=LogConfig(type="none"))
    except ImageNotFound:
        return None  # the image check reports it
    except APIError as exc:
        return str(exc.explanation or exc)
    try:
        container.start()
        container.wait(timeout=60)
    except APIError as exc:
        return str(exc.explanation or exc)
    finally:
        with contextlib.suppress(APIError):
            container.remove(force=True)
    return None


def gpu_error(worktree: Path, detail: str, source: EnvSource | None = None) -> ConfigError:
    """``[sandbox] gpus`` asks for GPUs this engine cannot give (the line is the committed
    config's, when ``source`` can tell)."""
    from portwright.sandboxes.envimage import config_line

    line = config_line(source, "sandbox.gpus") if source is not None else None
    return ConfigError(f"[sandbox] gpus asks for GPUs, and this Docker engine cannot give "
                       f"any: {detail}", file=worktree / "portwright.toml", line=line,
                       key="sandbox.gpus", fix=GPU_FIX)


def _close_stream(stream: CancellableStream[Any]) -> None:
    """Close an exec stream and its HTTP response (the SDK leaves the socket to the GC)."""
    with contextlib.suppress(Exception):
        stream.close()
    response = getattr(stream, "_response", None)
    if response is not None:
        with contextlib.suppress(Exception):
            response.close()


def _api_fix(exc: APIError) -> str:
    text = str(exc.explanation or exc).lower()
    if "no space left" in text:
        return "free disk space (`docker system prune`, `portwright sandbox prune`)"
    return "see the Docker engine's log (`/var/log/dockerd.log` or `journalctl -u docker`)"
