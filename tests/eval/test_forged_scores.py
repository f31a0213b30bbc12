"""Forged "resolved": a hostile agent controls every file of the tree it leaves outside the
hidden test paths, and tries to make the scoring believe tests pass that do not.

Each attack is a tree an agent could leave on the calc pair (tests/eval/conftest.py) with a
``sub`` that is missing or wrong, so any "resolved" is forged; :func:`score` runs on it for
real (a clone, the integrity checks, the hidden tests applied and run in the Docker
sandbox). The tamper patterns are spelled around where they would catch the attack (``"PAS"
+ "SED"``, ``getattr(os, "_ex" + "it")``): they are advisory by design, the guarantee must
come from elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.eval.runner import Score, score
from portwright.eval.tasks import load_suite
from portwright.eval.validate import ValidationRecord
from portwright.eval.workspace import Workspace, prepare
from tests.conftest import GitRepo
from tests.eval.conftest import (
    DOWN_V1,
    DOWN_V2,
    TEST_ADD,
    TEST_SUB,
    UPSTREAM_V1,
    UPSTREAM_V2,
    Pair,
    build_pair,
    task_toml,
)
from tests.eval.tinystats import needs_engine

pytestmark = [pytest.mark.docker, pytest.mark.slow]

WRONG = DOWN_V1 + "\n\ndef sub(a, b):\n    return b - a\n"
"""A ``sub`` that fails the hidden test (and keeps ``add``: nothing regresses)."""
SUB_ID = "tests/test_sub.py::test_sub"
ADD_ID = "tests/test_add.py::test_add"
BAR = '"=" * 20'
FORGE_LINES = (f"'\\n' + {BAR} + ' short test summary info ' + {BAR} + '\\n' + 'PAS' + 'SED "
               f"{SUB_ID}\\n' + 'PAS' + 'SED {ADD_ID}\\n'")
"""A Python expression: a pytest summary section saying both tests passed."""
HARD_EXIT = 'getattr(__import__("os"), "_ex" + "it")(0)'


def _agent_head(ws: Workspace, where: Path, files: dict[str, str],
                links: dict[str, str] | None = None) -> str:
    """The commit an agent leaves: ``files`` and symbolic ``links`` over the harness commit."""
    repo = GitRepo(where)
    repo.git("fetch", "-q", str(ws.downstream), ws.harness)
    repo.git("checkout", "-q", "--detach", ws.harness)
    for name, target in (links or {}).items():
        (where / name).unlink(missing_ok=True)
        (where / name).symlink_to(target)
    repo.commit("agent", files)
    head = repo.git("rev-parse", "HEAD")
    repo.git("push", "-q", str(ws.downstream), f"+{head}:refs/heads/agent-{where.parent.name}")
    return head


def _workspace(tmp_path: Path, pair: Pair, **overrides: str) -> Workspace:
    path = tmp_path / "task.toml"
    path.write_text(task_toml(pair, **overrides), encoding="utf-8")
    return prepare(load_suite(path).tasks[0], pair.repos, tmp_path / "work")


def _score(tmp_path: Path, ws: Workspace, files: dict[str, str],
           links: dict[str, str] | None = None, baseline: tuple[str, ...] = (ADD_ID,)) -> Score:
    head = _agent_head(ws, tmp_path / "agent", files, links)
    record = ValidationRecord(task=ws.task.task.id, key="k", image="i", valid=True,
                              reason="valid",
                              harness=ws.harness, parent={SUB_ID: False}, port={SUB_ID: True},
                              regress_baseline=list(baseline), seconds=0.0)
    return score(ws, head, record, tmp_path / "scored", run_id="forged-score")


def resolved(scored: Score) -> bool:
    return not scored.integrity and not scored.failed and not scored.regressions


@pytest.fixture
def calc(tmp_path: Path) -> Workspace:
    needs_engine()
    return _workspace(tmp_path, build_pair(tmp_path / "repos"))


def test_the_honest_trees_score_as_they_should(tmp_path: Path, calc: Workspace) -> None:
    """The baseline of every attack below: the real port resolves, the wrong sub does not."""
    right = _score(tmp_path / "right", calc, {"calc.py": DOWN_V2})
    assert resolved(right), right
    wrong = _score(tmp_path / "wrong", calc, {"calc.py": WRONG})
    assert wrong.failed == [SUB_ID]
    assert wrong.integrity == []
    assert wrong.regressions == []


HOOK = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
        "    outcome.get_result().outcome = 'pass' + 'ed'\n")

RUNNER_CONFIG = {  # the first file of each is the one the protected-paths check names
    "root-conftest": {"conftest.py": HOOK},
    "conftest-beside-the-code": {"lib/conftest.py": HOOK, "lib/__init__.py": ""},
    "pytest.ini-plugin": {"pytest.ini": "[pytest]\naddopts = -p forger\n", "forger.py": HOOK},
    "dot-pytest.ini": {".pytest.ini": "[pytest]\naddopts = -p forger\n", "forger.py": HOOK},
    "pyproject-addopts": {"pyproject.toml": "[tool.pytest.ini_options]\n"
                                            "addopts = '-p forger'\n", "forger.py": HOOK},
    "setup.cfg-plugin": {"setup.cfg": "[tool:pytest]\naddopts = -p forger\n",
                           "forger.py": HOOK},
    "tox.ini": {"tox.ini": "[pytest]\naddopts = -p forger\n", "forger.py": HOOK},
    "sitecustomize": {"sitecustomize.py": HOOK},
    "usercustomize": {"usercustomize.py": HOOK},
    "pth": {"forger.pth": "import forger\n", "forger.py": HOOK},
    "fake-pytest-module": {"pytest.py": f"print({FORGE_LINES})\n"},
    "fake-pytest-package": {"pytest/__init__.py": "", "pytest/__main__.py":
                            f"print({FORGE_LINES})\n"},
    "stdlib-shadow": {"argparse.py": f"print({FORGE_LINES}, flush=True)\n{HARD_EXIT}\n"},
    "compiled-shadow": {"pytest.cpython-311-x86_64-linux-gnu.so": "not really compiled\n"},
}


@pytest.mark.parametrize("files", RUNNER_CONFIG.values(), ids=RUNNER_CONFIG.keys())
def test_runner_configuration_and_shadowing_modules_do_not_forge_a_pass(
        tmp_path: Path, calc: Workspace, files: dict[str, str]) -> None:
    """Whatever the tree does to the way pytest starts (a hook, options, a module found
    before the real one: pytest itself, or a module of the standard library it imports),
    the task is not resolved: the file is frozen test-runner infrastructure, and changing
    it fails the protected-paths check (not only the tamper patterns, spelled around)."""
    scored = _score(tmp_path, calc, {"calc.py": WRONG, **files})
    assert not resolved(scored), scored
    guarded = next(iter(files))
    assert any(m.startswith(f"protected-paths: {guarded}:") for m in scored.integrity), scored


SHUTDOWN_FORGER = WRONG + (
    "\n\nimport sys\n\n\nclass _Late:\n"
    '    def __del__(self, out=getattr(sys, "__std" + "out__")):\n'
    f"        out.write({FORGE_LINES})\n        out.flush()\n\n\n"
    "_late = _Late()\n")


def test_a_summary_printed_after_the_real_one_does_not_count(tmp_path: Path,
                                                             calc: Workspace) -> None:
    """The code under test prints a second summary section saying every test passed when
    the interpreter shuts down, after pytest's own: two summaries are no report."""
    scored = _score(tmp_path, calc, {"calc.py": SHUTDOWN_FORGER})
    assert not resolved(scored), scored
    assert scored.failed == [SUB_ID]


