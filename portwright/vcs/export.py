"""A clean export of a commit: the tree every gate phase judges.

The run's worktree is where the agents work, and everything their commands leave there
(bytecode caches, build folders, package metadata, an untracked test-runner hook, a file
that shadows a module) is untrusted: none of it is what the commit says. So a gate phase
never runs in it. :func:`exported` checks the commit out afresh — tracked files only, as
the commit holds them — into a folder of its own, and removes it when the phase ends.

The export is a detached linked worktree of the same repository, made by host git with
the hardened environment (no hooks, no fsmonitor, no submodules: a gitlink stays an empty
folder): git inside the sandbox reads the commit's history through the repository's
``.git``, which the sandbox mounts read-only, and the gates' built-in checks read the same
commit and records they would read in the run's worktree.

Exports live under the system's temporary folder (``$TMPDIR`` first), in
``portwright-exports-<uid>`` (removed with the last export in it): a folder of this user's,
mode 0711 (others may pass through to
an export they were handed, never list the folder), checked on every use to be a real
folder of this user's that no one else can write, since anyone can make a name in
``/tmp`` first. Each export is made with :func:`tempfile.mkdtemp` there. Commands that run
as another uid than the host's (bubblewrap as root runs them as an unprivileged uid) can
reach it; the state folder, private to the host user, they could not.

A **slot** (:func:`slot`) is a folder there that one process holds (a lock on the folder)
for as long as it likes: exports made in it (``exported(..., at=slot)``) land at the same
path each time, so build outputs that name their tree by its absolute path (CMake's cache,
the dependency files compilers write) carry from one export to the next
(:mod:`portwright.workflows.basebuild`). A slot is the repository's: its name holds a digest
of the repository's git folder and a number, the first free of :data:`SLOTS`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from portwright.errors import RepositoryError
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

ROOT_MODE = 0o711
SLOTS = 4
"""Slots of one repository: as many processes judging its commits at once as keep their
build outputs between phases (the others export as before, without a slot)."""


def export_root() -> Path:
    """``$TMPDIR/portwright-exports-<uid>``, made when missing; refused when it is a link,
    not a folder, another user's, or writable by others."""
    uid = os.geteuid()
    root = Path(tempfile.gettempdir()) / f"portwright-exports-{uid}"
    try:
        root.mkdir(mode=ROOT_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise RepositoryError(f"cannot make the folder of clean exports: {exc.strerror}",
                              file=root, fix="set TMPDIR to a folder this user can write"
                              ) from exc
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o022:
        raise RepositoryError(
            "the folder of clean exports is not a folder of this user's that only it can "
            "write (someone may have made it first)", file=root,
            fix=f"remove it (`rm -rf {root}`) or set TMPDIR to a private folder")
    if stat.S_IMODE(info.st_mode) != ROOT_MODE:
        root.chmod(ROOT_MODE)
    return root


@contextmanager
def exported(repo: Path, commit: str, *, label: str, at: Path | None = None) -> Iterator[Path]:
    """A fresh checkout of ``commit`` of ``repo``'s repository (tracked files only), as a
    folder named like ``repo``; removed, with git's record of it, when the block ends.
    ``label`` (a run id and a phase) starts the name of the folder that holds it.

    ``at``, a slot this process holds (:func:`slot`), holds it instead, and keeps it when
    the block ends: the next export into the slot removes it first — unless that one is of
    the same commit (:func:`holds`), which then starts from it, its tracked files put back
    as the commit has them (what the commands of that commit's gates built stays)."""
    if at is None:
        try:
            holder = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=export_root()))
        except FileNotFoundError:  # another process removed the folder, empty, just now
            holder = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=export_root()))
        holder.chmod(0o711)
    else:
        holder = at
    tree = holder / (repo.resolve().name or "tree") if at is None else _tree_in(at, repo)
    if at is not None and holds(repo, at, commit):
        # the index learns the files' new dates first: ``reset`` then writes only a file a
        # command changed (a rewritten file is newer than every output: it is rebuilt)
        plumbing.run(tree, "update-index", "-q", "--refresh")
        plumbing.git(tree, "reset", "--hard", "--quiet", commit)
        logger.info("export of %s in %s used again", commit[:12], tree)
        yield tree
        return
    if at is not None and os.path.lexists(tree):
        _clear(repo, tree)
    try:
        plumbing.git(repo, "worktree", "add", "--detach", "--quiet", str(tree), commit)
    except RepositoryError:
        if at is None:
            shutil.rmtree(holder, ignore_errors=True)
        raise
    logger.info("exported %s to %s", commit[:12], tree)
    try:
        yield tree
    finally:
        if at is None:
            remove(repo, holder, tree)


