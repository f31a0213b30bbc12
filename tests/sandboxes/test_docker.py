"""DockerSandbox against the real engine: each guarantee of the issue, proven.

Those it shares with the bubblewrap backend are in test_isolation."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from portwright.errors import ImageMissing, SandboxDied
from portwright.runs.keys import evidence_key_dir
from portwright.sandboxes import read_log
from portwright.sandboxes.docker import LABEL_RUN, DockerSandbox
from tests.conftest import docker_engine_running
from tests.sandboxes.conftest import DOCKER_LIMITS as LIMITS
from tests.sandboxes.conftest import OWNER, isolating_sandbox, make_worktree

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(not docker_engine_running(),
                       reason="no Docker engine answers (start dockerd; .ci/run does)"),
]


@pytest.fixture(scope="module")
def box() -> Iterator[DockerSandbox]:
    with isolating_sandbox("docker", run_id="test-docker") as sb:
        assert isinstance(sb, DockerSandbox)
        yield sb


def _user_processes(sb: DockerSandbox) -> list[str]:
    """Processes in the container other than init, its sleep, and this ps."""
    res = sb.exec(["ps", "-eo", "user:12,pid,args", "--no-headers"])
    return [line for line in res.stdout_head.splitlines()
             if "docker-init" not in line and "sleep infinity" not in line
             and "ps -eo" not in line and "portwright-exec ps" not in line]


def _sh(sb: DockerSandbox, script: str, **kw: float) -> tuple[int, str, str]:
    res = sb.exec(["sh", "-c", script], **kw)  # type: ignore[arg-type]
    return res.exit_code, res.stdout_head, res.stderr_head


def test_runs_as_worktree_owner_and_git_works(box: DockerSandbox) -> None:
    code, out, err = _sh(box, "id -u; id -g; git status --short --branch")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[:2] == [str(OWNER), str(OWNER)]
    assert lines[2].startswith("## run")


def test_built_files_are_owned_by_host_user(box: DockerSandbox) -> None:
    res = box.exec(["sh", "-c", "mkdir -p build && g++ -o build/hello hello.cpp && build/hello"])
    assert res.ok, res.stderr_head
    assert res.stdout_head == "hi\n"
    built = box.worktree / "build" / "hello"
    assert built.stat().st_uid == OWNER
    assert built.stat().st_gid == OWNER


def _bridge_address() -> str:
    import docker

    client = docker.from_env()
    try:
        config = client.networks.get("bridge").attrs["IPAM"]["Config"][0]
        if "Gateway" in config:
            return str(config["Gateway"])
        return str(ipaddress.ip_network(config["Subnet"])[1])
    finally:
        client.close()


def test_no_network(box: DockerSandbox) -> None:
    host_ip = _bridge_address()
    server = socket.socket()
    server.bind((host_ip, 0))
    server.listen()
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    probe = textwrap.dedent(f"""
        import socket
        results = []
        for target in [("{host_ip}", {port}), ("1.1.1.1", 53), ("8.8.8.8", 443)]:
            try:
                socket.create_connection(target, timeout=2).close()
                results.append("connected " + str(target))
            except OSError as exc:
                results.append("refused " + type(exc).__name__)
        try:
            socket.getaddrinfo("deb.debian.org", 80)
            results.append("resolved")
        except OSError as exc:
            results.append("dns failed " + type(exc).__name__)
        print(sorted(name for _, name in socket.if_nameindex()))
        print("\\n".join(results))
    """)
    try:
        res = box.exec(["python3", "-c", probe])
    finally:
        stop.set()
        thread.join()
        server.close()
    assert res.ok, res.stderr_head
    lines = res.stdout_head.splitlines()
    assert lines[0] == "['lo']"
    assert all(not line.startswith("connected") for line in lines[1:]), lines
    assert lines[-1].startswith("dns failed")
    assert accepted == []


def test_fork_bomb_stops_at_pids_limit_and_sandbox_recovers(box: DockerSandbox) -> None:
    start = time.monotonic()
    res = box.exec(["bash", "-c", "bomb() { bomb | bomb; }; bomb"], timeout=4)
    assert time.monotonic() - start < 15
    assert not res.ok
    assert "Resource temporarily unavailable" in res.stderr_head + res.stderr_tail
    after = box.exec(["sh", "-c", "echo alive"])
    assert after.ok, after
    assert after.stdout_head == "alive\n"
    assert _user_processes(box) == []


def test_memory_hog_is_out_of_memory_and_sandbox_recovers(box: DockerSandbox) -> None:
    hog = "b = bytearray(0)\nwhile True: b += b'x' * (16 << 20)\n"
    res = box.exec(["python3", "-c", hog], timeout=30)
    assert res.oom_killed
    assert res.exit_code == 137
    assert not res.timed_out
    after = box.exec(["python3", "-c", "print(len(bytearray(32 << 20)))"])
    assert after.ok
    assert not after.oom_killed
    assert after.stdout_head == f"{32 << 20}\n"


def test_timeout_kills_setsid_escapee(box: DockerSandbox) -> None:
    start = time.monotonic()
    res = box.exec(["sh", "-c", "setsid sh -c 'while :; do :; done' & "
                                "setsid sleep 1000 & while :; do :; done"], timeout=1)
    assert res.timed_out
    assert res.exit_code == 137
    assert time.monotonic() - start < 5
    assert _user_processes(box) == []
    assert box.exec(["true"]).ok


def test_background_daemon_does_not_outlive_command(box: DockerSandbox) -> None:
    start = time.monotonic()
    res = box.exec(["sh", "-c", "nohup sleep 300 >/dev/null 2>&1 & "
                                "setsid sleep 301 >/dev/null 2>&1 & "
                                "(sleep 302 &) ; echo started"])
    assert res.ok
    assert res.stdout_head == "started\n"
    assert time.monotonic() - start < 5
    assert _user_processes(box) == []


def test_output_cap_kills_command(tmp_path: Path) -> None:
    wt, _ = make_worktree(tmp_path / "repos")
    config = LIMITS.model_copy(update={"output_cap": 1 << 20})
    with DockerSandbox(wt, config=config, run_id="test-cap", key_dir=evidence_key_dir(),
                       log_dir=tmp_path / "logs") as sb:
        res = sb.exec(["sh", "-c", "yes"], timeout=30)
        assert res.capped
        assert not res.timed_out
        assert res.log_path is not None
        assert len(read_log(Path(res.log_path))[0]) == 1 << 20
        assert sb.exec(["true"]).ok


def test_missing_image_says_how_to_build(tmp_path: Path) -> None:
    wt, _ = make_worktree(tmp_path / "repos")
    config = LIMITS.model_copy(update={"image": "portwright/no-such-image:never"})
    with pytest.raises(ImageMissing, match="docker build"), \
            DockerSandbox(wt, config=config, run_id="t", key_dir=evidence_key_dir(),
                          log_dir=tmp_path / "l"):
        pass


_OWNER_SCRIPT = """
import sys, time
from pathlib import Path
from portwright.config import SandboxConfig
from portwright.runs.keys import evidence_key_dir
from portwright.sandboxes.docker import DockerSandbox
sb = DockerSandbox(Path(sys.argv[1]), config=SandboxConfig(memory="128m"), run_id=sys.argv[2],
                   key_dir=evidence_key_dir(), log_dir=Path(sys.argv[3]))
