"""A failed command that lacked part of its toolchain: a missing module, program, compiler
or header. The gate's verdict stays what it is; its message points at ``[sandbox] setup``,
which installs such things into the environment image.

The command's output is untrusted text: it is only matched against fixed patterns, and what
is quoted back (a module or program name) is cut to a short, plain token.
"""

from __future__ import annotations

import re

_NAME = r"[A-Za-z0-9_.+/@-]{1,80}"
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(rf"ModuleNotFoundError: No module named '({_NAME})'"), "Python module {}"),
    (re.compile(rf"ImportError: No module named '?({_NAME})'?"), "Python module {}"),
    (re.compile(rf"Error: Cannot find module '({_NAME})'"), "Node module {}"),
    (re.compile(rf"(?:^|\s)({_NAME}): (?:command )?not found\s*$"), "command {}"),
    (re.compile(rf"(?:^|[\s:])({_NAME}): command not found"), "command {}"),
    (re.compile(rf"fatal error: ({_NAME}): No such file or directory"), "header {}"),
    (re.compile(rf"error: command '({_NAME})' failed: No such file or directory"),
     "compiler {}"),
    (re.compile(r"(?:^|[\s:'\"])((?:[\w.-]*-)?(?:gcc|g\+\+|cc|c\+\+|clang|clang\+\+|nvcc|"
                r"gfortran|rustc|cargo|go|javac|node|npm|cmake|ninja|make)(?:-[\d.]+)?)"
                r"['\"]?: No such file or directory"), "compiler or build tool {}"),
    (re.compile(rf'Could not find a package configuration file provided by "({_NAME})"'),
     "CMake package {}"),
    (re.compile(rf"No package '({_NAME})' found"), "pkg-config package {}"),
)
_MAX_NAMES = 5


def missing_in(line: str) -> str | None:
    """What ``line`` says is missing (``Python module numpy``), or None."""
    if len(line) > 2000:
        return None
    for pattern, what in _PATTERNS:
        match = pattern.search(line)
        if match:
            return what.format(match.group(1).rstrip("."))
    return None


class MissingToolchain:
    """Fed a command's output in chunks; remembers what it says is missing."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self._rest = b""

    def feed(self, chunk: bytes) -> None:
        data = self._rest + chunk
        cut = data.rfind(b"\n") + 1
        self._rest = data[cut:][-4096:]
        if cut:
            self._scan(data[:cut])

    def end(self) -> None:
        if self._rest:
            self._scan(self._rest)
        self._rest = b""

    def _scan(self, lines: bytes) -> None:
        if len(self.found) >= _MAX_NAMES:
            return
        for line in lines.decode("utf-8", errors="replace").splitlines():
            what = missing_in(line)
            if what is not None and what not in self.found:
                self.found.append(what)
                if len(self.found) >= _MAX_NAMES:
                    return

    def hint(self) -> str | None:
        """The message for a failed gate, when something was missing."""
        if not self.found:
            return None
        return (f"hint: the sandbox lacks {', '.join(self.found)}: install the port's "
                "toolchain and dependencies with [sandbox] setup in portwright.toml (built "
                "into the environment image with network, e.g. setup = [\"pip install -r "
                "requirements.txt\"]; `portwright sandbox build`)")
