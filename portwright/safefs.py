"""No-follow, fd-relative file access under a root: the one place the host opens files
inside a tree that sandboxed code can write.

Checking a path and then opening it leaves a window: code in the sandbox can swap a
checked directory for a symlink to anywhere before the open. So nothing here resolves a
path. Each call opens the root as a directory and walks ``rel`` one component at a time
with ``openat`` (``os.open(name, ..., dir_fd=parent)``), every component with
``O_NOFOLLOW`` (directories with ``O_DIRECTORY | O_NOFOLLOW``). A symlink anywhere on the
way, ``..``, an absolute path, an empty component, or an entry that is neither a regular
file nor a directory is refused with :class:`~portwright.errors.UnsafePath`; so are the
``OSError``\\ s such a walk meets when the tree changes under it (``ELOOP``, ``ENOTDIR``,
``EMLINK``). A missing entry stays a :class:`FileNotFoundError` (an ``OSError``), except
where a function says otherwise.

The root itself is trusted: it is the caller's choice, opened as given.

Writes go to a temporary file in the same directory (by its fd) and are moved into place
with ``os.replace(..., src_dir_fd=, dst_dir_fd=)``, so a write never goes through a link
and never changes another name of the same file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat as st
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from portwright.errors import UnsafePath

__all__ = ["entries", "is_file", "listdir", "read_file", "split", "stat", "unlink",
           "write_file"]

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_REFUSED = {errno.ELOOP, errno.ENOTDIR, errno.EMLINK, errno.EISDIR, errno.ENXIO,
            errno.EXDEV}
"""Errors of a walk whose tree changed under it, or that met something it must not open."""


def split(rel: str) -> list[str]:
    """The components of ``rel`` (``"."`` is the root: no components), or
    :class:`UnsafePath` for an absolute path, ``..``, an empty component or a NUL byte."""
    if rel == ".":
        return []
    if not rel:
        raise UnsafePath(rel, "is empty")
    if rel.startswith("/"):
        raise UnsafePath(rel, "is an absolute path")
    if "\0" in rel:
        raise UnsafePath(rel, "holds a NUL byte")
    parts = rel.split("/")
    for part in parts:
        if part == "..":
            raise UnsafePath(rel, "goes up (`..`)")
        if part in ("", "."):
            raise UnsafePath(rel, "has an empty or `.` component")
    return parts


def _kind(mode: int) -> str:
    if st.S_ISREG(mode):
        return "a regular file"
    if st.S_ISDIR(mode):
        return "a directory"
    if st.S_ISLNK(mode):
        return "a symbolic link"
    if st.S_ISFIFO(mode):
        return "a fifo"
    if st.S_ISSOCK(mode):
        return "a socket"
    if st.S_ISCHR(mode) or st.S_ISBLK(mode):
        return "a device"
    return "a special file"


def _refusal(rel: str, parts: list[str], depth: int, parent: int, exc: OSError, *,
             dir_wanted: bool = False) -> UnsafePath:
    """Why opening ``parts[depth]`` (a directory when not the last, or ``dir_wanted``)
    under the directory fd ``parent`` failed."""
    try:
        mode: int | None = os.stat(parts[depth], dir_fd=parent, follow_symlinks=False).st_mode
    except OSError:
        mode = None
    final = depth == len(parts) - 1
    wanted = st.S_ISDIR if dir_wanted or not final else st.S_ISREG
    if mode is None or wanted(mode):
        # it is (now) what was asked for: the tree changed while it was walked
        reason = f"cannot be opened safely ({os.strerror(exc.errno or 0).lower()})"
    elif final:
        reason = f"is {_kind(mode)}" + (", not a directory" if dir_wanted else "")
    else:
        reason = f"goes through {'/'.join(parts[: depth + 1])}, which is {_kind(mode)}"
    return UnsafePath(rel, reason)


@contextmanager
def _opened_root(root: Path) -> Iterator[int]:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def _open_dir(rel: str, parts: list[str], depth: int, parent: int, *, make: bool) -> int:
    """An fd of the directory ``parts[depth]`` in ``parent``, never through a link."""
    name = parts[depth]
    try:
        return os.open(name, _DIR, dir_fd=parent)
    except FileNotFoundError:
        if not make:
            raise
    except OSError as exc:
        if exc.errno in _REFUSED:
            raise _refusal(rel, parts, depth, parent, exc, dir_wanted=True) from exc
        raise
    with contextlib.suppress(FileExistsError):  # made meanwhile: the open below checks it
        os.mkdir(name, 0o777, dir_fd=parent)
    try:
        return os.open(name, _DIR, dir_fd=parent)
    except OSError as exc:
        if exc.errno in _REFUSED:
            raise _refusal(rel, parts, depth, parent, exc, dir_wanted=True) from exc
        raise


@contextmanager
def _walk(root: Path, rel: str, parts: list[str], *, make: bool = False) -> Iterator[int]:
    """An fd of the directory ``parts[:-1]`` names under ``root``, reached without
    following a link (missing directories are made when ``make``)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth in range(len(parts) - 1):
            child = _open_dir(rel, parts, depth, fd, make=make)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


