"""open_sandbox: Docker when the engine answers, else bubblewrap, else refuse with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.config import SandboxBackend, SandboxConfig
from portwright.errors import EngineUnavailable
from portwright.runs.keys import evidence_key_dir
from portwright.sandboxes import open_sandbox, select_backend
from portwright.sandboxes import selection as selection_mod
from portwright.sandboxes.docker import docker_client
from tests.conftest import bwrap_works, docker_engine_running
from tests.sandboxes.conftest import open_tmp


def _no_docker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(selection_mod, "docker_status",
                        lambda timeout=3.0: "no engine: test says so")


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_auto_picks_docker_when_engine_answers(tmp_path: Path) -> None:
    sandbox = open_sandbox(SandboxConfig(), worktree=tmp_path, run_id="r",
                           key_dir=evidence_key_dir(), log_dir=tmp_path)
    assert sandbox.name == "docker"
    assert select_backend(SandboxConfig()).reason == "auto: the Docker engine answers"


@pytest.mark.bwrap
@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot run here")
def test_auto_falls_back_to_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_docker(monkeypatch)
    with open_tmp() as base:
        wt = base / "wt"
        wt.mkdir()
        sandbox = open_sandbox(SandboxConfig(), worktree=wt, run_id="r", key_dir=evidence_key_dir(),
                               log_dir=base / "logs")
        assert sandbox.name == "bwrap"
        with sandbox as sb:
            res = sb.exec(["sh", "-c", "echo inside"])
        assert res.stdout_head == "inside\n"


def test_configured_docker_without_engine_refuses_with_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_docker(monkeypatch)
    with pytest.raises(EngineUnavailable) as info:
        open_sandbox(SandboxConfig(backend=SandboxBackend.DOCKER), worktree=tmp_path,
                     run_id="r", key_dir=evidence_key_dir(), log_dir=tmp_path)
    assert "test says so" in str(info.value)
    assert info.value.fix is not None
    assert "dockerd" in info.value.fix


def test_engine_down_says_how_to_start_it(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    assert selection_mod.docker_status().startswith(("no engine", "engine does not answer"))
    with pytest.raises(EngineUnavailable) as info:
        docker_client()
    assert info.value.fix is not None
    assert "dockerd" in info.value.fix
