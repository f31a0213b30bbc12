"""Attack: a sandboxed command redirects git metadata below the worktree's top.

A submodule's ``.git`` is a pointer file (``gitdir: …``) and a nested repository has a
``.git`` folder with a ``config``; host git that later steps into either follows what
they say (``core.fsmonitor``, hooks, a gitdir the command controls). Every ``.git``
under the mount is bound read-only, and every folder on the way to one is a mount
point of its own, so it cannot be renamed away and replaced either. Proven against
bubblewrap and a real Docker engine.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from portwright.errors import SandboxError
from tests.conftest import GIT_ENV
from tests.sandboxes.conftest import BACKENDS, OWNER, new_sandbox, open_tmp


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=cwd,
                          env={**os.environ, **GIT_ENV}, check=True, capture_output=True,
                          text=True)
    return done.stdout.strip()


def make_superproject(base: Path) -> tuple[Path, Path]:
    """A repository with a real submodule ``sub`` and a linked worktree ``wt`` of it (the
    submodule checked out there), plus a nested repository ``third_party/nested`` inside the
    worktree; (worktree, main). Owned by :data:`OWNER` when the tests run as root."""
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    lib, main = base / "lib", base / "main"
    for repo in (lib, main):
        repo.mkdir()
        _git(repo, "init", "-q", "-b", "main")
    (lib / "lib.h").write_text("int answer(void);\n")
    _git(lib, "add", "-A")
    _git(lib, "commit", "-q", "-m", "lib")
    (main / "main.c").write_text("int main(void){return 0;}\n")
    _git(main, "submodule", "add", "-q", str(lib), "sub")
    _git(main, "add", "-A")
    _git(main, "commit", "-q", "-m", "with a submodule")
    wt = base / "wt"
    _git(main, "worktree", "add", "-q", "-b", "run", str(wt))
    _git(wt, "submodule", "update", "-q", "--init")
    nested = wt / "third_party" / "nested"
    nested.mkdir(parents=True)
    _git(nested, "init", "-q", "-b", "main")
    (nested / "n.txt").write_text("nested\n")
    _git(nested, "add", "-A")
    _git(nested, "commit", "-q", "-m", "nested")
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{OWNER}:{OWNER}", str(base)], check=True)
    return wt, main


@pytest.fixture
def superproject() -> Iterator[tuple[Path, Path, Path]]:
    with open_tmp() as base:
        wt, main = make_superproject(base / "repos")
        yield base, wt, main


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_git_metadata_cannot_be_rewritten(
        backend: str, superproject: tuple[Path, Path, Path]) -> None:
    base, wt, main = superproject
    pointer = wt / "sub" / ".git"
    config = wt / "third_party" / "nested" / ".git" / "config"
    assert pointer.is_file()
    assert pointer.read_text().startswith("gitdir:")
    before = {path: path.read_bytes() for path in (pointer, config)}
    attack = (
        "printf 'gitdir: /tmp/evil\\n' > sub/.git 2>/dev/null && echo rewrote-pointer; "
        "printf '[core]\\n\\tfsmonitor = /tmp/evil.sh\\n' >> third_party/nested/.git/config "
        "2>/dev/null && echo rewrote-config; "
        "rm -f sub/.git 2>/dev/null && echo removed-pointer; "
        "rm -rf third_party/nested/.git 2>/dev/null; "
        "test -f third_party/nested/.git/config || echo removed-config; "
        # rename the folder holding the .git away, then plant a new one where it was
        "mv sub sub.moved 2>/dev/null && mkdir sub && "
        "printf 'gitdir: /tmp/evil\\n' > sub/.git && echo replaced-submodule; "
        "mv third_party/nested third_party/moved 2>/dev/null && echo moved-nested; "
        "mv third_party tp.moved 2>/dev/null && echo moved-parent; "
        "git -C sub rev-parse --is-inside-work-tree; echo done"
    )
    with new_sandbox(backend, wt, base, run_id="test-nested-git", upstream=main) as sb:
        res = sb.exec(["sh", "-c", attack])
    assert res.exit_code == 0, res.stderr_head
    assert res.stdout_head.splitlines() == ["true", "done"], res.stdout_head
    for path, data in before.items():
        assert path.read_bytes() == data
    assert not (wt / "sub.moved").exists()
    assert not (wt / "tp.moved").exists()
    assert not (wt / "third_party" / "moved").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_linked_dot_git_below_the_top_is_refused(
        backend: str, superproject: tuple[Path, Path, Path]) -> None:
    """A ``.git`` that is a symbolic link (git never makes one) would be followed by the
    bind: the sandbox refuses to start rather than mount what it points at."""
    base, wt, main = superproject
    planted = wt / "evil"
    planted.mkdir()
    (planted / ".git").symlink_to("/")
    with pytest.raises(SandboxError, match=r"evil/\.git.*link") as info, \
            new_sandbox(backend, wt, base, run_id="test-linked-git", upstream=main):
        pass
    assert info.value.fix is not None
