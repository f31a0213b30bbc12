"""Where a task's repositories are, and its revisions as full shas.

A task names its repositories ``owner/name``; they are clones (or bare mirrors) in one
folder, ``<repos>/<owner>/<name>`` (``<name>.git`` for a mirror will do), given with
``--repos DIR`` or :data:`REPOS_ENV`. Nothing is cloned or fetched here: a missing clone or
revision is a :class:`~portwright.errors.UsageError` naming the task file and line, with the
command that fixes it.

Public API:

- ``repos_root(option, environ) -> Path``
- ``resolve(task, root) -> ResolvedTask``
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from portwright.errors import RepositoryError, RevisionError, UsageError
from portwright.eval.tasks import PortTask
from portwright.vcs import plumbing

__all__ = ["REPOS_ENV", "ResolvedTask", "repos_root", "resolve"]

REPOS_ENV = "PORTWRIGHT_EVAL_REPOS"
"""The folder of the tasks' clones, when ``--repos`` is not given."""


@dataclass(frozen=True)
class ResolvedTask:
    """A task with its repositories found and every revision a full sha."""

    task: PortTask
    upstream: Path
    """The upstream clone (read only: never changed)."""
    downstream: Path
    """The downstream clone (read only: the port commit is read from it)."""
    commits: tuple[str, ...]
    pin: str
    parent: str
    port: str


def repos_root(option: Path | None, environ: Mapping[str, str] | None = None) -> Path:
    """The folder of the clones: ``option`` (``--repos``), else ``$PORTWRIGHT_EVAL_REPOS``."""
    env = os.environ if environ is None else environ
    where = f"--repos {option}" if option is not None else f"${REPOS_ENV}"
    chosen = option if option is not None else (
        Path(env[REPOS_ENV]).expanduser() if env.get(REPOS_ENV, "").strip() else None)
    if chosen is None:
        raise UsageError("no folder of repositories given", key="--repos",
                         fix=f"pass --repos DIR (or set {REPOS_ENV}): a folder holding a "
                             "clone of each task's repositories as DIR/<owner>/<name>")
    if not chosen.is_dir():
        raise UsageError(f"the folder of repositories ({where}) does not exist", file=chosen,
                         key="--repos", fix="create it and clone the tasks' repositories "
                                            "into it as DIR/<owner>/<name>")
    return chosen.resolve()


def _url(task: PortTask, side: str) -> str:
    table = task.upstream if side == "upstream" else task.downstream
    return table.url or f"https://github.com/{table.repo}"


def _clone(task: PortTask, side: str, root: Path) -> Path:
    """The clone of the ``side`` repository of ``task`` under ``root``."""
    name = task.upstream.repo if side == "upstream" else task.downstream.repo
    for candidate in (root / name, root / f"{name}.git"):
        if candidate.is_dir() and plumbing.run(candidate, "rev-parse", "--git-dir"
                                               ).returncode == 0:
            return candidate.resolve()
    target = root / name
    state = "is not a git repository" if target.exists() else "is not there"
    raise task.error(f"the {side} repository {name} {state} ({target})", f"{side}.repo",
                     f"git clone {_url(task, side)} {target}", RepositoryError)


def _sha(task: PortTask, repo: Path, rev: str, key: str) -> str:
    try:
        return plumbing.rev_parse(repo, rev)
    except RevisionError as exc:
        side = key.split(".")[0]
        raise task.error(
            f"{key} {rev!r} is not a commit of {repo}: {exc.message}", key,
            f"the clone may need a fetch (`git -C {repo} fetch {_url(task, side)}`), or "
            "correct the revision", RevisionError) from exc


def resolve(task: PortTask, root: Path) -> ResolvedTask:
    """``task`` with its clones found under ``root`` and its revisions resolved: the pin
    (default: the parent of the first commit) comes before the commits, oldest first,
    ``port`` descends from ``parent``, and the upstream's history up to the last commit does
    not hold ``port``."""
    upstream, downstream = _clone(task, "upstream", root), _clone(task, "downstream", root)
    commits = tuple(_sha(task, upstream, rev, "upstream.commits")
                    for rev in task.upstream.commits)
    if task.upstream.pin is not None:
        pin = _sha(task, upstream, task.upstream.pin, "upstream.pin")
    else:
        pin = _sha(task, upstream, f"{commits[0]}^", "upstream.commits")
    for older, newer in zip((pin, *commits), commits, strict=False):
        if older == newer or not plumbing.is_ancestor(upstream, older, newer):
            raise task.error(f"upstream {newer[:12]} does not come after {older[:12]}",
                             "upstream.commits",
                             "list the commits oldest first, each after the pin")
    parent = _sha(task, downstream, task.downstream.parent, "downstream.parent")
    port = _sha(task, downstream, task.downstream.port, "downstream.port")
    if parent == port or not plumbing.is_ancestor(downstream, parent, port):
        raise task.error(f"the port {port[:12]} does not descend from the parent {parent[:12]}",
                         "downstream.port",
                         "set parent to the commit the real port started from (port^)")
    if plumbing.is_ancestor(upstream, port, commits[-1]):  # a fork that merged the port
        raise task.error(f"the upstream's history up to {commits[-1][:12]} holds the port "
                         f"{port[:12]}: its workspace would hand an agent the answer",
                         "upstream.commits", "choose upstream commits that come before the "
                         "port, or a port the upstream never merged")
    return ResolvedTask(task, upstream, downstream, commits, pin, parent, port)
