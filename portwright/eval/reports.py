"""Per-test outcomes read from a test command's output: ``pytest``, ``tap`` and ``gtest``.

The output is untrusted: the code under test prints into it. So it is read as a stream of
lines, each capped (:data:`MAX_LINE`: a longer line is no result line and is skipped whole),
the ids kept are capped (:data:`MAX_IDS`), a test reported both passed and failed counts as
failed, and only what the format's own summary says counts:

- ``pytest``: the lines of the *last* ``short test summary info`` section (``-rA``):
  ``PASSED id`` / ``XPASS id`` pass, ``FAILED id - …`` / ``ERROR id - …`` fail. A test's
  captured output is printed before that section, so lines it forges there do not count;
- ``tap``: ``ok N - description`` passes, ``not ok`` fails, a ``# SKIP`` or ``# TODO``
  directive does not pass; the id is the description;
- ``gtest``: ``[       OK ] Suite.Name`` passes, ``[  FAILED  ] Suite.Name`` fails.

With ``asked`` ids, only those are kept (a line naming any other id is ignored); without,
every id seen is. Deciding what a missing id means is the caller's: for hidden tests, failed.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator

__all__ = ["MAX_IDS", "MAX_LINE", "parse_report"]

MAX_LINE = 64 * 1024
"""Longest line read as a result line (bytes)."""
MAX_IDS = 100_000
"""Most distinct ids kept from one output."""

_SECTION = re.compile(r"^=+ (.*?) =+$")
_PYTEST_WORDS = {"PASSED": True, "XPASS": True, "FAILED": False, "ERROR": False}
_TAP = re.compile(r"^\s*(not ok|ok)\b(?:\s+\d+)?(?:\s*-)?\s*(.*)$")
_TAP_DIRECTIVE = re.compile(r"\s*(?<!\\)#\s*(\w+)")
_GTEST = re.compile(r"^\[\s+(OK|FAILED)\s+\]\s+(\w[\w/]*\.\w[\w/]*)")


def lines(chunks: Iterable[bytes], cap: int = MAX_LINE) -> Iterator[str]:
    """The lines of ``chunks`` (bytes as they come), each at most ``cap`` bytes: a longer
    line is skipped whole."""
    rest = b""
    skipping = False
    for chunk in chunks:
        data = rest + chunk
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if not skipping and end - start <= cap:
                yield data[start:end].decode("utf-8", "replace").rstrip("\r")
            skipping = False
            start = end + 1
        rest = data[start:]
        if len(rest) > cap:
            rest, skipping = b"", True
    if rest and not skipping:
        yield rest.decode("utf-8", "replace").rstrip("\r")


class _Outcomes:
    """Passed and failed ids, failed winning, at most :data:`MAX_IDS` of them."""

    def __init__(self, asked: Collection[str] | None) -> None:
        self.asked = None if asked is None else frozenset(asked)
        self.seen: dict[str, bool] = {}

    def add(self, ident: str, passed: bool) -> None:
        if self.asked is not None and ident not in self.asked:
            return
        if ident not in self.seen and len(self.seen) >= MAX_IDS:
            return
        self.seen[ident] = self.seen.get(ident, True) and passed


def _pytest_id(rest: str, asked: frozenset[str] | None) -> str:
    """The id a summary line names: the longest asked prefix before `` - `` (the message),
    else (no ids asked) everything before the first `` - ``."""
    if asked is None:
        return rest.split(" - ", 1)[0].strip()
    if rest in asked:
        return rest
    for match in re.finditer(" - ", rest):
        if rest[: match.start()] in asked:
            return rest[: match.start()]
    return rest


def _pytest(text: Iterable[str], asked: Collection[str] | None) -> dict[str, bool]:
    latest = _Outcomes(asked)
    current: _Outcomes | None = None
    for line in text:
        section = _SECTION.match(line)
        if section is not None:
            current = None
            if section.group(1) == "short test summary info":
                current = latest = _Outcomes(asked)
            continue
        if current is None:
            continue
        word, _, rest = line.partition(" ")
        if word in _PYTEST_WORDS and rest.strip():
            current.add(_pytest_id(rest.strip(), current.asked), _PYTEST_WORDS[word])
    return latest.seen


def _tap(text: Iterable[str], asked: Collection[str] | None) -> dict[str, bool]:
    found = _Outcomes(asked)
    for line in text:
        match = _TAP.match(line)
        if match is None:
            continue
        description, directive = match.group(2), None
        marker = _TAP_DIRECTIVE.search(description)
        if marker is not None:
            description, directive = description[: marker.start()], marker.group(1).upper()
        ident = description.strip().replace("\\#", "#")
        if ident:
            found.add(ident, match.group(1) == "ok" and directive not in ("SKIP", "TODO"))
    return found.seen


def _gtest(text: Iterable[str], asked: Collection[str] | None) -> dict[str, bool]:
    found = _Outcomes(asked)
    for line in text:
        match = _GTEST.match(line)
        if match is not None:
            found.add(match.group(2), match.group(1) == "OK")
    return found.seen


def parse_report(report: str, chunks: Iterable[bytes],
                 asked: Collection[str] | None = None) -> dict[str, bool]:
    """Id → passed, read from a test command's stdout (``chunks``) as ``report`` says
    (``pytest``, ``tap`` or ``gtest``): the ``asked`` ids only, or every id seen."""
    parsers = {"pytest": _pytest, "tap": _tap, "gtest": _gtest}
    if report not in parsers:
        raise ValueError(f"no parser for report {report!r}")
    return parsers[report](lines(chunks), asked)
