"""``portwright eval mine``: candidate port tasks from a real upstream / port pair, for a
person to confirm (see ``docs/eval.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from portwright.cli.common import console, emit_json


def register(eval_app: typer.Typer) -> None:
    """Add ``eval mine`` to the ``eval`` command group."""
    eval_app.command("mine")(mine)


def _path_map(items: list[str]) -> dict[str, str]:
    from portwright.errors import UsageError

    out: dict[str, str] = {}
    for item in items:
        up, sep, down = item.partition("=")
        if not sep or not up or not down:
            raise UsageError(f"--path-map {item!r} is not UP=DOWN", key="--path-map",
                             fix="write an upstream prefix, '=', a downstream prefix: lib/=src/")
        out[up] = down
    return out


def mine(
    upstream: Annotated[Path, typer.Option(
        "--upstream", help="The upstream repository (a clone).")],
    downstream: Annotated[Path, typer.Option(
        "--downstream", help="The downstream repository that ported from it (a clone).")],
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write one candidate task file per candidate under this folder.")] = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", min=1, help="Stop after this many candidates (newest first).")] = None,
    path_map: Annotated[list[str] | None, typer.Option(
        "--path-map", help="UP=DOWN path prefix pair that ties files (repeatable).")] = None,
    languages: Annotated[str, typer.Option(
        "--languages", help="The languages line of the task files: 'javascript -> python'."
    )] = "",
    gap: Annotated[bool, typer.Option(
        "--gap", help="Also tie upstream commits of version ranges by the gap scan (slower).")
    ] = False,
    json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Propose candidate port tasks: downstream commits that change tests and reference an
    upstream commit, issue, version or test by name."""
    from portwright.cli.eval import output_folder
    from portwright.eval.mine import mine as mine_pair
    from portwright.eval.mine import slug, task_id, write_candidates

    if out is not None:
        out = output_folder(out)

    found = mine_pair(upstream, downstream, path_map=_path_map(path_map or []), limit=limit,
                      gap=gap)
    up_slug, down_slug = slug(upstream), slug(downstream)
    written = write_candidates(found, out, upstream=up_slug, downstream=down_slug,
                               languages=languages) if out is not None else []
    if json:
        emit_json({"upstream": up_slug, "downstream": down_slug,
                   "candidates": [c.model_dump(mode="json") for c in found],
                   "written": [str(p) for p in written]})
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for column in ("task", "date", "clues", "upstream"):
        table.add_column(column)
    table.add_column("subject", overflow="fold")
    name = down_slug.rsplit("/", 1)[-1]
    for cand in found:
        table.add_row(escape(task_id(name, cand)), cand.date, ",".join(cand.kinds),
                      " ".join(s[:8] for s in cand.upstream[:3])
                      + (" …" if len(cand.upstream) > 3 else "") or "-",
                      escape(cand.subject))
    console.print(table)
    where = f", written to {out}" if out is not None else ""
    console.print(f"[dim]{len(found)} candidate(s){where}[/]")
