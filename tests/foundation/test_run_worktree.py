"""A run's worktree is added whatever was left of an earlier one: a branch of a resumed
run, or a worktree whose folder went away without git (``git worktree prune`` runs only
then, not before every add)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from portwright.vcs.worktree import branch_name, run_worktree
from tests.conftest import GIT_ENV, GitRepo


def _git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(where), *args], env={**os.environ, **GIT_ENV},
                          check=True, capture_output=True, text=True).stdout.strip()


def _worktrees(repo: GitRepo) -> list[str]:
    return [line.removeprefix("worktree ") for line in
            repo.git("worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def test_a_new_run_gets_a_new_branch_from_its_base(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit("first", {"a.txt": "a\n"})
    repo.commit("second", {"a.txt": "b\n"})
    folder = run_worktree(repo.path, tmp_path / "state" / "wt", "r1", base)
    assert (folder / "a.txt").read_text() == "a\n"
    assert repo.git("rev-parse", f"refs/heads/{branch_name('r1')}") == base
    assert run_worktree(repo.path, tmp_path / "state" / "wt", "r1", base) == folder


def test_a_worktree_removed_by_hand_is_added_again_on_its_branch(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit("first", {"a.txt": "a\n"})
    folder = run_worktree(repo.path, tmp_path / "wt", "r1", base)
    (folder / "a.txt").write_text("run\n")
    _git(folder, "commit", "-qam", "step")
    moved = repo.git("rev-parse", f"refs/heads/{branch_name('r1')}")
    shutil.rmtree(folder)  # still registered, and holding the branch
    again = run_worktree(repo.path, tmp_path / "wt", "r1", base)
    assert (again / "a.txt").read_text() == "run\n"  # the branch as the run left it
    assert repo.git("rev-parse", f"refs/heads/{branch_name('r1')}") == moved
    assert str(again) in _worktrees(repo)


def test_a_stale_registration_of_the_path_does_not_stop_a_new_run(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    base = repo.commit("first", {"a.txt": "a\n"})
    old = run_worktree(repo.path, tmp_path / "wt", "old", base)
    shutil.rmtree(old)  # the path is still registered, to another branch
    folder = run_worktree(repo.path, tmp_path / "wt", "new", base)
    assert folder == old
    assert (folder / "a.txt").read_text() == "a\n"
    assert repo.git("rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert _git(folder, "rev-parse", "--abbrev-ref", "HEAD") == branch_name("new")
    assert repo.git("rev-parse", f"refs/heads/{branch_name('new')}") == base
