"""The bundled example: reproducible repos, a consistent port, and the demo end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import docker_engine_running

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "tinystats"))

from build import Example, build  # noqa: E402


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_build_is_reproducible(tmp_path: Path) -> None:
    first, second = build(tmp_path / "a"), build(tmp_path / "b")
    assert first.pin == second.pin
    assert git(first.upstream, "rev-parse", "HEAD") == git(second.upstream, "rev-parse", "HEAD")
    assert git(first.downstream, "rev-parse", "HEAD") == git(second.downstream,
                                                             "rev-parse", "HEAD")


def test_pin_is_three_commits_behind_upstream(tmp_path: Path) -> None:
    example = build(tmp_path)
    behind = git(example.upstream, "rev-list", "--count", f"{example.pin}..HEAD")
    assert behind == "3"
    assert example.pin in (example.downstream / "upstream-sync.md").read_text()


def test_build_refuses_to_overwrite(tmp_path: Path) -> None:
    build(tmp_path)
    with pytest.raises(FileExistsError):
        build(tmp_path)


def test_downstream_tests_pass_at_head(tmp_path: Path) -> None:
    example: Example = build(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests"], cwd=example.downstream, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 passed" in done.stdout


@pytest.mark.docker
@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    if not docker_engine_running():
        pytest.skip("needs a running Docker engine (make engine)")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py"), "--keep",
                           str(tmp_path / "demo")], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "demo complete" in done.stdout
    assert "UNEXPECTED" not in done.stdout
