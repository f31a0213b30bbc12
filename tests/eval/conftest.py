"""A small real pair for the eval tests: an upstream with one change after the pin, and a
downstream whose real porting commit carries it (source and a new test file)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import GitRepo

ROOT = Path(__file__).resolve().parents[2]

UPSTREAM_V1 = "function add(a, b) {\n  return a + b;\n}\nmodule.exports = { add };\n"
UPSTREAM_V2 = ("function add(a, b) {\n  return a + b;\n}\nfunction sub(a, b) {\n"
               "  return a - b;\n}\nmodule.exports = { add, sub };\n")
DOWN_V1 = "def add(a, b):\n    return a + b\n"
DOWN_V2 = DOWN_V1 + "\n\ndef sub(a, b):\n    return a - b\n"
TEST_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
TEST_SUB = "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"


@dataclass(frozen=True)
class Pair:
    """The repositories (under ``repos`` as owner/name) and their shas."""

    repos: Path
    upstream: GitRepo
    downstream: GitRepo
    pin: str
    change: str
    parent: str
    port: str


def build_pair(root: Path) -> Pair:
    """``root/acme/calc-js`` (upstream) and ``root/acme/calc-py`` (downstream)."""
    upstream = GitRepo(root / "acme" / "calc-js")
    pin = upstream.commit("add", {"src/calc.js": UPSTREAM_V1})
    change = upstream.commit("sub", {"src/calc.js": UPSTREAM_V2,
                                     "test/calc.test.js": "// sub\n", "README.md": "sub\n"})
    downstream = GitRepo(root / "acme" / "calc-py")
    downstream.commit("add", {"calc.py": DOWN_V1, "tests/test_add.py": TEST_ADD})
    parent = downstream.commit("readme", {"README.md": "calc\n"})
    port = downstream.commit("port sub", {"calc.py": DOWN_V2, "tests/test_sub.py": TEST_SUB})
    downstream.git("branch", "port-sub", port)
    downstream.git("reset", "-q", "--hard", parent)  # main stays at the parent
    return Pair(root, upstream, downstream, pin, change, parent, port)


def task_toml(pair: Pair, **overrides: str) -> str:
    """A valid task file for ``pair``; ``overrides`` replace whole lines by key."""
    lines = {
        "id": 'id = "calc/sub"',
        "title": 'title = "Port sub"',
        "up": f'[upstream]\nrepo = "acme/calc-js"\ncommits = ["{pair.change}"]',
        "down": (f'[downstream]\nrepo = "acme/calc-py"\nparent = "{pair.parent}"\n'
                 f'port = "{pair.port}"'),
        "hidden": ('[hidden]\npaths = ["tests/test_sub.py"]\n'
                   'tests = ["tests/test_sub.py::test_sub"]\nregress = ["tests/"]'),
        "env": ('[environment]\ntest = "python3 -m pytest -q -rA -p no:cacheprovider {tests}"\n'
                'path_map = { "src/" = "", "test/" = "tests/" }'),
    }
    lines.update(overrides)
    return "\n".join(v for v in lines.values() if v) + "\n"


@pytest.fixture(autouse=True)
def _own_validation_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own state folder, so its own validation store: a task one test
    validated is not taken from the store by the next."""
    monkeypatch.setenv("PORTWRIGHT_STATE_DIR", str(tmp_path / "state"))


@pytest.fixture(scope="session")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    """One pair for the tests that only read it."""
    return build_pair(tmp_path_factory.mktemp("pair") / "repos")


def portwright(*args: str, cwd: Path | None = None,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real command, as a person runs it."""
    import os

    return subprocess.run([sys.executable, "-m", "portwright", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "COLUMNS": "200",
                                                   "PYTHONPATH": str(ROOT), **(env or {})})
