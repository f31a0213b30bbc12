"""BwrapSandbox: the guarantees bubblewrap can give, proven against the real tool.

Those it shares with the Docker backend are in test_isolation."""

from __future__ import annotations

import os
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from portwright.sandboxes.bwrap import BwrapSandbox
from tests.conftest import bwrap_works
from tests.sandboxes.conftest import OWNER, isolating_sandbox

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is missing or cannot run here"),
]

AS_ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def box() -> Iterator[BwrapSandbox]:
    with isolating_sandbox("bwrap", run_id="test-bwrap") as sb:
        assert isinstance(sb, BwrapSandbox)
        yield sb


def _host_processes(marker: str) -> list[int]:
    """Host pids whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry.name))
    return found


def test_runs_as_owner_files_owned_git_works(box: BwrapSandbox) -> None:
    res = box.exec(["sh", "-c", "id -u; git status --short --branch; "
                                "mkdir -p build && g++ -o build/hello hello.cpp && build/hello"])
    assert res.ok, res.stderr_head
    lines = res.stdout_head.splitlines()
    expected = OWNER if AS_ROOT else os.getuid()
    assert lines[0] == str(expected)
    assert lines[1].startswith("## run")
    assert lines[2] == "hi"
    assert (box.worktree / "build" / "hello").stat().st_uid == expected


def test_no_network(box: BwrapSandbox) -> None:
    probe = textwrap.dedent("""
        import socket
        out = [str(sorted(n for _, n in socket.if_nameindex()))]
        for target in [("1.1.1.1", 53), ("172.17.0.1", 22), ("10.0.0.1", 80)]:
            try:
                socket.create_connection(target, timeout=2).close()
                out.append("connected")
            except OSError as exc:
                out.append("refused " + type(exc).__name__)
        try:
            socket.getaddrinfo("deb.debian.org", 80)
            out.append("resolved")
        except OSError:
            out.append("dns failed")
        print("\\n".join(out))
    """)
    res = box.exec(["python3", "-c", probe])
    assert res.ok, res.stderr_head
    lines = res.stdout_head.splitlines()
    assert lines[0] == "['lo']"
    assert "connected" not in lines
    assert lines[-1] == "dns failed"


def test_fork_bomb_is_stopped_and_sandbox_recovers(box: BwrapSandbox) -> None:
    start = time.monotonic()
    res = box.exec(["bash", "-c", "bomb() { bomb | bomb; }; bomb"], timeout=3)
    assert time.monotonic() - start < 15
    assert not res.ok
    if box.uid != 0:  # RLIMIT_NPROC binds every user but root
        assert "Resource temporarily unavailable" in res.stderr_head + res.stderr_tail
    after = box.exec(["sh", "-c", "echo alive; ps -e --no-headers | wc -l"])
    assert after.ok
    assert after.stdout_head.splitlines()[0] == "alive"


def test_memory_hog_is_stopped_and_sandbox_recovers(box: BwrapSandbox) -> None:
    hog = "b = bytearray(0)\nwhile True: b += b'x' * (16 << 20)\n"
    res = box.exec(["python3", "-c", hog], timeout=30)
    assert not res.ok
    assert not res.timed_out
    assert "MemoryError" in res.stderr_head + res.stderr_tail
    after = box.exec(["python3", "-c", "print(len(bytearray(32 << 20)))"])
    assert after.ok
    assert after.stdout_head == f"{32 << 20}\n"


def test_timeout_kills_setsid_escapee(box: BwrapSandbox) -> None:
    start = time.monotonic()
    res = box.exec(["sh", "-c", "setsid sleep 1234 & setsid sh -c 'while :; do :; done' & "
                                "while :; do :; done"], timeout=1)
    assert res.timed_out
    assert time.monotonic() - start < 5
    time.sleep(0.2)
    assert _host_processes("sleep 1234") == []
    assert box.exec(["true"]).ok


def test_background_daemon_does_not_outlive_command(box: BwrapSandbox) -> None:
    start = time.monotonic()
    res = box.exec(["sh", "-c", "nohup sleep 2345 >/dev/null 2>&1 & "
                                "setsid sleep 2346 >/dev/null 2>&1 & (sleep 2347 &); echo ok"])
    assert res.ok
    assert time.monotonic() - start < 5
    time.sleep(0.2)
    for marker in ("sleep 2345", "sleep 2346", "sleep 2347"):
        assert _host_processes(marker) == []


def test_node_starts_under_the_memory_limit(box: BwrapSandbox) -> None:
    import shutil

    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    res = box.exec(["node", "-e", "console.log(Buffer.alloc(64 << 20).length)"])
    assert res.ok, res.stderr_head
    assert res.stdout_head == f"{64 << 20}\n"