@contextmanager
def _directory(root: Path, rel: str) -> Iterator[int]:
    """An fd of the directory ``rel`` itself, reached without following a link."""
    parts = split(rel)
    if not parts:
        with _opened_root(root) as fd:
            yield fd
        return
    with _walk(root, rel, parts) as parent:
        fd = _open_dir(rel, parts, len(parts) - 1, parent, make=False)
    try:
        yield fd
    finally:
        os.close(fd)


def read_file(root: Path, rel: str, *, cap: int) -> bytes:
    """The bytes of the regular file ``rel`` under ``root``, never read through a link;
    :class:`UnsafePath` when it holds more than ``cap`` bytes (never cut silently)."""
    parts = split(rel)
    if not parts:
        raise UnsafePath(rel, "is the root directory, not a file")
    with _walk(root, rel, parts) as parent:
        last = len(parts) - 1
        try:
            fd = os.open(parts[-1], _READ, dir_fd=parent)
        except OSError as exc:
            if exc.errno in _REFUSED:
                raise _refusal(rel, parts, last, parent, exc) from exc
            raise
    try:
        info = os.fstat(fd)
        if not st.S_ISREG(info.st_mode):
            raise UnsafePath(rel, f"is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > cap:
            raise UnsafePath(rel, f"holds {info.st_size} bytes, more than the {cap} allowed")
        chunks, size = [], 0
        while size <= cap:
            chunk = os.read(fd, min(cap + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > cap:
        raise UnsafePath(rel, f"grew past the {cap} bytes allowed while being read")
    return b"".join(chunks)


def write_file(root: Path, rel: str, data: bytes, *, make_parents: bool = True) -> None:
    """Write ``data`` as the regular file ``rel`` under ``root`` (replacing it whole), with
    no link followed at any level; missing parents are made when ``make_parents``."""
    parts = split(rel)
    if not parts:
        raise UnsafePath(rel, "is the root directory, not a file")
    name = parts[-1]
    with _walk(root, rel, parts, make=make_parents) as parent:
        try:
            old = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            old = None
        if old is not None and not st.S_ISREG(old.st_mode):
            raise UnsafePath(rel, f"is {_kind(old.st_mode)}, not a regular file")
        temp = f".{name[:64]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temp, _CREATE, 0o666, dir_fd=parent)
        try:
            try:
                if old is not None:
                    os.fchmod(fd, st.S_IMODE(old.st_mode) & 0o777)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except OSError as exc:
            _discard(temp, parent)
            if exc.errno in _REFUSED:
                raise _refusal(rel, parts, len(parts) - 1, parent, exc) from exc
            raise
        except BaseException:
            _discard(temp, parent)
            raise


def _discard(name: str, parent: int) -> None:
    with contextlib.suppress(OSError):  # already gone: nothing to clean up
        os.unlink(name, dir_fd=parent)


def unlink(root: Path, rel: str, *, missing_ok: bool = True) -> None:
    """Remove the entry ``rel`` (a file or a link, never a directory) under ``root``."""
    parts = split(rel)
    if not parts:
        raise UnsafePath(rel, "is the root directory")
    try:
        with _walk(root, rel, parts) as parent:
            try:
                info = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                if missing_ok:
                    return
                raise
            if st.S_ISDIR(info.st_mode):
                raise UnsafePath(rel, "is a directory")
            os.unlink(parts[-1], dir_fd=parent)
    except FileNotFoundError:
        if not missing_ok:
            raise


def stat(root: Path, rel: str) -> os.stat_result | None:
    """The ``lstat`` of ``rel`` under ``root`` (a link is reported, not followed), or None
    when it does not exist; :class:`UnsafePath` when the way to it goes through a link."""
    parts = split(rel)
    if not parts:
        with _opened_root(root) as fd:
            return os.fstat(fd)
    try:
        with _walk(root, rel, parts) as parent:
            return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


def is_file(root: Path, rel: str) -> bool:
    """Whether ``rel`` is a regular file reachable under ``root`` without any link
    (:class:`UnsafePath` only for a malformed ``rel``)."""
    split(rel)
    try:
        info = stat(root, rel)
    except UnsafePath:
        return False
    return info is not None and st.S_ISREG(info.st_mode)


def listdir(root: Path, rel: str) -> list[str]:
    """The names in the directory ``rel`` under ``root``, sorted (reached without
    following a link; the names are not followed either)."""
    with _directory(root, rel) as fd:
        return sorted(os.listdir(fd))  # noqa: PTH208 (a directory fd, not a path)


def entries(root: Path, rel: str) -> list[tuple[str, os.stat_result]]:
    """Each entry of the directory ``rel`` under ``root`` with its ``lstat``, sorted by
    name (entries that vanish while listed are left out)."""
    out = []
    with _directory(root, rel) as fd:
        for name in sorted(os.listdir(fd)):  # noqa: PTH208 (a directory fd, not a path)
            try:
                out.append((name, os.stat(name, dir_fd=fd, follow_symlinks=False)))
            except FileNotFoundError:
                continue
    return out
