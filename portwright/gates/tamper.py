"""Tamper flags: added lines of an implementation change that reach into the test runner or
its reporting.

A signed evidence record proves that portwright saw a command exit on a tree; it does not
prove that the code under test told the truth. Code can leave before the runner reports
(``os._exit(0)``), rewrite the report after the runner wrote it (an ``atexit`` handler),
hook the runner (a pytest hook, a patched ``unittest`` result), swap the modules a test
imports, write past the runner's output capture, or print what a passing run prints.
:func:`tamper_flags` reads a unified diff and flags such added lines, by language (Python,
JavaScript/TypeScript, C/C++, shell, JUnit XML, and the files that say how tests run:
``package.json``, ``setup.cfg``/``pyproject.toml`` entry points, ``Makefile``, CMake, jest
/ vitest / mocha configuration, ``noxfile.py``).

The rules are patterns, not proofs. A flag is advisory, for the reviewer and the approval
step; false positives are accepted, and a forger who spells around a pattern
(``"PAS" + "SED"``) is not caught here: the guarantee comes from the test infrastructure
being frozen (:mod:`portwright.protected`) and from evidence the framework reads itself.

Left out on purpose: ``sys.exit`` and ``raise SystemExit`` (an exception the runner catches
and reports as a failure, at import or in a test, so it cannot forge a pass; CLIs use it
everywhere), and C ``exit`` with a failing status or ``abort`` (a failing exit cannot
forge a pass). A line removed and added again in the same file (moved) is not new.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import PurePosixPath

from unidiff.patch import PatchSet

from portwright.globs import match_any

__all__ = ["TamperFlag", "TamperKind", "has_rules", "tamper_flags"]

EXCERPT_CHARS = 120
"""Longest excerpt a flag carries (the line is cut, with ``…``)."""


class TamperKind(StrEnum):
    """What an added line does to the test run."""

    HARD_EXIT = "hard-exit"
    """Leaves without the runner's summary or exit status (``os._exit``, ``process.exit``,
    ``_exit``, ``std::exit``, an ``exec``)."""
    EXIT_HOOK = "exit-hook"
    """Runs after the runner wrote its verdict (``atexit``, ``process.on('exit')``, a C
    destructor function)."""
    RUNNER_HOOK = "runner-hook"
    """Reaches into the runner from code that is not a test, or changes how tests run
    (pytest hooks and imports, ``pytest11`` entry points, GoogleTest listeners, a test
    script, target or runner configuration, CMake pass/fail properties)."""
    RESULT_PATCH = "result-patch"
    """Rewrites how results are kept (``TestResult.addFailure = …``, a report's outcome)."""
    MODULE_INJECTION = "module-injection"
    """Swaps modules under the runner or the tests (``sys.modules[…] =``, import hooks,
    ``builtins``, ``require.cache``)."""
    SIGNAL_HANDLER = "signal-handler"
    """Turns a timeout, a crash or an uncaught error into something else (``signal``,
    ``faulthandler``, ``sigaction``, ``process.on('SIGTERM')``)."""
    RAW_OUTPUT = "raw-output"
    """Writes past the runner's output capture, to descriptors it inherited (``os.write(1,
    …)``, ``/proc/self/fd``, ``/dev/tty``, ``dup2``)."""
    CALLER_FRAME = "caller-frame"
    """Reads the calling test's frame, to return what it expects (``sys._getframe``)."""
    FORGED_REPORT = "forged-report"
    """Prints or writes what a passing run prints (``test_x PASSED``, ``3 passed in``,
    ``[       OK ]``, ``<testsuite``, a JUnit file)."""


@dataclass(frozen=True)
class TamperFlag:
    """One added line that reaches into the test runner or its reporting."""

    path: str
    """File, relative to the repository root."""
    line: int
    """Line number at HEAD."""
    kind: TamperKind
    """What the line does to the test run."""
    excerpt: str
    """The line, stripped (cut at :data:`EXCERPT_CHARS`)."""

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.excerpt}"


Rules = tuple[tuple[TamperKind, re.Pattern[str]], ...]


def _rules(kind: TamperKind, *patterns: str) -> Rules:
    return tuple((kind, re.compile(p)) for p in patterns)


_SET = r"\s*=(?!=)"  # an assignment, not a comparison

