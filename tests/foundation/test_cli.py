"""The foundation commands, run as a new user would: the real console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from portwright.runs.keys import ENV_VAR as KEY_ENV
from tests.conftest import GitRepo, docker_engine_running

ROOT = Path(__file__).resolve().parents[2]
"""This checkout: the commands run its portwright, whatever the current folder."""


def portwright(repo: Path, *args: str,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command as a new user runs it, whose home folder is ``repo`` (state and all);
    the evidence key is the session's, as a home that is a repository cannot hold one."""
    base = {"PATH": "/usr/bin:/bin", "COLUMNS": "120", "HOME": str(repo),
            "PYTHONPATH": str(ROOT), KEY_ENV: os.environ[KEY_ENV]}
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          capture_output=True, text=True, env={**base, **(env or {})})


def test_version() -> None:
    done = subprocess.run([sys.executable, "-m", "portwright", "--version"],
                          capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout.startswith("portwright 0.")


def test_init_then_rules_check_then_doctor(make_repo: type[GitRepo]) -> None:
    upstream = make_repo("upstream")
    pin = upstream.commit("first", {"lib.py": "def f():\n    return 1\n"})
    down = make_repo("down")

    done = portwright(down.path, "init", "--upstream", "../upstream")
    assert done.returncode == 0, done.stderr
    for name in ("portwright.toml", "AGENTS.md", "upstream-sync.md", "parity-ledger.md",
                 "porting-inventory.md", "docs/parity/matrix.md", ".gitignore"):
        assert (down.path / name).is_file(), name
        assert f"created  {name}" in done.stdout, done.stdout
    assert pin in (down.path / "upstream-sync.md").read_text()

    checked = portwright(down.path, "rules", "check", "--json")
    assert checked.returncode == 0, checked.stderr
    names = [g["name"] for g in json.loads(checked.stdout)["gates"]]
    assert names[:2] == ["tests", "anchors"]

    doctor = portwright(down.path, "doctor", "--json")
    report = json.loads(doctor.stdout)
    status = {c["name"]: c["status"] for c in report["checks"]}
    assert status["git"] == status["config"] == status["rules"] == "ok"
    assert status["upstream"] == status["pin"] == "ok"
    assert status["model"] == "warn"  # no key: agents cannot run, the rest can
    if docker_engine_running():
        assert status["sandbox"] in {"ok", "fail"}
        assert doctor.returncode == (0 if status["sandbox"] == "ok" else 1)
        assert report["env_image"]["state"] == "none"  # no setup: the base image


def _missing_image_port(make_repo: type[GitRepo]) -> GitRepo:
    upstream = make_repo("upstream")
    upstream.commit("first", {"lib.py": "def f():\n    return 1\n"})
    down = make_repo("down")
    assert portwright(down.path, "init", "--upstream", "../upstream").returncode == 0
    config = down.path / "portwright.toml"
    text = config.read_text()
    assert 'image = "portwright/base:bookworm"' in text
    config.write_text(text.replace('image = "portwright/base:bookworm"',
                                   'image = "portwright/absent:never"'))
    down.commit("adopt portwright")
    return down


def test_doctor_names_a_missing_image_not_the_engine(make_repo: type[GitRepo]) -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")
    down = _missing_image_port(make_repo)
    doctor = portwright(down.path, "doctor", "--json")
    assert doctor.returncode == 1, doctor.stdout
    sandbox = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "sandbox")
    assert sandbox["status"] == "fail"
    assert "answers" in sandbox["detail"]
    assert "portwright/absent:never is missing" in sandbox["detail"]
    assert "docker build -t portwright/absent:never" in sandbox["fix"]
    assert "start the Docker engine" not in sandbox["fix"]


@pytest.mark.parametrize("engine", ["answers", "absent"])
def test_commands_without_a_sandbox_need_no_image_and_no_engine(
        make_repo: type[GitRepo], engine: str) -> None:
    down = _missing_image_port(make_repo)
    env = {"DOCKER_HOST": f"unix://{down.path}/no-engine.sock"} if engine == "absent" else {}
    for args in (("gap",), ("anchors", "check"), ("rows",), ("surface", "lib.py::f"),
                 ("rules", "check")):
        done = portwright(down.path, *args, env=env)
        assert done.returncode == 0, (args, done.stdout, done.stderr)


def test_init_never_overwrites(make_repo: type[GitRepo]) -> None:
    upstream = make_repo("upstream")
    upstream.commit("first", {"lib.py": "x = 1\n"})
    down = make_repo("down")
    down.write("AGENTS.md", "# Our own rules\n\nKeep them.\n")
    down.write("parity-ledger.md", "# mine\n")
    done = portwright(down.path, "init", "--upstream", "../upstream")
    assert done.returncode == 0, done.stderr
    assert "appended  AGENTS.md" in done.stdout
    assert "kept  parity-ledger.md" in done.stdout
    assert (down.path / "parity-ledger.md").read_text() == "# mine\n"
    agents = (down.path / "AGENTS.md").read_text()
    assert agents.startswith("# Our own rules\n\nKeep them.\n")
    assert "```toml portwright" in agents
    before = {p: p.read_bytes() for p in down.path.rglob("*") if p.is_file()
              and ".git" not in p.parts}
    again = portwright(down.path, "init", "--upstream", "../upstream")
    assert again.returncode == 0
    after = {p: p.read_bytes() for p in down.path.rglob("*") if p.is_file()
             and ".git" not in p.parts}
    assert before == after


def test_bad_rules_exit_2_with_file_line_and_fix(make_repo: type[GitRepo]) -> None:
    down = make_repo("down")
    down.write("AGENTS.md", "# R\n\n```toml portwright\n[[gate]]\nname = \"a\"\n```\n")
    done = portwright(down.path, "rules", "check")
    assert done.returncode == 2
    assert "AGENTS.md:4" in done.stderr
    assert "fix:" in done.stderr
    assert "Traceback" not in done.stderr


def test_doctor_without_config_fails_with_fix(make_repo: type[GitRepo]) -> None:
    down = make_repo("down")
    done = portwright(down.path, "doctor")
    assert done.returncode == 2  # bad input: like every other command
    assert "no portwright.toml here" in done.stdout
    assert "portwright init" in done.stdout


def test_init_outside_git_repo_is_refused(tmp_path: Path) -> None:
    done = portwright(tmp_path, "init", "--upstream", "../x")
    assert done.returncode == 2
    assert "not a git repository" in done.stderr
    assert not (tmp_path / "portwright.toml").exists()


def test_init_with_an_upstream_without_commits_says_so(make_repo: type[GitRepo]) -> None:
    make_repo("upstream")
    down = make_repo("down")
    down.commit("first", {"README.md": "port\n"})
    done = portwright(down.path, "init", "--upstream", "../upstream")
    assert done.returncode == 2, done.stderr
    assert "no commits" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (down.path / "portwright.toml").exists()
