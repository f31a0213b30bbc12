"""A step's commit takes only what a step may change: what a sandboxed command left that
steers portwright or a toolchain (a config edit, package metadata, a runner's hook), a link
or a nested repository (committed, a gitlink) is refused, naming the path and the fix; the
worktree is left as it was, for a person to look at."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from portwright.errors import UnsafeChange
from portwright.vcs.worktree import commit_step
from tests.conftest import GIT_ENV, GitRepo


def _repo(make_repo: Callable[[str], GitRepo]) -> GitRepo:
    repo = make_repo("downstream")
    repo.commit("scaffold", {
        "portwright.toml": '[sandbox]\nbackend = "docker"\n',
        "pyproject.toml": '[project]\nname = "calc"\n[tool.pytest.ini_options]\naddopts = "-q"\n',
        "src/calc.py": "x = 1\n", "tests/test_calc.py": "def test(): pass\n"})
    return repo


def _nested(path: Path) -> None:
    path.mkdir(parents=True)
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, env=env)
    (path / "hook.py").write_text("print('pwned')\n")
    subprocess.run(["git", "add", "-A"], cwd=path, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "x"], cwd=path, check=True, env=env)


LEFT: dict[str, Callable[[Path], None]] = {
    # class 6: the run's own config, edited by a command
    "config": lambda root: (root / "portwright.toml").write_text(
        '[sandbox]\nbackend = "docker"\nnetwork = true\n'),
    # class 2: what a runner auto-loads, at any depth
    "dist-info": lambda root: (root / "src/evil-1.0.dist-info").mkdir() or (
        root / "src/evil-1.0.dist-info/entry_points.txt").write_text(
        "[pytest11]\nevil = evil\n"),
    "pth": lambda root: (root / "src/zz.pth").write_text("import evil\n"),
    "sub-pyproject": lambda root: (root / "src/pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "-p evil"\n'),
    "pytest-section": lambda root: (root / "pyproject.toml").write_text(
        '[project]\nname = "calc"\n[tool.pytest.ini_options]\naddopts = "-p evil"\n'),
    "egg-info": lambda root: (root / "calc.egg-info").mkdir() or (
        root / "calc.egg-info/entry_points.txt").write_text("[pytest11]\nevil = evil\n"),
    # class 4 and 5: links and nested repositories
    "link-out": lambda root: (root / "src/ledger.md").symlink_to("../../.git/config"),
    "link-replacing": lambda root: ((root / "src/calc.py").unlink(),
                                    (root / "src/calc.py").symlink_to("/etc/passwd")),
    "nested-repo": lambda root: _nested(root / "src/vendor"),
}


@pytest.mark.parametrize("what", sorted(LEFT))
def test_a_step_commit_refuses_what_steers_the_toolchain(
        make_repo: Callable[[str], GitRepo], what: str) -> None:
    repo = _repo(make_repo)
    before = repo.head()
    (repo.path / "src/calc.py").write_text("x = 2\n") if what != "link-replacing" else None
    LEFT[what](repo.path)
    with pytest.raises(UnsafeChange) as caught:
        commit_step(repo.path, "run-1", "implement-1", "port: calc", exclude=["tests/**"])
    text = caught.value.render()
    assert "refused" in text, text
    assert "fix:" in text, text
    assert repo.head() == before  # nothing committed
    assert repo.git("status", "--porcelain")  # the worktree kept as the command left it


def test_an_ordinary_change_still_commits(make_repo: Callable[[str], GitRepo]) -> None:
    repo = _repo(make_repo)
    (repo.path / "src/calc.py").write_text("x = 2\n")
    (repo.path / "src/new.py").write_text("y = 1\n")
    (repo.path / "pyproject.toml").write_text(
        '[project]\nname = "calc"\ndependencies = ["numpy"]\n'
        '[tool.pytest.ini_options]\naddopts = "-q"\n')
    sha = commit_step(repo.path, "run-1", "implement-1", "port: calc", exclude=["tests/**"])
    assert sha is not None
    assert repo.git("show", "--name-only", "--format=", sha).split() == [
        "pyproject.toml", "src/calc.py", "src/new.py"]


def test_files_left_out_of_the_step_are_not_judged(make_repo: Callable[[str], GitRepo]
                                                   ) -> None:
    """A refused kind outside the step's globs is not the step's: the commit leaves it out
    (the clean export never shows it to a gate)."""
    repo = _repo(make_repo)
    (repo.path / "src/calc.py").write_text("x = 2\n")
    (repo.path / "tests/conftest.py").write_text("import evil\n")
    sha = commit_step(repo.path, "run-1", "implement-1", "port: calc", exclude=["tests/**"])
    assert sha is not None
    assert repo.git("show", "--name-only", "--format=", sha).split() == ["src/calc.py"]
