"""Attack: outlive the command, wedge the sandbox, or wedge ``sandbox prune``.

- a daemon that kills the wrapper shell meant to clean up after the command;
- a container the engine cannot inspect in time (its lock held by a stalled copy);
- a thaw refused by the engine after a timeout kill froze the container;
- a paused container left behind by a process that died.

Proven against a real Docker engine (and bubblewrap where it applies).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from portwright.errors import SandboxDied
from portwright.runs.keys import evidence_key_dir
from portwright.sandboxes.docker import (
    LABEL_HOST,
    LABEL_OWNER,
    LABEL_RUN,
    DockerSandbox,
    owner_token,
)
from tests.conftest import docker_engine_running
from tests.sandboxes.conftest import BACKENDS, isolating_sandbox, make_worktree, open_tmp

DAEMONS = [
    pytest.param("setsid sleep 4711 >/dev/null 2>&1 & sleep 0.2; kill -9 $PPID", id="setsid"),
    pytest.param("kill -9 $PPID; exec sleep 4711", id="holds-output"),  # Docker only
    pytest.param("(trap '' HUP TERM; nohup sleep 4711 </dev/null >/dev/null 2>&1 &); "
                 "kill -TERM $PPID; kill -9 $PPID", id="nohup"),
]


def _survivors(sb: Any) -> list[str]:
    """Processes of the command user still running after the command (seen from outside)."""
    if isinstance(sb, DockerSandbox):
        assert sb.container is not None
        assert sb._client is not None
        top = sb._client.api.top(sb.container.id, ps_args="-eo pid,uid,args")
        return [" ".join(row) for row in top.get("Processes") or []
                if int(row[1]) == sb.uid]
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                if "sleep 4711" in cmdline:
                    found.append(cmdline)
    return found


@pytest.mark.parametrize("script", DAEMONS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_daemon_that_kills_its_wrapper_does_not_survive(backend: str, script: str) -> None:
    if backend == "bwrap" and "exec sleep" in script:
        pytest.skip("bubblewrap has no wrapper shell: $PPID is its pid namespace's init, "
                    "which ignores the signal, and the command simply sleeps")
    with isolating_sandbox(backend, run_id="test-wrapper-killer") as sb:
        start = time.monotonic()
        sb.exec(["sh", "-c", script], timeout=20)
        assert time.monotonic() - start < 10
        assert _survivors(sb) == []
        assert sb.exec(["true"]).ok


# -- sandbox prune against an engine that cannot answer for a container ---------------


def _dead_owner() -> str:
    proc = subprocess.Popen(["sleep", "30"])
    token = owner_token(proc.pid)
    proc.kill()
    proc.wait()
    return token


@pytest.fixture
def docker_client() -> Iterator[Any]:
    import docker

    client = docker.from_env()
    try:
        yield client
    finally:
        client.close()


def _leftover(client: Any, run_id: str, *, owner: str) -> Any:
    """A sandbox-labelled container as a run on this host would have left it."""
    return client.containers.run(
        "portwright/base:bookworm", ["sleep", "infinity"], detach=True, init=True,
        network_mode="none", labels={LABEL_RUN: run_id, LABEL_OWNER: owner,
                                     LABEL_HOST: socket.gethostname()})


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_prune_skips_a_container_it_cannot_inspect(docker_client: Any, tmp_path: Path) -> None:
    from portwright.sandboxes.prune import prune

    run_id = f"test-prune-stuck-{os.getpid()}"
    container = _leftover(docker_client, run_id, owner=_dead_owner())
    try:
        # a copy out of the container that nobody reads holds the container's lock in the
        # engine: inspecting or removing it waits until the copy ends
        stream, _ = docker_client.api.get_archive(container.id, "/usr")
        started = time.monotonic()
        cli = subprocess.run([sys.executable, "-m", "portwright", "-C", str(tmp_path),
                              "sandbox", "prune", "--timeout", "2"],
                             capture_output=True, text=True, timeout=120,
                             cwd=Path(__file__).parents[2])
        assert time.monotonic() - started < 60
        assert "Traceback" not in cli.stderr
        assert cli.returncode == 0, cli.stderr
        assert f"skipped the sandbox of run {run_id}" in cli.stdout + cli.stderr
        report = prune(client=docker_client, timeout=2)
        assert run_id not in report.removed
        assert any(run_id in skipped for skipped in report.skipped)
        del stream  # the copy ends; the engine answers again
        for _ in range(50):
            report = prune(client=docker_client, timeout=10)
            if run_id in report.removed:
                break
            time.sleep(0.2)
        assert run_id in report.removed
    finally:
        with contextlib.suppress(Exception):
            container.remove(force=True)


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_prune_reaps_paused_leftovers_but_not_a_live_runs(docker_client: Any) -> None:
    from portwright.sandboxes.prune import prune

    dead_id, live_id = (f"test-prune-paused-{kind}-{os.getpid()}" for kind in ("dead", "live"))
    dead = _leftover(docker_client, dead_id, owner=_dead_owner())
    live = _leftover(docker_client, live_id, owner=owner_token())
    try:
        dead.pause()
        live.pause()  # e.g. frozen for a moment while its run kills a timed-out command
        report = prune(client=docker_client)
        assert dead_id in report.removed
        assert live_id not in report.removed
        live.reload()
        assert live.status == "paused"
    finally:
        for container in (dead, live):
            with contextlib.suppress(Exception):
                container.remove(force=True)



@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_prune_leaves_a_live_runs_container_between_create_and_start(
        docker_client: Any) -> None:
    """Two runs with the same id at once (two `make demo` side by side): the one that
    starts reaps the dead sandboxes of its id, and must not take the other's container in
    the moment between its create and its start."""
    from portwright.sandboxes.prune import prune

    dead_id, live_id = (f"test-prune-created-{kind}-{os.getpid()}" for kind in ("dead", "live"))
    made = [docker_client.containers.create(
        "portwright/base:bookworm", ["sleep", "infinity"], init=True, network_mode="none",
        labels={LABEL_RUN: run_id, LABEL_OWNER: owner, LABEL_HOST: socket.gethostname()})
        for run_id, owner in ((dead_id, _dead_owner()), (live_id, owner_token()))]
    try:
        report = prune(client=docker_client, run_id=live_id)
        assert live_id not in report.removed
        made[1].start()
        made[1].reload()
        assert made[1].status == "running"
        assert dead_id in prune(client=docker_client, run_id=dead_id).removed
    finally:
        for container in made:
            with contextlib.suppress(Exception):
                container.remove(force=True)

# -- a thaw the engine refuses ---------------------------------------------------------


class RefusingEngine:
    """A proxy in front of the real engine's socket that refuses to thaw containers.

    Every request gets its own connection (``Connection: close``), so each one is seen;
    ``POST …/containers/ID/unpause`` is answered ``500`` and everything else is forwarded
    byte for byte (exec streams included).
    """

    UNPAUSE = re.compile(rb"^POST /(v[\d.]+/)?containers/[^/ ]+/unpause[ ?]")

    def __init__(self, engine: str, path: Path) -> None:
        self.engine = engine
        self.path = path
        self.refused = 0
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen(64)
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(65536)
            if not chunk:
                client.close()
                return
            head += chunk
        if self.UNPAUSE.match(head):
            self.refused += 1
            body = b'{"message":"refused by the test engine"}'
            client.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: "
                           b"application/json\r\nConnection: close\r\nContent-Length: "
                           + str(len(body)).encode() + b"\r\n\r\n" + body)
            client.close()
            return
        if b"upgrade" not in head.split(b"\r\n\r\n")[0].lower():
            head = re.sub(rb"(?im)^connection:[^\r\n]*\r\n", b"", head, count=1)
            head = head.replace(b"\r\n", b"\r\nConnection: close\r\n", 1)
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.connect(self.engine)
        upstream.sendall(head)

        def pump(src: socket.socket, dst: socket.socket) -> None:
            with contextlib.suppress(OSError):
                while data := src.recv(65536):
                    dst.sendall(data)
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

        back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
        back.start()
        pump(client, upstream)
        back.join()
        client.close()
        upstream.close()


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_a_refused_thaw_removes_the_container(monkeypatch: pytest.MonkeyPatch,
                                              docker_client: Any) -> None:
    from tests.sandboxes.conftest import DOCKER_LIMITS

    engine = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix(
        "unix://")
    run_id = f"test-refused-thaw-{os.getpid()}"
    with open_tmp() as base:
        proxy = RefusingEngine(engine, base / "engine.sock")
        monkeypatch.setenv("DOCKER_HOST", f"unix://{proxy.path}")
        wt, _ = make_worktree(base / "repos")
        try:
            with DockerSandbox(wt, config=DOCKER_LIMITS, run_id=run_id,
                               key_dir=evidence_key_dir(), log_dir=base / "logs") as sb:
                assert sb.exec(["true"]).ok
                with pytest.raises(SandboxDied, match="thaw"):
                    sb.exec(["sleep", "30"], timeout=1)
                assert proxy.refused >= 1
                # removed at once, not left frozen until the run closes its sandbox
                flt = {"label": f"{LABEL_RUN}={run_id}"}
                assert docker_client.containers.list(all=True, filters=flt) == []
                with pytest.raises(SandboxDied):
                    sb.exec(["true"])
        finally:
            proxy.close()
            for container in docker_client.containers.list(
                    all=True, filters={"label": f"{LABEL_RUN}={run_id}"}):
                container.remove(force=True)
