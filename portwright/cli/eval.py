"""CLI commands of the eval room: ``portwright eval validate`` (and, from the modules named
in :data:`PARTS`, the other ``eval`` commands).

A module ``portwright/cli/eval_<part>.py`` adds its commands with ``register(eval_app)``
and is listed in :data:`PARTS`; the options every command shares (``--repos``, ``--out``,
``--jobs``, ``--json``) are defined here once.

Exit codes: 0 every task valid, 1 some task invalid (dropped from runs), 2 bad input.
"""

from __future__ import annotations

import importlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.live import Live
from rich.table import Table
from rich.text import Text

from portwright.cli.common import console, emit_json, err_console

if TYPE_CHECKING:
    from portwright.eval.validate import ValidationRecord

eval_app = typer.Typer(help="Port tasks: mine, validate, run, compare; prune the validation store.",
                       no_args_is_help=True)

PARTS: tuple[str, ...] = ("eval_mine", "eval_run", "eval_report", "eval_prune")
"""Modules of ``portwright.cli`` that add ``eval`` commands (``register(eval_app)``)."""

DEFAULT_OUT = Path("portwright-eval")
"""The output folder when ``--out`` is not given (relative to the current folder)."""

SuiteArg = Annotated[Path, typer.Argument(
    help="A folder of task files (searched recursively; suite.toml holds defaults) or one "
         "task file.", show_default=False)]
ReposOpt = Annotated[Path | None, typer.Option(
    "--repos", help="Folder of the tasks' clones, as DIR/<owner>/<name> (default: "
                    "$PORTWRIGHT_EVAL_REPOS).")]
OutOpt = Annotated[Path, typer.Option(
    "--out", help="Output folder: workspaces, validation records, results.")]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=1, max=64,
                                      help="Tasks at a time.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
RevalidateOpt = Annotated[bool, typer.Option(
    "--revalidate", help="Validate every task again, whatever record the output folder or "
                         "the validation store (in the state folder) keeps.")]


def output_folder(path: Path, option: str = "--out") -> Path:
    """``path`` (the folder an option names, made when missing) resolved; a
    :class:`UsageError` when something that is not a folder is there."""
    from portwright.errors import UsageError

    if path.exists() and not path.is_dir():
        raise UsageError("not a folder", file=path, key=option,
                         fix=f"pass {option} a folder (it is made if missing), not a file")
    return path.resolve()


def register(app: typer.Typer) -> None:
    """Add ``portwright eval`` and its parts' commands to ``app``."""
    for name in PARTS:
        importlib.import_module(f"portwright.cli.{name}").register(eval_app)
    app.add_typer(eval_app, name="eval")


class _Board:
    """One line per task, updated as the tasks tell what they do."""

    def __init__(self, ids: list[str]) -> None:
        self.state = dict.fromkeys(ids, "waiting")
        self.lock = threading.Lock()
        self.live: Live | None = None

    def table(self) -> Table:
        table = Table("task", "", box=None, show_header=False)
        for task_id, what in self.state.items():
            table.add_row(Text(task_id), Text(what, style="dim"))
        return table

    def __call__(self, task_id: str, what: str) -> None:
        with self.lock:
            self.state[task_id] = what
            if self.live is not None:
                self.live.update(self.table())


def _summary(records: list[ValidationRecord]) -> Table:
    table = Table("task", "valid", "reason", "baseline", "seconds")
    for record in records:
        table.add_row(Text(record.task),
                      Text("yes", style="green") if record.valid else Text("no", style="red"),
                      Text(record.reason), str(len(record.regress_baseline)),
                      f"{record.seconds:.1f}")
    return table


@eval_app.command("validate")
def validate(suite: SuiteArg, repos: ReposOpt = None, out: OutOpt = DEFAULT_OUT,
             jobs: JobsOpt = 1, json: JsonOpt = False,
             revalidate: RevalidateOpt = False) -> None:
    """Check every task: its hidden tests fail at the parent and pass at the port (in the
    task's Docker sandbox). Invalid tasks are dropped from runs; the records are kept under
    OUT/validation/ and in the validation store of the state folder, and reused (in any
    output folder) while a task, its shas and its image are unchanged."""
    from portwright.eval.repos import repos_root
    from portwright.eval.tasks import load_suite
    from portwright.eval.validate import validate_all

    loaded = load_suite(suite)
    root = repos_root(repos)
    out = output_folder(out)
    board = _Board([t.id for t in loaded.tasks])
    if json:
        records = validate_all(loaded.tasks, root, out, jobs=jobs, revalidate=revalidate)
    else:
        with Live(board.table(), console=err_console, transient=True) as live:
            board.live = live
            records = validate_all(loaded.tasks, root, out, jobs=jobs, progress=board,
                                   revalidate=revalidate)
    invalid = [r for r in records if not r.valid]
    if json:
        emit_json({"suite": str(loaded.root), "out": str(out), "valid": not invalid,
                   "records": records})
    else:
        console.print(_summary(records))
        for record in invalid:
            err_console.print(f"invalid {record.task}: {record.reason}", markup=False,
                              soft_wrap=True)
        if invalid:
            err_console.print(f"{len(invalid)} of {len(records)} task(s) invalid: dropped from "
                              "runs", markup=False)
        else:
            console.print(f"all {len(records)} task(s) valid", markup=False)
    if invalid:
        raise typer.Exit(1)
