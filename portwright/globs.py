"""Path globs with ``**``, matched against posix paths relative to a repo root."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(_translate(pattern))


def _translate(pattern: str) -> str:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out) + r"\Z"


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The regular expression of ``pattern`` (anchored at the end; a trailing ``/`` matches
    everything below that folder)."""
    return _compile(pattern + "**" if pattern.endswith("/") else pattern)


def translate(pattern: str) -> str:
    """The source of :func:`compile_pattern`'s expression, not compiled (to join several
    into one)."""
    return _translate(pattern + "**" if pattern.endswith("/") else pattern)


def match(path: str, pattern: str) -> bool:
    """``src/a/b.py`` matches ``src/**``, ``**/*.py``, ``src/*/b.py``; a trailing ``/`` matches
    everything below that folder."""
    if pattern.endswith("/"):
        pattern += "**"
    return _compile(pattern).match(path) is not None


def match_any(path: str, patterns: Iterable[str]) -> bool:
    return any(match(path, p) for p in patterns)
