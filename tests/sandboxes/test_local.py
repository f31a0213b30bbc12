"""LocalSandbox: a plain subprocess with process-group kill, capped output, allow-listed env."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from portwright.config import SandboxBackend, SandboxConfig
from portwright.errors import EngineUnavailable, SandboxError
from portwright.runs.keys import evidence_key_dir
from portwright.sandboxes import LocalSandbox, Sandbox, open_sandbox, read_log
from portwright.sandboxes import selection as select_mod


def _sandbox(tmp_path: Path, **config: object) -> LocalSandbox:
    wt = tmp_path / "wt"
    wt.mkdir(exist_ok=True)
    return LocalSandbox(wt, log_dir=tmp_path / "logs", config=SandboxConfig.model_validate(config))


def test_runs_in_worktree_and_logs(tmp_path: Path) -> None:
    with _sandbox(tmp_path) as sb:
        assert isinstance(sb, Sandbox)
        res = sb.exec(["sh", "-c", "pwd; echo oops >&2; exit 3"])
    assert res.exit_code == 3
    assert not res.ok
    assert res.stdout_head.strip() == str((tmp_path / "wt").resolve())
    assert res.stderr_head == "oops\n"
    assert res.log_path is not None
    out, err = read_log(Path(res.log_path))
    assert out.decode().strip() == str((tmp_path / "wt").resolve())
    assert err == b"oops\n"
    assert res.log_sha256 is not None
    assert len(res.log_sha256) == 64


def test_warns_it_is_not_isolation(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), _sandbox(tmp_path):
        pass
    assert "not isolation" in caplog.text


def test_timeout_kills_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "wt" / "alive"
    with _sandbox(tmp_path) as sb:
        start = time.monotonic()
        res = sb.exec(["sh", "-c", f"(sleep 3; touch {marker}) & sleep 30"], timeout=0.5)
        assert time.monotonic() - start < 3
        assert res.timed_out
        assert res.exit_code == 137
        time.sleep(3.2)
        assert not marker.exists()
        assert sb.exec(["true"]).ok


def test_background_process_of_group_ends_with_command(tmp_path: Path) -> None:
    marker = tmp_path / "wt" / "daemon"
    with _sandbox(tmp_path) as sb:
        res = sb.exec(["sh", "-c", f"(sleep 1; touch {marker}) >/dev/null 2>&1 &"])
        assert res.ok
        time.sleep(1.5)
    assert not marker.exists()


def test_env_is_allow_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-host-secret")
    with _sandbox(tmp_path, env={"FROM_CONFIG": "1"}) as sb:
        res = sb.exec(["env"], env={"FROM_CALL": "2"})
    assert "sk-host-secret" not in res.stdout_head
    assert "ghp-host-secret" not in res.stdout_head
    assert "FROM_CONFIG=1" in res.stdout_head
    assert "FROM_CALL=2" in res.stdout_head


def test_both_streams_at_once_without_deadlock(tmp_path: Path) -> None:
    script = (
        "import sys, threading\n"
        "def w(s, c):\n"
        "    for _ in range(80): s.buffer.write(c * 65536)\n"
        "    s.flush()\n"
        "t = threading.Thread(target=w, args=(sys.stderr, b'e')); t.start()\n"
        "w(sys.stdout, b'o'); t.join()\n"
    )
    with _sandbox(tmp_path, tail_bytes=100) as sb:
        res = sb.exec(["python3", "-c", script], timeout=60)
    assert res.ok, res.stderr_tail
    size = 80 * 65536
    assert res.stdout_bytes == size
    assert res.stderr_bytes == size
    assert res.stdout_head == "o" * 100
    assert res.stdout_tail == "o" * 100
    assert res.stderr_tail == "e" * 100
    assert res.log_path is not None
    out, err = read_log(Path(res.log_path))
    assert out == b"o" * size
    assert err == b"e" * size


def test_output_cap_kills(tmp_path: Path) -> None:
    with _sandbox(tmp_path, output_cap=100_000) as sb:
        res = sb.exec(["sh", "-c", "yes"], timeout=30)
    assert res.capped
    assert not res.timed_out
    assert not res.ok
    assert res.log_path is not None
    out, _ = read_log(Path(res.log_path))
    assert len(out) == 100_000


def test_missing_program_is_a_result(tmp_path: Path) -> None:
    with _sandbox(tmp_path) as sb:
        res = sb.exec(["no-such-program-here"])
    assert res.exit_code == 127
    assert "no-such-program-here" in res.stderr_head


def test_local_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(select_mod, "docker_status", lambda timeout=3.0: "no engine: test")
    monkeypatch.setattr(select_mod, "bwrap_status", lambda: "bwrap not installed")
    wt = tmp_path / "wt"
    wt.mkdir()
    with pytest.raises(EngineUnavailable, match="start the Docker engine"):
        open_sandbox(SandboxConfig(), worktree=wt, run_id="r1", key_dir=evidence_key_dir(),
                     log_dir=tmp_path / "l")
    allowed = open_sandbox(SandboxConfig(), worktree=wt, run_id="r1", key_dir=evidence_key_dir(),
                           log_dir=tmp_path / "l",
                           allow_local=True)
    assert isinstance(allowed, LocalSandbox)
    with pytest.raises(EngineUnavailable, match="--allow-local"):
        open_sandbox(SandboxConfig(backend=SandboxBackend.LOCAL), worktree=wt, run_id="r1",
                     key_dir=evidence_key_dir(),
                     log_dir=tmp_path / "l")  # the configuration alone cannot ask for it
    configured = open_sandbox(SandboxConfig(backend=SandboxBackend.LOCAL), worktree=wt,
                              run_id="r1", key_dir=evidence_key_dir(),
                              log_dir=tmp_path / "l", allow_local=True)
    assert isinstance(configured, LocalSandbox)


def test_setup_commands_run_once_and_failures_are_errors(tmp_path: Path) -> None:
    sb = _sandbox(tmp_path, setup=["echo prepared > prepared.txt"])
    with sb:
        assert [r.exit_code for r in sb.setup_results] == [0]
        assert (tmp_path / "wt" / "prepared.txt").read_text() == "prepared\n"
    failing = _sandbox(tmp_path, setup=["true", "exit 5"])
    with pytest.raises(SandboxError, match="setup command failed") as info, failing:
        pass
    assert info.value.fix is not None
    assert "log" in info.value.fix
