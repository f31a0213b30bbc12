"""Reports and comparisons of ``portwright eval`` as markdown, and the cells the CLI's
tables show (one formatting for both). Text from a run (task ids, details) goes through
:func:`~portwright.runs.report.md_text` or a code span, never in as markup."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from portwright.errors import UsageError
from portwright.eval.results import (
    Aggregate,
    Comparison,
    Concordance,
    EvalReport,
    TaskResult,
    p_text,
)
from portwright.runs.report import md_text

TASK_COLUMNS = ("task", "resolved", "red", "gates", "review", "tokens in / out", "cost",
                "time", "failure", "detail")
"""The columns of :func:`task_cells`."""


def duration(seconds: float) -> str:
    """``seconds`` as people read them: ``42.0 s``, ``5 min 30 s``, ``2 h 05 min``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02} min"


def percent(share: float) -> str:
    """``0.35`` as ``35.0 %``."""
    return f"{share * 100:.1f} %"


def measures(agg: Aggregate) -> list[tuple[str, str]]:
    """The aggregate as (measure, value) rows; ``-`` where there is nothing to divide by."""
    rate = "" if agg.resolve_rate is None else f" ({percent(agg.resolve_rate)})"
    failures = ", ".join(f"{kind.value} {count}" for kind, count in agg.failures.items()
                         if count)
    cost_each = "-" if agg.cost_per_resolved is None else f"${agg.cost_per_resolved:.4f}"
    tokens_each = ("-" if agg.tokens_in_per_resolved is None or
                   agg.tokens_out_per_resolved is None else
                   f"{agg.tokens_in_per_resolved:,.0f} / {agg.tokens_out_per_resolved:,.0f}")
    median = "-" if agg.median_wall_seconds is None else duration(agg.median_wall_seconds)
    return [
        ("tasks", str(agg.tasks)),
        ("resolved", f"{agg.resolved} / {agg.tasks}{rate}"),
        ("95 % Wilson interval", f"{percent(agg.resolve_low)} to {percent(agg.resolve_high)}"),
        ("cost", f"${agg.cost_usd:.4f}"),
        ("cost per resolved task", cost_each),
        ("tokens in / out", f"{agg.tokens_in:,} / {agg.tokens_out:,}"),
        ("tokens in / out per resolved task", tokens_each),
        ("wall time", duration(agg.wall_seconds)),
        ("median time per task", median),
        ("red observed", str(agg.red_observed)),
        ("failures", failures or "-"),
    ]


def _flag(value: bool | None, yes: str = "yes", no: str = "no") -> str:
    return "-" if value is None else yes if value else no


def task_cells(result: TaskResult) -> list[str]:
    """One result as plain cells, in the order of :data:`TASK_COLUMNS`."""
    return [result.task, _flag(result.resolved), _flag(result.red_observed),
            _flag(result.gates_passed, "passed", "failed"), result.review or "-",
            f"{result.tokens_in:,} / {result.tokens_out:,}", f"${result.cost_usd:.4f}",
            duration(result.wall_seconds),
            result.failure.value if result.failure else "-", result.detail or "-"]


def outcome(result: TaskResult) -> str:
    """``yes``, or ``no`` with the failure class."""
    return "yes" if result.resolved else f"no ({result.failure.value if result.failure else '?'})"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    return [_row(head), _row(["---"] * len(head)), *(_row(r) for r in rows)]


def missing_line(report: EvalReport) -> str:
    """How many tasks of the suite have no result (counted nowhere above)."""
    n = len(report.missing)
    return (f"{n} task{' has' if n == 1 else 's have'} no result (not counted: "
            f"{len(report.results)} of {len(report.results) + n} tasks of the suite have one)")


def report_markdown(report: EvalReport) -> str:
    """One mode's report: what it ran, the aggregate, a row per task."""
    parts = [f"# portwright eval: `{md_text(report.suite)}`, {report.mode.value} mode, "
             f"model `{md_text(report.model)}`", ""]
    if report.budget is not None:
        b = report.budget
        parts += [f"Budget per task (0: unlimited): {b.tokens:,} tokens, ${b.cost_usd:.2f}, "
                  f"{b.calls} calls, {duration(b.wall_seconds)} in the agents.", ""]
    parts += ["## Aggregate", "",
              *_table(["measure", "value"], [[m, v] for m, v in measures(report.aggregate)]),
              "", "## Tasks", ""]
    rows = []
    for result in report.results:
        cells = [md_text(c) for c in task_cells(result)]
        cells[0] = f"`{cells[0]}`"
        rows.append(cells)
    parts += _table(list(TASK_COLUMNS), rows)
    if report.missing:
        parts += ["", "## Tasks without a result", "", missing_line(report) + ".", "",
                  *_table(["task", "why"], [[f"`{md_text(t)}`", md_text(why)]
                                            for t, why in report.missing.items()])]
    return "\n".join(parts) + "\n"


