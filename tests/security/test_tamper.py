"""Forged green: code under test that rewrites its own verdict, caught by the ``tamper`` and
``protected-paths`` gates.

Each scenario is a real git repo: a tests-only commit (the red tree), then an implementation
commit that does not implement anything but forges a passing run. Where the forgery is
cheap to run, the test first shows it works (the focused tests fail, yet the run exits 0 or
the JUnit report says all passed), then runs the gates through ``run_gates`` with the rules
of the repo's AGENTS.md, and once through ``portwright gates run``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from portwright.config import load_config
from portwright.gates import GateResult, run_command, run_gates
from portwright.rules import load_rules
from portwright.sandboxes import LocalSandbox
from tests.conftest import GitRepo

AGENTS = """# Rules

Port carefully.

```toml portwright
[[gate]]
name = "tamper"
check = "tamper"
phases = ["full"]
options = { fail = true }

[[gate]]
name = "protected-paths"
check = "protected-paths"
phases = ["full"]
```
"""

PYPROJECT = """[project]
name = "kv"
dependencies = []

[tool.pytest.ini_options]
addopts = "-q"
pythonpath = ["."]
"""

TEST_KV = "import kv\n\n\ndef test_alloc():\n    assert kv.alloc(2) == [0, 0]\n"
WRONG = "def alloc(n):\n    return []\n"  # what the forgeries ship: the test must fail
RIGHT = "def alloc(n):\n    return [0] * n\n"
PYTEST = (f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -rA "
          "-p no:cacheprovider tests/test_kv.py")

CONFTEST_HOOK = '''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.outcome = "passed"
'''

PRINT_AND_EXIT = '''import os


def alloc(n):
    print("tests/test_kv.py::test_alloc PASSED", flush=True)
    os._exit(0)
'''

ATEXIT_JUNIT = '''import atexit
from pathlib import Path


def _all_passed():
    Path("build/junit.xml").write_text(
        '<testsuite name="pytest" tests="1" failures="0" errors="0">'
        '<testcase classname="tests.test_kv" name="test_alloc"/></testsuite>')


atexit.register(_all_passed)


def alloc(n):
    return []
'''


@pytest.fixture
def repo(make_repo: Callable[[str], GitRepo]) -> GitRepo:
    """A downstream repo whose HEAD is the tests-only commit (the red tree)."""
    down = make_repo("down")
    down.commit("port kv tests", {
        "portwright.toml": '[upstream]\nsource = "../upstream"\n',
        "AGENTS.md": AGENTS,
        "pyproject.toml": PYPROJECT,
        "tests/test_kv.py": TEST_KV,
        ".gitignore": ".portwright/\nbuild/\n__pycache__/\n",
    })
    return down


@pytest.fixture
def sandbox(repo: GitRepo, tmp_path: Path) -> Iterator[LocalSandbox]:
    with LocalSandbox(repo.path, log_dir=tmp_path / "sandbox-logs") as box:
        yield box


def gates(repo: GitRepo) -> dict[str, GateResult]:
    """The ``full`` gates of the repo's own rules, through the real entry point."""
    results = run_gates(load_rules(repo.path), "full", sandbox=None, repo=repo.path,
                        config=load_config(repo.path, environ={}))
    return {r.name: r for r in results}


def focused_exit(repo: GitRepo, sandbox: LocalSandbox, command: str = PYTEST) -> int:
    record, _ = run_command(sandbox, command, repo=repo.path, name="focused")
    return record.exit_code


def test_red_tree_fails_as_the_premise(repo: GitRepo, sandbox: LocalSandbox) -> None:
    repo.commit("wrong kv", {"kv.py": WRONG})
    assert focused_exit(repo, sandbox) == 1


def test_a_root_conftest_that_turns_failures_into_passes(repo: GitRepo,
                                                         sandbox: LocalSandbox) -> None:
    repo.commit("implement kv", {"kv.py": WRONG, "conftest.py": CONFTEST_HOOK})
    assert focused_exit(repo, sandbox) == 0          # the forgery works: green on a wrong kv
    verdicts = gates(repo)
    protected = verdicts["protected-paths"]
    assert not protected.passed
    assert protected.messages == [
        "conftest.py:1: conftest.py is a protected path (it steers portwright or the test "
        "runner); it is read from the commit the run started at and may not change "
        "(committed in HEAD~1..HEAD)"]
    tamper = verdicts["tamper"]
    assert not tamper.passed
    assert "conftest.py:5: runner-hook: def pytest_runtest_makereport(item, call):" in (
        tamper.messages)


