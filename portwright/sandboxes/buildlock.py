"""One build of an image at a time on this machine, whatever the clone or state folder.

Two processes that need the same image at once (two ``make demo`` from two clones, each
with its own state folder) must not both build and tag it: the second waits for the first,
then finds the image built. The lock is a file lock (``flock``) per image name, in a
folder of this user's that no clone or state folder chooses:
``$XDG_RUNTIME_DIR/portwright/locks``, else ``$XDG_CACHE_HOME/portwright/locks``, else
``~/.cache/portwright/locks``. The kernel releases the lock of a process that died, so a
killed build never blocks the next one.

:func:`build_once` is the one way an image is made: look, take the lock, look again, build.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import docker
from docker.errors import ImageNotFound
from docker.models.images import Image

from portwright.environment import private_folder
from portwright.errors import SandboxError

logger = logging.getLogger(__name__)

LOCK_TIMEOUT = 3600.0
"""Seconds a process waits for another one's build of the same image."""


def _absolute(environ: Mapping[str, str], name: str) -> Path | None:
    value = environ.get(name, "").strip()
    return Path(value) if value and Path(value).is_absolute() else None


def lock_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The folder of the build locks (see the module docstring)."""
    env = os.environ if environ is None else environ
    runtime = _absolute(env, "XDG_RUNTIME_DIR")
    if runtime is not None and runtime.is_dir():
        return runtime / "portwright" / "locks"
    cache = _absolute(env, "XDG_CACHE_HOME") or Path.home() / ".cache"
    return cache / "portwright" / "locks"


def lock_path(tag: str, environ: Mapping[str, str] | None = None) -> Path:
    """The lock file of image ``tag`` (``portwright/base:bookworm`` →
    ``portwright_base_bookworm.lock``)."""
    return lock_dir(environ) / (re.sub(r"[^A-Za-z0-9_.-]+", "_", tag) + ".lock")


@contextmanager
def image_lock(tag: str, *, timeout: float = LOCK_TIMEOUT,
               on_wait: Callable[[str], None] | None = None) -> Iterator[Path]:
    """Hold the build lock of image ``tag``; yields the lock file.

    ``on_wait`` hears once that another process holds it. Raises :class:`SandboxError` when
    the folder cannot be made or the lock is not had within ``timeout`` seconds.
    """
    # imported here: a run that only asks whether an image exists (every run) would
    # otherwise pay filelock's import (~20 ms) for a lock it takes only to build
    from filelock import FileLock
    from filelock import Timeout as LockTimeout

    path = lock_path(tag)
    try:
        private_folder(path.parent)
    except OSError as exc:
        raise SandboxError(f"cannot make the folder of the image build locks {path.parent}: "
                           f"{exc.strerror or exc}",
                           fix="set XDG_RUNTIME_DIR or XDG_CACHE_HOME to a folder you can "
                               "write") from exc
    lock = FileLock(str(path))
    try:
        try:
            lock.acquire(timeout=0)
        except LockTimeout:
            message = f"another process is building {tag}; waiting for it (lock {path})"
            logger.info(message)
            if on_wait is not None:
                on_wait(message)
            lock.acquire(timeout=timeout)
    except LockTimeout as exc:
        raise SandboxError(f"another process has been building {tag} for over {timeout:.0f} s "
                           f"(lock {path})",
                           fix="if no portwright process builds it any more, retry") from exc
    try:
        yield path
    finally:
        lock.release()


def find_image(client: docker.DockerClient, tag: str) -> Image | None:
    """The image ``tag`` names, or None when the engine has none."""
    try:
        return client.images.get(tag)
    except ImageNotFound:
        return None


def image_exists(client: docker.DockerClient, tag: str) -> bool:
    return find_image(client, tag) is not None


def build_once(client: docker.DockerClient, tag: str, build: Callable[[], None], *,
               force: bool = False, progress: Callable[[str], None] | None = None,
               stale: Callable[[Image], str | None] | None = None) -> tuple[str, bool]:
    """Make ``tag`` with ``build`` unless it exists (or ``force``); return its id and whether
    this call built it.

    ``stale`` tells why an existing image must be built again (None: it will do): such an
    image is built again, and the progress says why. One builder of ``tag`` at a time on
    this machine (:func:`image_lock`): a second process waits for the first, then finds
    the image (fresh) and builds nothing.
    """
    say = progress or (lambda _: None)

    def usable(image: Image | None) -> str | None:
        """Why ``image`` is not taken as it is (None: it is)."""
        if force or image is None:
            return "forced" if image is not None else "missing"
        reason = stale(image) if stale is not None else None
        if reason is not None:
            return f"{tag} ({image.short_id}) is stale: {reason}; building it again"
        return None

    image = find_image(client, tag)
    if (why := usable(image)) is None and image is not None:
        say(f"{tag} exists ({image.short_id}); nothing to do")
        return str(image.id), False
    with image_lock(tag, on_wait=say):
        image = find_image(client, tag)
        if (why := usable(image)) is None and image is not None:
            say(f"{tag} exists ({image.short_id}, built by another process while this "
                "one waited); nothing to do")
            return str(image.id), False
        if why is not None and why not in ("forced", "missing"):
            say(why)
        build()
    image = client.images.get(tag)
    say(f"built {tag} ({image.short_id})")
    return str(image.id), True