def concordance_rows(table: Concordance, a: str, b: str) -> list[list[str]]:
    """The two-by-two table as rows under ``["", f"{b} resolved", f"{b} unresolved"]``."""
    return [[f"{a} resolved", str(table.both), str(table.a_only)],
            [f"{a} unresolved", str(table.b_only), str(table.neither)]]


def mcnemar_line(comparison: Comparison) -> str:
    """The test and what it says, in one line."""
    table = comparison.table
    return (f"McNemar's exact test on the {table.a_only + table.b_only} discordant pairs: "
            f"p = {p_text(comparison.p_value)} — {comparison.reading}.")


def comparison_markdown(comparison: Comparison) -> str:
    """Two reports side by side: each side's aggregate over the tasks both ran, the
    two-by-two table with McNemar's test, a row per task, the tasks left unpaired."""
    a, b = comparison.a, comparison.b
    la, lb = md_text(a.label), md_text(b.label)
    parts = [f"# portwright eval: {la} against {lb}", ""]
    parts += [f"- {name}: suite `{md_text(side.suite)}`, {side.mode.value} mode, model "
              f"`{md_text(side.model)}`" for name, side in ((la, a), (lb, b))]
    parts += ["", f"## Aggregate over the {len(comparison.pairs)} tasks both ran", ""]
    parts += _table(["measure", la, lb],
                    [[m, va, vb] for (m, va), (_, vb) in zip(measures(a.aggregate),
                                                             measures(b.aggregate),
                                                             strict=True)])
    parts += ["", "## Paired tasks", ""]
    parts += _table(["", f"{lb} resolved", f"{lb} unresolved"],
                    concordance_rows(comparison.table, la, lb))
    parts += ["", mcnemar_line(comparison), "", "## Tasks", ""]
    rows = [[f"`{md_text(p.task)}`", outcome(p.a), outcome(p.b), f"${p.a.cost_usd:.4f}",
             f"${p.b.cost_usd:.4f}", duration(p.a.wall_seconds), duration(p.b.wall_seconds),
             _discordant(p.a.resolved, p.b.resolved, la, lb)] for p in comparison.pairs]
    parts += _table(["task", la, lb, f"{la} cost", f"{lb} cost", f"{la} time",
                     f"{lb} time", "only"], rows)
    if comparison.only_a or comparison.only_b:
        parts += ["", "## Tasks in one report only (not counted)", ""]
        parts += [f"- {name} only: " + ", ".join(f"`{md_text(t)}`" for t in tasks)
                  for name, tasks in ((la, comparison.only_a), (lb, comparison.only_b))
                  if tasks]
    if comparison.missing_a or comparison.missing_b:
        parts += ["", "## Tasks without a result (not counted)", ""]
        parts += [f"- no result in {name}: " + ", ".join(f"`{md_text(t)}`" for t in tasks)
                  for name, tasks in ((la, comparison.missing_a), (lb, comparison.missing_b))
                  if tasks]
    return "\n".join(parts) + "\n"


def _discordant(a: bool, b: bool, la: str, lb: str) -> str:
    if a == b:
        return ""
    return f"{la} only" if a else f"{lb} only"


class ComparisonFiles(NamedTuple):
    """What :func:`write_comparison` wrote."""

    json: Path
    markdown: Path
    png: Path


def write_comparison(comparison: Comparison, out: Path) -> ComparisonFiles:
    """Write ``compare.json``, ``compare.md`` and ``compare.png`` into the folder ``out``
    (made if missing). Raises :class:`UsageError` when ``out`` cannot take them."""
    files = ComparisonFiles(out / "compare.json", out / "compare.md", out / "compare.png")
    if out.exists() and not out.is_dir():
        raise UsageError("not a folder", file=out, key="--out",
                         fix="pass a folder (it is made if missing)")
    from portwright.eval.chart import write_chart  # matplotlib: only when drawing

    try:
        out.mkdir(parents=True, exist_ok=True)
        files.json.write_text(comparison.model_dump_json(indent=2) + "\n", encoding="utf-8")
        files.markdown.write_text(comparison_markdown(comparison), encoding="utf-8")
        write_chart(comparison, files.png)
    except OSError as exc:
        raise UsageError(f"cannot write the comparison: {exc.strerror or exc}", file=out,
                         key="--out", fix="pass a folder you can write to") from exc
    return files
