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
"""

from __future__ import annotations

import contextlib
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
def exported(repo: Path, commit: str, *, label: str) -> Iterator[Path]:
    """A fresh checkout of ``commit`` of ``repo``'s repository (tracked files only), as a
    folder named like ``repo``; removed, with git's record of it, when the block ends.
    ``label`` (a run id and a phase) starts the name of the folder that holds it."""
    try:
        holder = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=export_root()))
    except FileNotFoundError:  # another process removed the folder, empty, just now
        holder = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=export_root()))
    holder.chmod(0o711)
    tree = holder / (repo.resolve().name or "tree")
    try:
        plumbing.git(repo, "worktree", "add", "--detach", "--quiet", str(tree), commit)
    except RepositoryError:
        shutil.rmtree(holder, ignore_errors=True)
        raise
    logger.info("exported %s to %s", commit[:12], tree)
    try:
        yield tree
    finally:
        remove(repo, holder, tree)


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
