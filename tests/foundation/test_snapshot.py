"""``plumbing.snapshot``: the tree an evidence record is bound to, whatever state the
worktree is in — the same tree a private index filled with ``git add -A`` writes."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from portwright.vcs import plumbing
from tests.conftest import GitRepo


def _written_tree(repo: Path) -> str:
    """The tree of the worktree, written the long way (read HEAD, add everything)."""
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(folder) / "index")}
        for args in (("read-tree", "HEAD"), ("add", "-A", "--", ".")):
            subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
        return subprocess.run(["git", "write-tree"], cwd=repo, env=env, check=True,
                              capture_output=True, text=True).stdout.strip()


def _clean(repo: GitRepo) -> None:
    pass


def _modified(repo: GitRepo) -> None:
    repo.write("a.txt", "changed\n")


def _untracked(repo: GitRepo) -> None:
    repo.write("new/b.txt", "new\n")


def _ignored_only(repo: GitRepo) -> None:
    repo.write("build/out.o", "object\n")


def _tracked_but_ignored(repo: GitRepo) -> None:
    repo.write("keep.log", "changed\n")


def _deleted(repo: GitRepo) -> None:
    (repo.path / "a.txt").unlink()


def _staged_then_reverted(repo: GitRepo) -> None:
    repo.write("a.txt", "staged\n")
    repo.git("add", "a.txt")
    repo.write("a.txt", "a\n")


def _mode(repo: GitRepo) -> None:
    (repo.path / "a.txt").chmod(0o755)


@pytest.mark.parametrize("change", [_clean, _modified, _untracked, _ignored_only,
                                    _tracked_but_ignored, _deleted, _staged_then_reverted,
                                    _mode])
def test_snapshot_is_the_tree_of_the_worktree(make_repo: Callable[[str], GitRepo],
                                               change: Callable[[GitRepo], None]) -> None:
    repo = make_repo("repo")
    repo.commit("base", {"a.txt": "a\n", ".gitignore": "build/\n*.log\n"})
    repo.write("keep.log", "kept\n")
    repo.git("add", "-f", "keep.log")
    repo.git("commit", "-q", "-m", "a tracked file the ignore rules match")
    head = repo.head()
    head_tree = repo.git("rev-parse", "HEAD^{tree}")
    change(repo)
    sha, tree, dirty = plumbing.snapshot(repo.path)
    assert sha == head
    assert tree == _written_tree(repo.path)
    assert dirty == (tree != head_tree)
