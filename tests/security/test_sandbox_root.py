"""Attack: a worktree that belongs to root (a root CI runner, ``make demo`` as root).

Commands would run as uid 0 and could leave a setuid-root binary in the worktree for
the next host user to run. Instead they run as an unprivileged uid: the worktree is
handed to it while the sandbox is open and given back on close (or by ``sandbox prune``
after a crash), set-id bits are stripped after every command, and bubblewrap drops to
that uid before it creates its namespaces. Proven against bubblewrap and a real engine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from portwright.sandboxes import read_log
from portwright.sandboxes.ownership import UNPRIVILEGED_UID
from tests.conftest import docker_engine_running
from tests.sandboxes.conftest import (
    BACKENDS,
    make_worktree,
    new_sandbox,
    open_tmp,
    setid_files,
    tree_owners,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="only root can make a root-owned worktree")

SETID_ATTACK = ("cp /bin/sh x && chmod u+s x && cp /bin/sh y && chmod g+s y && "
                "mkdir -p deep/er && cp /bin/sh deep/er/z && chmod 6755 deep/er/z && "
                "ls -ln x y deep/er/z && echo planted")


@pytest.fixture
def root_worktree() -> Iterator[tuple[Path, Path, Path]]:
    with open_tmp() as base:
        wt, main = make_worktree(base / "repos", owner=None)
        assert wt.stat().st_uid == 0
        yield base, wt, main


def _root_owned(top: Path) -> set[str]:
    return {path for path, (uid, _) in tree_owners(top).items() if uid == 0}


@pytest.mark.parametrize("backend", BACKENDS)
def test_commands_in_a_root_owned_worktree_do_not_run_as_root(
        backend: str, root_worktree: tuple[Path, Path, Path]) -> None:
    base, wt, main = root_worktree
    with new_sandbox(backend, wt, base, run_id="test-root-uid", upstream=main) as sb:
        res = sb.exec(["sh", "-c", "id -u; id -g; id -G; git status --short --branch; "
                                   "mkdir -p build && g++ -o build/hello hello.cpp && "
                                   "build/hello"])
        assert res.ok, res.stderr_head
        uid, gid, groups, branch, hello = res.stdout_head.splitlines()
        assert uid != "0"
        assert gid != "0"
        assert "0" not in groups.split()
        assert branch.startswith("## run")
        assert hello == "hi"
        assert (wt / "build" / "hello").stat().st_uid != 0  # made by the command, not root


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_setid_binary_and_ownership_restored(
        backend: str, root_worktree: tuple[Path, Path, Path]) -> None:
    base, wt, main = root_worktree
    before = tree_owners(wt)
    root_before = _root_owned(wt)
    with new_sandbox(backend, wt, base, run_id="test-root-setid", upstream=main) as sb:
        res = sb.exec(["sh", "-c", SETID_ATTACK])
        assert res.ok, res.stderr_head
        assert res.stdout_head.splitlines()[-1] == "planted"
        # after the command, before close: no set-id file, nothing new owned by root
        assert setid_files(wt) == []
        assert _root_owned(wt) <= root_before
        second = sb.exec(["sh", "-c", "chmod u+s x 2>&1; ls -ln x"])
        assert setid_files(wt) == [], second.stdout_head
    after = tree_owners(wt)
    for path, owner in before.items():
        assert after[path] == owner, path
    for path in set(after) - set(before):
        assert after[path] == before["."], path  # what commands made is the owner's now
    assert setid_files(wt) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_host_git_works_while_the_worktree_is_handed_over(
        backend: str, root_worktree: tuple[Path, Path, Path]) -> None:
    """The run's host side keeps using git on the worktree while its sandbox is open: the
    repository's top folder stays root's (git refuses one another uid owns)."""
    base, wt, main = root_worktree
    with new_sandbox(backend, wt, base, run_id="test-host-git", upstream=main) as sb:
        assert sb.exec(["sh", "-c", "echo new > made.txt && mkdir -p d && echo x > d/y"]).ok
        status = subprocess.run(["git", "status", "--porcelain"], cwd=wt, capture_output=True,
                                text=True, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1",
                                                "HOME": str(base)})
        assert status.returncode == 0, status.stderr
        assert "?? made.txt" in status.stdout
        assert (wt / "made.txt").stat().st_uid == UNPRIVILEGED_UID
    assert (wt / "made.txt").stat().st_uid == 0


@pytest.mark.bwrap
@pytest.mark.parametrize("backend", [BACKENDS[0]])
def test_bwrap_mounts_are_nosuid_nodev(backend: str,
                                       root_worktree: tuple[Path, Path, Path]) -> None:
    base, wt, main = root_worktree
    with new_sandbox(backend, wt, base, run_id="test-nosuid", upstream=main) as sb:
        res = sb.exec(["cat", "/proc/self/mountinfo"])
    assert res.ok
    assert res.log_path is not None
    out, _ = read_log(Path(res.log_path))
    mounts = {line.split()[4]: line.split()[5] for line in out.decode().splitlines()}
    for path in (wt, wt / ".git", main):
        options = mounts[str(path)].split(",")
        assert "nosuid" in options, (path, options)
        assert "nodev" in options, (path, options)


_OWNER_SCRIPT = """
import sys, time
from pathlib import Path
from portwright.config import SandboxConfig
from portwright.runs.keys import evidence_key_dir
from portwright.sandboxes.docker import DockerSandbox
sb = DockerSandbox(Path(sys.argv[1]), config=SandboxConfig(memory="128m"), run_id=sys.argv[2],
                   key_dir=evidence_key_dir(), log_dir=Path(sys.argv[3]))
