"""Gates judge a clean export of the commit, never the tree the session wrote.

Each attack leaves files in the run's worktree that no commit holds (forged bytecode in an
ignored cache, an untracked test-runner hook, stale build objects, a module that shadows
the committed one) while the committed implementation is broken. Run in the worktree, every
one of them turns the focused gate green; judged on an export of the commit, the gate sees
the broken implementation and fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from portwright.project import Project
from portwright.workflows.context import open_run
from portwright.workflows.state import CycleState
from portwright.workflows.steps import run_phase
from tests.conftest import GitRepo, bwrap_works, docker_engine_running
from tests.sandboxes.conftest import open_tmp_path
from tests.security.test_tamper import CONFTEST_HOOK

__all__ = ["open_tmp_path"]


def _backend(name: str) -> None:
    if name == "docker" and not docker_engine_running():
        pytest.skip("no Docker engine answers")
    if name == "bwrap" and not bwrap_works():
        pytest.skip("bubblewrap does not work here")


GATES = '''# Rules

```toml portwright
[[gate]]
name = "focused"
run = {run!r}
phases = ["red", "focused"]
timeout = 180
```
'''

PY_BROKEN = "def add(a, b):\n    return a - b\n"
PY_GOOD = "def add(a, b):\n    return a + b\n"
PY_TEST = ("import unittest\n\nfrom calc.ops import add\n\n\nclass TestOps(unittest.TestCase):\n"
           "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n")

FORGE_PYC = r'''
import importlib.util, marshal, os, struct
src = "calc/ops.py"
st = os.stat(src)
code = compile(GOOD, src, "exec")
header = importlib.util.MAGIC_NUMBER + struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF,
                                                   st.st_size & 0xFFFFFFFF)
tag = importlib.util.cache_from_source(src).rsplit("/", 1)[-1]
path = "calc/__pycache__/" + tag  # in the tree, whatever PYTHONPYCACHEPREFIX says
os.makedirs(os.path.dirname(path), exist_ok=True)
open(path, "wb").write(header + marshal.dumps(code))
'''.replace("GOOD", repr(PY_GOOD))

CONFTEST = CONFTEST_HOOK  # a hook that turns every failure into a pass

C_BROKEN = "int add(int a, int b) { return a - b; }\n"
C_GOOD = "int add(int a, int b) { return a + b; }\n"
C_TEST = ('#include <stdio.h>\nint add(int, int);\n'
          'int main(void) { if (add(2, 3) != 5) { puts("FAILED add"); return 1; }\n'
          '  puts("PASSED add"); return 0; }\n')
CMAKE = ("cmake_minimum_required(VERSION 3.13)\nproject(calc C)\n"
         "add_executable(test_add src/add.c tests/test_add.c)\n")
C_RUN = "cmake -S . -B build >/dev/null && cmake --build build >/dev/null && ./build/test_add"

JS_BROKEN = "exports.add = (a, b) => a - b;\n"
JS_GOOD = "exports.add = (a, b) => a + b;\n"
JS_TEST = ("const { add } = require('../src/add');\n"
           "if (add(2, 3) !== 5) { console.log('FAILED add'); process.exit(1); }\n"
           "console.log('PASSED add');\n")


@dataclass(frozen=True)
class Attack:
    """A committed broken implementation, and what the session leaves beside it."""

    name: str
    files: dict[str, str]
    run: str
    session: str
    """A shell command run in the run's own sandbox before the gates."""


PY_FILES = {"calc/__init__.py": "", "calc/ops.py": PY_BROKEN, "tests/test_ops.py": PY_TEST,
            ".gitignore": "__pycache__/\n.pytest_cache/\n"}
PY_RUN = "python3 -m pytest -q -rA -p no:cacheprovider tests/test_ops.py"
UNITTEST_RUN = "python3 -m unittest -v tests.test_ops"

