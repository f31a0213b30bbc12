"""A run's own git worktree and branch, and commits a resumed step can find again.

A run never works in the user's checkout: :func:`run_worktree` adds a worktree of the
downstream repository in the state folder, on a branch ``portwright/<run id>``. Every
commit a step makes carries two trailers::

    Portwright-Run: <run id>
    Portwright-Step: <step>

so :func:`commit_step`, run again after a crash, finds the commit it already made instead
of making another. Host git runs hardened (:mod:`portwright.vcs.plumbing`): no hooks, no
fsmonitor, never into submodules.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from portwright import safefs
from portwright.errors import RepositoryError, UnsafeChange, UnsafePath
from portwright.globs import match_any
from portwright.protected import SECTION_FILES, is_protected, protected_change
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

RUN_TRAILER = "Portwright-Run"
STEP_TRAILER = "Portwright-Step"
_IDENTITY = {"GIT_AUTHOR_NAME": "portwright", "GIT_AUTHOR_EMAIL": "portwright@localhost",
             "GIT_COMMITTER_NAME": "portwright", "GIT_COMMITTER_EMAIL": "portwright@localhost"}


def branch_name(run_id: str) -> str:
    return f"portwright/{run_id}"


def run_worktree(repo: Path, folder: Path, run_id: str, base: str) -> Path:
    """The worktree of ``run_id`` at ``folder`` on its own branch from ``base``; made when
    missing, reused when it exists (a resumed run)."""
    if (folder / ".git").exists():
        return folder.resolve()
    branch = branch_name(run_id)
    folder.parent.mkdir(parents=True, exist_ok=True)
    new = ["worktree", "add", "--quiet", "-b", branch, str(folder), base]
    if plumbing.run(repo, *new).returncode != 0:
        # the branch exists (a resumed run whose worktree is gone), or a worktree deleted
        # without git (its folder removed by hand, a crash) is still registered and holds
        # the path or the branch: forget those, then add on the branch if it is there now
        # (``add -b`` makes it before it finds the path taken), else on a new one
        plumbing.git(repo, "worktree", "prune")
        exists = plumbing.run(repo, "rev-parse", "--verify", "--quiet",
                              f"refs/heads/{branch}").returncode == 0
        plumbing.git(repo, *(["worktree", "add", "--quiet", str(folder), branch] if exists
                             else new))
    logger.info("run %s works in %s on %s", run_id, folder, branch)
    return folder.resolve()


def find_step(worktree: Path, run_id: str, step: str, *, since: str = "") -> str | None:
    """The commit of ``step`` of ``run_id`` on the worktree's branch, if it was made; with
    ``since`` (the run's base), among the commits after it only: the walk is the run's own
    commits, not the repository's whole history."""
    out = plumbing.git(worktree, "log", "--format=%H", "--fixed-strings", "--all-match",
                       f"--grep={RUN_TRAILER}: {run_id}", f"--grep={STEP_TRAILER}: {step}",
                       f"{since}..HEAD" if since else "HEAD", "--").decode().split()
    return out[0] if out else None


def fresh_step(head: str | None, recorded: Iterable[str]) -> bool:
    """Whether a step that found HEAD at ``head`` (:func:`reset_to_head`) has made no commit
    of its own yet: ``head`` is a commit the run recorded before the step (its base, an
    earlier step's commit). A step commits last, so one cut short after its commit, before
    the run recorded it, finds that commit at HEAD: not a recorded one."""
    return head is not None and head in set(recorded)


def reset_to_head(worktree: Path) -> str | None:
    """Drop uncommitted changes and untracked files (ignored ones stay): what a step left
    half-done before a crash; the step starts again from its last commit. A worktree that
    ``git status`` finds clean is left as it is (one git process instead of two: most
    steps start where the last one committed). Returns HEAD's sha as ``git status`` named
    it (None when it named none)."""
    head, dirty = plumbing.status(worktree)
    if head is not None and not dirty:
        return head
    plumbing.git(worktree, "reset", "--quiet", "--hard", "HEAD")
    plumbing.git(worktree, "clean", "--quiet", "-fd")
    return head


def commit_step(worktree: Path, run_id: str, step: str, message: str, *,
                include: list[str] | None = None, exclude: list[str] | None = None,
                allow_empty: bool = False, since: str = "", look_up: bool = True) -> str | None:
    """Commit what the step changed (``include`` globs only, minus ``exclude`` globs; all
    by default) with the run's trailers; the existing commit when the step already made
    one (after ``since``, the run's base, when given: :func:`find_step`); None when there
    was nothing to commit and ``allow_empty`` is false. ``look_up=False``: the caller knows
    the step has made no commit yet (:func:`fresh_step`), and none is looked for."""
    found = find_step(worktree, run_id, step, since=since) if look_up else None
    if found is not None:
        return found
    paths = [p for p in changed_paths(worktree)
             if (not include or match_any(p, include)) and not match_any(p, exclude or [])]
    refuse_unsafe(worktree, paths)
    if paths:
        plumbing.git(worktree, "add", "--all", "--", *(f":(literal){p}" for p in paths))
    body = f"{message}\n\n{RUN_TRAILER}: {run_id}\n{STEP_TRAILER}: {step}\n"
    env = {**os.environ, **{k: v for k, v in _IDENTITY.items() if k not in os.environ}}
    # without allow_empty git itself refuses a commit with nothing staged; whether that is
    # why it failed is asked only then
    # no ``git maintenance run --auto`` after each step's commit (a second git process
    # every time): a run asks for it once, when it ends (:func:`tidy`)
    done = plumbing.run(worktree, "-c", "maintenance.auto=false", "commit", "--quiet",
                        "--no-verify",
                        *(["--allow-empty"] if allow_empty else []), "-F", "-",
                        stdin=body.encode(), env=env)
    if done.returncode != 0 and not allow_empty and \
            plumbing.run(worktree, "diff", "--cached", "--quiet").returncode == 0:
        return None  # nothing staged
    if done.returncode != 0:
        raise RepositoryError(f"cannot commit step {step}: "
                              f"{done.stderr.decode('utf-8', 'replace').strip()}",
                              file=worktree, fix="check the run's worktree (git status)")
    return plumbing.head_commit(worktree)


SECTION_CAP = 4 * 1024 * 1024
"""Largest ``pyproject.toml`` / ``setup.cfg`` read to compare its protected section."""
REFUSED_FIX = ("remove them from the run's worktree and start the step again (`portwright "
               "resume RUN`); what steers portwright or a toolchain changes only in a commit "
               "a person makes outside the run")


def refuse_unsafe(worktree: Path, paths: list[str]) -> None:
    """Raise :class:`UnsafeChange` when ``paths`` (changed in ``worktree``, about to be
    committed) hold a symbolic link, a nested repository (git would commit it as a gitlink,
    and a person's ``git`` there would run hooks a command wrote), a path through a link, or
    a change to what steers portwright or a toolchain (:mod:`portwright.protected`: its
    config, a runner's hook or configuration, package metadata, at any depth)."""
    problems: list[str] = []
    sections: list[str] = []
    for path in paths:
        if path.endswith("/"):
            problems.append(f"{path} is a nested repository")
            continue
        try:
            info = safefs.stat(worktree, path)
        except UnsafePath as exc:
            problems.append(f"{path} {exc.reason}")
            continue
        if info is not None and not (stat.S_ISREG(info.st_mode)):
            kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a file"
            problems.append(f"{path} is {kind}")
        elif is_protected(path):
            problems.append(f"{path} steers portwright or the test runner")
        elif path.rsplit("/", 1)[-1] in SECTION_FILES:
            sections.append(path)
    if sections:
        before = plumbing.show_many(worktree, "HEAD", sections)
        for path in sections:
            try:
                after = safefs.read_file(worktree, path, cap=SECTION_CAP) \
                    if safefs.stat(worktree, path) is not None else None
            except UnsafePath as exc:
                problems.append(f"{path} {exc.reason}")
                continue
            why = protected_change(path, before.get(path), after)
            if why is not None:
                problems.append(f"{path}: {why}")
    if problems:
        raise UnsafeChange(problems, fix=REFUSED_FIX)


def tidy(worktree: Path) -> None:
    """What git does after a commit of its own, once for all of a run's commits: ``git
    maintenance run --auto`` (nothing unless the repository's loose objects call for it; a
    gc it starts goes on in the background)."""
    plumbing.run(worktree, "maintenance", "run", "--auto", "--quiet")


def changed_paths(worktree: Path) -> list[str]:
    """Paths the worktree changed against HEAD: modified, deleted and untracked (ignored
    ones excepted), each file on its own (never a folder)."""
    out = plumbing.git(worktree, "status", "--porcelain", "-z", "--untracked-files=all",
                       "--no-renames").decode("utf-8", "surrogateescape")
    return sorted({entry[3:] for entry in out.split("\0") if len(entry) > 3})


def head(worktree: Path) -> str:
    return plumbing.head_commit(worktree)


def remove_worktree(repo: Path, folder: Path) -> None:
    """Remove a run's worktree (its branch stays)."""
    plumbing.git(repo, "worktree", "remove", "--force", str(folder))