FORGED = _rules(
    TamperKind.FORGED_REPORT,
    r"(?<![\w.])(?:PASSED|XPASS)(?![\w(])(?!\s*(?:=(?!=)|:(?!:)))",  # not Status.PASSED = …
    r"\[\s+OK\s+\]",
    r"\bpassed in (?:\d|\{|%)",
    r"(?:\d|\}|%[sdi]|\))\s*passed\b",
    r"<testsuites?\b|<testcase\b",
    r"(?i:\b[jx]unit)",
    r"[\"'`]ok \d+ ",
)
"""Text of a passing run, in any code file."""

INHERITED = _rules(
    TamperKind.RAW_OUTPUT,
    r"/proc/(?:self|thread-self|\d+)/fd\b|/dev/fd/|/dev/tty\b|/dev/std(?:out|err)\b",
)

PYTHON = _rules(
    TamperKind.HARD_EXIT,
    r"\b_exit\s*\(",
    r"^\s*from\s+(?:os|posix|nt)\s+import\b.*\b_exit\b",
    r"\bos\.exec[lv]p?e?\s*\(",
) + _rules(
    TamperKind.EXIT_HOOK,
    r"\batexit\b",
    r"\b_register_atexit\b",
) + _rules(
    TamperKind.RUNNER_HOOK,
    r"^\s*(?:import|from)\s+(?:_?pytest|pluggy)\b",
    r"\b_pytest\b|\bpytest_\w+|\bpytest\.\w+|\bpluggy\b|\bpytest11\b",
    r"(?:import_module|__import__)\s*\(\s*[\"'](?:_?pytest|pluggy)",
) + _rules(
    TamperKind.RESULT_PATCH,
    r"\b(?:Text)?Test(?:Result|Case|Suite|Runner|Program|Loader)\s*\.\s*\w+" + _SET,
    r"\bsetattr\s*\(\s*(?:\w+\.)*(?:Text)?Test(?:Result|Case|Suite|Runner|Program|Loader)\b",
    r"\.(?:wasSuccessful|addFailure|addError|addSubTest|addExpectedFailure)" + _SET,
    r"\.outcome\s*=\s*[\"'](?:passed|skipped)",
) + _rules(
    TamperKind.MODULE_INJECTION,
    r"\bsys\.modules\s*\[[^\]]*\]" + _SET,
    r"\bsys\.modules\s*\.\s*(?:update|setdefault|__setitem__)\s*\(",
    r"\bsys\.(?:meta_path|path_hooks|path_importer_cache)\b",
    r"\b(?:builtins|__builtins__)\s*(?:\.\s*\w+|\[[^\]]*\])" + _SET,
    r"\bsetattr\s*\(\s*(?:builtins|__builtins__)\b",
) + _rules(
    TamperKind.SIGNAL_HANDLER,
    r"\bfaulthandler\b",
    r"\bsignal\.(?:signal|setitimer|alarm|set_wakeup_fd|siginterrupt|pthread_sigmask)\s*\(",
    r"^\s*from\s+signal\s+import\b",
) + _rules(
    TamperKind.RAW_OUTPUT,
    r"\bos\.(?:write|fdopen)\s*\(\s*(?:\d|sys\.(?:__)?std(?:out|err)(?:__)?\.fileno\(\))",
    r"\bos\.dup2?\s*\(",
    r"(?<![\w.])(?:io\.)?(?:open|FileIO)\s*\(\s*\d+\s*[,)]",
    r"\bsys\.__std(?:out|err)__\b",
) + _rules(
    TamperKind.CALLER_FRAME,
    r"\bsys\._getframe\b",
    r"\binspect\.(?:currentframe|stack|getouterframes)\b",
    r"\.f_back\b|\.f_locals\b",
) + FORGED + INHERITED

_LISTEN = r"\bprocess\s*\.\s*(?:on|once|addListener|prependListener|prependOnceListener)\s*\("

