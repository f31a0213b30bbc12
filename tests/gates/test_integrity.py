"""Tamper flags from a diff (every rule: a forging line caught, an ordinary one not), and the
``tamper`` and ``protected-paths`` checks on real git repos."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from portwright.gates.checks import check_no_test_weakening
from portwright.gates.integrity import check_protected_paths, check_tamper
from portwright.gates.tamper import TamperFlag, TamperKind, tamper_flags
from tests.conftest import GitRepo


def added(path: str, *lines: str) -> str:
    """A unified diff that adds ``path`` with ``lines``."""
    body = "".join(f"+{line}\n" for line in lines)
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}")


def kinds(path: str, line: str) -> set[TamperKind]:
    return {f.kind for f in tamper_flags(added(path, line))}


# Each rule: a line that forges or reaches into the runner, and the kind it must raise.
FORGING: list[tuple[str, str, TamperKind]] = [
    # Python: leaving without the runner's summary or exit status
    ("pkg/kv.py", "    os._exit(0)", TamperKind.HARD_EXIT),
    ("pkg/kv.py", "from os import _exit", TamperKind.HARD_EXIT),
    ("pkg/kv.py", "ctypes.CDLL(None)._exit(0)", TamperKind.HARD_EXIT),
    ("pkg/kv.py", 'os.execv("/bin/true", ["true"])', TamperKind.HARD_EXIT),
    # Python: code that runs after the runner wrote its verdict
    ("pkg/kv.py", "atexit.register(write_report)", TamperKind.EXIT_HOOK),
    ("pkg/kv.py", "import atexit", TamperKind.EXIT_HOOK),
    ("pkg/kv.py", "threading._register_atexit(done)", TamperKind.EXIT_HOOK),
    # Python: the runner's own machinery, from code that is not a test
    ("pkg/kv.py", "import pytest", TamperKind.RUNNER_HOOK),
    ("pkg/kv.py", "from _pytest.reports import TestReport", TamperKind.RUNNER_HOOK),
    ("pkg/kv.py", "def pytest_runtest_makereport(item, call):", TamperKind.RUNNER_HOOK),
    ("pkg/kv.py", "def pytest_collection_modifyitems(items):", TamperKind.RUNNER_HOOK),
    ("pkg/kv.py", "def pytest_terminal_summary(terminalreporter):", TamperKind.RUNNER_HOOK),
    ("pkg/kv.py", 'pytest_plugins = ["pkg.plugin"]', TamperKind.RUNNER_HOOK),
    ("pkg/kv.py", 'importlib.import_module("pytest")', TamperKind.RUNNER_HOOK),
    ("pkg/kv.py", "import pluggy", TamperKind.RUNNER_HOOK),
    ("setup.py", '    entry_points={"pytest11": ["kv = pkg.plugin"]},', TamperKind.RUNNER_HOOK),
    ("pyproject.toml", "[project.entry-points.pytest11]", TamperKind.RUNNER_HOOK),
    # Python: unittest's bookkeeping rewritten
    ("pkg/kv.py", "unittest.TestResult.addFailure = lambda *a: None", TamperKind.RESULT_PATCH),
    ("pkg/kv.py", "TestCase.assertEqual = lambda self, a, b: None", TamperKind.RESULT_PATCH),
    ("pkg/kv.py", 'setattr(unittest.TextTestResult, "addError", noop)', TamperKind.RESULT_PATCH),
    # Python: modules swapped under the runner or the tests
    ("pkg/kv.py", 'sys.modules["_pytest.reports"] = fake', TamperKind.MODULE_INJECTION),
    ("pkg/kv.py", 'sys.modules["numpy"] = fake_numpy', TamperKind.MODULE_INJECTION),
    ("pkg/kv.py", "sys.modules.update(fakes)", TamperKind.MODULE_INJECTION),
    ("pkg/kv.py", "sys.meta_path.insert(0, Finder())", TamperKind.MODULE_INJECTION),
    ("pkg/kv.py", "builtins.__import__ = my_import", TamperKind.MODULE_INJECTION),
    # Python: a timeout or a crash turned into something else
    ("pkg/kv.py", "signal.signal(signal.SIGALRM, lambda *a: os._exit(0))",
     TamperKind.SIGNAL_HANDLER),
    ("pkg/kv.py", "signal.setitimer(signal.ITIMER_REAL, 1.0)", TamperKind.SIGNAL_HANDLER),
    ("pkg/kv.py", "faulthandler.dump_traceback_later(5, exit=True)", TamperKind.SIGNAL_HANDLER),
    ("pkg/kv.py", "from signal import signal, SIGTERM", TamperKind.SIGNAL_HANDLER),
    # Python: writing past the runner's capture, to the descriptors it inherited
    ("pkg/kv.py", 'os.write(1, b"PASS\\n")', TamperKind.RAW_OUTPUT),
    ("pkg/kv.py", 'out = os.fdopen(2, "w")', TamperKind.RAW_OUTPUT),
    ("pkg/kv.py", 'tty = open(1, "w", closefd=False)', TamperKind.RAW_OUTPUT),
    ("pkg/kv.py", 'for fd in os.listdir("/proc/self/fd"):', TamperKind.RAW_OUTPUT),
    ("pkg/kv.py", 'open("/dev/tty", "w")', TamperKind.RAW_OUTPUT),
    ("pkg/kv.py", "os.dup2(saved, 1)", TamperKind.RAW_OUTPUT),
    ("pkg/kv.py", 'sys.__stdout__.write("ok")', TamperKind.RAW_OUTPUT),
    # Python: reading the test's own frame to return what it expects
    ("pkg/kv.py", "expected = sys._getframe(1).f_locals['expected']", TamperKind.CALLER_FRAME),
    ("pkg/kv.py", "caller = inspect.currentframe().f_back", TamperKind.CALLER_FRAME),
    # Output of a test runner, forged
    ("pkg/kv.py", 'print("tests/test_kv.py::test_alloc PASSED")', TamperKind.FORGED_REPORT),
    ("pkg/kv.py", 'print(f"PASSED {test_id}")', TamperKind.FORGED_REPORT),
    ("pkg/kv.py", 'print(name, "PASSED")', TamperKind.FORGED_REPORT),
    ("pkg/kv.py", 'print(f"==== {n} passed in 0.01s ====")', TamperKind.FORGED_REPORT),
    ("pkg/kv.py", 'print("3 passed, 0 failed")', TamperKind.FORGED_REPORT),
    ("pkg/kv.py", "XML = '<testsuite tests=\"3\" failures=\"0\">'", TamperKind.FORGED_REPORT),
    ("pkg/kv.py", '    <testcase classname="tests.test_kv" name="test_alloc"/>',
     TamperKind.FORGED_REPORT),
    ("pkg/kv.py", 'Path("build/junit.xml").write_text(report)', TamperKind.FORGED_REPORT),
    ("src/kv.cpp", 'std::puts("[       OK ] Kv.Alloc (0 ms)");', TamperKind.FORGED_REPORT),
    ("src/kv.cpp", 'std::puts("[  PASSED  ] 3 tests.");', TamperKind.FORGED_REPORT),
    ("scripts/run.sh", 'echo "tests/test_kv.py::test_alloc PASSED"', TamperKind.FORGED_REPORT),
    ("data/report.xml", '<testsuite name="pytest" tests="1" failures="0">',
     TamperKind.FORGED_REPORT),
    # JavaScript / TypeScript
    ("src/kv.js", "process.exit(0);", TamperKind.HARD_EXIT),
    ("src/kv.ts", "process.reallyExit(0);", TamperKind.HARD_EXIT),
    ("src/kv.js", "process.exitCode = 0;", TamperKind.HARD_EXIT),
    ("src/kv.mjs", "process.on('exit', () => { process.exitCode = 0; });", TamperKind.EXIT_HOOK),
    ("src/kv.js", 'process.once("beforeExit", report);', TamperKind.EXIT_HOOK),
    ("src/kv.js", "process.on('SIGTERM', () => {});", TamperKind.SIGNAL_HANDLER),
    ("src/kv.js", "process.on('uncaughtException', () => {});", TamperKind.SIGNAL_HANDLER),
    ("src/kv.js", "fs.writeSync(1, 'ok 1 - alloc\\n');", TamperKind.RAW_OUTPUT),
    ("src/kv.js", "process.stdout.write = () => true;", TamperKind.RAW_OUTPUT),
    ("src/kv.js", "const { expect } = require('@jest/globals');", TamperKind.RUNNER_HOOK),
    ("src/kv.ts", "import { vi } from 'vitest';", TamperKind.RUNNER_HOOK),
    ("src/kv.js", "require.cache[require.resolve('./real')] = fake;",
     TamperKind.MODULE_INJECTION),
    ("src/kv.js", "Module._load = myLoad;", TamperKind.MODULE_INJECTION),
    ("package.json", '    "test": "exit 0",', TamperKind.RUNNER_HOOK),
    ("jest.config.js", "module.exports = { testMatch: [] };", TamperKind.RUNNER_HOOK),
    ("src/kv.js", "console.log('ok 1 - alloc');", TamperKind.FORGED_REPORT),
    # how the tests are run, outside the protected files
    ("Makefile", "test: ; @true", TamperKind.RUNNER_HOOK),
    ("noxfile.py", "    session.run('true')", TamperKind.RUNNER_HOOK),
    # C / C++ library code
    ("src/kv.cpp", "    _exit(0);", TamperKind.HARD_EXIT),
    ("src/kv.c", "    _Exit(0);", TamperKind.HARD_EXIT),
    ("src/kv.cc", "    std::quick_exit(0);", TamperKind.HARD_EXIT),
    ("src/kv.cpp", "    std::exit(1);", TamperKind.HARD_EXIT),
    ("src/kv.c", "    exit(EXIT_SUCCESS);", TamperKind.HARD_EXIT),
    ("src/kv.c", '    execl("/bin/true", "true", NULL);', TamperKind.HARD_EXIT),
    ("src/kv.c", "static int hooked = atexit(report);", TamperKind.EXIT_HOOK),
    ("src/kv.cpp", "std::at_quick_exit(report);", TamperKind.EXIT_HOOK),
    ("src/kv.c", "__attribute__((destructor)) static void fin(void) {}", TamperKind.EXIT_HOOK),
    ("src/kv.c", "signal(SIGSEGV, on_crash);", TamperKind.SIGNAL_HANDLER),
    ("src/kv.c", "sigaction(SIGABRT, &act, NULL);", TamperKind.SIGNAL_HANDLER),
    ("src/kv.cpp", "std::set_terminate(quietly);", TamperKind.SIGNAL_HANDLER),
    ("src/kv.c", 'write(STDOUT_FILENO, "ok\\n", 3);', TamperKind.RAW_OUTPUT),
    ("src/kv.c", "dup2(saved, 1);", TamperKind.RAW_OUTPUT),
    ("src/kv.c", 'freopen("/dev/null", "w", stderr);', TamperKind.RAW_OUTPUT),
    ("src/kv.h", "#include <gtest/gtest.h>", TamperKind.RUNNER_HOOK),
    ("src/kv.cpp", "::testing::UnitTest::GetInstance()->listeners();", TamperKind.RUNNER_HOOK),
    ("CMakeLists.txt", 'set_tests_properties(kv PROPERTIES PASS_REGULAR_EXPRESSION "ok")',
     TamperKind.RUNNER_HOOK),
    ("cmake/tests.cmake", "set_tests_properties(kv PROPERTIES WILL_FAIL TRUE)",
     TamperKind.RUNNER_HOOK),
]

# Lines an ordinary implementation writes: none may raise a flag.
ORDINARY: list[tuple[str, str]] = [
    ("pkg/kv.py", "    sys.exit(main())"),  # SystemExit: the runner reports it, cannot forge
    ("pkg/kv.py", "    raise SystemExit(2)"),
    ("pkg/kv.py", "    return os.path.join(a, b)"),
    ("pkg/kv.py", "subprocess.run(cmd, check=True)"),
    ("pkg/kv.py", "mod = sys.modules[__name__]"),
    ("pkg/kv.py", "if name in sys.modules:"),
    ("pkg/kv.py", "proc.send_signal(signal.SIGTERM)"),
    ("pkg/kv.py", "os.write(fd, data)"),
    ("pkg/kv.py", 'with open(path, "w") as handle:'),
    ("pkg/kv.py", "params = inspect.signature(fn).parameters"),
    ("pkg/kv.py", '    PASSED = "passed"'),
    ("pkg/kv.py", "if status is Status.PASSED:"),
    ("pkg/kv.py", "passed = all(check() for check in checks)"),
    ("pkg/kv.py", 'print(f"{n} blocks allocated")'),
    ("pkg/kv.py", "result = run_model(inputs)"),
    ("pkg/kv.py", "# no atexit, no os._exit here: a comment is not code"),
    ("setup.py", '    install_requires=["numpy"],'),
    ("pyproject.toml", 'dependencies = ["numpy>=1.26"]'),
    ("README.md", "Run `pytest --junitxml=build/junit.xml`: 3 passed in 0.1s, os._exit(0)."),
    ("docs/usage.rst", "The tests print PASSED and the suite exits with process.exit(0)."),
    ("data/config.xml", "<config><block size=\"16\"/></config>"),
    ("scripts/run.sh", 'echo "building the kernels"'),
    ("src/kv.js", "process.stdout.write(line);"),
    ("src/kv.js", "const code = process.exitCode;"),
    ("src/kv.js", "emitter.on('exit', cleanup);"),
    ("src/kv.js", "const fs = require('fs');"),
    ("src/kv.js", "const cached = require.cache[key];"),
    ("src/kv.js", "// process.exit(0) would hide failures"),
    ("package.json", '    "version": "1.2.0",'),
    ("src/kv.cpp", "    return 0;"),
    ("src/kv.cpp", '    if (exit_code != 0) throw std::runtime_error("alloc");'),
    ("src/kv.c", "    exit(EXIT_FAILURE);"),
    ("src/kv.c", "    on_exit_cb(ctx);"),
    ("src/kv.c", "    write(fd, buf, n);"),
    ("src/kv.cpp", "#include <vector>"),
    ("src/kv.cpp", "    std::cout << blocks << '\\n';"),
    ("CMakeLists.txt", "add_test(NAME kv COMMAND kv_test)"),
    ("Makefile", "build: kv.o"),
    ("Makefile", "TESTS := $(wildcard tests/*.py)"),
]


@pytest.mark.parametrize(("path", "line", "kind"), FORGING, ids=lambda v: str(v)[:40])
def test_each_rule_catches_its_forging_line(path: str, line: str, kind: TamperKind) -> None:
    assert kind in kinds(path, line)


@pytest.mark.parametrize(("path", "line"), ORDINARY, ids=lambda v: str(v)[:40])
def test_ordinary_lines_raise_no_flag(path: str, line: str) -> None:
    assert tamper_flags(added(path, line)) == []


def test_every_kind_has_a_forging_example() -> None:
    assert {kind for _, _, kind in FORGING} == set(TamperKind)


def test_flags_name_path_line_kind_and_excerpt() -> None:
    diff = added("pkg/kv.py", "import os", "", "def alloc(n):", "    os._exit(0)")
    assert [f.render() for f in tamper_flags(diff)] == ["pkg/kv.py:4: hard-exit: os._exit(0)"]
    assert tamper_flags(diff) == [TamperFlag("pkg/kv.py", 4, TamperKind.HARD_EXIT,
                                             "os._exit(0)")]


def test_one_line_may_raise_several_kinds_once_each() -> None:
    line = 'print("test_alloc PASSED"); os._exit(0); os._exit(0)'
    flags = tamper_flags(added("pkg/kv.py", line))
    assert sorted(f.kind for f in flags) == [TamperKind.FORGED_REPORT, TamperKind.HARD_EXIT]


def test_a_runner_configuration_is_flagged_once() -> None:
    flags = tamper_flags(added("vitest.config.ts", "export default {", "  test: {},", "};"))
    assert [f.render() for f in flags] == ["vitest.config.ts:1: runner-hook: export default {"]


def test_long_excerpts_are_cut() -> None:
    line = "os._exit(0)  # " + "x" * 500
    (flag,) = tamper_flags(added("pkg/kv.py", line))
    assert len(flag.excerpt) <= 121
    assert flag.excerpt.startswith("os._exit(0)")
    assert flag.excerpt.endswith("…")


def test_excluded_paths_raise_no_flag() -> None:
    diff = added("tests/test_kv.py", "import pytest") + added("pkg/kv.py", "import atexit")
    flags = tamper_flags(diff, exclude=["tests/**"])
    assert [(f.path, f.kind) for f in flags] == [("pkg/kv.py", TamperKind.EXIT_HOOK)]


def test_a_moved_line_is_not_new() -> None:
    diff = ("--- a/pkg/kv.py\n+++ b/pkg/kv.py\n@@ -1,3 +1,3 @@\n"
            "-atexit.register(flush)\n def alloc(n):\n     return [0] * n\n"
            "+atexit.register(flush)\n")
    assert tamper_flags(diff) == []


def test_removed_lines_raise_no_flag() -> None:
    diff = "--- a/pkg/kv.py\n+++ b/pkg/kv.py\n@@ -1,2 +1 @@\n-os._exit(0)\n x = 1\n"
    assert tamper_flags(diff) == []


def test_quoted_paths_are_read_as_git_wrote_them() -> None:
    diff = ('diff --git "a/pkg/\\303\\251 x.py" "b/pkg/\\303\\251 x.py"\n'
            "new file mode 100644\n--- /dev/null\n"
            '+++ "b/pkg/\\303\\251 x.py"\t\n@@ -0,0 +1 @@\n+os._exit(0)\n')
    assert [f.render() for f in tamper_flags(diff)] == ["pkg/é x.py:1: hard-exit: os._exit(0)"]


# ------------------------------------------------------------------ the checks on git

PYPROJECT = ('[project]\nname = "kv"\ndependencies = []\n\n'
             '[tool.pytest.ini_options]\naddopts = "-q"\n')
TESTS = ["tests/**"]


@pytest.fixture
def repo(make_repo: Callable[[str], GitRepo]) -> GitRepo:
    down = make_repo("down")
    down.commit("base", {"pyproject.toml": PYPROJECT, "kv.py": "def alloc(n):\n    return []\n",
                         "tests/test_kv.py": "import kv\n\n\ndef test_alloc():\n"
                                             "    assert kv.alloc(2) == [0, 0]\n",
                         "tests/conftest.py": "",
                         ".gitignore": ".venv/\nbuild/\n"})
    return down


def _tamper(repo: GitRepo, **options: Any) -> tuple[bool, list[str]]:
    verdict = check_tamper(repo.path, base="HEAD~1", tests=TESTS, **options)
    return verdict.passed, verdict.messages


def test_tamper_lists_flags_and_passes_by_default(repo: GitRepo) -> None:
    repo.commit("impl", {"kv.py": "import os\n\n\ndef alloc(n):\n    os._exit(0)\n"})
    passed, messages = _tamper(repo)
    assert passed
    assert messages[0] == "kv.py:5: hard-exit: os._exit(0)"
    assert "advisory" in messages[-1]


def test_tamper_fails_when_told_to(repo: GitRepo) -> None:
    repo.commit("impl", {"kv.py": "import atexit\n\n\ndef alloc(n):\n    return [0] * n\n"})
    passed, messages = _tamper(repo, fail=True)
    assert not passed
    assert messages == ["kv.py:1: exit-hook: import atexit"]


def test_tamper_clean_change_has_no_flags(repo: GitRepo) -> None:
    repo.commit("impl", {"kv.py": "def alloc(n):\n    return [0] * n\n"})
    assert _tamper(repo, fail=True) == (True, ["no tamper flag in 1 changed file(s)"])


def test_tamper_leaves_test_paths_and_ignored_globs_alone(repo: GitRepo) -> None:
    repo.commit("impl", {"tests/test_kv.py": "import pytest\nimport os\nos._exit(0)\n",
                         "tools/cli.c": "int main(void) { exit(0); }\n",
                         "kv.py": "def alloc(n):\n    return [0] * n\n"})
    assert _tamper(repo, fail=True, ignore=["tools/**"])[0]
    assert _tamper(repo, fail=True)[1] == ["tools/cli.c:1: hard-exit: int main(void) "
                                           "{ exit(0); }"]


def test_gitattributes_cannot_hide_a_change_from_the_diff(repo: GitRepo) -> None:
    repo.commit("impl", {".gitattributes": "*.py -diff\n",
                         "kv.py": "import os\n\n\ndef alloc(n):\n    os._exit(0)\n"})
    assert "kv.py:5: hard-exit: os._exit(0)" in _tamper(repo)[1]


def test_gitattributes_cannot_hide_a_weakened_test(repo: GitRepo) -> None:
    repo.commit("impl", {".gitattributes": "tests/** -diff\n",
                         "tests/test_kv.py": "import kv\n\n\ndef test_alloc():\n    pass\n"})
    verdict = check_no_test_weakening(repo.path, base="HEAD~1", tests=TESTS)
    assert verdict.messages == ["tests/test_kv.py:5: removes an assertion (line 5 before the "
                                "change): `assert kv.alloc(2) == [0, 0]`"]


def test_code_moved_out_of_the_tests_counts_as_new(repo: GitRepo) -> None:
    repo.commit("helper", {"tests/helpers.py": "import pytest\n\n\ndef make(n):\n"
                                                "    return [0] * n\n"})
    repo.git("mv", "tests/helpers.py", "kv_helpers.py")
    repo.commit("move the helper into the package")
    assert _tamper(repo)[1][0] == "kv_helpers.py:1: runner-hook: import pytest"


def test_tamper_reads_quoted_file_names(repo: GitRepo) -> None:
    repo.commit("impl", {"pkg/é x.py": "import atexit\n"})
    assert _tamper(repo)[1][0] == "pkg/é x.py:1: exit-hook: import atexit"


def test_tamper_reads_file_names_that_are_not_utf8(repo: GitRepo) -> None:
    odd = repo.path / os.fsdecode(b"src/\xff.c")
    odd.parent.mkdir()
    odd.write_text("void fin(void) { _exit(0); }\n")
    repo.commit("impl")
    assert _tamper(repo)[1][0] == "src/\ufffd.c:1: hard-exit: void fin(void) { _exit(0); }"


def test_tamper_reads_only_the_files_it_has_rules_for(repo: GitRepo) -> None:
    repo.commit("impl", {"weights.bin": "os._exit(0)\n", "notes.md": "os._exit(0)\n",
                         "kv.py": "def alloc(n):\n    return [0] * n\n"})
    assert _tamper(repo) == (True, ["no tamper flag in 1 changed file(s)"])


def test_tamper_bad_base_is_a_clear_failure(repo: GitRepo) -> None:
    verdict = check_tamper(repo.path, base="nope", tests=TESTS)
    assert not verdict.passed
    assert "nope" in verdict.messages[0]


def _protected(repo: GitRepo, **options: Any) -> tuple[bool, list[str]]:
    verdict = check_protected_paths(repo.path, base="HEAD~1", **options)
    return verdict.passed, verdict.messages


def test_protected_committed_root_conftest(repo: GitRepo) -> None:
    repo.commit("impl", {"conftest.py": "def pytest_runtest_makereport(item, call):\n"
                                        "    pass\n"})
    passed, messages = _protected(repo)
    assert not passed
    assert len(messages) == 1
    assert messages[0].startswith("conftest.py:1: conftest.py is a protected path")
    assert messages[0].endswith("(committed in HEAD~1..HEAD)")


def test_protected_pyproject_pytest_section_but_not_dependencies(repo: GitRepo) -> None:
    repo.commit("deps", {"pyproject.toml": PYPROJECT.replace("[]", '["numpy"]')})
    assert _protected(repo) == (True, ["no protected path changed (committed or in the "
                                       "working tree)"])
    repo.commit("hook", {"pyproject.toml": PYPROJECT.replace('"-q"', '"-q -p evil"')})
    passed, messages = _protected(repo)
    assert not passed
    assert messages == ["pyproject.toml:1: the [tool.pytest] section of pyproject.toml is "
                        "protected (test-runner configuration) and may not change "
                        "(committed in HEAD~1..HEAD)"]


def test_protected_rename_and_delete(repo: GitRepo) -> None:
    repo.commit("helpers", {"helpers.py": "def fixture():\n    return 1\n" * 5})
    repo.git("mv", "helpers.py", "conftest.py")
    repo.commit("rename", remove=["tests/conftest.py"])
    messages = _protected(repo)[1]
    assert [m.split(":")[0] for m in messages] == ["conftest.py", "tests/conftest.py"]


def test_protected_untracked_and_uncommitted_changes(repo: GitRepo) -> None:
    repo.commit("impl", {"kv.py": "def alloc(n):\n    return [0] * n\n"})
    assert _protected(repo)[0]
    repo.write("conftest.py", "import pytest\n")                   # a command wrote it
    repo.write("tests/conftest.py", "# rewritten\n")               # tracked, not committed
    messages = _protected(repo)[1]
    assert messages == [
        "conftest.py:1: conftest.py is a protected path (it steers portwright or the test "
        "runner); it is read from the commit the run started at and may not change "
        "(untracked in the working tree)",
        "tests/conftest.py:1: tests/conftest.py is a protected path (it steers portwright or "
        "the test runner); it is read from the commit the run started at and may not change "
        "(uncommitted change in the working tree)"]


def test_protected_ignored_files_count_unless_the_rules_exempt_them(repo: GitRepo) -> None:
    repo.commit("impl", {"kv.py": "def alloc(n):\n    return [0] * n\n"})
    repo.write(".venv/lib/python3.11/site-packages/evil.pth", "import evil\n")
    passed, messages = _protected(repo)
    assert not passed
    assert messages[0].startswith(".venv/lib/python3.11/site-packages/evil.pth:1: ")
    assert messages[0].endswith("(untracked and ignored by git, in the working tree)")
    assert _protected(repo, ignore=[".venv/**"])[0]


def test_protected_a_new_ignore_rule_does_not_hide_a_file(repo: GitRepo) -> None:
    repo.commit("impl", {".gitignore": ".venv/\nbuild/\nconftest.py\n"})
    repo.write("conftest.py", "import pytest\n")
    messages = _protected(repo)[1]
    assert [m.split(":")[0] for m in messages] == ["conftest.py"]


def test_protected_uncommitted_pyproject_is_compared_by_section(repo: GitRepo) -> None:
    repo.commit("impl", {"kv.py": "def alloc(n):\n    return [0] * n\n"})
    repo.write("pyproject.toml", PYPROJECT.replace("[]", '["numpy"]'))
    assert _protected(repo)[0]
    repo.write("pyproject.toml", PYPROJECT.replace('"-q"', '"-q -p evil"'))
    assert _protected(repo)[1] == [
        "pyproject.toml:1: the [tool.pytest] section of pyproject.toml is protected "
        "(test-runner configuration) and may not change (uncommitted change in the working "
        "tree)"]


def test_protected_a_link_is_not_followed(repo: GitRepo, tmp_path: Path) -> None:
    repo.commit("impl", {"kv.py": "def alloc(n):\n    return [0] * n\n"})
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text(PYPROJECT)                     # same bytes, read through a link
    (repo.path / "pyproject.toml").unlink()
    (repo.path / "pyproject.toml").symlink_to(elsewhere)
    passed, messages = _protected(repo)
    assert not passed
    assert messages == ["pyproject.toml:1: pyproject.toml is a symbolic link; its protected "
                        "part cannot be compared, so it counts as changed (uncommitted change "
                        "in the working tree)"]


def test_protected_file_in_an_undecodable_folder(repo: GitRepo) -> None:
    odd = os.fsdecode(b"tests/\xff/conftest.py")             # not UTF-8: git prints it escaped
    (repo.path / odd).parent.mkdir()
    (repo.path / odd).write_text("import pytest\n")
    repo.commit("impl")
    committed = _protected(repo)[1]
    assert [m.split(":1: ")[0] for m in committed] == ["tests/\ufffd/conftest.py"]
    assert committed[0].endswith("(committed in HEAD~1..HEAD)")
    (repo.path / odd).write_text("import evil\n")
    (repo.path / os.fsdecode(b"\xfe.pth")).write_text("import evil\n")
    messages = _protected(repo)[1]
    assert [m.split(":1: ")[0] for m in messages] == [
        "tests/\ufffd/conftest.py", "tests/\ufffd/conftest.py", "\ufffd.pth"]
    assert messages[1].endswith("(uncommitted change in the working tree)")
    assert messages[2].endswith("(untracked in the working tree)")


def test_protected_unreadable_file_counts_as_changed(repo: GitRepo,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from portwright import safefs

    repo.commit("impl", {"kv.py": "def alloc(n):\n    return [0] * n\n"})
    repo.write("pyproject.toml", PYPROJECT + "\n")  # same pytest section, but unreadable

    def refuse(root: Path, rel: str, *, cap: int) -> bytes:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(safefs, "read_file", refuse)
    assert _protected(repo)[1] == [
        "pyproject.toml:1: pyproject.toml cannot be read (Permission denied); its protected "
        "part cannot be compared, so it counts as changed (uncommitted change in the working "
        "tree)"]


def test_protected_bad_base_is_a_clear_failure(repo: GitRepo) -> None:
    verdict = check_protected_paths(repo.path, base="nope")
    assert not verdict.passed
    assert "nope" in verdict.messages[0]