def holds(repo: Path, at: Path, commit: str) -> bool:
    """Whether the slot ``at`` holds an export of ``commit`` (made by :func:`exported`)."""
    tree = _tree_in(at, repo)
    marker = tree / ".git"
    if tree.is_symlink() or not tree.is_dir() or marker.is_symlink() or not marker.is_file():
        return False
    done = plumbing.run(tree, "rev-parse", "--verify", "--quiet", "HEAD")
    return done.returncode == 0 and done.stdout.decode().strip() == commit


def _tree_in(at: Path, repo: Path) -> Path:
    """Where an export in the slot ``at`` goes: named like the repository's main worktree,
    whichever of its worktrees (a run's) it is made from, so that every run's exports of
    one repository land at the same path."""
    return at / (plumbing.common_dir(repo).parent.name or "tree")


def _clear(repo: Path, tree: Path) -> None:
    """An export in a slot, and git's record of it, gone (the slot stays)."""
    done = plumbing.run(repo, "worktree", "remove", "--force", str(tree))
    if done.returncode != 0:
        shutil.rmtree(tree, ignore_errors=True)
        plumbing.run(repo, "worktree", "prune")


@contextmanager
def slot(repo: Path) -> Iterator[Path | None]:
    """A slot of ``repo``'s (see the module's notes) that this process holds until the block
    ends, or None when every one is held by another process. It goes, with the export it
    holds, when its holder lets it go."""
    common = str(plumbing.common_dir(repo))
    name = hashlib.sha256(common.encode()).hexdigest()[:16]
    root = export_root()
    for number in range(SLOTS):
        held = _hold(root / f"slot-{name}-{number}")
        if held is None:
            continue
        path, fd = held
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)
            plumbing.run(repo, "worktree", "prune")  # the record of the export it kept
            os.close(fd)
            with contextlib.suppress(OSError):
                root.rmdir()
        return
    yield None


def _hold(path: Path) -> tuple[Path, int] | None:
    """``path``, made when missing and locked for this process; None when another holds it.
    A lock taken on a folder its holder removed just before (the name free again) is let
    go and the name tried again."""
    for _ in range(3):
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o711)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        try:
            info, now = os.fstat(fd), os.lstat(path)
        except FileNotFoundError:
            os.close(fd)
            continue
        if (info.st_ino, info.st_dev) == (now.st_ino, now.st_dev) \
                and info.st_uid == os.geteuid():
            path.chmod(0o711)
            return path, fd
        os.close(fd)
    return None


def remove(repo: Path, holder: Path, tree: Path) -> None:
    """The export at ``tree`` (in ``holder``) and git's record of it, gone: best effort, a
    folder that will not go is logged (a later export never reuses its name)."""
    done = plumbing.run(repo, "worktree", "remove", "--force", str(tree))
    shutil.rmtree(holder, ignore_errors=True)
    if done.returncode != 0:
        plumbing.run(repo, "worktree", "remove", "--force", str(tree))
    if holder.exists():
        logger.warning("could not remove the clean export %s", holder)
        return
    # the folder of exports goes too when it is empty (another export in it, or gone
    # already: it stays): no trace in $TMPDIR
    with contextlib.suppress(OSError):
        holder.parent.rmdir()
