"""A forge's token in portwright's own environment never reaches a sandboxed command, on
any backend: sandboxes pass nothing of the host's environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.sandboxes import LocalSandbox
from tests.sandboxes.conftest import BACKENDS, make_worktree, new_sandbox, open_tmp

SECRET = "ghp_sandboxMustNeverSeeThis0123456789"


@pytest.mark.parametrize("backend", [*BACKENDS, "local"])
def test_no_token_reaches_a_sandboxed_command(backend: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "PORT_BOT_TOKEN"):
        monkeypatch.setenv(name, SECRET)
    with open_tmp() as base:
        worktree, main = make_worktree(base / "repos",
                                       owner=None if backend == "local" else 12345)
        box = LocalSandbox(worktree, log_dir=base / "logs") if backend == "local" else \
            new_sandbox(backend, worktree, base, run_id="forge-token", upstream=main)
        with box as sandbox:
            result = sandbox.exec(["sh", "-c", "env; cat /proc/$$/environ; echo done"])
        assert result.ok, result.stderr_tail
        seen = result.stdout_head + result.stdout_tail
        assert "PATH=" in seen
        assert "done" in seen
        assert SECRET not in seen
        for path in Path(base / "logs").rglob("*"):
            if path.is_file():
                assert SECRET.encode() not in path.read_bytes(), path