sb.__enter__()
print(sb.exec(["sh", "-c", "touch made-by-command && id -u"]).stdout_head.strip(), flush=True)
time.sleep(300)
"""


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_prune_gives_a_crashed_runs_worktree_back(
        root_worktree: tuple[Path, Path, Path]) -> None:
    import docker

    from portwright.sandboxes.docker import LABEL_RUN
    from portwright.sandboxes.prune import prune

    base, wt, _ = root_worktree
    before = tree_owners(wt)
    run_id = f"test-prune-owner-{os.getpid()}"
    proc = subprocess.Popen([sys.executable, "-c", _OWNER_SCRIPT, str(wt), run_id,
                             str(base / "logs")], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).parents[2])
    client = docker.from_env()
    flt = {"label": f"{LABEL_RUN}={run_id}"}
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == str(UNPRIVILEGED_UID)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert (wt / "hello.cpp").stat().st_uid == UNPRIVILEGED_UID  # left handed over
        assert wt.stat().st_gid == UNPRIVILEGED_UID  # its top folder: the commands' group
        report = prune(client=client)
        assert run_id in report.removed
        assert str(wt) in report.restored
        after = tree_owners(wt)
        for path, owner in before.items():
            assert after[path] == owner, path
        assert after["made-by-command"] == before["."]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        for container in client.containers.list(all=True, filters=flt):
            container.remove(force=True)
        client.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_hard_link_does_not_hand_over_its_other_names(
        backend: str, root_worktree: tuple[Path, Path, Path]) -> None:
    """A file linked from outside the worktree (a package store, a compiler cache) is not
    handed to the commands' uid: they cannot write through it into the store."""
    base, wt, main = root_worktree
    store = base / "store"
    store.mkdir()
    shared = store / "package.js"
    shared.write_text("module.exports = 1;\n")
    os.link(shared, wt / "package.js")
    with new_sandbox(backend, wt, base, run_id="test-hard-link", upstream=main) as sb:
        res = sb.exec(["sh", "-c", "echo 'pwned()' >> package.js 2>/dev/null && echo wrote; "
                                   "rm package.js && echo 'module.exports = 2;' > package.js "
                                   "&& echo replaced"])
    assert res.ok, res.stderr_head
    assert res.stdout_head.splitlines() == ["replaced"]
    assert shared.read_text() == "module.exports = 1;\n"
    assert shared.stat().st_uid == 0


@pytest.mark.bwrap
@pytest.mark.parametrize("backend", [BACKENDS[0]])
def test_bwrap_that_cannot_drop_root_refuses_and_says_why(backend: str,
                                                          tmp_path: Path) -> None:
    """bubblewrap cannot set up as the unprivileged uid when the worktree lies under a
    folder only root may enter (pytest's own base folder is one): it refuses to open rather
    than run the commands as root, and gives the worktree back."""
    from portwright.errors import SandboxError

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    wt, main = make_worktree(private / "repos", owner=None)
    private.chmod(0o700)
    before = tree_owners(wt)
    with pytest.raises(SandboxError, match=f"uid {UNPRIVILEGED_UID}.*never as root") as info, \
            new_sandbox(backend, wt, tmp_path, run_id="test-no-drop", upstream=main):
        pass
    assert info.value.fix is not None
    assert "enter" in info.value.fix
    assert tree_owners(wt) == before


def test_host_walks_do_not_follow_a_folder_swapped_for_a_link(tmp_path: Path) -> None:
    """While the host hands the worktree over, gives it back or strips set-id bits, a
    process of another sandbox on the same worktree (a crashed run's container still
    running) swaps a folder for a link to somewhere else, over and over: no change may land
    outside the worktree."""
    import threading

    from portwright.sandboxes.ownership import (
        Identity,
        give_back,
        hand_over,
        strip_setid,
    )

    outside = tmp_path / "outside"
    outside.mkdir()
    setuid_tool = outside / "passwd"
    setuid_tool.write_text("#!/bin/sh\n")
    setuid_tool.chmod(0o4755)
    secret = outside / "shadow"
    secret.write_text("root:x:\n")
    secret.chmod(0o600)
    wt = tmp_path / "wt"
    (wt / "d").mkdir(parents=True)
    for name in ("passwd", "shadow", "other"):
        (wt / "d" / name).write_text("")
    identity = Identity(UNPRIVILEGED_UID, UNPRIVILEGED_UID, 0, 0)
    stop = threading.Event()

    def swap() -> None:
        folder, real, link = wt / "d", wt / "d.real", wt / "d"
        while not stop.is_set():
            try:
                folder.rename(real)
                link.symlink_to(outside)
                time.sleep(0.001)  # long enough for a walk to step in
                link.unlink()
                real.rename(folder)
            except OSError:
                continue

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            hand_over(wt, identity)
            strip_setid(wt)
            give_back(wt, identity)
    finally:
        stop.set()
        swapper.join()
    for path in (setuid_tool, secret):
        assert path.stat().st_uid == 0, path
        assert path.stat().st_gid == 0, path
    assert setuid_tool.stat().st_mode & 0o7777 == 0o4755
    assert secret.stat().st_mode & 0o7777 == 0o600
