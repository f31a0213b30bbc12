"""Attack: read or write what bubblewrap shows of the host.

Binding the host root read-only (``--ro-bind / /``) would show the engine's socket (root
on the host to whoever can write to it), home folders with their ``.ssh``,
``/etc/shadow`` and the evidence key. The sandbox shows a minimal read-only view instead:
``/usr``, the ``/lib*`` and ``/bin`` links, a selected ``/etc``, a fresh ``/dev``,
``/proc`` (``/proc/sys`` read-only) and ``/tmp``, and the run's own folders.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from portwright.runs.keys import evidence_key
from portwright.sandboxes.bwrap import BwrapSandbox
from tests.conftest import bwrap_works
from tests.sandboxes.conftest import isolating_sandbox

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is missing or cannot run here"),
]


@pytest.fixture(scope="module")
def box() -> Iterator[BwrapSandbox]:
    with isolating_sandbox("bwrap", run_id="test-bwrap-view") as sb:
        assert isinstance(sb, BwrapSandbox)
        yield sb


def _absent(box: BwrapSandbox, paths: list[str]) -> list[str]:
    """Those of ``paths`` the command can see (by any means: exists, or is a dangling link)."""
    script = "".join(f"if [ -e '{p}' ] || [ -L '{p}' ]; then echo '{p}'; fi; " for p in paths)
    res = box.exec(["sh", "-c", script + "true"])
    assert res.ok, res.stderr_head
    return res.stdout_head.splitlines()


def _homes() -> list[str]:
    homes = {"/root", "/home", str(Path.home())}
    for variable in ("SUDO_USER", "USER", "LOGNAME"):
        name = os.environ.get(variable)
        if name:
            with contextlib.suppress(KeyError):
                homes.add(pwd.getpwnam(name).pw_dir)
    homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    return sorted(homes)


def test_engine_socket_is_not_there(box: BwrapSandbox) -> None:
    assert _absent(box, ["/var/run/docker.sock", "/run/docker.sock", "/var/run", "/run",
                         "/var/lib/docker", "/run/containerd"]) == []


def test_home_folders_are_not_there(box: BwrapSandbox) -> None:
    homes = _homes()
    assert _absent(box, homes + [f"{home}/.ssh" for home in homes]) == []


def test_secrets_of_etc_are_not_there(box: BwrapSandbox) -> None:
    assert _absent(box, ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d",
                         "/etc/ssh", "/etc/ssl/private", "/etc/docker"]) == []
    res = box.exec(["sh", "-c", "cat /etc/shadow; echo rc=$?; id -un 2>/dev/null; "
                                "ls /etc/alternatives >/dev/null && echo alternatives"])
    assert "rc=0" not in res.stdout_head
    assert "alternatives" in res.stdout_head  # the toolchain's links are there


def test_proc_sys_and_the_view_are_read_only(box: BwrapSandbox) -> None:
    res = box.exec(["sh", "-c",
                    "echo 1 > /proc/sys/kernel/sysrq 2>/dev/null && echo wrote-sysrq; "
                    "echo x > /proc/sys/kernel/hostname 2>/dev/null && echo wrote-hostname; "
                    "for p in /newfile /etc/newfile /usr/newfile /bin/newfile; do "
                    "touch $p 2>/dev/null && echo wrote $p; done; "
                    "grep -c '^proc /proc/sys proc ro,' /proc/self/mounts || true; "
                    "ls / | tr '\\n' ' '"])
    assert res.ok, res.stderr_head
    lines = res.stdout_head.splitlines()
    assert not any(line.startswith("wrote") for line in lines), lines
    assert lines[0] != "0"  # /proc/sys is mounted read-only
    shown = set(lines[-1].split())
    assert shown <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin",
                     "tmp", "usr"}, shown


@pytest.fixture
def key_outside_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The evidence key in ``/var/tmp`` (not under ``/tmp``, which the sandbox replaces)."""
    base = Path(tempfile.mkdtemp(prefix="portwright-key-view-", dir="/var/tmp"))
    try:
        path = base / "keys" / "evidence.key"
        monkeypatch.setenv("PORTWRIGHT_EVIDENCE_KEY", str(path))
        evidence_key()
        yield path
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_evidence_key_folder_is_not_there(key_outside_tmp: Path) -> None:
    with isolating_sandbox("bwrap", run_id="test-bwrap-key") as sb:
        assert isinstance(sb, BwrapSandbox)
        assert _absent(sb, [str(key_outside_tmp), str(key_outside_tmp.parent),
                            str(key_outside_tmp.parent.parent), "/var/tmp", "/var"]) == []


def test_the_probe_uses_the_same_view(box: BwrapSandbox) -> None:
    from portwright.sandboxes.view import etc_copy, probe_command

    with etc_copy() as etc:
        probe = probe_command("/usr/bin/bwrap", etc)
        assert not (etc / "shadow").exists()
        assert (etc / "passwd").read_bytes() == Path("/etc/passwd").read_bytes()
    assert ("/", "/") not in list(itertools.pairwise(probe))
    command = box.command(["true"], {}, box.worktree)
    probe_view = [a for a in probe if a.startswith("--") or not a.startswith("/tmp/")]
    for arg in probe_view[1: probe_view.index("--tmpfs")]:  # the view and the kernel's
        assert arg in command, arg
    for flag in ("--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
                 "--disable-userns", "--remount-ro"):
        assert flag in probe
        assert flag in command