sb.__enter__()
print("ready", flush=True)
time.sleep(300)
"""


def test_prune_removes_container_of_killed_run(tmp_path: Path) -> None:
    import docker

    from portwright.sandboxes.prune import prune

    wt, _ = make_worktree(tmp_path / "repos")
    run_id = f"test-prune-{os.getpid()}"
    proc = subprocess.Popen([sys.executable, "-c", _OWNER_SCRIPT, str(wt), run_id,
                             str(tmp_path / "logs")], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).parents[2])
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    client = docker.from_env()
    try:
        flt = {"label": f"{LABEL_RUN}={run_id}"}
        assert len(client.containers.list(filters=flt)) == 1
        assert run_id not in prune(client=client).removed  # its owner still runs
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert len(client.containers.list(filters=flt)) == 1  # SIGKILL leaves it behind
        assert run_id in prune(client=client).removed
        assert client.containers.list(all=True, filters=flt) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        for container in client.containers.list(all=True, filters=flt):
            container.remove(force=True)
        client.close()


def test_full_tmp_is_a_clear_result(box: DockerSandbox) -> None:
    res = box.exec(["sh", "-c", "dd if=/dev/zero of=/tmp/fill bs=1M count=100; rc=$?; "
                                "rm -f /tmp/fill; exit $rc"])
    assert res.exit_code != 0
    assert "No space left on device" in res.stderr_head
    assert box.exec(["true"]).ok


def test_dead_container_raises_sandbox_died(tmp_path: Path) -> None:
    wt, _ = make_worktree(tmp_path / "repos")
    with DockerSandbox(wt, config=LIMITS, run_id="test-died", key_dir=evidence_key_dir(),
                       log_dir=tmp_path / "l") as sb:
        assert sb.container is not None
        container = sb.container
        killer = threading.Timer(0.5, container.kill)
        killer.start()
        with pytest.raises(SandboxDied, match=r"exited|vanished|is |gone"):
            sb.exec(["sleep", "30"])  # the container dies under the command
        killer.join()
        with pytest.raises(SandboxDied):
            sb.exec(["true"])


def test_setup_is_built_into_the_image_not_run_per_sandbox(tmp_path: Path) -> None:
    """Docker builds [sandbox] setup into the environment image (as root, once); a new
    sandbox runs none of it (the worktree is its owner's; git on the host reads it)."""
    import docker

    from portwright.sandboxes.envimage import LABEL_REPO, EnvSource, read_spec

    wt, _ = make_worktree(tmp_path / "repos", owner=None)
    config = LIMITS.model_copy(update={"setup": ["id -u > /opt/who; date +%s%N >> /opt/who"]})
    source = EnvSource(wt, state_dir=tmp_path / "state")
    name = read_spec(config, source).name
    client = docker.from_env()
    try:
        with DockerSandbox(wt, config=config, run_id="test-setup", key_dir=evidence_key_dir(),
                           log_dir=tmp_path / "l",
                           source=source) as sb:
            assert sb.setup_results == []
            first = sb.exec(["cat", "/opt/who"]).stdout_head
        assert first.startswith("0\n")  # built as root
        with DockerSandbox(wt, config=config, run_id="test-setup-2", key_dir=evidence_key_dir(),
                           log_dir=tmp_path / "l",
                           source=source) as sb:
            assert sb.exec(["cat", "/opt/who"]).stdout_head == first  # the same image
    finally:
        for image in client.images.list(filters={"label": f"{LABEL_REPO}={name}"}):
            client.images.remove(image.id, force=True)
        client.close()
