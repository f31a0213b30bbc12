"""The agent file tools refuse to change protected paths (the files that steer portwright or
the test runner), whole or by section, and say why; ordinary writes and the step's own
write globs work as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from portwright.agents.tools import Toolbox, Workspace
from portwright.errors import ConfinementError, ToolError

PYPROJECT = ('[project]\nname = "port"\ndependencies = []\n\n'
             '[tool.pytest.ini_options]\naddopts = "-q"\n')
SETUP_CFG = "[metadata]\nname = port\n\n[tool:pytest]\naddopts = -q\n"


@pytest.fixture
def worktree(make_repo: Any) -> Path:
    repo = make_repo("downstream")
    repo.commit("start", {
        "portwright.toml": "[upstream]\n", "AGENTS.md": "# Rules\n", "docs/AGENTS.md": "# D\n",
        "conftest.py": "", "tests/conftest.py": "", "pytest.ini": "[pytest]\n",
        "tox.ini": "[tox]\n", "pyproject.toml": PYPROJECT, "setup.cfg": SETUP_CFG,
        "src/mod.py": "x = 1\n", "tests/test_mod.py": "def test_x():\n    pass\n",
    })
    path: Path = repo.path
    return path


def call(root: Path, tool: str, workspace: Workspace | None = None, **args: Any) -> str:
    box = Toolbox(workspace or Workspace(worktree=root), ["write_file", "edit_file",
                                                          "read_file"])
    return box.call(tool, json.dumps(args))


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.parts}


@pytest.mark.parametrize("rel", [
    "portwright.toml", "AGENTS.md", "docs/AGENTS.md", "src/deep/AGENTS.md", "conftest.py",
    "tests/conftest.py", "src/conftest.py", "pytest.ini", "tox.ini", "sitecustomize.py",
    "src/usercustomize.py", "site-packages/evil.pth", "x.pth", ".gitmodules",
])
def test_protected_files_are_not_written_or_created(worktree: Path, rel: str) -> None:
    before = files(worktree)
    with pytest.raises(ConfinementError, match="protected") as caught:
        call(worktree, "write_file", path=rel, content="import os  # steer the runner\n")
    assert rel in str(caught.value)
    if (worktree / rel).exists():
        with pytest.raises(ConfinementError, match="protected"):
            call(worktree, "edit_file", path=rel, search=(worktree / rel).read_text()[:3] or
                 "x", replace="changed")
    assert files(worktree) == before
    assert "sitecustomize" not in str(files(worktree))


def test_protected_files_can_still_be_read(worktree: Path) -> None:
    assert "# Rules" in call(worktree, "read_file", path="AGENTS.md")


def test_ordinary_writes_still_work(worktree: Path) -> None:
    assert call(worktree, "write_file", path="src/new.py", content="y = 2\n") == (
        "wrote 6 bytes to src/new.py")
    assert call(worktree, "edit_file", path="src/mod.py", search="x = 1",
                replace="x = 3") == "edited src/mod.py at line 1"
    assert (worktree / "src/mod.py").read_text() == "x = 3\n"
    # a README that merely mentions AGENTS.md, a file named like a protected one in part
    call(worktree, "write_file", path="docs/AGENTS.md.bak", content="old rules\n")
    call(worktree, "write_file", path="src/conftest_helpers.py", content="\n")


def test_pyproject_dependencies_may_change_its_pytest_section_may_not(worktree: Path) -> None:
    call(worktree, "edit_file", path="pyproject.toml", search="dependencies = []",
         replace='dependencies = ["numpy"]')
    assert 'dependencies = ["numpy"]' in (worktree / "pyproject.toml").read_text()
    before = files(worktree)
    with pytest.raises(ConfinementError, match=r"\[tool.pytest\] section"):
        call(worktree, "edit_file", path="pyproject.toml", search='addopts = "-q"',
             replace='addopts = "-q -p evil_plugin"')
    with pytest.raises(ConfinementError, match=r"\[tool.pytest\] section"):
        call(worktree, "write_file", path="pyproject.toml", content='[project]\nname = "p"\n')
    assert files(worktree) == before


def test_setup_cfg_metadata_may_change_its_pytest_section_may_not(worktree: Path) -> None:
    call(worktree, "edit_file", path="setup.cfg", search="name = port", replace="name = p2")
    before = files(worktree)
    with pytest.raises(ConfinementError, match=r"\[tool:pytest\] section"):
        call(worktree, "edit_file", path="setup.cfg", search="addopts = -q",
             replace="addopts = -p evil")
    assert files(worktree) == before


def test_the_write_globs_of_a_step_still_hold(worktree: Path) -> None:
    tests_only = Workspace(worktree=worktree, write_only=["tests/**"])
    call(worktree, "write_file", tests_only, path="tests/test_new.py", content="\n")
    with pytest.raises(ConfinementError, match="writable here: tests/"):
        call(worktree, "write_file", tests_only, path="src/mod.py", content="x = 9\n")
    with pytest.raises(ConfinementError, match="protected"):  # inside the globs, still protected
        call(worktree, "write_file", tests_only, path="tests/conftest.py", content="evil\n")
    implementing = Workspace(worktree=worktree, write_never=["tests/**"])
    call(worktree, "edit_file", implementing, path="src/mod.py", search="x = 1",
         replace="x = 2")
    with pytest.raises(ConfinementError, match="ported tests are fixed"):
        call(worktree, "edit_file", implementing, path="tests/test_mod.py", search="pass",
             replace="assert True")
    with pytest.raises(ConfinementError, match="ported tests are fixed"):
        call(worktree, "write_file", implementing, path="tests/sub/../test_mod.py", content="")
    assert (worktree / "tests/test_mod.py").read_text() == "def test_x():\n    pass\n"


def test_a_refusal_is_a_tool_error_the_model_reads(worktree: Path) -> None:
    with pytest.raises(ToolError) as caught:
        call(worktree, "write_file", path="conftest.py", content="evil\n")
    assert "test runner" in str(caught.value)
