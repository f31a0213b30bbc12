"""Checkpoints in a real Postgres server (``[runs] checkpoint_url``): a run parked at an
approval in one process is answered from another, through the database."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from tests.conftest import GitRepo, docker_engine_running
from tests.workflows.test_cli import final, pw, world

pytestmark = [pytest.mark.docker, pytest.mark.postgres]


def postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


@contextmanager
def postgres_server(password: str | None = None) -> Iterator[str]:
    """A real Postgres server on a free loopback port, its superuser ``portwright``: the URL
    of its ``postgres`` database. Without ``password`` it trusts every connection; with one
    it asks for it (scram-sha-256), and the URL carries it."""
    bindir = postgres_bin()
    if bindir is None:
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    # outside pytest's private temp folder: the server's user must reach it
    folder = Path(tempfile.mkdtemp(prefix="portwright-pg-"))
    folder.chmod(0o777)
    data = folder / "data"
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run the server as the postgres user
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser")
        as_user = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    auth = ["-A", "trust"]
    if password is not None:
        (folder / "password").write_text(password + "\n")
        (folder / "password").chmod(0o644)
        auth = ["-A", "scram-sha-256", f"--pwfile={folder / 'password'}"]
    try:
        subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), *auth,
                        "-U", "portwright"], check=True, capture_output=True)
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l",
                        str(data.parent / "log"), "-o", f"-p {port} -k {data.parent} "
                        "-h 127.0.0.1", "start"], check=True, capture_output=True)
        user = "portwright" if password is None else f"portwright:{password}"
        yield f"postgresql://{user}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                        "stop"], check=False, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


def test_approval_through_postgres_checkpoints(make_repo: Callable[[str], GitRepo],
                                               httpserver: HTTPServer,
                                               postgres_url: str) -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")
    w = world(make_repo, httpserver, approvals='spec = "never"\nadvance = "always"\n'
                                               'pr = "never"\n')
    config = (w.repo / "portwright.toml").read_text()
    w.downstream.commit("postgres", {"portwright.toml": config.replace(
        "[approvals]", f'[runs]\ncheckpoint_url = "{postgres_url}"\n\n[approvals]')})
    started = pw(w.repo, "run", "kv-cache", "--run-id", "pg-1", "--json")
    assert started.returncode == 0, started.stdout[-1500:] + started.stderr[-1500:]
    parked = final(started)
    assert parked["status"] == "waiting"
    answered = pw(w.repo, "approve", "pg-1", "--json")
    assert answered.returncode == 0, answered.stderr
    assert final(answered)["status"] == "done"
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        rows = conn.execute("select count(*) from checkpoints where thread_id = 'pg-1'")
        count = rows.fetchone()
    assert count is not None
    assert count[0] > 10
