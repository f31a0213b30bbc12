"""The markdown of a report and of a comparison: golden files, and the facts they must
show whatever the layout."""

from __future__ import annotations

import difflib

import pytest

from portwright.eval.report import comparison_markdown, report_markdown
from portwright.eval.results import EvalReport, Failure, Mode, compare
from tests.eval.data import cycle_report, loop_report, result
from tests.eval.golden_cases import CASES, GOLDEN


@pytest.mark.parametrize("name", sorted(CASES))
def test_markdown_matches_golden(name: str) -> None:
    produced = CASES[name]()
    expected = (GOLDEN / f"{name}.md").read_bytes().decode()
    assert produced == expected, "".join(difflib.unified_diff(
        expected.splitlines(True), produced.splitlines(True), "golden", "produced"))


def test_report_markdown_shows_the_aggregate_and_every_task() -> None:
    text = report_markdown(cycle_report())
    assert "3 / 5 (60.0 %)" in text
    assert "23.1 % to 88.2 %" in text  # wilson(3, 5)
    assert "$0.5000" in text  # cost per resolved task
    for r in cycle_report().results:
        assert f"`{r.task}`" in text
    # a pipe in a detail does not break the table
    assert "2 tests \\| exit 1" in text
    assert "gate 1, budget 1" in text or "budget 1, gate 1" in text


def test_report_markdown_with_nothing_resolved() -> None:
    report = EvalReport(suite="s", mode=Mode.LOOP, model="m", budget=None,
                        results=[result("t", Mode.LOOP, False, Failure.ERROR)])
    text = report_markdown(report)
    assert "0 / 1 (0.0 %)" in text
    assert "cost per resolved task | -" in text


def test_comparison_markdown_side_by_side_with_an_honest_reading() -> None:
    text = comparison_markdown(compare(cycle_report(), loop_report()))
    assert "| task | cycle | loop |" in text
    assert "McNemar" in text
    assert "p = 0.5000" in text
    assert "no significant difference at n=4" in text
    assert "`pair/only-cycle`" in text
    assert "`pair/only-loop`" in text
    assert "| cycle resolved | 1 | 2 |" in text
