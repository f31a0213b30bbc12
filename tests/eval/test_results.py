"""The statistics of ``portwright eval``: Wilson intervals, McNemar's exact test, the
aggregate of a report and the comparison of two, and loading a report from a file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from portwright.errors import UsageError
from portwright.eval.results import (
    EvalReport,
    Failure,
    Mode,
    TaskResult,
    aggregate,
    compare,
    mcnemar_exact,
    read_report,
    wilson,
)
from tests.eval.data import cycle_report, loop_report, result

# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Statistics
# in Medicine 17:857-872, Table I, method 3 (score interval without continuity
# correction), given to four places; and 0/10, 10/10, 7/20 as statsmodels'
# proportion_confint(method="wilson") gives them.
NEWCOMBE = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
    (0, 10, 0.0000, 0.2775),
    (10, 10, 0.7225, 1.0000),
    (7, 20, 0.1812, 0.5671),
]


@pytest.mark.parametrize(("x", "n", "low", "high"), NEWCOMBE)
def test_wilson_matches_published_values(x: int, n: int, low: float, high: float) -> None:
    got = wilson(x, n)
    assert got == pytest.approx((low, high), abs=5e-5)


def test_wilson_ends_are_exact_and_empty_is_everything() -> None:
    assert wilson(0, 10)[0] == 0.0
    assert wilson(10, 10)[1] == 1.0
    assert wilson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="successes"):
        wilson(3, 2)


@pytest.mark.parametrize(("b", "c", "p"), [
    (0, 5, 2 / 32),             # 2 * (1/2)^5
    (5, 0, 2 / 32),             # symmetric
    (1, 9, 22 / 1024),          # 2 * (1 + 10) / 2^10
    (2, 8, 112 / 1024),         # 2 * (1 + 10 + 45) / 2^10
    (3, 3, 1.0),                # capped at 1
    (0, 0, 1.0),                # no discordant pair: no evidence either way
    (0, 1, 1.0),                # 2 * 1/2
    (4, 16, 2 * (1 + 20 + 190 + 1140 + 4845) / 2 ** 20),
])
def test_mcnemar_exact_matches_hand_computed(b: int, c: int, p: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-12)


def test_aggregate_of_the_cycle_report() -> None:
    agg = cycle_report().aggregate
    assert (agg.tasks, agg.resolved) == (5, 3)
    assert agg.resolve_rate == pytest.approx(0.6)
    assert (agg.resolve_low, agg.resolve_high) == wilson(3, 5)
    assert agg.cost_usd == pytest.approx(1.5)
    assert agg.cost_per_resolved == pytest.approx(0.5)
    assert agg.tokens_in == 60_000
    assert agg.tokens_in_per_resolved == pytest.approx(20_000)
    assert agg.tokens_out_per_resolved == pytest.approx(5_000 / 3)
    assert agg.wall_seconds == pytest.approx(330.0)
    assert agg.median_wall_seconds == pytest.approx(60.0)
    assert agg.failures[Failure.GATE] == agg.failures[Failure.BUDGET] == 1
    assert sum(agg.failures.values()) == 2
    assert list(agg.failures) == list(Failure)
    assert agg.red_observed == 4


def test_aggregate_with_nothing_resolved() -> None:
    results = [result(f"t{i}", Mode.LOOP, False, Failure.HIDDEN_TESTS, wall_seconds=i)
               for i in range(1, 5)]
    agg = aggregate(results)
    assert (agg.tasks, agg.resolved, agg.resolve_rate) == (4, 0, 0.0)
    assert agg.resolve_low == 0.0
    assert agg.resolve_high == pytest.approx(wilson(0, 4)[1])
    assert agg.cost_per_resolved is None
    assert agg.tokens_in_per_resolved is None
    assert agg.tokens_out_per_resolved is None
    assert agg.median_wall_seconds == pytest.approx(2.5)
    assert agg.failures[Failure.HIDDEN_TESTS] == 4
    assert agg.red_observed == 0


def test_aggregate_of_nothing() -> None:
    agg = aggregate([])
    assert (agg.tasks, agg.resolved, agg.resolve_rate) == (0, 0, None)
    assert (agg.resolve_low, agg.resolve_high) == (0.0, 1.0)
    assert agg.median_wall_seconds is None
    assert agg.wall_seconds == 0.0


def test_the_report_json_carries_the_aggregate_and_is_never_trusted_for_it() -> None:
    report = cycle_report()
    dumped = json.loads(report.model_dump_json())
    assert dumped["aggregate"]["resolved"] == 3
    dumped["aggregate"]["resolved"] = 5  # a stale or edited figure
    again = EvalReport.model_validate(dumped)
    assert again.aggregate.resolved == 3
    assert again == report


def test_compare_pairs_tasks_by_id_and_lists_the_rest() -> None:
    comparison = compare(cycle_report(), loop_report())
    assert [p.task for p in comparison.pairs] == ["pair/alpha", "pair/beta", "pair/gamma",
                                                  "pair/delta"]
    assert comparison.only_a == ["pair/only-cycle"]
    assert comparison.only_b == ["pair/only-loop"]
    table = comparison.table
    assert (table.both, table.a_only, table.b_only, table.neither) == (1, 2, 0, 1)
    assert comparison.p_value == pytest.approx(0.5)  # 2 * (1/2)^2
    assert (comparison.a.label, comparison.b.label) == ("cycle", "loop")
    # each side's aggregate is over the paired tasks only
    assert comparison.a.aggregate.tasks == comparison.b.aggregate.tasks == 4
    assert comparison.a.aggregate.resolved == 3
    assert comparison.reading.startswith("no significant difference at n=4")


def test_compare_says_when_the_difference_is_significant() -> None:
    tasks = [f"t{i:02}" for i in range(12)]
    a = EvalReport(suite="s", mode=Mode.CYCLE, model="m", budget=cycle_report().budget,
                   results=[result(t, Mode.CYCLE, True) for t in tasks])
    b = EvalReport(suite="s", mode=Mode.LOOP, model="m", budget=a.budget,
                   results=[result(t, Mode.LOOP, i < 2, None if i < 2 else Failure.GATE)
                            for i, t in enumerate(tasks)])
    comparison = compare(a, b)
    assert comparison.p_value == pytest.approx(2 / 1024)
    assert comparison.reading.startswith("cycle resolves more at n=12")


def test_compare_of_disjoint_reports_has_no_pairs() -> None:
    a = cycle_report()
    b = EvalReport(suite="s", mode=Mode.LOOP, model="m", budget=a.budget,
                   results=[result("elsewhere", Mode.LOOP, True)])
    comparison = compare(a, b)
    assert comparison.pairs == []
    assert comparison.p_value == 1.0
    assert comparison.a.aggregate.tasks == 0
    assert "no task in both" in comparison.reading


def test_compare_labels_by_what_differs() -> None:
    a = cycle_report()
    b = a.model_copy(update={"model": "big-model"})
    assert (compare(a, b).a.label, compare(a, b).b.label) == ("small-model", "big-model")
    assert (compare(a, a).a.label, compare(a, a).b.label) == ("A", "B")
    assert compare(a, a, labels=("x", "y")).b.label == "y"


def test_a_result_says_why_it_failed_and_loop_results_carry_no_cycle_fields() -> None:
    with pytest.raises(ValidationError, match="needs a failure"):
        TaskResult(task="t", mode=Mode.LOOP, model="m", resolved=False)
    with pytest.raises(ValidationError, match="no failure"):
        TaskResult(task="t", mode=Mode.LOOP, model="m", resolved=True, failure=Failure.GATE)
    with pytest.raises(ValidationError, match="cycle only"):
        TaskResult(task="t", mode=Mode.LOOP, model="m", resolved=True, review="approve")


def test_a_report_holds_one_mode_and_each_task_once() -> None:
    one = result("t", Mode.CYCLE, True)
    with pytest.raises(ValidationError, match="appears twice"):
        EvalReport(suite="s", mode=Mode.CYCLE, model="m", budget=cycle_report().budget,
                   results=[one, one])
    with pytest.raises(ValidationError, match="loop"):
        EvalReport(suite="s", mode=Mode.LOOP, model="m", budget=cycle_report().budget,
                   results=[one])


# reading reports from files


def test_read_report_from_a_file_and_from_an_output_folder(tmp_path: Path) -> None:
    report = cycle_report()
    (tmp_path / "report.json").write_text(report.model_dump_json(indent=2))
    assert read_report(tmp_path / "report.json") == report
    assert read_report(tmp_path) == report


def test_read_report_from_result_files_alone(tmp_path: Path) -> None:
    for r in [*cycle_report().results, *loop_report().results]:
        path = tmp_path / "results" / f"{r.task}.{r.mode.value}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(r.model_dump_json())
    with pytest.raises(UsageError, match="both modes") as caught:
        read_report(tmp_path)
    assert caught.value.fix is not None
    assert "--mode" in caught.value.fix
    partial = read_report(tmp_path, mode=Mode.LOOP)
    assert partial.mode is Mode.LOOP
    assert partial.budget is None
    assert sorted(r.task for r in partial.results) == sorted(r.task for r in
                                                             loop_report().results)


def test_a_syntax_error_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text('{\n  "suite": "s",\n  "mode": cycle\n}\n')
    with pytest.raises(UsageError) as caught:
        read_report(path)
    assert caught.value.file == str(path)
    assert caught.value.line == 3
    assert caught.value.fix


def test_a_wrong_field_names_the_key(tmp_path: Path) -> None:
    data = json.loads(cycle_report().model_dump_json())
    data["results"][2]["failure"] = "tired"
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data, indent=2))
    with pytest.raises(UsageError) as caught:
        read_report(path)
    assert caught.value.key == "results.2.failure"
    assert "tired" in caught.value.message
    assert caught.value.fix


@pytest.mark.parametrize("text", ['["a list"]', '{"rows": []}', '"text"'])
def test_not_a_report(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(UsageError, match="not a report") as caught:
        read_report(path)
    assert caught.value.file == str(path)
    assert "portwright eval run" in (caught.value.fix or "")


def test_missing_path_and_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file") as caught:
        read_report(tmp_path / "absent.json")
    assert caught.value.fix
    with pytest.raises(UsageError, match="no report") as caught:
        read_report(tmp_path)
    assert caught.value.fix


def test_a_task_twice_in_the_results_folder(tmp_path: Path) -> None:
    one = result("t", Mode.LOOP, True)
    for name in ("t.loop.json", "copy.json"):
        (tmp_path / name).write_text(one.model_dump_json())
    with pytest.raises(UsageError, match="more than one loop result") as caught:
        read_report(tmp_path)
    assert caught.value.fix


def test_a_broken_result_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "t.loop.json").write_text('{"task": "t", "mode": "loop"}')
    with pytest.raises(UsageError) as caught:
        read_report(tmp_path)
    assert caught.value.file == str(tmp_path / "results" / "t.loop.json")
    assert caught.value.key in {"model", "resolved"}


def test_a_task_result_is_not_a_report(tmp_path: Path) -> None:
    path = tmp_path / "t.loop.json"
    path.write_text(result("t", Mode.LOOP, True).model_dump_json())
    with pytest.raises(UsageError, match="one task's result, not a report") as caught:
        read_report(path)
    assert "output folder" in (caught.value.fix or "")