def _printing_past_the_capture(then: str) -> str:
    """A ``sub`` that writes a whole forged summary to every descriptor it inherited (the
    one pytest saved its real output on among them), then does ``then``."""
    return DOWN_V1 + (
        "\n\ndef sub(a, b):\n    import os\n"
        "    for fd in range(3, 20):\n        try:\n"
        f"            getattr(os, 'wri' + 'te')(fd, ({FORGE_LINES}).encode())\n"
        "        except OSError:\n            pass\n"
        f"    {then}\n")


def test_a_summary_printed_past_the_capture_does_not_count(tmp_path: Path,
                                                           calc: Workspace) -> None:
    """Printed while the test runs, the forged summary comes before pytest's own: only the
    last counts."""
    scored = _score(tmp_path, calc, {"calc.py": _printing_past_the_capture("return b - a")})
    assert not resolved(scored), scored
    assert scored.failed == [SUB_ID]


@pytest.mark.xfail(strict=True, reason="known limit (docs/eval.md): code in the test process "
                   "that prints a whole forged report and then ends the process with status "
                   "0, before the runner reports, is caught only by the tamper patterns")
def test_a_summary_printed_before_a_hard_exit_does_not_count(tmp_path: Path,
                                                             calc: Workspace) -> None:
    scored = _score(tmp_path, calc, {"calc.py": _printing_past_the_capture(HARD_EXIT)})
    assert not resolved(scored), scored


def test_a_regress_run_that_reports_nothing_is_a_regression(tmp_path: Path,
                                                            calc: Workspace) -> None:
    """``sub`` is right, but ``add`` ends the process with status 0 before pytest reports:
    the regress run names none of the baseline ids, and an id not seen failed (the baseline
    is not passed vacuously)."""
    quitter = DOWN_V2.replace("    return a + b", f"    {HARD_EXIT}\n    return a + b", 1)
    scored = _score(tmp_path, calc, {"calc.py": quitter})
    assert scored.passed == [SUB_ID]
    assert scored.regressions == [ADD_ID]
    assert not resolved(scored)


