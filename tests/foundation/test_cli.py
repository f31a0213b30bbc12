"""The foundation commands, run as a new user would: the real console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import GitRepo, docker_engine_running

ROOT = Path(__file__).resolve().parents[2]
"""This checkout: the commands run its portwright, whatever the current folder."""


def portwright(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin",
                                                               "COLUMNS": "120",
                                                               "HOME": str(repo),
                                                               "PYTHONPATH": str(ROOT)})


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
