"""The evidence key (which signs evidence records) is out of reach of sandboxed code:
bubblewrap shows a minimal view of the host without it (and would cover it where a mounted
folder held it); Docker never mounts it."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from portwright.runs.keys import evidence_key, evidence_key_dir
from portwright.sandboxes.bwrap import BwrapSandbox
from portwright.sandboxes.mounts import Mount
from tests.conftest import bwrap_works, docker_engine_running
from tests.sandboxes.conftest import BWRAP_LIMITS, isolating_sandbox, make_worktree, open_tmp

HOST_STATE = Path("/var/tmp")
"""Where the test key lives: outside ``/tmp``, which bubblewrap replaces anyway."""


@pytest.fixture
def key_file(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    if not HOST_STATE.is_dir():
        pytest.skip(f"{HOST_STATE} does not exist here")
    base = Path(tempfile.mkdtemp(prefix="portwright-key-test-", dir=HOST_STATE))
    try:
        path = base / "keys" / "evidence.key"
        monkeypatch.setenv("PORTWRIGHT_EVIDENCE_KEY", str(path))
        evidence_key()
        yield path
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _probe(path: Path) -> list[str]:
    return ["sh", "-c", f"od -An -tx1 {path} | tr -d ' \\n'; echo; "
                        f"test -e {path.parent} && echo folder-present; echo checked"]


@pytest.mark.bwrap
@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is missing or cannot run here")
def test_bwrap_command_cannot_read_the_key(key_file: Path) -> None:
    with open_tmp() as base:
        # the worktree belongs to whoever runs the tests: were commands to run as the key's
        # owner, file permissions alone would not stop them
        wt, main = make_worktree(base / "repos", owner=None)
        with BwrapSandbox(wt, config=BWRAP_LIMITS, key_dir=evidence_key_dir(),
                          log_dir=base / "logs",
                          upstream=main) as box:
            res = box.exec(_probe(key_file))
    key_hex = key_file.read_bytes().hex()
    assert key_hex not in res.stdout_head
    assert "No such file or directory" in res.stderr_head
    assert res.stdout_head.splitlines()[-1] == "checked"
    assert "folder-present" not in res.stdout_head


@pytest.mark.bwrap
@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is missing or cannot run here")
def test_bwrap_covers_the_key_folder_it_is_given_where_a_mount_shows_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state" / "evidence.key"
    monkeypatch.setenv("PORTWRIGHT_EVIDENCE_KEY", str(path))
    with open_tmp() as base:
        wt, _ = make_worktree(base / "repos", owner=None)
        with BwrapSandbox(wt, config=BWRAP_LIMITS, key_dir=evidence_key_dir(),
                          log_dir=base / "logs") as box:
            assert path.parent.is_dir()
            args = box.command(["true"], {}, wt)
            assert str(path.parent.resolve()) not in args  # not in the view at all
            box._mounts.append(Mount(path.parent.parent.resolve(), read_only=True))
            args = box._binds()  # as if a mounted folder held the key's
            assert args[args.index(str(path.parent.resolve())) - 1] == "--tmpfs"


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(),
                    reason="no Docker engine answers (start dockerd; .ci/run does)")
def test_key_does_not_exist_in_docker(key_file: Path) -> None:
    with isolating_sandbox("docker", run_id="test-evidence-key") as box:
        res = box.exec(["sh", "-c", f"test -e {key_file} && echo key-present; "
                                    f"test -e {key_file.parent} && echo folder-present; "
                                    "echo checked"])
    assert res.ok, res.stderr_head
    assert res.stdout_head == "checked\n"
