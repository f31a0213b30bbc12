"""Fixtures of the sandbox tests: a git worktree owned by a non-root user, the limits
the isolating backends are tested under, a sandbox of either backend on it, and the
parameters that run a test against both isolating backends."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from portwright.config import SandboxConfig
from portwright.runs.keys import evidence_key_dir
from tests.conftest import GIT_ENV, bwrap_works, docker_engine_running

if TYPE_CHECKING:
    from portwright.sandboxes.bwrap import BwrapSandbox
    from portwright.sandboxes.docker import DockerSandbox

OWNER = 12345
"""uid and gid the test worktrees belong to: commands must run as this user."""

BWRAP_LIMITS = SandboxConfig(backend="bwrap", memory="512m", pids=64, tmpfs_size="64m",
                             timeout=30, tail_bytes=1024)
DOCKER_LIMITS = SandboxConfig(memory="256m", pids=64, cpus=1.0, tmpfs_size="64m", timeout=30,
                              tail_bytes=1024)


BACKENDS = [
    pytest.param("bwrap", marks=[
        pytest.mark.bwrap,
        pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is missing or cannot run here"),
    ]),
    pytest.param("docker", marks=[
        pytest.mark.docker,
        pytest.mark.skipif(not docker_engine_running(),
                           reason="no Docker engine answers (start dockerd; .ci/run does)"),
    ]),
]
"""``@pytest.mark.parametrize("backend", BACKENDS)``: the test runs against both."""


def make_worktree(base: Path, *, owner: int | None = OWNER) -> tuple[Path, Path]:
    """A repository ``base/main`` with a linked worktree ``base/wt``; (worktree, main)."""
    base.mkdir(parents=True, exist_ok=True)
    base.chmod(0o755)
    main = base / "main"
    env = {**os.environ, **GIT_ENV}

    def git(*args: str, cwd: Path = main) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)

    main.mkdir()
    git("init", "-q", "-b", "main")
    (main / "hello.cpp").write_text('#include <cstdio>\nint main(){std::puts("hi");}\n')
    git("add", "-A")
    git("-c", "user.name=T", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "init")
    git("worktree", "add", "-q", "-b", "run", str(base / "wt"))
    if owner is not None and os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{owner}:{owner}", str(base)], check=True)
    return base / "wt", main


@contextmanager
def open_tmp() -> Iterator[Path]:
    """A temporary folder every user can traverse (bubblewrap binds paths in place, and
    pytest keeps its own base folder private to root)."""
    path = Path(tempfile.mkdtemp(prefix="portwright-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def open_tmp_path() -> Iterator[Path]:
    with open_tmp() as path:
        yield path


@contextmanager
def isolating_sandbox(backend: str, run_id: str) -> Iterator[BwrapSandbox | DockerSandbox]:
    """An open ``bwrap`` or ``docker`` sandbox on a fresh worktree (upstream: its main repo)."""
    from portwright.sandboxes.bwrap import BwrapSandbox
    from portwright.sandboxes.docker import DockerSandbox

    with open_tmp() as base:
        wt, main = make_worktree(base / "repos")
        sandbox: BwrapSandbox | DockerSandbox
        if backend == "bwrap":
            sandbox = BwrapSandbox(wt, config=BWRAP_LIMITS, key_dir=evidence_key_dir(),
                                   log_dir=base / "logs", upstream=main)
        else:
            sandbox = DockerSandbox(wt, config=DOCKER_LIMITS, run_id=run_id,
                                    key_dir=evidence_key_dir(),
                                    log_dir=base / "logs", upstream=main)
        with sandbox as sb:
            yield sb


@pytest.fixture(scope="session", autouse=True)
def _private_evidence_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Sandboxes mask the evidence key's folder (and bubblewrap creates it): point it at a
    folder of the test session, never the real home. Session-wide, so that module-scoped
    sandboxes see it too."""
    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp("evidence-key") / "key" / "evidence.key"
        patch.setenv("PORTWRIGHT_EVIDENCE_KEY", str(path))
        yield path


def new_sandbox(backend: str, worktree: Path, base: Path, *, run_id: str,
                upstream: Path | None = None,
                config: SandboxConfig | None = None) -> BwrapSandbox | DockerSandbox:
    """A ``bwrap`` or ``docker`` sandbox on ``worktree``, not yet open (logs under ``base``)."""
    from portwright.sandboxes.bwrap import BwrapSandbox
    from portwright.sandboxes.docker import DockerSandbox

    if backend == "bwrap":
        return BwrapSandbox(worktree, config=config or BWRAP_LIMITS, key_dir=evidence_key_dir(),
                            log_dir=base / "logs",
                            upstream=upstream)
    return DockerSandbox(worktree, config=config or DOCKER_LIMITS, run_id=run_id,
                         key_dir=evidence_key_dir(), log_dir=base / "logs", upstream=upstream)


def tree_owners(top: Path) -> dict[str, tuple[int, int]]:
    """``{relative path: (uid, gid)}`` of everything under ``top`` (links not followed)."""
    owners = {".": (top.lstat().st_uid, top.lstat().st_gid)}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            owners[str(path.relative_to(top))] = (st.st_uid, st.st_gid)
    return owners


def setid_files(top: Path) -> list[str]:
    """Files under ``top`` with a setuid or setgid bit (links not followed)."""
    found = []
    for dirpath, _, filenames in os.walk(top):
        for name in filenames:
            path = Path(dirpath) / name
            if path.lstat().st_mode & 0o6000:
                found.append(str(path.relative_to(top)))
    return found
