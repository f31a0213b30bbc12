"""CLI commands of the parity room: rows, anchors check/remap, ledger check.

Exit codes: 0 ok, 1 a check found problems, 2 bad input (a malformed file, a bad revision).
Heavy imports happen inside the commands so ``portwright rows`` starts fast.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from portwright.cli.common import (
    config,
    console,
    emit_json,
    err_console,
    project,
    repo_path,
    revision,
)

anchors_app = typer.Typer(help="Check and re-locate upstream anchors.", no_args_is_help=True)
ledger_app = typer.Typer(help="Check the parity ledger and the inventory.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add this room's commands to ``app``."""
    app.command("rows")(rows)
    app.add_typer(anchors_app, name="anchors")
    app.add_typer(ledger_app, name="ledger")


def rows(
    status: Annotated[list[str] | None, typer.Option(
        "--status", "-s", help="Only rows with this status (repeatable).")] = None,
    open_only: Annotated[bool, typer.Option(
        "--open", help="Only rows not in a done status ([artifacts] done_statuses).")] = False,
    file: Annotated[str | None, typer.Option(
        help="Only rows of matrices whose path contains this text.")] = None,
    grep: Annotated[str | None, typer.Option(
        "--grep", "-g", help="Only rows whose id or title contains this text.")] = None,
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the rows of the coverage matrices with their status and spec."""
    from portwright.parity.matrix import load_rows

    cfg = config()
    found = load_rows(repo_path(), cfg)
    if status:
        wanted = {s.lower() for s in status}
        unknown = sorted(wanted - {s.lower() for s in cfg.artifacts.statuses})
        if unknown:
            from portwright.errors import UsageError

            raise UsageError(f"unknown status {', '.join(unknown)}", key="--status",
                             fix=f"use one of: {', '.join(cfg.artifacts.statuses)}")
        found = [r for r in found if r.status.lower() in wanted]
    if open_only:
        found = [r for r in found if r.status not in cfg.artifacts.done_statuses]
    if file:
        found = [r for r in found if file in r.file]
    if grep:
        needle = grep.lower()
        found = [r for r in found if needle in r.id.lower() or needle in r.title.lower()]
    if json:
        emit_json([r.model_dump(mode="json") for r in found])
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("id", "status", "title", "spec"):
        table.add_column(column)
    table.add_column("where", overflow="fold")
    for row in found:
        table.add_row(*(escape(cell) for cell in (row.id, row.status, row.title, row.spec or "-",
                                                  f"{row.file}:{row.line}")))
    console.print(table)
    console.print(f"[dim]{len(found)} row(s)[/]")




def _report(name: str, passed: bool, messages: list[str], json: bool) -> None:
    if json:
        emit_json({"check": name, "passed": passed, "messages": messages})
    else:
        for message in messages:
            (console if passed else err_console).print(message, soft_wrap=True, markup=False)
        console.print(f"{name}: " + ("[green]ok[/]" if passed else "[red]FAILED[/]"))
    if not passed:
        raise typer.Exit(1)


@anchors_app.command("check")
def anchors_check(
    at: Annotated[str | None, typer.Option(
        help="Resolve anchors without @sha at this upstream revision (default: the pin).")]
    = None,
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Resolve every anchor of the specs and the ledger in upstream; excerpts must match."""
    from portwright.gates.checks import check_anchors

    proj = project()
    upstream = proj.upstream_repo()
    if at is not None:
        revision(proj.upstream(), at, "--at")
    verdict = check_anchors(proj.root, proj.config, upstream, at=at, strict=True)
    _report("anchors", verdict.passed, verdict.messages, json)


@anchors_app.command("remap")
def anchors_remap(
    to: Annotated[str, typer.Option("--to", help="Upstream revision to re-locate anchors at.")],
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Report only; do not rewrite the files.")] = False,
    move_pin: Annotated[bool, typer.Option(
        "--move-pin", help="Also record the new revision as the pin.")] = False,
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Re-locate the anchors of specs and ledger at a new upstream revision, by content.

    Each anchor's cited lines are looked up at --to (following renames); anchors found once
    are rewritten in place (only their own bytes) and each spec's pin moves to --to. When
    some cannot be placed nothing is written: they are reported, and the exit code is 1.
    """
    from portwright.parity.remap import remap_records

    proj = project()
    upstream = proj.upstream()
    revision(upstream, to, "--to")
    report = remap_records(proj.root, proj.config, upstream, to, dry_run=dry_run,
                           move_pin=move_pin)
    if json:
        emit_json({"ok": not report.unplaced, **report.model_dump(mode="json")})
    else:
        for item in report.moved:
            console.print(f"{item.where}: {item.old} -> {item.new}", markup=False,
                          soft_wrap=True)
        for lost in report.unplaced:
            err_console.print(f"{lost.where}: could not place {lost.anchor}: {lost.reason}",
                              markup=False, soft_wrap=True)
        console.print(f"{len(report.moved)} moved, {len(report.unplaced)} unplaced"
                      + (" (dry run: nothing written)" if dry_run else "")
                      + (" (nothing written: place or fix those anchors first)"
                         if report.unplaced and not dry_run else ""))
    if report.unplaced:
        raise typer.Exit(1)


@ledger_app.command("check")
def ledger_check(
    resolve: Annotated[bool, typer.Option(
        "--resolve/--no-resolve",
        help="Also resolve every anchor and commit in upstream at the pin.")] = True,
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Check the ledger (kinds, references, costs of divergences) and the inventory
    (searched paths), and resolve the ledger's upstream references."""
    from portwright.parity.ledger import check_ledger

    entries, messages = check_ledger(repo_path(), config(), resolve=resolve)
    if not json:
        console.print(f"{len(entries)} ledger entries")
    _report("ledger", not messages, messages, json)
