"""Hidden tests: each report format read defensively, hostile output included; the hidden
paths put into a tree; one command per id for ``exit``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import pytest

from portwright.errors import UnsafePath
from portwright.eval.hidden import (
    apply_hidden,
    build_jobs_env,
    run_selection,
    run_tests,
    run_tests_and_selection,
)
from portwright.eval.reports import MAX_IDS, MAX_LINE, parse_report
from portwright.eval.tasks import PortTask, load_suite
from portwright.eval.workspace import prepare
from portwright.sandboxes.base import ExecResult
from tests.eval.conftest import TEST_ADD, TEST_SUB, Pair, build_pair, task_toml

PYTEST = b"""\
.F.                                                                     [100%]
=================================== FAILURES ===================================
___________________________________ test_b ___________________________________
----------------------------- Captured stdout call -----------------------------
PASSED t.py::test_b
==================================== PASSES ====================================
PASSED t.py::test_c
=========================== short test summary info ============================
PASSED t.py::test_a
PASSED t.py::test_p[a - b]
FAILED t.py::test_b - assert 0
ERROR t.py::test_e - fixture 'db' not found
1 failed, 2 passed, 1 error in 0.10s
"""


def chunks(data: bytes, size: int = 7) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def test_pytest_reads_only_the_last_summary_section() -> None:
    asked = ["t.py::test_a", "t.py::test_b", "t.py::test_c", "t.py::test_e", "t.py::test_p[a - b]"]
    seen = parse_report("pytest", chunks(PYTEST), asked=asked)
    assert seen == {"t.py::test_a": True, "t.py::test_b": False, "t.py::test_e": False,
                    "t.py::test_p[a - b]": True}  # test_c: only a forged line, outside
    every = parse_report("pytest", [PYTEST])
    assert every["t.py::test_a"] is True
    assert every["t.py::test_b"] is False
    assert "t.py::test_c" not in every


def test_pytest_forged_summary_before_the_real_one_does_not_count() -> None:
    forged = (b"=========================== short test summary info =====\n"
              b"PASSED t.py::test_b\n" + PYTEST)
    assert parse_report("pytest", [forged], asked=["t.py::test_b"]) == {"t.py::test_b": False}
    # a test reported both ways failed
    both = PYTEST.replace(b"FAILED t.py::test_b - assert 0\n",
                          b"FAILED t.py::test_b - assert 0\nPASSED t.py::test_b\n")
    assert parse_report("pytest", [both], asked=["t.py::test_b"]) == {"t.py::test_b": False}


def test_tap_and_gtest() -> None:
    tap = (b"TAP version 13\nok 1 - adds\nnot ok 2 - subtracts\nok 3 - skipped # SKIP no db\n"
           b"ok 4 - todo # TODO later\n    ok 1 - nested\nok 5 - hash \\# sign\nok - no number\n"
           b"# ok 6 - a comment\n")
    assert parse_report("tap", [tap]) == {
        "adds": True, "subtracts": False, "skipped": False, "todo": False, "nested": True,
        "hash # sign": True, "no number": True}
    gtest = (b"[ RUN      ] RmsNorm.Basic\n[       OK ] RmsNorm.Basic (0 ms)\n"
             b"[  FAILED  ] RmsNorm.Fused\n[  FAILED  ] 1 test, listed below:\n"
             b"some output [       OK ] RmsNorm.Forged\n")
    assert parse_report("gtest", [gtest]) == {"RmsNorm.Basic": True, "RmsNorm.Fused": False}


def test_hostile_output_huge_lines_and_floods() -> None:
    huge = b"PASSED t.py::test_a" + b"x" * (MAX_LINE + 10)
    out = (b"=== short test summary info ===\n" + huge + b"\nFAILED t.py::test_b\n"
           + b"y" * (3 * MAX_LINE) + b"PASSED t.py::test_c\nPASSED t.py::test_d\n")
    seen = parse_report("pytest", chunks(out, 4096))
    assert seen == {"t.py::test_b": False, "t.py::test_d": True}  # over-long lines skipped
    flood = b"=== short test summary info ===\n" + b"".join(
        b"PASSED t.py::test_%d\n" % i for i in range(MAX_IDS + 50))
    assert len(parse_report("pytest", [flood])) == MAX_IDS
    asked = parse_report("pytest", [flood + b"PASSED t.py::mine\n"], asked=["t.py::mine"])
    assert asked == {"t.py::mine": True}  # forged lines for ids not asked are ignored
    garbage = bytes(range(256)) * 100 + b"\n\xff\xfeok 2 - x\nok 1 - \xff\n"
    assert parse_report("tap", [garbage]) == {"\ufffd": True}


class FakeSandbox:
    """Answers each command from a table (``exit`` codes by command text)."""

    name = "fake"

    def __init__(self, answers: Mapping[str, ExecResult]) -> None:
        self.answers = answers
        self.commands: list[str] = []

    def __enter__(self) -> FakeSandbox:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None

    def exec(self, argv: Sequence[str], *, timeout: float | None = None,
             env: Mapping[str, str] | None = None, cwd: Path | None = None) -> ExecResult:
        self.commands.append(argv[-1])
        return self.answers[argv[-1]]


def result(code: int = 0, out: str = "", **flags: bool) -> ExecResult:
    return ExecResult(argv=[], exit_code=code, duration=0.1, stdout_head=out, **flags)


def _task(tmp_path: Path, pair: Pair, env: str) -> PortTask:
    path = tmp_path / "t.toml"
    path.write_text(task_toml(pair, env=env))
    return load_suite(path).tasks[0]


def test_exit_runs_one_command_per_id_and_killed_runs_fail(pair: Pair, tmp_path: Path) -> None:
    task = _task(tmp_path, pair,
                 '[environment]\ntest = "./t {tests}"\nreport = "exit"\nsuite = "./t --all"')
    sandbox = FakeSandbox({"./t a": result(0), "./t 'b c'": result(1),
                           "./t d": result(0, timed_out=True)})
    assert run_tests(task, sandbox, ["a", "b c", "d"]) == {"a": True, "b c": False, "d": False}
    assert run_selection(task, sandbox, ["a"]) == {"a": True}
    pytest_task = _task(tmp_path, pair, '[environment]\ntest = "pt {tests}"')
    summary = "=== short test summary info ===\nPASSED x::a\n"
    sandbox = FakeSandbox({"pt x::a x::b": result(1, summary), "pt x::a": result(
        0, summary, capped=True), "pt tests/": result(1, summary)})
    assert run_tests(pytest_task, sandbox, ["x::a", "x::b"]) == {"x::a": True, "x::b": False}
    assert run_tests(pytest_task, sandbox, ["x::a"]) == {"x::a": False}
    assert run_selection(pytest_task, sandbox, ["tests/"]) == {"x::a": True}


def test_apply_hidden_takes_the_port_and_restores_the_agents_tests(tmp_path: Path) -> None:
    pair = build_pair(tmp_path / "repos")
    path = tmp_path / "t.toml"
    path.write_text(task_toml(pair))
    task = load_suite(path).tasks[0]
    ws = prepare(task, pair.repos, tmp_path / "work")
    tree = ws.downstream
    (tree / "tests" / "test_add.py").write_text("def test_add():\n    pass\n")  # weakened
    (tree / "tests" / "test_sub.py").write_text("def test_sub():\n    pass\n")  # forged
    (tree / "tests" / "test_extra.py").write_text("x = 1\n")  # the agent's own test
    (tree / "calc.py").write_text("agent's code\n")
    written = apply_hidden(ws.task, tree)
    assert written == ["tests/test_add.py", "tests/test_extra.py", "tests/test_sub.py"]
    assert (tree / "tests" / "test_add.py").read_text() == TEST_ADD
    assert (tree / "tests" / "test_sub.py").read_text() == TEST_SUB
    assert not (tree / "tests" / "test_extra.py").exists()
    assert (tree / "calc.py").read_text() == "agent's code\n"  # not a test: the agent's

    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / "tests" / "test_sub.py").unlink()
    (tree / "tests").rename(tree / "tests-real")
    (tree / "tests").symlink_to(outside)
    with pytest.raises(UnsafePath):
        apply_hidden(ws.task, tree)
    assert list(outside.iterdir()) == []


def test_apply_hidden_leaves_a_file_that_holds_the_bytes_as_it_is(tmp_path: Path) -> None:
    """A hidden file already as the port has it keeps its time (a build over the tree does
    not redo it); one that differs, or a link in its place, is handled as before."""
    pair = build_pair(tmp_path / "repos")
    path = tmp_path / "t.toml"
    path.write_text(task_toml(pair))
    task = load_suite(path).tasks[0]
    ws = prepare(task, pair.repos, tmp_path / "work")
    tree = ws.downstream
    same, other = tree / "tests" / "test_sub.py", tree / "tests" / "test_add.py"
    same.write_text(TEST_SUB)
    other.write_text(TEST_ADD + "# changed\n")
    for file in (same, other):
        os.utime(file, ns=(10**18, 10**18))
    apply_hidden(ws.task, tree)
    assert same.read_text() == TEST_SUB
    assert same.stat().st_mtime_ns == 10**18  # not written again
    assert other.read_text() == TEST_ADD
    assert other.stat().st_mtime_ns != 10**18

    target = tmp_path / "elsewhere.py"
    target.write_text(TEST_SUB)  # the bytes the port has, behind a link
    same.unlink()
    same.symlink_to(target)
    with pytest.raises(UnsafePath):
        apply_hidden(ws.task, tree)
    assert target.read_text() == TEST_SUB


def test_a_failed_command_that_reports_every_id_passed_lied(pair: Pair, tmp_path: Path) -> None:
    """A command that runs only the asked ids and exits non-zero did not pass them all: an
    all-pass report from it (printed by the code under test) fails every id; a report that
    already fails one is read as it is; a command that runs every test (no ``{tests}``) may
    fail for tests not asked."""
    summary = "=== short test summary info ===\nPASSED x::a\nPASSED x::b\n"
    pytest_task = _task(tmp_path, pair, '[environment]\ntest = "pt {tests}"')
    sandbox = FakeSandbox({"pt x::a x::b": result(1, summary), "pt x::a x::c": result(1, summary),
                           "pt x::b": result(0, summary)})
    assert run_tests(pytest_task, sandbox, ["x::a", "x::b"]) == {"x::a": False, "x::b": False}
    assert run_tests(pytest_task, sandbox, ["x::a", "x::c"]) == {"x::a": True, "x::c": False}
    assert run_tests(pytest_task, sandbox, ["x::b"]) == {"x::b": True}
    tap = _task(tmp_path, pair, '[environment]\ntest = "t {tests}"\nreport = "tap"')
    sandbox = FakeSandbox({"t a": result(1, "ok 1 - a\n")})
    assert run_tests(tap, sandbox, ["a"]) == {"a": False}
    every = _task(tmp_path, pair, '[environment]\ntest = "pt tests/"')
    sandbox = FakeSandbox({"pt tests/": result(1, summary + "FAILED x::z\n")})
    assert run_tests(every, sandbox, ["x::a"]) == {"x::a": True}


def test_a_command_that_takes_no_ids_runs_once_for_the_hidden_tests_and_regress(
        pair: Pair, tmp_path: Path) -> None:
    gtest = _task(tmp_path, pair, '[environment]\ntest = "./all"\nreport = "gtest"')
    out = "[       OK ] S.a\n[  FAILED  ] S.b\n[       OK ] S.c\n"
    sandbox = FakeSandbox({"./all": result(1, out)})
    assert run_tests_and_selection(gtest, sandbox, ["S.b", "S.z"], ["S.*"]) == (
        {"S.b": False, "S.z": False}, {"S.a": True, "S.b": False, "S.c": True})
    assert sandbox.commands == ["./all"]
    killed = FakeSandbox({"./all": result(0, out, timed_out=True)})
    assert run_tests_and_selection(gtest, killed, ["S.a"], ["S.*"]) == ({"S.a": False}, {})
    assert run_tests_and_selection(gtest, sandbox, ["S.a"], []) == ({"S.a": True}, {})

    pytest_task = _task(tmp_path, pair, '[environment]\ntest = "pt {tests}"')
    summary = "=== short test summary info ===\nPASSED x::a\nFAILED x::b\n"
    sandbox = FakeSandbox({"pt x::b": result(1, summary), "pt tests/": result(1, summary)})
    assert run_tests_and_selection(pytest_task, sandbox, ["x::b"], ["tests/"]) == (
        {"x::b": False}, {"x::a": True, "x::b": False})
    assert sandbox.commands == ["pt x::b", "pt tests/"]  # the ids go into the command: two


def test_a_cmake_build_runs_as_many_jobs_as_the_sandbox_has_cpus(pair: Pair,
                                                                  tmp_path: Path) -> None:
    cmake = _task(tmp_path, pair, '[environment]\ntest = "cmake -S . -B b >/dev/null && '
                  'make -C b && b/t {tests}"\nreport = "exit"\nsuite = "b/t"')
    jobs = min(2, os.cpu_count() or 1)
    expected = {} if jobs == 1 else {"MAKEFLAGS": f"-j{jobs}",
                                     "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs)}
    assert build_jobs_env(cmake, 2.0) == expected
    assert build_jobs_env(cmake, 1.5) == {}  # one whole CPU: one job
    assert build_jobs_env(cmake, 1024.0).get("MAKEFLAGS", "-j1") == \
        f"-j{os.cpu_count() or 1}"  # never more jobs than the machine has CPUs
    # a hand-written Makefile may not name every dependency: built as the command says
    plain = _task(tmp_path, pair, '[environment]\ntest = "make check {tests}"\n'
                  'report = "exit"\nsuite = "make check"')
    assert build_jobs_env(plain, 2.0) == {}
    assert build_jobs_env(_task(tmp_path, pair, '[environment]\ntest = "pt {tests}"'),
                          2.0) == {}
