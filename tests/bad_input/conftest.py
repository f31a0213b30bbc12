"""The bad-input suite's fixtures and its tally: how many cases ended in each category."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from tests.bad_input import world as worlds

TALLY: dict[str, str] = {}
"""case id → ``ok`` or the category it failed under."""


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> worlds.World:
    return worlds.build(tmp_path_factory.mktemp("template"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not TALLY:
        return
    counts = Counter(TALLY.values())
    order = ["ok", "accepted", "traceback", "hang", "side effect", "vague"]
    line = ", ".join(f"{counts.get(c, 0)} {c}" for c in order)
    terminalreporter.write_sep("-", f"bad input: {len(TALLY)} cases: {line}")
    report = os.environ.get("PORTWRIGHT_TEST_BADINPUT_REPORT")
    if report:
        Path(report).write_text(json.dumps(TALLY, indent=1, sort_keys=True) + "\n")
