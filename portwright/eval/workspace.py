"""A task's workspace: the upstream at the pin, the downstream at ``parent`` plus the
harness commit, made under a folder of the output and never in a clone a person uses.

::

    <where>/upstream/<name>    a new repository holding only the history of the task's last
                               upstream commit (``refs/eval/target``), HEAD detached at the
                               pin
    <where>/downstream/<name>  a new repository holding only ``parent``'s history, its
                               ``main`` the harness commit (:mod:`portwright.eval.harness`)
                               on ``parent``

``<name>`` is the repository's name (``owner/<name>``): what names the environment image
(``portwright/env-<name>``) and what agents see.

Each repository is filled by a fetch of that one commit from the task's clone, never by a
local clone: a local clone hard-links the clone's object files (a sandbox that could write
one would change the clone) and takes its alternates and every object it holds or borrows
— a fork's upstream clone that fetched the downstream, or shares its object store, holds
the port. A fetch sends the commit's history alone, whatever else the clone holds, into
files of the workspace's own. So the real porting commit (and anything else after
``parent``) is never in the workspace: no agent can read the answer. Neither repository
has a remote or alternates; the upstream's config names the clone it was fetched from
(``portwright.source``), and an upstream made otherwise (by an older portwright, or from
another clone) is made again. A task whose upstream commits come after the port (a fork
that merged it) is refused by :func:`~portwright.eval.repos.resolve`.

With a seeds folder (the validation store's, :func:`prepare`'s ``seeds``), each fetch is
made once per commit (``parent``, the upstream's last), into an empty repository of its
own there (the *seed*, ``<seeds>/<sha>.git``), and every workspace of that commit copies
the seed's packs (copies, not links: nothing a workspace's sandboxes do reaches the seed)
instead of fetching again and indexing what it received. A seed is used only when it is
a folder, not a link, and the copy holds its commit and not ``port``; otherwise the copied
packs are removed and the commit fetched from the clone, as without seeds.

The harness commit is made with fixed identity and dates, so the same task gives the same
sha; :func:`prepare` run again finds everything in place and changes nothing (a half
made clone from a crash is made again). Runs work in worktrees of the downstream
(:func:`portwright.vcs.worktree.run_worktree`) from :attr:`Workspace.harness`.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from portwright.environment import private_folder
from portwright.errors import RepositoryError
from portwright.eval.harness import change_names, harness_files, row_id
from portwright.eval.repos import ResolvedTask, resolve
from portwright.eval.store import touch
from portwright.eval.tasks import PortTask
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

__all__ = ["BRANCH", "Workspace", "commit_files", "prepare"]

BRANCH = "main"
"""The downstream branch that holds the harness commit."""
_IDENTITY = ("portwright eval", "portwright-eval@localhost")


@dataclass(frozen=True)
class Workspace:
    """Where a task's workspace is, and the commits it starts from."""

    upstream: Path
    """The upstream clone, HEAD detached at the pin."""
    downstream: Path
    """The downstream repository: ``main`` is the harness commit."""
    pin: str
    parent: str
    harness: str
    """The harness commit (a child of ``parent``): where every run starts."""
    row: str
    """The matrix row of the task."""
    task: ResolvedTask
    """The task, its source clones and shas (for the hidden tests)."""


