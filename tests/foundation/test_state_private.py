"""The state folder is private to its user (mode 0700, as XDG asks of the folders it
names), whichever command makes it first: the evidence key lives in it and refuses a
folder others can reach, so a state folder one command made with the umask's 0755 would
block every later run on the machine (``gap`` before the first ``run`` did just that)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from portwright.config import PortwrightConfig
from portwright.environment import private_folder, state_home
from portwright.eval.tasks import load_suite
from portwright.eval.validate import _entry_lock, store_dir
from portwright.project import Project
from portwright.runs.keys import evidence_key_dir
from portwright.sandboxes.envimage import EnvSource
from tests.conftest import GitRepo, docker_engine_running

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "benchmarks" / "port-tasks" / "examples"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user with no state folder yet, the usual umask, and the defaults in force."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_STATE_HOME", "PORTWRIGHT_STATE_DIR", "PORTWRIGHT_EVIDENCE_KEY"):
        monkeypatch.delenv(name, raising=False)
    old = os.umask(0o022)
    try:
        yield home
    finally:
        os.umask(old)


def test_private_folder_makes_each_missing_folder_0700_and_leaves_existing_ones(
        tmp_path: Path) -> None:
    (tmp_path / "a").mkdir(mode=0o755)
    (tmp_path / "a").chmod(0o755)
    old = os.umask(0o022)
    try:
        made = private_folder(tmp_path / "a" / "b" / "c")
    finally:
        os.umask(old)
    assert made == tmp_path / "a" / "b" / "c"
    assert mode(tmp_path / "a") == 0o755  # not ours to change
    assert mode(tmp_path / "a" / "b") == 0o700
    assert mode(tmp_path / "a" / "b" / "c") == 0o700
    assert private_folder(made) == made  # there already: nothing to do
    (tmp_path / "file").write_text("x\n")
    with pytest.raises(NotADirectoryError):
        private_folder(tmp_path / "file" / "d")


def test_a_project_state_folder_made_first_leaves_room_for_the_evidence_key(
        fresh_home: Path, make_repo: type[GitRepo]) -> None:
    down = make_repo("down")
    down.commit("first", {"a.txt": "a\n"})
    folder = Project(down.path, PortwrightConfig.model_validate(
        {"upstream": {"source": "../up"}})).state_dir
    root = fresh_home / ".local" / "state" / "portwright"
    assert folder.is_relative_to(root)
    for path in (fresh_home / ".local", fresh_home / ".local" / "state", root, folder):
        assert mode(path) == 0o700, path
    assert evidence_key_dir() == root  # before: "has mode 0755: others can reach it"


def test_state_home_is_the_variable_then_xdg_then_home(
        fresh_home: Path, tmp_path: Path) -> None:
    assert state_home({}) == Path.home() / ".local" / "state" / "portwright"
    assert state_home({"XDG_STATE_HOME": str(tmp_path / "x")}) == tmp_path / "x" / "portwright"
    assert state_home({"XDG_STATE_HOME": "relative"}) == (
        Path.home() / ".local" / "state" / "portwright")
    assert state_home({"PORTWRIGHT_STATE_DIR": str(tmp_path / "s"),
                       "XDG_STATE_HOME": str(tmp_path / "x")}) == tmp_path / "s"


def test_the_image_logs_and_the_validation_store_make_the_state_folder_private(
        fresh_home: Path, tmp_path: Path) -> None:
    images = EnvSource(tmp_path).images_dir()
    root = fresh_home / ".local" / "state" / "portwright"
    assert images == root / "images"
    assert mode(root) == mode(images) == 0o700
    shutil.rmtree(root)
    (task,) = [t for t in load_suite(EXAMPLES / "tinystats").tasks][:1]
    store = store_dir()
    assert store == root / "eval" / "validation"
    with _entry_lock(store, task, "k", lambda _: None):
        pass
    for path in (root, root / "eval", store):
        assert mode(path) == 0o700, path


def test_gap_on_a_new_machine_then_the_evidence_key(
        fresh_home: Path, make_repo: type[GitRepo]) -> None:
    """The real commands, in the order a new user types them: ``init`` and ``gap`` make
    the state folder, and the evidence key (every run's first need) still finds it private."""
    upstream = make_repo("upstream")
    upstream.commit("first", {"lib.py": "def f():\n    return 1\n"})
    down = make_repo("down")
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "120", "HOME": str(fresh_home),
           "PYTHONPATH": str(ROOT)}
    for args in (("init", "--upstream", "../upstream"), ("gap",)):
        done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(down.path), *args],
                              capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        if args[0] == "init":
            down.commit("adopt portwright")
    root = fresh_home / ".local" / "state" / "portwright"
    assert (root / "projects").is_dir()
    assert mode(root) == 0o700
    assert evidence_key_dir() == root


@pytest.mark.skipif(not docker_engine_running(), reason="needs a Docker engine")
def test_sandbox_exec_outside_a_project_logs_to_the_state_folder_it_is_given(
        tmp_path: Path) -> None:
    """``PORTWRIGHT_STATE_DIR`` is the state folder for every command, a folder without a
    ``portwright.toml`` included (its logs went to the home folder's)."""
    work = tmp_path / "work"
    work.mkdir()
    state = tmp_path / "state"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PORTWRIGHT_STATE_DIR": str(state),
           "HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(work), "sandbox",
                           "exec", "--", "true"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert list((state / "sandbox").iterdir())
    assert not (tmp_path / "home" / ".local" / "state" / "portwright").exists()


def test_doctor_names_a_state_folder_others_can_reach_and_its_fix(
        fresh_home: Path, make_repo: type[GitRepo]) -> None:
    """A state folder an older portwright made at ``0755`` stops every run at its first
    node; ``doctor`` says so before a run does, with the fix, and is ok once it is done."""
    upstream = make_repo("upstream")
    upstream.commit("first", {"lib.py": "def f():\n    return 1\n"})
    down = make_repo("down")
    root = fresh_home / ".local" / "state" / "portwright"
    root.mkdir(parents=True)
    root.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "COLUMNS": "200", "HOME": str(fresh_home),
           "PYTHONPATH": str(ROOT)}

    def doctor() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "portwright", "-C", str(down.path),
                               "doctor", "--json"], capture_output=True, text=True, env=env)

    assert subprocess.run([sys.executable, "-m", "portwright", "-C", str(down.path), "init",
                           "--upstream", "../upstream"], env=env,
                          capture_output=True).returncode == 0
    down.commit("adopt portwright")
    report = json.loads(doctor().stdout)
    (check,) = [c for c in report["checks"] if c["name"] == "evidence"]
    assert check["status"] == "fail"
    assert "mode 0755: others can reach it" in check["detail"]
    assert check["fix"].startswith(f"chmod 700 {root}")
    root.chmod(0o700)
    report = json.loads(doctor().stdout)
    (check,) = [c for c in report["checks"] if c["name"] == "evidence"]
    assert check["status"] == "ok"
    assert str(root / "evidence.key") in check["detail"]
