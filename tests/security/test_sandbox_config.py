"""Attack: take the boundary away through configuration.

A rewritten ``portwright.toml`` is text anyone with write access to the repository
controls: ``backend = "local"`` must not switch a run to no isolation unless the person
running it says so on the command line (``--allow-local``), and an ``upstream`` that is
not a git checkout of its own (``/var/run``, ``/``, the home folder, a folder holding
the worktree, the evidence key or the engine's socket) must not be mounted.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from portwright.config import SandboxBackend, SandboxConfig
from portwright.errors import EngineUnavailable, PortwrightError
from portwright.runs.keys import evidence_key_dir
from portwright.sandboxes import LocalSandbox, open_sandbox
from tests.conftest import GIT_ENV
from tests.sandboxes.conftest import BACKENDS, make_worktree, new_sandbox, open_tmp

LOCAL = SandboxConfig(backend=SandboxBackend.LOCAL)


def test_configured_local_needs_allow_local(tmp_path: Path) -> None:
    with pytest.raises(EngineUnavailable, match="--allow-local") as info:
        open_sandbox(LOCAL, worktree=tmp_path, run_id="r", key_dir=evidence_key_dir(),
                     log_dir=tmp_path / "logs")
    assert info.value.fix is not None
    assert "--allow-local" in info.value.fix
    allowed = open_sandbox(LOCAL, worktree=tmp_path, run_id="r", key_dir=evidence_key_dir(),
                           log_dir=tmp_path / "logs",
                           allow_local=True)
    assert isinstance(allowed, LocalSandbox)


def _portwright(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parents[2], env={**os.environ, **GIT_ENV})


def test_cli_refuses_a_config_that_asks_for_no_isolation(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "portwright.toml").write_text(
        '[upstream]\nsource = "../upstream"\n\n[sandbox]\nbackend = "local"\n')
    git = ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "config"], check=True)
    marker = tmp_path / "ran-on-the-host"
    refused = _portwright(repo, "sandbox", "exec", "--", "touch", str(marker))
    assert refused.returncode != 0
    assert "--allow-local" in refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    assert not marker.exists()
    allowed = _portwright(repo, "sandbox", "exec", "--allow-local", "--", "touch", str(marker))
    assert allowed.returncode == 0, allowed.stderr
    assert marker.exists()


# -- what may be mounted as the upstream -----------------------------------------------


@pytest.fixture
def tree() -> Iterator[tuple[Path, Path, Path]]:
    with open_tmp() as base:
        wt, main = make_worktree(base / "repos")
        yield base, wt, main


def _refused(backend: str, base: Path, wt: Path, upstream: Path) -> str:
    with pytest.raises(PortwrightError) as info, \
            new_sandbox(backend, wt, base, run_id="test-upstream", upstream=upstream) as sb:
        sb.exec(["sh", "-c", f"ls -la {upstream}"])  # only reached when not refused
    return str(info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_upstream_var_run_is_refused_and_the_socket_never_mounted(
        backend: str, tree: tuple[Path, Path, Path]) -> None:
    base, wt, _ = tree
    message = _refused(backend, base, wt, Path("/var/run"))
    assert "upstream" in message
    assert "socket" in message


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("which", ["root", "home", "ancestor", "not-top-level"])
def test_upstream_outside_a_checkout_of_its_own_is_refused(
        backend: str, which: str, tree: tuple[Path, Path, Path]) -> None:
    base, wt, main = tree
    if which == "ancestor":  # a checkout of its own, but the worktree lies inside it
        subprocess.run(["git", "init", "-q", str(base / "repos")], check=True)
    upstream = {"root": Path("/"), "home": Path.home(), "ancestor": base / "repos",
                "not-top-level": main / ".git"}[which]
    assert "upstream" in _refused(backend, base, wt, upstream)


@pytest.mark.parametrize("backend", BACKENDS)
def test_upstream_holding_the_key_or_an_engine_socket_is_refused(
        backend: str, tree: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    base, wt, _ = tree
    upstream = base / "upstream"
    upstream.mkdir()
    subprocess.run(["git", "init", "-q", str(upstream)], check=True)
    if backend == "bwrap":
        # an engine listening inside the checkout (DOCKER_HOST names it)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(upstream / "engine.sock"))
        monkeypatch.setenv("DOCKER_HOST", f"unix://{upstream / 'engine.sock'}")
        try:
            message = _refused(backend, base, wt, upstream)
            assert "upstream" in message
            assert "socket" in message
        finally:
            sock.close()
    monkeypatch.setenv("PORTWRIGHT_EVIDENCE_KEY", str(upstream / "state" / "evidence.key"))
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    message = _refused(backend, base, wt, upstream)
    assert "upstream" in message
    assert "evidence key" in message
