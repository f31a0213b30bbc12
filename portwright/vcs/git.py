"""Small, typed helpers over gitpython shared by every room that reads git."""

from __future__ import annotations

from pathlib import Path

import git

from portwright.errors import RepositoryError
from portwright.vcs.plumbing import hardened_env, rev_parse


def open_repo(path: Path, *, what: str = "repository") -> git.Repo:
    """Open the git repository at ``path`` (not a parent of it)."""
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


def resolve(repo: git.Repo, rev: str) -> str:
    """The full commit sha ``rev`` names, or a
    :class:`~portwright.errors.RevisionError` that says why not."""
    return rev_parse(Path(repo.working_dir or repo.git_dir), rev)


def show(repo: git.Repo, rev: str, path: str) -> str | None:
    """Text of ``path`` at ``rev``, or None when the file does not exist there."""
    try:
        return str(repo.git.show(f"{rev}:{path}", strip_newline_in_stdout=False))
    except git.GitCommandError:
        return None


def show_bytes(repo: git.Repo, rev: str, path: str) -> bytes | None:
    """Bytes of ``path`` at ``rev`` (None when absent)."""
    try:
        blob = repo.commit(rev).tree / path
    except (KeyError, ValueError):
        return None
    data: bytes = blob.data_stream.read()
    return data


def ls_files(repo: git.Repo, rev: str) -> list[str]:
    """Every file path in the tree of ``rev``."""
    out = str(repo.git.ls_tree("-r", "--name-only", "-z", rev))
    return [p for p in out.split("\0") if p]


def changed_files(repo: git.Repo, base: str, head: str = "HEAD") -> list[str]:
    """Paths changed between ``base`` and ``head`` (renames show their new path)."""
    out = str(repo.git.diff("--name-only", "-z", f"{base}...{head}"))
    return [p for p in out.split("\0") if p]


def is_dirty(repo: git.Repo) -> bool:
    return bool(repo.is_dirty(untracked_files=True))


def head_sha(repo: git.Repo) -> str:
    return str(repo.head.commit.hexsha)
