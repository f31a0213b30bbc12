"""A gate that failed for a missing module, program, compiler or header points at
``[sandbox] setup``; the verdict stays the command's."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.config import SandboxConfig
from portwright.gates import run_command
from portwright.gates.toolchain import MissingToolchain, missing_in
from portwright.runs import RunStore
from portwright.runs.keys import evidence_key_dir
from tests.conftest import docker_engine_running
from tests.parity.world import World


@pytest.mark.parametrize(("line", "what"), [
    ("E   ModuleNotFoundError: No module named 'numpy'", "Python module numpy"),
    ("ModuleNotFoundError: No module named 'numpy.linalg'", "Python module numpy.linalg"),
    ("sh: 1: g++: not found", "command g++"),
    ("bash: cmake: command not found", "command cmake"),
    ("/bin/sh: line 1: nvcc: command not found", "command nvcc"),
    ("tests/t.cpp:1:10: fatal error: gtest/gtest.h: No such file or directory",
     "header gtest/gtest.h"),
    ("error: command 'gcc' failed: No such file or directory", "compiler gcc"),
    ("make: g++: No such file or directory", "compiler or build tool g++"),
    ("Error: Cannot find module 'lodash'", "Node module lodash"),
    ('  Could not find a package configuration file provided by "GTest" with any',
     "CMake package GTest"),
])
def test_missing_toolchain_lines(line: str, what: str) -> None:
    assert missing_in(line) == what


@pytest.mark.parametrize("line", [
    "FAILED tests/test_a.py::test_b - AssertionError: assert 1 == 2",
    "open('data.csv'): No such file or directory",
    "1 passed in 0.01s",
])
def test_other_failures_get_no_hint(line: str) -> None:
    assert missing_in(line) is None


def test_scanner_reads_lines_split_across_chunks() -> None:
    scanner = MissingToolchain()
    for chunk in (b"collecting ...\nE   ModuleNotFound", b"Error: No module named 'nu",
                  b"mpy'\nsh: 1: g++: not found"):
        scanner.feed(chunk)
    scanner.end()
    assert scanner.found == ["Python module numpy", "command g++"]
    hint = scanner.hint()
    assert hint is not None
    assert "[sandbox] setup" in hint


@pytest.mark.docker
@pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")
def test_failed_gate_for_a_missing_module_points_at_setup(world: World, tmp_path: Path,
                                                          store: RunStore) -> None:
    from portwright.sandboxes import open_sandbox

    world.downstream.commit("tests", {"tests/test_np.py": "import numpy_absent_here\n\n\n"
                                                          "def test_x():\n    pass\n"})
    with open_sandbox(SandboxConfig(backend="docker", memory="512m"), worktree=world.repo,
                      run_id="hint", log_dir=tmp_path / "logs",
                      key_dir=evidence_key_dir()) as box:
        failed, _ = run_command(box, "python3 -m pytest -q -p no:cacheprovider tests",
                                repo=world.repo, name="unit", store=store)
        compiler, _ = run_command(box, "no-such-cc -o x x.c", repo=world.repo, name="cc")
        fine, _ = run_command(box, "python3 -c 'print(1)'", repo=world.repo, name="ok")
        other, _ = run_command(box, "echo 'assert 1 == 2' >&2; exit 1", repo=world.repo,
                               name="other")
    assert not failed.passed
    assert any("Python module numpy_absent_here" in m and "[sandbox] setup" in m
               for m in failed.messages), failed.messages
    assert not compiler.passed
    assert any("command no-such-cc" in m for m in compiler.messages), compiler.messages
    assert fine.passed
    assert fine.messages == []
    assert not any("hint" in m for m in other.messages)
