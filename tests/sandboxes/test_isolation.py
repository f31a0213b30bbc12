"""The guarantees both isolating backends give alike, each proven against bubblewrap and
a real Docker engine. What only one backend gives is tested in test_bwrap / test_docker."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from portwright.sandboxes import read_log
from portwright.sandboxes.bwrap import BwrapSandbox
from portwright.sandboxes.docker import DockerSandbox
from tests.sandboxes.conftest import BACKENDS, isolating_sandbox


@pytest.fixture(scope="module", params=BACKENDS)
def box(request: pytest.FixtureRequest) -> Iterator[BwrapSandbox | DockerSandbox]:
    with isolating_sandbox(request.param, run_id="test-isolation") as sb:
        yield sb


def test_read_only_root_and_capped_tmp(box: BwrapSandbox | DockerSandbox) -> None:
    res = box.exec(["sh", "-c", "for p in /usr/bin/x /etc/x /x /var/x; do "
                                "touch $p 2>/dev/null && echo wrote $p; done; "
                                "touch /tmp/ok && echo tmp-ok; df -k /tmp | tail -1"])
    assert res.ok
    assert "wrote" not in res.stdout_head
    assert "tmp-ok" in res.stdout_head
    assert int(res.stdout_head.splitlines()[-1].split()[1]) <= 64 * 1024


def test_privileges_dropped(box: BwrapSandbox | DockerSandbox) -> None:
    res = box.exec(["grep", "-E", "^(CapEff|CapBnd|CapPrm|NoNewPrivs):", "/proc/self/status"])
    assert res.ok
    fields = dict(line.split(":\t") for line in res.stdout_head.splitlines())
    assert fields["CapEff"] == "0000000000000000"
    assert fields["CapPrm"] == "0000000000000000"
    assert fields["CapBnd"] == "0000000000000000"
    assert fields["NoNewPrivs"] == "1"


def test_50mb_on_each_stream_at_once(box: BwrapSandbox | DockerSandbox) -> None:
    script = textwrap.dedent("""
        import sys, threading
        def pump(stream, byte):
            block = byte * (1 << 20)
            for _ in range(50):
                stream.buffer.write(block)
            stream.flush()
        t = threading.Thread(target=pump, args=(sys.stderr, b"e"))
        t.start()
        pump(sys.stdout, b"o")
        t.join()
    """)
    start = time.monotonic()
    res = box.exec(["python3", "-c", script], timeout=60)
    assert res.ok, res.stderr_head
    assert time.monotonic() - start < 30
    size = 50 << 20
    assert res.stdout_bytes == size
    assert res.stderr_bytes == size
    assert res.stdout_head == "o" * 1024
    assert res.stdout_tail == "o" * 1024
    assert res.stderr_tail == "e" * 1024
    assert res.log_path is not None
    out, err = read_log(Path(res.log_path))
    assert len(out) == size
    assert len(err) == size
    assert out.count(b"o") == size
    assert err.count(b"e") == size


def test_host_secrets_do_not_reach_sandbox(box: BwrapSandbox | DockerSandbox,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret-value")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-host-secret")
    res = box.exec(["env"], env={"GIVEN": "yes"})
    assert res.ok
    assert "OPENAI_API_KEY" not in res.stdout_head
    assert "host-secret" not in res.stdout_head
    assert "GIVEN=yes" in res.stdout_head
    assert "HOME=/tmp/home" in res.stdout_head


def test_git_pointer_cannot_be_rewritten(box: BwrapSandbox | DockerSandbox) -> None:
    pointer = box.worktree / ".git"
    before = pointer.read_text()
    res = box.exec(["sh", "-c", "echo 'gitdir: /tmp/evil' > .git && echo rewrote; "
                                "rm -f .git 2>/dev/null && echo removed; "
                                f"touch {before.split()[1]}/../../evil 2>/dev/null "
                                "&& echo main-written; true"])
    assert res.ok
    assert "rewrote" not in res.stdout_head
    assert "removed" not in res.stdout_head
    assert "main-written" not in res.stdout_head
    assert pointer.read_text() == before


def test_upstream_is_read_only(box: BwrapSandbox | DockerSandbox) -> None:
    assert box.upstream is not None
    upstream = box.upstream
    res = box.exec(["sh", "-c", f"cat {upstream}/hello.cpp && "
                                f"(touch {upstream}/new 2>/dev/null && echo wrote; "
                                f"echo x >> {upstream}/hello.cpp 2>/dev/null && echo appended;"
                                " true)"])
    assert res.ok
    assert "#include <cstdio>" in res.stdout_head
    assert "wrote" not in res.stdout_head
    assert "appended" not in res.stdout_head
    assert not (upstream / "new").exists()


def test_missing_program_127_not_executable_126(box: BwrapSandbox | DockerSandbox) -> None:
    """A program that is not there exits 127, one that cannot be executed 126, as a shell
    reports them, on every backend (the local one too: test_local)."""
    missing = box.exec(["no-such-program-here", "--flag"])
    assert missing.exit_code == 127, missing.stderr_head
    assert "no-such-program-here" in missing.stderr_head
    assert box.exec(["./no-such-file"]).exit_code == 127
    assert box.exec(["/etc/passwd"]).exit_code == 126
    assert box.exec(["-n"]).exit_code == 127
    echoed = box.exec(["echo", "a b", "-n", "$HOME"])
    assert echoed.ok
    assert echoed.stdout_head == "a b -n $HOME\n"
