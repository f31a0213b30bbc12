"""Who sandboxed commands run as, and what happens to the worktree's owners and modes.

Commands run as the worktree's owner, so that what they build stays the host user's —
**unless the owner is root** (a root CI runner, ``make demo`` as root): a command as uid 0
could leave a setuid-root binary for the next host user to run. Then commands run as
:data:`UNPRIVILEGED_UID` instead (uid and gid), and the worktree is handed to that uid
while the sandbox is open (:func:`hand_over`: what root owned is given to it) and given
back when it closes (:func:`give_back`: what that uid owns — handed over or made by a
command — is root's again). The top folder of the worktree, and of every repository
nested in it, stays root's (host git refuses a repository whose top folder another uid
owns, and the run's host side keeps using git while the sandbox is open): the commands'
group is given it and may write in it instead (:class:`KeptFolder`). A run that crashed
with its sandbox open leaves the worktree handed over; ``portwright sandbox prune`` gives
it back (the container's labels carry the worktree, the :class:`Identity` and the kept
folders), and so does the next sandbox on that worktree.

Set-id bits are stripped from every file of the worktree after each command
(:class:`SetidSweeper`) and on give-back: a binary a command marked setuid runs as its
owner for whoever starts it on the host. The walks do not follow links and skip the
read-only mounts (no command can change what is in them). They run while no command of
their sandbox runs, but another sandbox on the same worktree (a crashed run's container
still running) could race them: every folder is opened without following a link, and every
change is made through a file opened the same way and checked to lie inside the worktree,
so a folder swapped for a link cannot turn the host's change onto a file elsewhere.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from portwright.errors import SandboxError

logger = logging.getLogger(__name__)

UNPRIVILEGED_UID = 65532
"""uid and gid of commands when the worktree belongs to root (nobody's, by convention)."""
_SETID = stat.S_ISUID | stat.S_ISGID
BIG_TREE = 4000
"""Entries beyond which :class:`SetidSweeper` asks ``find`` instead of walking in Python."""


@dataclass(frozen=True)
class Identity:
    """Who commands run as (``uid:gid``) and whose the worktree is."""

    uid: int
    gid: int
    owner_uid: int
    owner_gid: int

    @property
    def mapped(self) -> bool:
        """Commands run as someone other than the worktree's owner (who is root)."""
        return (self.uid, self.gid) != (self.owner_uid, self.owner_gid)

    def label(self) -> str:
        """``uid:gid=owner_uid:owner_gid``, as a container label keeps it."""
        return f"{self.uid}:{self.gid}={self.owner_uid}:{self.owner_gid}"

    @classmethod
    def from_label(cls, text: str) -> Identity | None:
        """The identity a :meth:`label` names (None when the text is not one)."""
        ours, _, owner = text.partition("=")
        try:
            uid, gid = (int(part) for part in ours.split(":"))
            owner_uid, owner_gid = (int(part) for part in owner.split(":"))
        except ValueError:
            return None
        return cls(uid, gid, owner_uid, owner_gid)


@dataclass(frozen=True)
class KeptFolder:
    """A repository's top folder left to root while the sandbox is open: its group and mode
    before the commands' group was let in."""

    path: str
    gid: int
    mode: int


def kept_label(kept: list[KeptFolder]) -> str:
    """The kept folders as a container label keeps them (JSON)."""
    return json.dumps([[k.path, k.gid, k.mode] for k in kept], separators=(",", ":"))


def kept_from_label(text: str) -> list[KeptFolder]:
    """The kept folders a :func:`kept_label` names (none when the text is not one)."""
    try:
        return [KeptFolder(str(path), int(gid), int(mode)) for path, gid, mode in json.loads(text)]
    except (ValueError, TypeError):
        return []


def host_identity() -> Identity:
    """Commands as this process's own user (bubblewrap run by a user other than root)."""
    return Identity(os.getuid(), os.getgid(), os.getuid(), os.getgid())


def command_identity(worktree: Path) -> Identity:
    """The worktree's owner, or :data:`UNPRIVILEGED_UID` in place of root (uid or gid).

    Raises :class:`SandboxError` when the worktree belongs to root and this process is
    not root (only root can hand it over).
    """
    st = worktree.stat()
    uid = st.st_uid or UNPRIVILEGED_UID
    gid = st.st_gid
    if os.geteuid() == 0 and gid == 0:
        gid = UNPRIVILEGED_UID
    if st.st_uid == 0 and os.geteuid() != 0:
        raise SandboxError(
            f"the worktree {worktree} belongs to root and portwright runs as uid "
            f"{os.geteuid()}: commands never run as root, and only root can hand the "
            "worktree to an unprivileged uid",
            fix="run portwright as the worktree's owner, or give the worktree to your user "
                f"(`sudo chown -R {os.geteuid()}:{os.getegid()} {worktree}`)")
    return Identity(uid, gid, st.st_uid, st.st_gid)


class _Inside:
    """Opens what a path names only when the open file lies inside one folder.

    The check is made on the open file (its ``/proc/self/fd`` link) and the change through
    it, so a folder swapped for a link on the way, by a process racing the walk, cannot send
    the host to a file elsewhere; the last part of a path is never followed."""

    def __init__(self, top: Path) -> None:
        self.top = str(top)
        self.prefix = self.top.rstrip("/") + "/"

    def open(self, path: str, flags: int) -> int | None:
        try:
            fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            real = str(Path(f"/proc/self/fd/{fd}").readlink())
        except OSError:
            real = ""
        if real == self.top or real.startswith(self.prefix):
            return fd
        os.close(fd)
        logger.warning("not touching %s: it leads out of %s (to %s)", path, self.top, real)
        return None


def _walk(top: Path, skip: frozenset[str]) -> Iterator[tuple[str, os.stat_result]]:
    """``(path, lstat)`` of ``top`` and everything under it but ``skip``; links not followed,
    each folder opened without following a link and checked to lie inside ``top``."""
    try:
        yield str(top), top.lstat()
    except OSError:
        return
    inside = _Inside(top)
    stack = [str(top)]
    while stack:
        folder = stack.pop()
        fd = inside.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        if fd is None:
            continue
        entries: list[tuple[str, os.stat_result]] = []
        try:
            with os.scandir(fd) as scan:
                for entry in scan:
                    path = f"{folder}/{entry.name}"
                    if path not in skip:
                        with contextlib.suppress(OSError):
                            entries.append((path, entry.stat(follow_symlinks=False)))
        except OSError:
            pass
        finally:
            os.close(fd)
        for path, st in entries:
            yield path, st
            if stat.S_ISDIR(st.st_mode):
                stack.append(path)


def _has_setid(st: os.stat_result) -> bool:
    return bool(st.st_mode & _SETID) and not stat.S_ISDIR(st.st_mode) \
        and not stat.S_ISLNK(st.st_mode)


def _strip(path: str, st: os.stat_result, inside: _Inside) -> bool:
    """Clear the set-id bits of a file that is not a folder or a link; True when it had any."""
    if not _has_setid(st):
        return False
    fd = inside.open(path, os.O_PATH)
    if fd is None:
        return False
    try:
        now = os.fstat(fd)
        if not _has_setid(now):
            return False
        Path(f"/proc/self/fd/{fd}").chmod(stat.S_IMODE(now.st_mode) & ~_SETID)
    except OSError as exc:
        logger.warning("could not strip the set-id bits of %s: %s", path, exc)
        return False
    finally:
        os.close(fd)
    logger.warning("stripped the set-id bits of %s (mode %04o)", path,
                   stat.S_IMODE(st.st_mode))
    return True


def _change(path: str, st: os.stat_result, inside: _Inside, *, uid: int = -1, gid: int = -1,
            mode: int | None = None) -> bool:
    """Change the owner (and mode) of what ``path`` names, if it is still what ``st`` saw (a
    link itself, not what it points at: links get no mode); True when changed."""
    if stat.S_ISLNK(st.st_mode):
        parent, _, name = path.rpartition("/")
        fd = inside.open(parent, os.O_PATH | os.O_DIRECTORY)
        if fd is None:
            return False
        try:
            os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)
        except OSError as exc:
            logger.warning("could not change the owner of %s: %s", path, exc)
            return False
        finally:
            os.close(fd)
        return True
    fd = inside.open(path, os.O_PATH)
    if fd is None:
        return False
    try:
        now = os.fstat(fd)
        if (now.st_ino, now.st_dev, now.st_uid, now.st_gid) != (st.st_ino, st.st_dev,
                                                                  st.st_uid, st.st_gid):
            return False
        if uid != -1 or gid != -1:
            os.chown(f"/proc/self/fd/{fd}", uid, gid)
        if mode is not None:
            Path(f"/proc/self/fd/{fd}").chmod(mode)
    except OSError as exc:
        logger.warning("could not change the owner of %s: %s", path, exc)
        return False
    finally:
        os.close(fd)
    return True