JAVASCRIPT = _rules(
    TamperKind.HARD_EXIT,
    r"\bprocess\s*\.\s*(?:exit|reallyExit)\s*\(",
    r"\bprocess\s*\.\s*exitCode" + _SET,
    r"\bprocess\s*\[\s*[\"'`](?:exit|reallyExit|exitCode)[\"'`]",
    r"\bDeno\s*\.\s*exit\s*\(",
) + _rules(
    TamperKind.EXIT_HOOK,
    _LISTEN + r"\s*[\"'`](?:exit|beforeExit)[\"'`]",
) + _rules(
    TamperKind.SIGNAL_HANDLER,
    _LISTEN + r"\s*[\"'`](?:SIG\w+|uncaughtException\w*|unhandledRejection)[\"'`]",
    r"\bprocess\s*\.\s*setUncaughtExceptionCaptureCallback\b",
) + _rules(
    TamperKind.RAW_OUTPUT,
    r"\bfs\s*\.\s*(?:writeSync|write|writeFileSync|appendFileSync)\s*\(\s*[12]\s*,",
    r"\bprocess\s*\.\s*(?:stdout|stderr)\s*\.\s*write" + _SET,
) + _rules(
    TamperKind.RUNNER_HOOK,
    r"(?:\brequire\s*\(|\bfrom|\bimport\s*\(?)\s*[\"'`](?:jest|@jest/[\w-]+|jest-[\w-]+|mocha"
    r"|vitest(?:/[\w-]+)?|node:test|tap|ava|jasmine)[\"'`]",
) + _rules(
    TamperKind.MODULE_INJECTION,
    r"\brequire\s*\.\s*cache\s*\[[^\]]*\]" + _SET,
    r"\bModule\s*\.\s*(?:_load|_resolveFilename|prototype\s*\.\s*require)" + _SET,
) + FORGED + INHERITED

C_FAMILY = _rules(
    TamperKind.HARD_EXIT,
    r"\b(?:_exit|_Exit|quick_exit)\s*\(",
    r"\bstd\s*::\s*exit\s*\(",
    r"(?<![\w:.>])exit\s*\(\s*(?:0|EXIT_SUCCESS)\s*\)",
    r"\bexec(?:l|lp|le|v|vp|ve|vpe)\s*\(",
    r"\b(?:ExitProcess|TerminateProcess)\s*\(|\bsyscall\s*\(\s*SYS_exit",
) + _rules(
    TamperKind.EXIT_HOOK,
    r"\b(?:atexit|at_quick_exit|on_exit)\s*\(",
    r"__attribute__\s*\(\(\s*destructor|#\s*pragma\s+fini\b",
) + _rules(
    TamperKind.SIGNAL_HANDLER,
    r"(?<![\w.>])(?:std\s*::\s*)?signal\s*\(\s*SIG\w+",
    r"\bsigaction\s*\(|\bset_terminate\s*\(|\bSetUnhandledExceptionFilter\s*\(",
) + _rules(
    TamperKind.RAW_OUTPUT,
    r"(?<![\w.>])write\s*\(\s*(?:[12]|STDOUT_FILENO|STDERR_FILENO)\s*,",
    r"\bdup2?\s*\(|\bfreopen\s*\(",
) + _rules(
    TamperKind.RUNNER_HOOK,
    r"#\s*include\s*[<\"](?:gtest|gmock|catch2|catch|doctest|boost/test)\b",
    r"\btesting\s*::\s*(?:UnitTest|TestEventListeners?|EmptyTestEventListener|TestResult"
    r"|TestInfo)\b|\bCatch\s*::\s*Session\b",
) + FORGED + INHERITED

PACKAGE_JSON = _rules(
    TamperKind.RUNNER_HOOK,
    r"\"(?:pre|post)?test(?::[\w:-]+)?\"\s*:",
    r"\"(?:jest|mocha|vitest|ava|c8|nyc)\"\s*:",
)
ENTRY_POINTS = _rules(TamperKind.RUNNER_HOOK, r"\bpytest11\b")
CMAKE = _rules(
    TamperKind.RUNNER_HOOK,
    r"\b(?:WILL_FAIL|PASS_REGULAR_EXPRESSION|FAIL_REGULAR_EXPRESSION|SKIP_RETURN_CODE"
    r"|SKIP_REGULAR_EXPRESSION|DISABLED)\b",
)
MAKEFILE = _rules(TamperKind.RUNNER_HOOK,
                  r"^(?:test|tests|check|unittest|pytest)[\w.-]*\s*::?(?!=)")  # a test target
RUNNER_CONFIG = _rules(TamperKind.RUNNER_HOOK, r"\S")
"""Files that only say how tests run: any added line is a flag (one per file)."""


@dataclass(frozen=True)
class _Language:
    rules: Rules
    comments: tuple[str, ...] = ()
    """Prefixes of comment-only lines, which raise no flag."""
    once: bool = False
    """One flag per file at most (runner configuration)."""


_PY = _Language(PYTHON, ("#",))
_JS = _Language(JAVASCRIPT, ("//", "/*", "*"))
_C = _Language(C_FAMILY, ("//", "/*", "*"))
_SH = _Language(FORGED + INHERITED, ("#",))
_XML = _Language(FORGED, ("<!--",))
_CONFIG = _Language(ENTRY_POINTS, ("#", ";"))