ATTACKS = {
    # an ignored bytecode cache whose header matches the broken source's mtime and size
    "python-forged-bytecode": Attack(
        "python-forged-bytecode", PY_FILES, UNITTEST_RUN,
        f"python3 - <<'EOF'\n{FORGE_PYC}\nEOF"),
    # a package folder, which Python imports before the module of the same name
    "python-shadowing-package": Attack(
        "python-shadowing-package", PY_FILES, UNITTEST_RUN,
        f"mkdir calc/ops && printf '%s' '{PY_GOOD}' > calc/ops/__init__.py"),
    # a test-runner hook no commit holds (the implement step's commit leaves test paths out)
    "python-untracked-conftest": Attack(
        "python-untracked-conftest", PY_FILES, PY_RUN,
        f"cat > tests/conftest.py <<'EOF'\n{CONFTEST}EOF"),
    # objects built from a good source, then the source put back broken with an old mtime:
    # make sees the objects newer and links them
    "c-stale-objects": Attack(
        "c-stale-objects",
        {"CMakeLists.txt": CMAKE, "src/add.c": C_BROKEN, "tests/test_add.c": C_TEST,
         ".gitignore": "build/\n"}, C_RUN,
        f"cp src/add.c /tmp/broken.c && printf '%s' '{C_GOOD}' > src/add.c && "
        f"{C_RUN} && cp /tmp/broken.c src/add.c && touch -d 2001-01-01 src/add.c"),
    # an extensionless file that Node loads before src/add.js
    "js-shadowing-module": Attack(
        "js-shadowing-module", {"src/add.js": JS_BROKEN, "tests/test_add.js": JS_TEST},
        "node tests/test_add.js", f"printf '%s' '{JS_GOOD}' > src/add"),
}

CASES = [("python-forged-bytecode", "docker"), ("python-forged-bytecode", "bwrap"),
         ("python-shadowing-package", "docker"), ("python-shadowing-package", "bwrap"),
         ("python-untracked-conftest", "docker"),
         ("c-stale-objects", "docker"), ("c-stale-objects", "bwrap"),
         ("js-shadowing-module", "bwrap")]


def _world(base: Path, attack: Attack, backend: str) -> tuple[Path, str]:
    up = GitRepo(base / "upstream")
    up.commit("upstream", {"README.md": "upstream\n"})
    down = GitRepo(base / "downstream")
    base = down.commit("scaffold", {
        "portwright.toml": (f'[upstream]\nsource = "../upstream"\n\n[sandbox]\n'
                            f'backend = "{backend}"\nmemory = "512m"\n'),
        "AGENTS.md": GATES.format(run=attack.run),
        "upstream-sync.md": f"# Upstream sync\n\nPinned commit: `{up.head()}`\n"})
    down.commit("port (broken)", attack.files)
    return down.path, base


@pytest.mark.slow
@pytest.mark.parametrize(("attack", "backend"), CASES)
def test_files_the_session_left_do_not_reach_the_gates(
        open_tmp_path: Path, attack: str, backend: str) -> None:
    _backend(backend)
    chosen = ATTACKS[attack]
    repo, base = _world(open_tmp_path, chosen, backend)
    project = Project.load(repo, at="HEAD")
    state = CycleState(row="calc", base=base)
    with open_run(project, "test", run_id=f"export-{attack}-{backend}",
                  open_ahead=False) as ctx:
        session = ctx.sandbox().exec(["sh", "-c", chosen.session], timeout=180)
        assert session.exit_code == 0, session.stderr_tail + session.stdout_tail
        # the session's files make the broken implementation pass in the worktree (for a
        # runner without the framework's own knobs: test_bytecode_in_the_tree_is_not_read)
        seen = ctx.sandbox().exec(["sh", "-c", f"unset PYTHONPYCACHEPREFIX; {chosen.run}"],
                                  timeout=180)
        assert seen.exit_code == 0, seen.stdout_tail
        results = run_phase(ctx, state, "focused")
    assert [r.passed for r in results] == [False], [r.messages for r in results]
    record = results[0].record
    assert record is not None
    assert not record.dirty
    assert record.commit == project.revision
    # the worktree the session wrote is left as it was: the run's own files stay
    assert (repo / ".git").exists()


@pytest.mark.parametrize("backend", ["docker", "bwrap"])
def test_bytecode_in_the_tree_is_not_read(open_tmp_path: Path, backend: str) -> None:
    """The framework's runner knobs (``PYTHONPYCACHEPREFIX``): even in the worktree, Python
    in a sandbox reads no bytecode from the tree, so the forged cache runs nowhere."""
    _backend(backend)
    chosen = ATTACKS["python-forged-bytecode"]
    repo, _ = _world(open_tmp_path, chosen, backend)
    project = Project.load(repo, at="HEAD")
    with open_run(project, "test", run_id=f"pyc-{backend}", open_ahead=False) as ctx:
        box = ctx.sandbox()
        assert box.exec(["sh", "-c", chosen.session], timeout=180).exit_code == 0
        assert list((repo / "calc" / "__pycache__").glob("ops.*.pyc"))
        seen = box.exec(["sh", "-c", chosen.run], timeout=180)
    assert seen.exit_code != 0, seen.stdout_tail