def test_implementation_that_prints_passed_and_leaves(repo: GitRepo,
                                                      sandbox: LocalSandbox) -> None:
    repo.commit("implement kv", {"kv.py": PRINT_AND_EXIT})
    assert focused_exit(repo, sandbox) == 0          # pytest never got to say FAILED
    verdicts = gates(repo)
    assert verdicts["protected-paths"].passed
    tamper = verdicts["tamper"]
    assert not tamper.passed
    assert tamper.messages == [
        'kv.py:5: forged-report: print("tests/test_kv.py::test_alloc PASSED", flush=True)',
        "kv.py:6: hard-exit: os._exit(0)"]


def test_atexit_handler_that_writes_an_all_pass_junit(repo: GitRepo,
                                                      sandbox: LocalSandbox) -> None:
    repo.commit("implement kv", {"kv.py": ATEXIT_JUNIT})
    assert focused_exit(repo, sandbox, PYTEST + " --junitxml=build/junit.xml") == 1
    report = (repo.path / "build/junit.xml").read_text()
    assert 'failures="0"' in report  # the report lies: the test failed
    assert "<failure" not in report
    verdicts = gates(repo)
    assert verdicts["protected-paths"].passed
    tamper = verdicts["tamper"]
    assert not tamper.passed
    assert [m.split(": ")[:2] for m in tamper.messages] == [
        ["kv.py:1", "exit-hook"],
        ["kv.py:6", "forged-report"], ["kv.py:7", "forged-report"], ["kv.py:8", "forged-report"],
        ["kv.py:11", "exit-hook"]]


def test_pytest_options_in_pyproject_are_protected_dependencies_are_not(repo: GitRepo) -> None:
    repo.commit("implement kv", {"kv.py": RIGHT, "pyproject.toml": PYPROJECT.replace(
        'dependencies = []', 'dependencies = ["numpy>=1.26"]')})
    verdicts = gates(repo)
    assert verdicts["protected-paths"].passed, verdicts["protected-paths"].messages
    repo.commit("deselect the failing test", {"pyproject.toml": PYPROJECT.replace(
        '"-q"', '"-q --deselect tests/test_kv.py::test_alloc"')})
    protected = gates(repo)["protected-paths"]
    assert not protected.passed
    assert protected.messages == [
        "pyproject.toml:1: the [tool.pytest] section of pyproject.toml is protected "
        "(test-runner configuration) and may not change (committed in HEAD~1..HEAD)"]


def test_an_ordinary_implementation_raises_nothing(repo: GitRepo,
                                                   sandbox: LocalSandbox) -> None:
    repo.commit("implement kv", {"kv.py": RIGHT})
    assert focused_exit(repo, sandbox) == 0
    verdicts = gates(repo)
    assert all(v.passed for v in verdicts.values()), verdicts
    assert verdicts["tamper"].messages == ["no tamper flag in 1 changed file(s)"]


def test_a_sandboxed_command_that_plants_a_conftest_is_caught(repo: GitRepo,
                                                              sandbox: LocalSandbox) -> None:
    repo.commit("implement kv", {"kv.py": RIGHT})
    run_command(sandbox, "printf 'import pytest\\n' > conftest.py", repo=repo.path,
                name="setup")
    protected = gates(repo)["protected-paths"]
    assert not protected.passed
    assert protected.messages[0].startswith("conftest.py:1: conftest.py is a protected path")
    assert protected.messages[0].endswith("(untracked in the working tree)")


def pw(repo: GitRepo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo.path), *args],
                          capture_output=True, text=True, check=False)


def test_cli_gates_run_fails_on_a_forged_green(repo: GitRepo) -> None:
    repo.commit("implement kv", {"kv.py": WRONG, "conftest.py": CONFTEST_HOOK})
    done = pw(repo, "gates", "run", "--phase", "full", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert [(r["name"], r["passed"]) for r in report["results"]] == [
        ("tamper", False), ("protected-paths", False)]


def test_cli_gates_run_passes_an_ordinary_implementation(repo: GitRepo) -> None:
    repo.commit("implement kv", {"kv.py": RIGHT})
    done = pw(repo, "gates", "run", "--phase", "full")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   tamper" in done.stdout
    assert "ok   protected-paths" in done.stdout
