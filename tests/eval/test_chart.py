"""The comparison chart: a valid PNG, the same bytes every time, readable at 40 tasks."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from portwright.eval.chart import write_chart
from portwright.eval.results import EvalReport, Failure, Mode, compare
from tests.eval.data import cycle_report, loop_report, result


def test_the_chart_is_a_png_and_deterministic(tmp_path: Path) -> None:
    comparison = compare(cycle_report(), loop_report())
    first = write_chart(comparison, tmp_path / "one.png")
    second = write_chart(comparison, tmp_path / "two.png")
    assert first.read_bytes() == second.read_bytes()
    with Image.open(first) as image:
        image.verify()
    with Image.open(first) as image:
        assert image.format == "PNG"
        assert image.width > 400
        assert image.height > 300
        assert not {k for k in image.info if k.lower() in {"software", "creation time",
                                                            "date"}}


def test_forty_tasks_get_a_taller_chart(tmp_path: Path) -> None:
    failures = list(Failure)
    tasks = [f"pair-{i // 10}/task-number-{i:02}" for i in range(40)]
    a = EvalReport(suite="s", mode=Mode.CYCLE, model="m", budget=None,
                   results=[result(t, Mode.CYCLE, i % 3 != 0,
                                   None if i % 3 else failures[i % len(failures)])
                            for i, t in enumerate(tasks)])
    b = EvalReport(suite="s", mode=Mode.LOOP, model="m", budget=None,
                   results=[result(t, Mode.LOOP, i % 4 == 0,
                                   None if i % 4 == 0 else failures[i % len(failures)])
                            for i, t in enumerate(tasks)])
    small = write_chart(compare(cycle_report(), loop_report()), tmp_path / "small.png")
    big = write_chart(compare(a, b), tmp_path / "big.png")
    with Image.open(small) as s, Image.open(big) as g:
        assert g.height > 2 * s.height
        assert g.height / 40 >= 20  # at least 20 pixels per task row


def test_no_pairs_and_dollar_signs_still_draw(tmp_path: Path) -> None:
    a = EvalReport(suite="s", mode=Mode.CYCLE, model="$cheap$ model", budget=None,
                   results=[result("costs $\\nothing{5}$", Mode.CYCLE, True)])
    b = EvalReport(suite="s", mode=Mode.CYCLE, model="$dear_model", budget=None,
                   results=[result("elsewhere", Mode.CYCLE, True)])
    with Image.open(write_chart(compare(a, b), tmp_path / "none.png")) as image:
        image.verify()
    b = b.model_copy(update={"results": [result("costs $\\nothing{5}$", Mode.CYCLE, True)]})
    with Image.open(write_chart(compare(a, b), tmp_path / "dollars.png")) as image:
        image.verify()
