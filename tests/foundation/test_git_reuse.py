"""What the host's git says of fixed things is asked once: the changed files between two
commit shas, and a run's worktree's config, read at the commit its project was read at."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from portwright.errors import RevisionError
from portwright.gates._diff import name_status
from portwright.project import Project
from portwright.vcs.worktree import run_worktree
from tests.conftest import GitRepo


def _hide_git(repo: GitRepo) -> Path:
    """Move the repository's git folder away: any git process there fails from now on."""
    hidden = repo.path.parent / "hidden.git"
    shutil.move(repo.path / ".git", hidden)
    return hidden


def test_name_status_between_two_shas_is_asked_once(make_repo: type[GitRepo]) -> None:
    repo = make_repo("down")
    base = repo.commit("one", {"a.txt": "a\n", "b.txt": "b\n"})
    repo.write("a.txt", "A\n")
    (repo.path / "b.txt").rename(repo.path / "c.txt")
    head = repo.commit("two", {"d.txt": "d\n"})
    first = name_status(repo.path, base, head)
    assert {(c.status, c.path) for c in first} == {("M", "a.txt"), ("R", "c.txt"),
                                                   ("A", "d.txt")}
    exact = name_status(repo.path, base, head, exact=True)
    hidden = _hide_git(repo)
    try:
        assert name_status(repo.path, base, head) == first  # no git process: it has none
        assert name_status(repo.path, base, head, exact=True) == exact
        with pytest.raises(RevisionError):  # a ref name moves: always asked
            name_status(repo.path, base, "HEAD")
    finally:
        shutil.move(hidden, repo.path / ".git")


def test_a_runs_worktree_project_is_its_projects_config(make_repo: type[GitRepo],
                                                        tmp_path: Path) -> None:
    repo = make_repo("down")
    repo.commit("config", {"portwright.toml": '[upstream]\nsource = "../up"\nname = "up"\n'})
    project = Project.load(repo.path, at="HEAD")
    assert project.revision is not None
    folder = run_worktree(repo.path, project.worktree_dir("r1"), "r1", project.revision)
    moved = project.in_worktree(folder)
    assert moved.root == folder.resolve()
    assert moved.config == project.config
    assert moved.revision == project.revision
    assert moved.state_dir == project.state_dir
    assert moved.main_root == repo.path.resolve()
    assert moved == Project.load(folder, at=project.revision, environ=project.environ)
    with pytest.raises(ValueError, match="at a revision"):
        Project.load(repo.path).in_worktree(folder)
    # a config put in place of the committed one is not what the worktree holds
    other = replace(project, config=project.config.model_copy(update={"state_dir": None}))
    assert not other.as_committed
    with pytest.raises(ValueError, match="at a revision"):
        other.in_worktree(folder)
