"""gitpython, opened in one place: :func:`open_repo` is the only ``git.Repo(...)`` in
portwright, and only :mod:`portwright.vcs` imports gitpython.

Commands never run through gitpython (:mod:`portwright.vcs.plumbing` runs them). A
:class:`Repo` serves what its object model does well: :func:`commit_sha` and
:func:`read_blob` read objects one at a time through the repository's long-lived
``cat-file`` processes, so thousands of lookups cost one process. Those processes run with
the same hardened environment as every other host-side git command
(:func:`portwright.vcs.plumbing.hardened_env`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import git
from git import Repo

from portwright.errors import RepositoryError
from portwright.vcs.plumbing import hardened_env, rev_parse

__all__ = ["Repo", "commit_sha", "open_repo", "path_of", "read_blob", "resolve"]


def open_repo(path: Path, *, what: str = "repository") -> Repo:
    """Open the git repository at ``path`` (not a parent of it), hardened."""
    if not path.exists():
        raise RepositoryError(f"{what} does not exist", file=path,
                              fix="check the path (upstream.source in portwright.toml?)")
    try:
        repo = git.Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise RepositoryError(f"{what} is not a git repository", file=path,
                              fix=f"run `git init` in {path} or point at a git checkout") from exc
    repo.git.update_environment(**hardened_env({}))
    return repo


def path_of(repo: Repo) -> Path:
    """Where ``repo`` is: its work tree, or its git folder when it is bare."""
    return Path(repo.working_dir or repo.git_dir)


def resolve(repo: Repo, rev: str) -> str:
    """The full commit sha ``rev`` names, or a
    :class:`~portwright.errors.RevisionError` that says why not."""
    return rev_parse(path_of(repo), rev)


def commit_sha(repo: Repo, rev: str) -> str | None:
    """The full sha of the commit ``rev`` names (``cat-file --batch-check``), or None."""
    try:
        header: tuple[Any, ...] = repo.git.get_object_header(f"{rev}^{{commit}}")
    except ValueError:
        return None
    return bytes(header[0]).decode()


def read_blob(repo: Repo, spec: str) -> bytes | None:
    """The bytes of the blob ``spec`` (``rev:path``) names (``cat-file --batch``); None when
    it names nothing, or a tree."""
    try:
        found: tuple[Any, ...] = repo.git.get_object_data(spec)
    except ValueError:
        return None
    return bytes(found[3]) if bytes(found[1]) == b"blob" else None