def strip_setid(worktree: Path, skip: frozenset[str] = frozenset()) -> int:
    """Clear setuid/setgid bits of every file in the worktree; the number stripped."""
    inside = _Inside(worktree)
    return sum(_strip(path, st, inside) for path, st in _walk(worktree, skip))


class SetidSweeper:
    """Strips set-id bits from a worktree after each command, as cheaply as its size allows.

    A walk in Python costs about 12 us an entry where it was measured (120 ms for 10,000
    files; 0.02 ms for an empty worktree); once the worktree has grown past
    :data:`BIG_TREE` entries, ``find`` (the same ``lstat`` calls, no interpreter: 60 ms for
    10,000 files) lists the set-id files instead, for the price of starting it (~2 ms).
    """

    def __init__(self, worktree: Path, skip: frozenset[str] = frozenset()) -> None:
        self.worktree = worktree
        self.skip = skip
        self._find = shutil.which("find")
        self._big = False

    @property
    def uses_find(self) -> bool:
        """The worktree has grown past :data:`BIG_TREE` entries: ``find`` lists set-id files."""
        return self._big and self._find is not None

    def sweep(self) -> int:
        """Strip what a command set; the number of files stripped."""
        inside = _Inside(self.worktree)
        if self.uses_find:
            assert self._find is not None
            found = self._find_setid(self._find)
            if found is not None:
                return sum(_strip(path, st, inside) for path, st in found)
        stripped = entries = 0
        for path, st in _walk(self.worktree, self.skip):
            entries += 1
            stripped += _strip(path, st, inside)
        self._big = entries > BIG_TREE
        return stripped

    def _find_setid(self, find: str) -> list[tuple[str, os.stat_result]] | None:
        """The set-id files ``find`` lists (None when it fails: the walk does it then)."""
        prune: list[str] = []
        for path in sorted(self.skip):
            if path.startswith(str(self.worktree) + "/"):
                prune += [*(["-o"] if prune else []), "-path", glob.escape(path)]
        argv = [find, str(self.worktree)]
        if prune:
            argv += ["(", *prune, ")", "-prune", "-o"]
        argv += ["!", "-type", "d", "-perm", "/6000", "-print0"]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            logger.warning("find failed (%s); walking the worktree instead", exc)
            return None
        if done.returncode != 0:
            logger.warning("find failed (%s); walking the worktree instead",
                           done.stderr.decode(errors="replace").strip()[:200])
            return None
        found = []
        for raw in done.stdout.split(b"\0"):
            if raw:
                path = os.fsdecode(raw)
                with contextlib.suppress(OSError):
                    found.append((path, os.lstat(path)))
        return found


