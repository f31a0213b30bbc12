"""One way to call git: every host-side git command runs through
:mod:`portwright.vcs.plumbing` (hardened environment), and gitpython is imported by
:mod:`portwright.vcs` alone, its ``Repo`` opened by one factory (:func:`open_repo`).

The source of ``portwright/`` is read with :mod:`ast`, so a new raw ``subprocess`` call to
git, a ``git.Repo(...)`` or a gitpython command (``repo.git.diff(...)``) anywhere else
fails here, with the file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import portwright
from portwright.vcs import plumbing
from portwright.vcs.git import commit_sha, open_repo, path_of, read_blob
from tests.conftest import GitRepo

PACKAGE = Path(portwright.__file__).resolve().parent
VCS = PACKAGE / "vcs"
FACTORY = VCS / "git.py"
PLUMBING = VCS / "plumbing.py"
_SPAWNERS = {"run", "Popen", "call", "check_call", "check_output", "getoutput",
             "getstatusoutput", "system", "popen", "execv", "execvp", "execvpe", "spawnv",
             "spawnvp", "spawnlp", "posix_spawn", "posix_spawnp", "create_subprocess_exec",
             "create_subprocess_shell"}


def _names_git(node: ast.AST) -> bool:
    """Whether ``node`` (an argument of a process call) spells the git program."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            word = sub.value.strip().split(" ", 1)[0]
            if word == "git" or word.endswith("/git"):
                return True
    return False


def violations(source: str, where: str, *, in_vcs: bool, factory: bool) -> list[str]:
    """Every way ``source`` calls git other than the one allowed for its place."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        line = f"{where}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import | ast.ImportFrom) and not in_vcs:
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""])
            if any(m == "git" or m.startswith("git.") for m in modules):
                found.append(f"{line}: imports gitpython (only portwright.vcs may)")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in _SPAWNERS and any(_names_git(a) for a in [*node.args, *(
                k.value for k in node.keywords)]) and not (in_vcs and where.endswith(
                "plumbing.py")):
            found.append(f"{line}: starts git itself (use portwright.vcs.plumbing)")
        if name == "Repo" and not factory:
            found.append(f"{line}: opens a git.Repo (use portwright.vcs.git.open_repo)")
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute)
                and func.value.attr == "git" and not factory):
            found.append(f"{line}: runs a gitpython command .git.{func.attr}(…) "
                         "(use portwright.vcs.plumbing)")
    return found


def test_portwright_calls_git_one_way() -> None:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += violations(path.read_text(encoding="utf-8"),
                            str(path.relative_to(PACKAGE.parent)),
                            in_vcs=VCS in path.parents, factory=path == FACTORY)
    assert found == []


def test_the_factory_opens_the_only_repo() -> None:
    calls = [node for node in ast.walk(ast.parse(FACTORY.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Repo"]
    assert len(calls) == 1


@pytest.mark.parametrize(("source", "in_vcs", "says"), [
    ('import subprocess\nsubprocess.run(["git", "log"])\n', False, "starts git itself"),
    ('import subprocess as sp\nsp.Popen(["/usr/bin/git", "log"])\n', False,
     "starts git itself"),
    ('import os\nos.system("git status")\n', False, "starts git itself"),
    ('import subprocess\nsubprocess.run(["git", "log"])\n', True, "starts git itself"),
    ("import git\n", False, "imports gitpython"),
    ("from git import Repo\n", False, "imports gitpython"),
    ("from portwright.vcs.git import Repo\nRepo('.')\n", True, "opens a git.Repo"),
    ("def f(repo):\n    return repo.git.diff('HEAD')\n", False, "gitpython command"),
])
def test_the_check_sees_each_other_way(source: str, in_vcs: bool, says: str) -> None:
    assert any(says in v for v in violations(source, "x.py", in_vcs=in_vcs, factory=False))


def test_the_check_allows_the_one_way() -> None:
    source = ("from portwright.vcs import plumbing\nplumbing.git(p, 'log')\n"
              "import subprocess\nsubprocess.run(['make', 'test'])\nrepo.git_dir\n")
    assert violations(source, "x.py", in_vcs=False, factory=False) == []


def test_the_factory_repo_runs_hardened(make_repo: object) -> None:
    repo: GitRepo = make_repo("r")  # type: ignore[operator]
    sha = repo.commit("one", {"a.txt": "a\n"})
    opened = open_repo(repo.path)
    env = opened.git.environment()
    config = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"]
              for i in range(int(env["GIT_CONFIG_COUNT"]))}
    assert config.items() >= plumbing.HARDENED_CONFIG.items()
    assert commit_sha(opened, "HEAD") == sha
    assert commit_sha(opened, "no-such-rev") is None
    assert read_blob(opened, f"{sha}:a.txt") == b"a\n"
    assert read_blob(opened, f"{sha}:missing.txt") is None
    assert path_of(opened) == repo.path
    assert plumbing.version().startswith("git version")
