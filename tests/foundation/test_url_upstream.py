"""With ``upstream.source`` a URL, every command and every gate that reads the upstream
works: one resolver (the Project's) clones it into the state folder."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

from portwright.project import Project
from tests.conftest import GitRepo
from tests.parity.world import World, make_world


@pytest.fixture
def url_world(make_repo: Callable[[str], GitRepo]) -> World:
    world = make_world(make_repo)
    world.downstream.commit("upstream by URL", {
        "portwright.toml": f'[upstream]\nsource = "file://{world.upstream.path}"\n'})
    # the checkout beside it is gone: only the URL can serve
    world.upstream.path.rename(world.upstream.path.with_name("upstream.git-src"))
    source = world.upstream.path.with_name("upstream.git-src")
    world.downstream.commit("upstream moved", {
        "portwright.toml": f'[upstream]\nsource = "file://{source}"\n'})
    return world


@pytest.mark.parametrize("command", [
    ["doctor"], ["gap"], ["gap", "--row", "kv-cache"], ["surface", "alloc"],
    ["anchors", "check"], ["ledger", "check"], ["gates", "run", "--phase", "spec"],
    ["gates", "run", "--phase", "pin", "--only", "anchors"], ["trace"],
])
def test_every_command_works_with_a_url_upstream(url_world: World, command: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(url_world.repo),
                           *command], capture_output=True, text=True, timeout=120, check=False)
    assert "does not exist" not in done.stderr, done.stderr
    if command == ["doctor"]:  # the model key is not set here: a warning, not a failure
        assert "upstream" in done.stdout
        assert "fail" not in [line.split()[0] for line in done.stdout.splitlines()
                              if "upstream" in line or "pin" in line]
        return
    assert done.returncode == 0, done.stdout + done.stderr
    clone = Project.load(url_world.repo).state_dir / "upstream"
    assert (clone / ".git").is_dir()
