"""The markdown the golden files hold: one report, one comparison."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from portwright.eval.report import comparison_markdown, report_markdown
from portwright.eval.results import compare
from tests.eval.data import cycle_report, loop_report

GOLDEN = Path(__file__).resolve().parent / "golden"

CASES: dict[str, Callable[[], str]] = {
    "report": lambda: report_markdown(cycle_report()),
    "compare": lambda: comparison_markdown(compare(cycle_report(), loop_report())),
}
