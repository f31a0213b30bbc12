"""``portwright eval prune``: the validation store's entries and seeds that nothing has used
for a while removed (:mod:`portwright.eval.store`).

Exit codes: 0 done (whatever was removed), 1 something could not be removed (named), 2 bad
input.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.filesize import decimal
from rich.markup import escape
from rich.table import Table

from portwright.cli.common import console, emit_json, err_console
from portwright.eval import DEFAULT_AGE


def register(app: typer.Typer) -> None:
    app.command("prune")(prune)


def prune(
    older_than: Annotated[str, typer.Option(
        "--older-than", help="Remove what no validation or workspace has used for this long: "
                             "a number and a unit, m, h, d or w (0: everything not in "
                             "use).")] = DEFAULT_AGE,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Say what would be removed; remove nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Remove the validation store's entries (a task's record and compiler cache under one
    key) and seeds (a parent's history) that nothing has used for --older-than; an entry a
    validation holds stays."""
    from portwright.eval.store import parse_age, prune_store
    from portwright.eval.validate import store_dir

    report = prune_store(store_dir(), older_than=parse_age(older_than), dry_run=dry_run)
    if as_json:
        emit_json(report.model_dump(mode="json"))
        if report.failed:
            raise typer.Exit(1)
        return
    if not report.removed:
        console.print(f"{'would remove' if dry_run else 'removed'} nothing: nothing in "
                      f"{escape(report.store)} has gone unused for {escape(older_than)}")
    else:
        table = Table("kind", "path", "size", "days unused")
        for item in report.removed:
            table.add_row(item.kind, escape(item.path), decimal(item.bytes),
                          f"{item.days_unused:.1f}")
        console.print(table)
        console.print(f"{'would remove' if dry_run else 'removed'} {len(report.removed)} "
                      f"item(s), {decimal(report.freed_bytes)}")
    for entry in report.in_use:
        err_console.print(f"[yellow]kept[/] {escape(entry)}: a validation holds it")
    for problem in report.failed:
        err_console.print(f"[red]cannot remove[/] {escape(problem)}")
    if report.failed:
        raise typer.Exit(1)
