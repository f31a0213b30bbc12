"""``worktree.commit_step``: one commit per step of a run, found again on a second call,
none when the step changed nothing (unless asked for)."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.errors import RepositoryError
from portwright.vcs import worktree
from tests.conftest import GitRepo


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("first", {"a.txt": "a\n", ".gitignore": "build/\n"})
    return repo


def test_commits_a_step_once(repo: GitRepo) -> None:
    repo.write("b.txt", "b\n")
    sha = worktree.commit_step(repo.path, "r1", "write", "write b")
    assert sha == repo.git("rev-parse", "HEAD")
    repo.write("c.txt", "c\n")
    assert worktree.commit_step(repo.path, "r1", "write", "again") == sha


def test_a_step_is_looked_for_after_the_runs_base_only(repo: GitRepo) -> None:
    """A run's steps are committed on its branch after its base: the search for one walks
    those commits, not the repository's whole history (a port of a project with 100,000
    commits would walk them all at every step)."""
    repo.write("old.txt", "old\n")
    old = worktree.commit_step(repo.path, "r1", "write", "an older commit, same trailers")
    base = repo.git("rev-parse", "HEAD")
    assert worktree.find_step(repo.path, "r1", "write") == old
    assert worktree.find_step(repo.path, "r1", "write", since=base) is None
    repo.write("b.txt", "b\n")
    sha = worktree.commit_step(repo.path, "r1", "write", "write b", since=base)
    assert sha is not None
    assert sha != old
    assert worktree.find_step(repo.path, "r1", "write", since=base) == sha
    repo.write("c.txt", "c\n")
    assert worktree.commit_step(repo.path, "r1", "write", "again", since=base) == sha


def test_nothing_changed_is_no_commit(repo: GitRepo) -> None:
    head = repo.git("rev-parse", "HEAD")
    repo.write("build/out.o", "ignored\n")
    assert worktree.commit_step(repo.path, "r1", "idle", "nothing") is None
    assert repo.git("rev-parse", "HEAD") == head
    repo.write("skipped.txt", "excluded\n")
    assert worktree.commit_step(repo.path, "r1", "idle", "nothing",
                                exclude=["skipped.txt"]) is None
    assert repo.git("rev-parse", "HEAD") == head
    empty = worktree.commit_step(repo.path, "r1", "idle", "empty", exclude=["skipped.txt"],
                                 allow_empty=True)
    assert empty is not None
    assert empty != head
    assert repo.git("rev-parse", "HEAD~1") == head


def test_a_failing_commit_is_an_error(repo: GitRepo) -> None:
    repo.write("b.txt", "b\n")
    (repo.path / ".git" / "index.lock").write_text("")  # another git holds the index
    with pytest.raises(RepositoryError):
        worktree.commit_step(repo.path, "r1", "write", "write b")


@pytest.mark.parametrize("leftover", ["modified", "staged", "untracked", "deleted"])
def test_reset_to_head_drops_what_a_step_left(repo: GitRepo, leftover: str) -> None:
    repo.write("build/out.o", "ignored\n")
    if leftover == "modified":
        repo.write("a.txt", "changed\n")
    elif leftover == "staged":
        repo.write("n.txt", "new\n")
        repo.git("add", "n.txt")
    elif leftover == "untracked":
        repo.write("deep/er/u.txt", "u\n")
    else:
        (repo.path / "a.txt").unlink()
    worktree.reset_to_head(repo.path)
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    assert (repo.path / "a.txt").read_text() == "a\n"
    assert (repo.path / "build" / "out.o").read_text() == "ignored\n"  # ignored files stay


def test_reset_to_head_leaves_a_clean_tree_alone(repo: GitRepo) -> None:
    repo.write("build/out.o", "ignored\n")
    index = repo.path / ".git" / "index"
    before = index.stat().st_mtime_ns
    worktree.reset_to_head(repo.path)
    assert index.stat().st_mtime_ns == before  # no reset rewrote the index
    assert (repo.path / "build" / "out.o").exists()


def test_a_fresh_step_commits_without_looking_for_its_commit(repo: GitRepo) -> None:
    """A step whose HEAD is a commit the run recorded (its base, an earlier step's) has
    made no commit of its own: it commits without the search. One cut short after its
    commit, before the run recorded it, finds that commit at HEAD, not a recorded one, and
    looks it up instead of committing twice."""
    base = repo.git("rev-parse", "HEAD")
    head = worktree.reset_to_head(repo.path)
    assert head == base
    assert worktree.fresh_step(head, [base])
    repo.write("b.txt", "b\n")
    sha = worktree.commit_step(repo.path, "r1", "write", "write b", since=base,
                               look_up=False)
    assert sha is not None
    # the run was killed before it recorded ``sha``: the step runs again
    again = worktree.reset_to_head(repo.path)
    assert again == sha
    assert not worktree.fresh_step(again, [base])
    repo.write("c.txt", "c\n")
    assert worktree.commit_step(repo.path, "r1", "write", "again", since=base,
                                look_up=not worktree.fresh_step(again, [base])) == sha
    assert not worktree.fresh_step(None, [base])


def test_reset_to_head_names_head_and_drops_changes(repo: GitRepo) -> None:
    head = repo.git("rev-parse", "HEAD")
    repo.write("a.txt", "changed\n")
    repo.write("new.txt", "new\n")
    assert worktree.reset_to_head(repo.path) == head
    assert (repo.path / "a.txt").read_text() == "a\n"
    assert not (repo.path / "new.txt").exists()
