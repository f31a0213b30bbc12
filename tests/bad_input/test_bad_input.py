"""Every bad input of the table gets a clear error, changes nothing and leaves nothing."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.bad_input import world as worlds
from tests.bad_input.cases import CASES
from tests.bad_input.conftest import TALLY
from tests.bad_input.harness import Case, category, check
from tests.conftest import docker_engine_running


def _commit(world: worlds.World) -> None:
    status = subprocess.run(["git", "-C", str(world.repo), "status", "--porcelain"],
                            capture_output=True, text=True, check=False).stdout
    if status.strip():
        world.git("add", "-A")
        world.git("commit", "-q", "-m", "case setup")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input(case: Case, template: worlds.World, tmp_path: Path,
                   request: pytest.FixtureRequest) -> None:
    if case.docker and not docker_engine_running():
        pytest.skip("needs a Docker engine")
    if case.known:
        request.applymarker(pytest.mark.xfail(reason=case.known, strict=True))
    if case.bwrap:  # pytest's own folders are private to their owner
        shared = Path(tempfile.mkdtemp(prefix="portwright-bad-input-"))
        shared.chmod(0o755)
        request.addfinalizer(lambda: shutil.rmtree(shared, ignore_errors=True))
        world = worlds.copy(template, shared / "world")
    else:
        world = worlds.copy(template, tmp_path / "world")
    case.setup(world)
    if case.commit and world.repo.joinpath(".git").exists():
        _commit(world)
    problems = check(case, world, tmp_path / "home")
    TALLY[case.id] = category(problems) if problems else "ok"
    assert not problems, "\n".join(f"{p.category}: {p.detail}" for p in problems)