def hand_over(worktree: Path, identity: Identity, skip: frozenset[str] = frozenset(),
              tops: frozenset[str] = frozenset()) -> list[KeptFolder]:
    """Give what root owns in the worktree to the commands' uid, but the repositories' top
    folders ``tops``: those stay root's, their group the commands' (with write); returns
    the kept folders, for :func:`give_back`.

    A file with more than one hard link stays root's: its other names may lie outside the
    worktree (a package store, a compiler cache), which the commands must not write through
    it. Commands can still replace it (the folder is theirs), not write into it. Links stay
    root's too (the folder they are in decides who may replace them)."""
    if identity.uid == identity.owner_uid:
        return []
    inside = _Inside(worktree)
    changed = 0
    kept: list[KeptFolder] = []
    for path, st in _walk(worktree, skip):
        if st.st_uid != identity.owner_uid or stat.S_ISLNK(st.st_mode):
            continue
        if path in tops and stat.S_ISDIR(st.st_mode):
            mode = stat.S_IMODE(st.st_mode)
            if _change(path, st, inside, gid=identity.gid, mode=mode | 0o070):
                kept.append(KeptFolder(path, st.st_gid, mode))
            continue
        if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
            continue  # its other names may lie outside the worktree (a store, a cache)
        changed += _change(path, st, inside, uid=identity.uid)
    logger.info("handed %d entries of %s to uid %d", changed, worktree, identity.uid)
    return kept


def give_back(worktree: Path, identity: Identity, skip: frozenset[str] = frozenset(),
              kept: list[KeptFolder] | tuple[KeptFolder, ...] = ()) -> int:
    """Give what the commands' uid/gid own in the worktree back to its owner, and the kept
    folders their group and mode, set-id bits stripped first; the number changed."""
    inside = _Inside(worktree)
    before = {k.path: k for k in kept}
    changed = 0
    for path, st in _walk(worktree, skip):
        _strip(path, st, inside)
        folder = before.get(path)
        if folder is not None and stat.S_ISDIR(st.st_mode):
            changed += _change(path, st, inside, gid=folder.gid, mode=folder.mode)
            continue
        uid = identity.owner_uid if st.st_uid == identity.uid != identity.owner_uid else -1
        gid = identity.owner_gid if st.st_gid == identity.gid != identity.owner_gid else -1
        if uid != -1 or gid != -1:
            changed += _change(path, st, inside, uid=uid, gid=gid)
    if changed:
        logger.info("gave %d entries of %s back to %d:%d", changed, worktree,
                    identity.owner_uid, identity.owner_gid)
    return changed
