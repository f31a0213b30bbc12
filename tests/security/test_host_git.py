"""Host-side git is never steered by a worktree that sandboxed code touched.

Attack: a command in the sandbox points a submodule's ``.git`` file at a gitdir it wrote,
whose config names a ``core.fsmonitor`` command and whose hooks run code. Plain git on the
host, entering the submodule for ``status``, would run it as the host user.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from portwright.vcs import plumbing
from portwright.vcs.git import commit_sha, open_repo, read_blob
from tests.conftest import GIT_ENV, GitRepo


def _poisoned(make_repo: object, tmp_path: Path) -> tuple[GitRepo, Path]:
    sub = make_repo("sub")  # type: ignore[operator]
    sub.commit("sub", {"s.txt": "s\n"})
    top = make_repo("top")  # type: ignore[operator]
    top.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.path), "sub")
    top.commit("add submodule")
    marker = tmp_path / "host-code-ran"
    evil = top.path / "evil-gitdir"  # a folder the command could write: inside the worktree
    subprocess.run(["git", "init", "-q", "--bare", str(evil)], check=True, env={**os.environ,
                                                                                **GIT_ENV})
    payload = f"touch {marker}; echo"
    subprocess.run(["git", "--git-dir", str(evil), "config", "core.fsmonitor", payload],
                   check=True)
    subprocess.run(["git", "--git-dir", str(evil), "config", "core.bare", "false"], check=True)
    subprocess.run(["git", "--git-dir", str(evil), "config", "core.worktree",
                    str(top.path / "sub")], check=True)
    hook = evil / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    (top.path / "sub" / ".git").write_text(f"gitdir: {evil}\n")
    return top, marker


def test_plain_git_would_run_the_planted_fsmonitor(make_repo: object, tmp_path: Path) -> None:
    """The attack is real: git without portwright's settings runs the planted command."""
    top, marker = _poisoned(make_repo, tmp_path)
    subprocess.run(["git", "status", "--porcelain"], cwd=top.path, capture_output=True,
                   check=False, env={**os.environ, **GIT_ENV})
    assert marker.exists()


@pytest.mark.parametrize("how", ["plumbing-status", "plumbing-diff", "gitpython-objects",
                                 "plumbing-commit"])
def test_portwright_git_never_runs_it(make_repo: object, tmp_path: Path, how: str) -> None:
    top, marker = _poisoned(make_repo, tmp_path)
    if how == "plumbing-status":
        plumbing.git(top.path, "status", "--porcelain")
    elif how == "plumbing-diff":
        plumbing.git(top.path, "diff", "HEAD")
    elif how == "gitpython-objects":
        repo = open_repo(top.path)
        assert read_blob(repo, f"{commit_sha(repo, 'HEAD')}:.gitmodules") is not None
    else:
        (top.path / "file.txt").write_text("x\n")
        plumbing.git(top.path, "add", "file.txt")
        plumbing.run(top.path, "commit", "-q", "-m", "x", env={**os.environ, **GIT_ENV})
    assert not marker.exists()
