"""``portwright eval report`` and ``portwright eval compare``: the results of ``eval run``,
one mode's aggregate and tasks, or two runs side by side with McNemar's test.

Exit codes: 0 shown, 2 bad input (a report that does not load, an --out that cannot be
written).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from portwright.cli.common import console, emit_json

if TYPE_CHECKING:
    from portwright.eval.results import Comparison, EvalReport, Mode

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def register(eval_app: typer.Typer) -> None:
    """Add ``report`` and ``compare`` to ``portwright eval``."""
    eval_app.command("report")(report)
    eval_app.command("compare")(compare)


def _mode(value: str | None) -> Mode | None:
    from portwright.errors import UsageError
    from portwright.eval.results import Mode

    if value is None:
        return None
    try:
        return Mode(value)
    except ValueError as exc:
        raise UsageError(f"--mode {value!r}", key="--mode", fix="use cycle or loop") from exc


def report(
    path: Annotated[Path, typer.Argument(
        metavar="RESULTS_DIR_OR_REPORT_JSON", help="A report.json of `eval run`, or its "
        "output folder (its results/ files are read when it has no report yet).")],
    mode: Annotated[str | None, typer.Option(
        help="cycle or loop: which mode's results, when the folder holds both.")] = None,
    markdown: Annotated[Path | None, typer.Option(
        "--markdown", help="Also write the report as markdown to this file.")] = None,
    as_json: JsonOption = False,
) -> None:
    """One mode's results: resolve rate with its 95 % Wilson interval, cost and tokens per
    resolved task, time, failures, and a row per task."""
    from portwright.errors import UsageError
    from portwright.eval.report import report_markdown
    from portwright.eval.results import read_report

    loaded = read_report(path, _mode(mode))
    if markdown is not None:
        try:
            markdown.write_text(report_markdown(loaded), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write the markdown: {exc.strerror or exc}",
                             file=markdown, key="--markdown",
                             fix="pass a file in a folder you can write to") from exc
    if as_json:
        emit_json(loaded)
        return
    show_report(loaded)


def show_report(loaded: EvalReport) -> None:
    from portwright.eval.report import TASK_COLUMNS, measures, task_cells

    console.print(f"[bold]{escape(loaded.suite)}[/]: {loaded.mode.value} mode, model "
                  f"{escape(loaded.model)}")
    aggregate = Table("measure", "value")
    for measure, value in measures(loaded.aggregate):
        aggregate.add_row(measure, escape(value))
    console.print(aggregate)
    tasks = Table(*TASK_COLUMNS)
    for result in loaded.results:
        cells = [escape(c) for c in task_cells(result)]
        cells[1] = f"[green]{cells[1]}[/]" if result.resolved else f"[red]{cells[1]}[/]"
        tasks.add_row(*cells)
    console.print(tasks)
    if loaded.missing:
        from portwright.eval.report import missing_line

        console.print(missing_line(loaded), markup=False)
        for task, why in loaded.missing.items():
            console.print(f"  {task}: {why}", markup=False)


def compare(
    a: Annotated[Path, typer.Argument(metavar="A.json", help="The first report (or output "
                                      "folder).")],
    b: Annotated[Path, typer.Argument(metavar="B.json", help="The second report.")],
    out: Annotated[Path, typer.Option(
        "--out", help="Folder for compare.json, compare.md and compare.png.")] = Path(),
    as_json: JsonOption = False,
) -> None:
    """Two reports task by task: the tasks both hold paired by id, each side's aggregate,
    the two-by-two table and McNemar's exact test on the discordant pairs."""
    from portwright.errors import UsageError
    from portwright.eval.report import write_comparison
    from portwright.eval.results import compare as compare_reports
    from portwright.eval.results import read_report

    comparison = compare_reports(read_report(a), read_report(b))
    if not comparison.pairs:
        raise UsageError(f"no task is in both reports (nothing to compare with {b})", file=a,
                         fix="compare two runs of the same suite (tasks are paired by id)")
    files = write_comparison(comparison, out)
    if as_json:
        emit_json({**comparison.model_dump(mode="json"), "files": files._asdict()})
        return
    _show_comparison(comparison, (a, b))
    console.print(f"wrote {files.json}, {files.markdown}, {files.png}", markup=False)


def _show_comparison(comparison: Comparison, sources: tuple[Path, Path]) -> None:
    from portwright.eval.report import concordance_rows, mcnemar_line, measures, outcome

    sides = (comparison.a, comparison.b)
    for side, path in zip(sides, sources, strict=True):
        console.print(f"[bold]{escape(side.label)}[/]: {escape(str(path))} "
                      f"({side.mode.value} mode, model {escape(side.model)})")
    la, lb = (escape(s.label) for s in sides)
    aggregate = Table("measure", la, lb, title=f"the {len(comparison.pairs)} tasks both ran")
    for (measure, va), (_, vb) in zip(measures(comparison.a.aggregate),
                                      measures(comparison.b.aggregate), strict=True):
        aggregate.add_row(measure, escape(va), escape(vb))
    console.print(aggregate)
    tasks = Table("task", la, lb)
    for pair in comparison.pairs:
        tasks.add_row(escape(pair.task), *(f"[{'green' if r.resolved else 'red'}]"
                                           f"{escape(outcome(r))}[/]" for r in (pair.a,
                                                                                  pair.b)))
    console.print(tasks)
    table = Table("", f"{lb} resolved", f"{lb} unresolved")
    for row in concordance_rows(comparison.table, la, lb):
        table.add_row(*row)
    console.print(table)
    for label, only in ((la, comparison.only_a), (lb, comparison.only_b)):
        if only:
            console.print(f"only in {label} (not counted): {escape(', '.join(only))}")
    for label, missing in ((la, comparison.missing_a), (lb, comparison.missing_b)):
        if missing:
            console.print(f"no result in {label} (a harness error, dropped or not run; not "
                          f"counted): {escape(', '.join(missing))}")
    console.print(mcnemar_line(comparison), markup=False)