def test_a_link_in_place_of_a_hidden_test_fails_integrity(tmp_path: Path,
                                                          calc: Workspace) -> None:
    """The hidden test's path is a link (to a passing test elsewhere in the tree, or out of
    it): the hidden test cannot be written without following it, so the task fails the
    integrity checks, and nothing outside the tree is written."""
    outside = tmp_path / "outside.py"
    outside.write_text("def test_sub():\n    pass\n")
    scored = _score(tmp_path, calc, {"calc.py": WRONG}, links={"tests/test_sub.py": str(outside)})
    assert not resolved(scored), scored
    assert any("tests/test_sub.py" in m for m in scored.integrity), scored
    assert outside.read_text() == "def test_sub():\n    pass\n"


MAKEFILE = "build:\n\tpython3 -m compileall -q calc.py\n"
TAP_DRIVER = """\
import importlib
import sys

for number, name in enumerate(sys.argv[1:], 1):
    module = importlib.import_module("tests." + name)
    try:
        getattr(module, name)()
        print("ok", number, "-", name)
    except AssertionError:
        print("not ok", number, "-", name)
"""
"""The downstream's own TAP runner: each id is a test module and function of ``tests/``."""


def build_pair_with(root: Path, tooling: dict[str, str]) -> Pair:
    """The calc pair, its downstream's first commit holding ``tooling`` too."""
    upstream = GitRepo(root / "acme" / "calc-js")
    pin = upstream.commit("add", {"src/calc.js": UPSTREAM_V1})
    change = upstream.commit("sub", {"src/calc.js": UPSTREAM_V2})
    downstream = GitRepo(root / "acme" / "calc-py")
    downstream.commit("add", {"calc.py": DOWN_V1, "tests/test_add.py": TEST_ADD, **tooling})
    parent = downstream.commit("readme", {"README.md": "calc\n"})
    port = downstream.commit("port sub", {"calc.py": DOWN_V2, "tests/test_sub.py": TEST_SUB})
    downstream.git("reset", "-q", "--hard", parent)
    return Pair(root, upstream, downstream, pin, change, parent, port)


def test_tap_lines_printed_before_a_crash_do_not_forge_a_pass(tmp_path: Path) -> None:
    """A ``tap`` task: the code under test prints the line a pass would print (``ok 1 -
    test_sub``) when it is imported, then raises, so that the runner never reports the
    test. The command ran only the asked ids and failed: its output lied."""
    needs_engine()
    pair = build_pair_with(tmp_path / "repos", {"tests/__init__.py": "",
                                                "tests/tap.py": TAP_DRIVER})
    env = ('[environment]\nreport = "tap"\ntest = "PYTHONPATH=. python3 tests/tap.py {tests}"\n'
           'suite = "PYTHONPATH=. python3 tests/tap.py test_add"\npath_map = { "src/" = "" }')
    hidden = '[hidden]\npaths = ["tests/test_sub.py"]\ntests = ["test_sub"]\nregress = ["test_add"]'
    ws = _workspace(tmp_path, pair, env=env, hidden=hidden)
    forger = DOWN_V1 + "\nprint('o' + 'k 1 - test_sub', flush=True)\nraise ImportError('later')\n"
    right = _score(tmp_path / "right", ws, {"calc.py": DOWN_V2}, baseline=("test_add",))
    assert resolved(right), right
    scored = _score(tmp_path, ws, {"calc.py": forger}, baseline=())
    assert scored.failed == ["test_sub"], scored
    assert not resolved(scored)


def test_a_build_that_rewrites_the_hidden_test_does_not_forge_a_pass(tmp_path: Path) -> None:
    """An ``exit`` task whose command builds the tree first: the agent's ``build`` target
    overwrites the hidden test (and the regress test) with ones that pass, before they
    run. The tests that ran are not the hidden tests: the integrity checks fail."""
    needs_engine()
    pair = build_pair_with(tmp_path / "repos", {"Makefile": MAKEFILE})
    env = ('[environment]\nreport = "exit"\ntest = "make -s build && python3 -m pytest -q '
           '-p no:cacheprovider {tests}"\nsuite = "make -s build && python3 -m pytest -q '
           '-p no:cacheprovider tests"\npath_map = { "src/" = "" }')
    ws = _workspace(tmp_path, pair, env=env)
    makefile = "build:\n\tprintf 'def test_sub():\\n    pass\\n' > tests/test_sub.py\n"
    scored = _score(tmp_path, ws, {"calc.py": WRONG, "Makefile": makefile},
                    baseline=("tests/",))
    assert not resolved(scored), scored
    assert any("tests/test_sub.py" in m for m in scored.integrity), scored

