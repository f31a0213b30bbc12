"""Real runs, a real `portwright serve`, a real browser.

Runs are started from the CLI in subprocesses (the real graph, the real Docker sandbox,
the real openai SDK against a local scripted endpoint); the server is `portwright serve`
in its own process; pages are driven with Playwright in Debian's own chromium
(``executable_path``, no browser download). Where CI promises the real components
(``PORTWRIGHT_REQUIRE_ENGINE=1``) a missing chromium or playwright fails, never skips.
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
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from pytest_httpserver import HTTPServer

from portwright.project import Project
from tests.conftest import GitRepo, docker_engine_running
from tests.workflows.conftest import CycleWorld, build_world
from tests.workflows.fake_server import model_config, serve_porter
from tests.workflows.porter import Plan

SECRET = "sk-porter-never-on-a-page-7f3a"
TOKEN = "t0ken-for-the-tests-0123456789abcdef"
"""The token every test server requires (``serve`` makes one when none is given)."""
AUTH = {"Authorization": f"Bearer {TOKEN}"}
"""The model API key the server's environment holds (it must never reach a page)."""
SCRIPT = "<script>window.__pwned = 1</script>"
"""Markup a model wrote into the gap verdict (and so into a transcript)."""


def _required() -> bool:
    return os.environ.get("PORTWRIGHT_REQUIRE_ENGINE") == "1"


def missing(what: str) -> None:
    """Skip, or fail where CI promises the real components."""
    if _required():
        pytest.fail(f"PORTWRIGHT_REQUIRE_ENGINE=1 but {what}")
    pytest.skip(what)


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        missing("chromium is missing (apt-get install chromium)")
    assert path is not None
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pw(repo: Path, *args: str, env: dict[str, str] | None = None,
       timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PORTER_KEY": SECRET, **(env or {})})


def last_json(text: str) -> dict[str, Any]:
    """The last JSON document printed (a run's outcome after its event lines)."""
    start = text.rindex("\n{\n") + 1 if "\n{\n" in text else 0
    return dict(json.loads(text[start:]))


@dataclass
class Server:
    """A `portwright serve` process."""

    url: str
    process: subprocess.Popen[str]

    def stop(self) -> str:
        """Stop it (SIGTERM, then SIGKILL); its output."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            out, _ = self.process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, _ = self.process.communicate()
        return out or ""


@contextlib.contextmanager
def serve(repo: Path, *args: str, host: str = "127.0.0.1",
          headers: dict[str, str] | None = None) -> Iterator[Server]:
    """`portwright serve` on a free port, waited for until it answers."""
    port = free_port()
    if not {"--token", "--token-file"} & set(args):
        args = (*args, "--token", TOKEN)
    process = subprocess.Popen(
        [sys.executable, "-m", "portwright", "-C", str(repo), "serve", "--host", host,
         "--port", str(port), *args],
        env={**os.environ, "PORTER_KEY": SECRET}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    server = Server(f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise AssertionError("serve exited: " + server.stop())
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(server.url + "/healthz", headers=headers, timeout=2).status_code \
                    == 200:
                break
        if time.monotonic() > deadline:
            raise AssertionError("serve never answered: " + server.stop())
        time.sleep(0.2)
    try:
        yield server
    finally:
        server.stop()


@dataclass
class WebWorld:
    world: CycleWorld
    plan: Plan
    server: Server

    @property
    def repo(self) -> Path:
        return self.world.repo

    def run_dir(self, run_id: str) -> Path:
        return Project.load(self.repo).run_dir(run_id)

    def status(self, run_id: str) -> dict[str, Any]:
        done = pw(self.repo, "status", run_id, "--json")
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))


ADVANCE = "adv-1"
"""Parked at approve_advance: red, green, gates, review and a diff to show."""
ASK = ("ask-reject", "ask-approve", "ask-edit")
"""Parked at approve_spec (they ask at the spec and again before advancing)."""
ASKING = 'spec = "always"\nadvance = "always"\npr = "never"\n'
ADVANCING = 'spec = "never"\nadvance = "always"\npr = "never"\n'



@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebWorld]:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")
    root = tmp_path_factory.mktemp("web")
    world = build_world(lambda name: GitRepo(root / name), approvals=ASKING)
    plan = world.plan()
    plan.gap["reasoning"] = f"alloc exists upstream only {SCRIPT}"
    model = HTTPServer(host="127.0.0.1", port=free_port())
    model.start()
    try:
        serve_porter(model, plan)
        config = (world.repo / "portwright.toml").read_text() + model_config(model)
        world.downstream.commit("model endpoint", {"portwright.toml": config})
        for run_id in ASK:  # each run obeys the config committed when it started
            # several runs of one row under way at once: --force
            done = pw(world.repo, "run", "kv-cache", "--run-id", run_id, "--force", "--json")
            assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
            assert last_json(done.stdout)["status"] == "waiting"
        world.downstream.commit("ask before advancing only", {
            "portwright.toml": config.replace(ASKING, ADVANCING)})
        done = pw(world.repo, "run", "kv-cache", "--run-id", ADVANCE, "--force", "--json")
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert last_json(done.stdout)["status"] == "waiting"
        with serve(world.repo) as server:
            yield WebWorld(world, plan, server)
    finally:
        model.clear()
        if model.is_running():
            model.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright is not installed (pip install -e '.[dev,web]')")
    path = chromium()
    with sync_playwright() as play:
        launched = play.chromium.launch(executable_path=path)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900},
                                  extra_http_headers=AUTH)
    opened = context.new_page()
    try:
        yield opened
    finally:
        context.close()
