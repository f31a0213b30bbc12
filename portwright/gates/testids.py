"""Test ids from what a test command left behind: JUnit XML, or its own output."""

from __future__ import annotations

import re
from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase
from junitparser.junitparser import JUnitXmlError

from portwright.errors import GateFailed

_PYTEST = re.compile(r"^(PASSED|FAILED|ERROR|XPASS)\s+(\S+::\S+)", re.MULTILINE)
_PYTEST_V = re.compile(r"^(\S+::\S+?)\s+(PASSED|FAILED|ERROR)\b", re.MULTILINE)
_GTEST = re.compile(r"^\[\s+(OK|FAILED)\s+\]\s+(\w[\w/]*\.\w[\w/]*)", re.MULTILINE)


def from_junit(path: Path) -> tuple[list[str], list[str]]:
    """``(passed, failed)`` test ids (``classname::name``) of a JUnit XML report.

    Skipped tests are in neither list.
    """
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise GateFailed(f"{path}: cannot read the JUnit report: {exc}") from exc
    try:
        return from_junit_text(text)
    except GateFailed as exc:
        raise GateFailed(f"{path}: {exc}") from exc


def from_junit_text(text: str) -> tuple[list[str], list[str]]:
    """:func:`from_junit` of XML given as text."""
    try:
        xml = JUnitXml.fromstring(text)
    except (SyntaxError, JUnitXmlError, ValueError) as exc:  # XML parse errors are SyntaxErrors
        raise GateFailed(f"not a JUnit XML report: {exc}") from exc
    suites = [xml] if xml._tag == "testsuite" else list(xml)
    passed: list[str] = []
    failed: list[str] = []
    for suite in suites:
        for case in suite:
            if not isinstance(case, TestCase):
                continue
            ident = f"{case.classname}::{case.name}" if case.classname else str(case.name)
            outcomes = list(case.result)
            if any(isinstance(r, Failure | Error) for r in outcomes):
                failed.append(ident)
            elif any(isinstance(r, Skipped) for r in outcomes):
                continue
            else:
                passed.append(ident)
    return sorted(set(passed)), sorted(set(failed))


def from_output(text: str) -> tuple[list[str], list[str]]:
    """``(passed, failed)`` ids from pytest ``-rA``/``-v`` or GoogleTest output."""
    passed: set[str] = set()
    failed: set[str] = set()
    for word, ident in _PYTEST.findall(text):
        (passed if word in {"PASSED", "XPASS"} else failed).add(ident)
    for ident, word in _PYTEST_V.findall(text):
        (passed if word == "PASSED" else failed).add(ident)
    for word, ident in _GTEST.findall(text):
        (passed if word == "OK" else failed).add(ident)
    return sorted(passed - failed), sorted(failed)