def _fresh(dest: Path) -> Path:
    """A new empty folder beside ``dest`` to build it in (renamed into place when done)."""
    partial = dest.with_name(dest.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    dest.parent.mkdir(parents=True, exist_ok=True)
    return partial


def _name(repo: str) -> str:
    """The folder of ``owner/name``: its name (``.git`` of a mirror's name dropped)."""
    return repo.rsplit("/", 1)[-1].removesuffix(".git") or "repo"


def _has_commit(repo: Path, sha: str) -> bool:
    return plumbing.run(repo, "cat-file", "-e", f"{sha}^{{commit}}").returncode == 0


SOURCE_KEY = "portwright.source"
"""The upstream clone's config key naming the clone it was fetched from."""
TARGET_REF = "refs/eval/target"
"""The upstream clone's ref at the last of the task's commits (its history kept whole)."""


def _made_from(repo: Path, source: Path, target: str) -> bool:
    """Whether the upstream clone ``repo`` was fetched from ``source`` and holds ``target``
    (a clone an older portwright made by a local clone, or of another upstream, is not)."""
    done = plumbing.run(repo, "config", "--get", SOURCE_KEY)
    return done.stdout.decode().strip() == str(source) and _has_commit(repo, target)


def _upstream(source: Path, dest: Path, pin: str, target: str, port: str,
              seeds: Path | None) -> Path:
    """The upstream clone: a new repository given ``target``'s history alone, by one fetch
    or a copy of its seed (no hard link to ``source``'s objects, none of its alternates,
    no other branch of it), HEAD detached at ``pin``."""
    if (dest / ".git").is_dir() and not _made_from(dest, source, target):
        shutil.rmtree(dest)
    if not (dest / ".git").is_dir():
        partial = _fresh(dest)
        partial.mkdir()
        plumbing.git(partial, "init", "--quiet")
        if seeds is None or not _seeded(source, partial, target, port, seeds):
            _fetch(partial, source, target)
        plumbing.git(partial, "update-ref", TARGET_REF, target)
        plumbing.git(partial, "config", SOURCE_KEY, str(source))
        partial.rename(dest)
    if plumbing.run(dest, "rev-parse", "--verify", "--quiet", "HEAD").stdout.decode().strip() \
            != pin or plumbing.run(dest, "status", "--porcelain").stdout.strip():
        plumbing.git(dest, "checkout", "--quiet", "--force", "--detach", pin)
    return dest.resolve()


def _fetch(repo: Path, source: Path, rev: str, *config: str) -> None:
    """``rev``'s history fetched from ``source`` into ``repo``: by its sha, which no ref of
    the source may name (its upload-pack is told to serve it); only rev's history comes,
    never a commit after it, whatever else the source holds or borrows."""
    plumbing.git(repo, "-c", "uploadpack.allowAnySHA1InWant=true", *config, "fetch",
                 "--quiet", "--no-tags", "--no-write-fetch-head", str(source), rev)


def _seed(source: Path, rev: str, seeds: Path) -> Path | None:
    """The seed of ``rev`` in ``seeds``: a bare repository holding ``rev``'s history alone
    (a ref names it), fetched from ``source`` into an empty repository when missing; None
    when it cannot be made (a warning says why). A sha's history is the same from any
    clone, so one seed serves every source of it."""
    seed = seeds / f"{rev}.git"
    if seed.is_symlink() or seed.exists():
        return seed
    temp: Path | None = None
    try:
        private_folder(seeds)
        temp = Path(tempfile.mkdtemp(prefix=f"{rev[:12]}.", suffix=".partial", dir=seeds))
        plumbing.git(temp, "init", "--quiet", "--bare")
        _fetch(temp, source, rev, "-c", "fetch.unpackLimit=1")  # kept as a pack, however small
        plumbing.git(temp, "update-ref", "refs/seed", rev)
        try:
            temp.rename(seed)
        except OSError:  # another process made it first
            if not seed.is_dir():
                raise
        else:
            temp = None
    except (OSError, RepositoryError) as exc:
        logger.warning("no seed of %s in %s (%s): the workspace fetches it", rev[:12],
                       seeds, exc)
        return None
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    return seed


_PACK_FILES = (".pack", ".idx", ".rev")


def _seeded(source: Path, dest: Path, rev: str, port: str, seeds: Path) -> bool:
    """``dest`` given ``rev``'s history by copies of its seed's packs (:func:`_seed`);
    False, with nothing copied left behind, when there is no usable seed (one that is a
    link, lacks ``rev`` or holds ``port``)."""
    seed = _seed(source, rev, seeds)
    if seed is None:
        return False
    packs = seed / "objects" / "pack"
    into = dest / ".git" / "objects" / "pack"
    copied: list[Path] = []
    problem = "it is a link, or no folder"
    try:
        if not seed.is_symlink() and seed.is_dir() and not packs.is_symlink():
            for path in sorted(packs.iterdir()):
                if (path.name.startswith("pack-") and path.suffix in _PACK_FILES
                        and not path.is_symlink() and path.is_file()):
                    target = into / path.name
                    copied.append(target)
                    shutil.copyfile(path, target)
                    target.chmod(0o444)
            problem = f"it does not hold {rev[:12]}"
            if _has_commit(dest, rev):
                problem = "it holds the port"
                if not _has_commit(dest, port):
                    touch(seed)  # used: `eval prune` keeps it
                    return True
    except OSError as exc:
        problem = str(exc)
    logger.warning("the seed %s is not used (%s): the workspace fetches %s",
                   seed, problem, rev[:12])
    for target in copied:
        target.unlink(missing_ok=True)
    return False


def _downstream(source: Path, dest: Path, parent: str, port: str,
                seeds: Path | None) -> Path:
    if not (dest / ".git").is_dir():
        partial = _fresh(dest)
        partial.mkdir()
        plumbing.git(partial, "init", "--quiet", "-b", BRANCH)
        partial.rename(dest)
    if not _has_commit(dest, parent) and (
            seeds is None or not _seeded(source, dest, parent, port, seeds)):
        _fetch(dest, source, parent)
    return dest.resolve()


def _dates(repo: Path, sha: str) -> dict[str, str]:
    """Author and committer identity and dates of a commit made as if at ``sha``'s time."""
    when = plumbing.git(repo, "log", "-1", "--format=%cd", "--date=raw", sha).decode().strip()
    name, email = _IDENTITY
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}