BY_SUFFIX: dict[str, _Language] = {
    **dict.fromkeys((".py", ".pyw", ".pyx", ".pxd"), _PY),
    **dict.fromkeys((".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"), _JS),
    **dict.fromkeys((".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++",
                     ".inl", ".ipp", ".cu", ".cuh"), _C),
    **dict.fromkeys((".sh", ".bash", ".zsh"), _SH),
    ".xml": _XML,
    ".cmake": _Language(CMAKE, ("#",)),
    ".mk": _Language(MAKEFILE, ("#",)),
}
BY_NAME: dict[str, _Language] = {
    "package.json": _Language(PACKAGE_JSON),
    "pyproject.toml": _CONFIG,
    "setup.cfg": _CONFIG,
    "CMakeLists.txt": _Language(CMAKE, ("#",)),
    "Makefile": _Language(MAKEFILE, ("#",)),
    "GNUmakefile": _Language(MAKEFILE, ("#",)),
    "makefile": _Language(MAKEFILE, ("#",)),
    "noxfile.py": _Language(RUNNER_CONFIG, ("#",), once=True),
}
RUNNER_CONFIG_FILES = ("jest.config.*", "vitest.config.*", "vitest.workspace.*", ".mocharc*",
                       "karma.conf.*", "ava.config.*", "playwright.config.*",
                       "CTestCustom.cmake")
"""Names of files that only configure a test runner (not protected whole, so flagged)."""


def _language(path: str) -> list[_Language]:
    name = PurePosixPath(path).name
    out = [lang for lang in (BY_NAME.get(name), BY_SUFFIX.get(PurePosixPath(name).suffix))
           if lang is not None]
    if match_any(name, RUNNER_CONFIG_FILES):
        out.append(_Language(RUNNER_CONFIG, once=True))
    return out


def has_rules(path: str) -> bool:
    """Whether any rule reads ``path`` (other files, data or prose, are never diffed)."""
    return bool(_language(path))


def _unquote(path: str) -> str:
    """A path as git C-quotes it (``"dir/\\303\\251 x.py"``), read back."""
    if len(path) < 2 or not (path.startswith('"') and path.endswith('"')):
        return path
    escapes = {"n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\", "a": b"\a", "b": b"\b",
               "f": b"\f", "r": b"\r", "v": b"\v"}

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        raw = bytes([int(code, 8)]) if len(code) == 3 else escapes.get(code, code.encode())
        return raw.decode("latin-1")

    inner = re.sub(r"\\([0-7]{3}|.)", one, path[1:-1])
    return inner.encode("latin-1").decode("utf-8", errors="replace")


def _excerpt(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "…"


def _line_kinds(languages: Sequence[_Language], text: str) -> list[TamperKind]:
    """Kinds an added line raises under ``languages`` (each once)."""
    kinds: list[TamperKind] = []
    for language in languages:
        if language.comments and text.lstrip().startswith(language.comments):
            continue
        for kind, pattern in language.rules:
            if kind not in kinds and pattern.search(text):
                kinds.append(kind)
    return kinds


def tamper_flags(diff: str, *, exclude: Sequence[str] = ()) -> list[TamperFlag]:
    """Flags of the lines ``diff`` (unified, as git writes it) adds, outside ``exclude``
    (globs, e.g. the test paths), by file then line."""
    flags: list[TamperFlag] = []
    for patched in PatchSet(diff):
        path = _unquote(patched.path)
        languages = _language(path)
        if not languages or match_any(path, exclude):
            continue
        removed = Counter(line.value.strip() for hunk in patched for line in hunk
                          if line.is_removed)
        per_line = [lang for lang in languages if not lang.once]
        per_file = [lang for lang in languages if lang.once]
        for hunk in patched:
            for line in hunk:
                if not line.is_added:
                    continue
                text = line.value.rstrip("\r\n")
                if removed[text.strip()] > 0:  # moved, not new
                    removed[text.strip()] -= 1
                    continue
                kinds = _line_kinds(per_line, text)
                if per_file and _line_kinds(per_file, text):
                    per_file = []  # the first line of a runner configuration stands for all
                    kinds += [] if TamperKind.RUNNER_HOOK in kinds else [TamperKind.RUNNER_HOOK]
                flags += [TamperFlag(path, line.target_line_no or 0, kind, _excerpt(text))
                          for kind in sorted(kinds)]
    return flags
