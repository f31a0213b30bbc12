"""What a command leaves behind is read by the host only as capped regular files, never
through a link, in bounded memory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from portwright.config import SandboxConfig
from portwright.gates.command import run_command
from portwright.project import Project
from portwright.runs.keys import evidence_key, evidence_key_dir, evidence_key_path
from portwright.sandboxes import open_sandbox
from tests.conftest import docker_engine_running
from tests.parity.world import World

pytestmark = pytest.mark.docker


@pytest.fixture
def docker_box(world: World, tmp_path: Path):  # type: ignore[no-untyped-def]
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")
    config = SandboxConfig(backend="docker", memory="512m")
    with open_sandbox(config, worktree=world.repo, run_id="reads",
                      key_dir=evidence_key_dir(), log_dir=tmp_path / "box-logs") as box:
        yield box


def test_junit_link_to_the_evidence_key_is_not_followed(world: World, docker_box: object,
                                                        tmp_path: Path) -> None:
    key = evidence_key()  # creates it
    store = Project(world.repo, world.config()).store("steal")
    command = f"mkdir -p build; ln -sf {evidence_key_path()} build/junit.xml; echo planted"
    record, _ = run_command(docker_box, command, repo=world.repo,  # type: ignore[arg-type]
                            name="unit", junit="build/junit.xml", store=store)
    log = (store.dir / (record.log or "")).read_bytes()
    assert key not in log
    assert key.hex().encode() not in log
    assert not record.passed
    assert any("not read" in m and "link" in m for m in record.messages), record.messages


def test_stale_junit_link_is_removed_not_followed(world: World, docker_box: object,
                                                  tmp_path: Path) -> None:
    victim = tmp_path / "victim.xml"
    victim.write_text("keep")
    (world.repo / "build").mkdir(exist_ok=True)
    (world.repo / "build" / "junit.xml").symlink_to(victim)
    record, _ = run_command(docker_box, "true", repo=world.repo,  # type: ignore[arg-type]
                            name="unit", junit="build/junit.xml")
    assert victim.read_text() == "keep"
    assert not (world.repo / "build" / "junit.xml").is_symlink()
    assert not record.passed


OUTPUT_MB = 200
MEMORY_BOUND_MB = 160
"""Peak RSS allowed to the host's `portwright gates run` while a command prints
``OUTPUT_MB`` MB: the interpreter and its imports take ~80 MB here."""


def test_200_mb_of_output_in_bounded_host_memory(world: World) -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")
    config = (world.repo / "portwright.toml").read_text()
    config += '\n[sandbox]\nbackend = "docker"\nmemory = "512m"\n'
    flood = (f"head -c {OUTPUT_MB * 1024 * 1024} /dev/zero | tr '\\\\0' 'x' | fold -w 100; "
             "echo 'PASSED tests/test_a.py::test_last'")
    rules = (world.repo / "AGENTS.md").read_text().replace("[spec]", (
        f'[[gate]]\nname = "flood"\nrun = "{flood}"\nphases = ["full"]\n\n[spec]'))
    world.downstream.commit("flood gate", {"portwright.toml": config, "AGENTS.md": rules})
    script = ("import resource, subprocess, sys\n"
              "done = subprocess.run([sys.executable, '-m', 'portwright', '-C', sys.argv[1], "
              "'gates', 'run', '--phase', 'full', '--only', 'flood', '--json'], "
              "capture_output=True, text=True)\n"
              "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
              "sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])\n")
    done = subprocess.run([sys.executable, "-c", script, str(world.repo)], capture_output=True,
                          text=True, timeout=600, check=False)
    code, peak_kib = (int(x) for x in done.stdout.split())
    assert code == 0, done.stderr
    assert peak_kib / 1024 < MEMORY_BOUND_MB, f"peak RSS {peak_kib / 1024:.0f} MB"
    assert '"tests/test_a.py::test_last"' in done.stderr or "test_last" in done.stderr