def _git_env(repo: Path, env: Mapping[str, str], *args: str, stdin: bytes | None = None) -> str:
    done = plumbing.run(repo, *args, stdin=stdin, env={**os.environ, **env})
    if done.returncode != 0:
        raise RepositoryError(f"git {args[0]} failed while writing the harness commit: "
                              f"{done.stderr.decode('utf-8', 'replace').strip()}", file=repo,
                              fix="check the workspace folder is writable; delete it to "
                                  "start over")
    return done.stdout.decode().strip()


def commit_files(repo: Path, parent: str, files: Mapping[str, bytes | None],
                 message: str) -> str:
    """A commit of ``files`` (path → bytes, or None to remove the path) over ``parent``'s
    tree, made through a private index (the work tree is not touched), with fixed identity
    and dates: its sha."""
    with tempfile.TemporaryDirectory(prefix="portwright-harness-") as folder:
        env = {"GIT_INDEX_FILE": str(Path(folder) / "index"), **_dates(repo, parent)}
        _git_env(repo, env, "read-tree", parent)
        for path, data in sorted(files.items()):
            if data is None:
                _git_env(repo, env, "update-index", "--force-remove", "--", path)
                continue
            blob = _git_env(repo, env, "hash-object", "-w", "--stdin", stdin=data)
            _git_env(repo, env, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
        tree = _git_env(repo, env, "write-tree")
        return _git_env(repo, env, "commit-tree", tree, "-p", parent, "-F", "-",
                        stdin=message.encode())


def _touched(upstream: Path, commits: tuple[str, ...]) -> list[str]:
    """The upstream paths ``commits`` change."""
    paths: set[str] = set()
    for sha in commits:
        out = plumbing.git(upstream, "diff-tree", "--no-commit-id", "--name-only", "-r", "-z",
                           "--root", sha)
        paths.update(p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p)
    return sorted(paths)


def _check_out(repo: Path, harness: str) -> None:
    """``main`` at the harness commit, checked out; kept when it already is there or has
    commits on top of it (work resumed)."""
    done = plumbing.run(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{BRANCH}")
    tip = done.stdout.decode().strip()
    head = plumbing.run(repo, "symbolic-ref", "--quiet", "HEAD").stdout.decode().strip()
    if tip and plumbing.is_ancestor(repo, harness, tip) and head == f"refs/heads/{BRANCH}":
        return
    plumbing.git(repo, "checkout", "--quiet", "--force", "-B", BRANCH, harness)


def prepare(task: PortTask, repos: Path, where: Path, *,
            model: Mapping[str, Any] | None = None, seeds: Path | None = None) -> Workspace:
    """The workspace of ``task`` under ``where`` (made, or found in place), its
    repositories found in ``repos``; ``model`` (the ``[model]`` table) goes into the
    harness's ``portwright.toml`` when given. With ``seeds``, each repository copies its
    commit's history from its seed there (made when missing) instead of fetching it."""
    resolved = resolve(task, repos)
    upstream = _upstream(resolved.upstream, where / "upstream" / _name(task.upstream.repo),
                         resolved.pin, resolved.commits[-1], resolved.port, seeds)
    downstream = _downstream(resolved.downstream,
                             where / "downstream" / _name(task.downstream.repo), resolved.parent,
                             resolved.port, seeds)
    files = harness_files(
        task, lambda path: plumbing.show(downstream, resolved.parent, path),
        # relative (../../upstream/<name>): the same harness commit wherever the output is
        upstream=os.path.relpath(upstream, downstream), pin=resolved.pin,
        commits=list(resolved.commits),
        upstream_paths=_touched(resolved.upstream, resolved.commits),
        names=change_names(resolved.upstream, list(resolved.commits)), model=model)
    row = row_id(task)
    message = (f"portwright eval: the harness of {task.id}\n\n"
               f"portwright.toml, AGENTS.md, the matrix row {row}, the ledger, the inventory "
               f"and the pin {resolved.pin[:12]},\nwritten by the framework: not part of the "
               f"port.\n\nPortwright-Eval-Task: {task.id}\n")
    harness = commit_files(downstream, resolved.parent, files, message)
    _check_out(downstream, harness)
    logger.info("workspace of %s: %s (harness %s)", task.id, where, harness[:12])
    return Workspace(upstream=upstream, downstream=downstream, pin=resolved.pin,
                     parent=resolved.parent, harness=harness, row=row, task=resolved)
