"""``portwright eval run``: every task of a suite in one mode (``cycle`` or ``loop``), scored
by its hidden tests; ``results/<slug>.<mode>.json`` per task and ``report.<mode>.json`` in
the output folder. A rerun skips the tasks that have a result.

The model is the one ``portwright run`` uses: each task's ``[model]`` (the harness sets
none: ``openai`` at OpenAI), ``--model`` over its name, ``PORTWRIGHT_MODEL__BASE_URL`` for
another OpenAI-compatible endpoint, the key in the variable ``[model] api_key_env`` names
(``OPENAI_API_KEY``); or the cassettes of ``--replay DIR``.

Exit codes: 0 the suite ran (resolved or not: the report says), 2 bad input: before any task
runs, or once the others ran, a cassette that stopped matching a task's requests (that task
has no result; a rerun runs it again).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from portwright.cli.common import console, emit_json, err_console
from portwright.cli.eval import (
    DEFAULT_OUT,
    JobsOpt,
    JsonOpt,
    OutOpt,
    ReposOpt,
    RevalidateOpt,
    SuiteArg,
    output_folder,
)

if TYPE_CHECKING:
    from portwright.eval.results import EvalReport


def register(app: typer.Typer) -> None:
    """Add ``eval run`` to the ``eval`` app."""
    app.command("run")(run)


def run(
    suite: SuiteArg,
    mode: Annotated[str, typer.Option(
        "--mode", help="cycle: the port cycle, approvals off; loop: one agent with the "
                       "same tools, budget and sandbox, no gates.")] = "cycle",
    model: Annotated[str | None, typer.Option(
        help="Model name (over the name in each task's config). The endpoint: "
             "PORTWRIGHT_MODEL__BASE_URL; the key: OPENAI_API_KEY.")] = None,
    replay: Annotated[Path | None, typer.Option(
        help="Play the agents from DIR/<task>.<mode>.jsonl instead of a model endpoint.")]
    = None,
    record: Annotated[Path | None, typer.Option(
        help="Record every model call into DIR/<task>.<mode>.jsonl.")] = None,
    repos: ReposOpt = None,
    out: OutOpt = DEFAULT_OUT,
    jobs: JobsOpt = 1,
    as_json: JsonOpt = False,
    revalidate: RevalidateOpt = False,
) -> None:
    """Run every task of SUITE in one mode, each in its own workspace and sandbox, and score
    it by its hidden tests (resumable: tasks with a result are skipped)."""
    from portwright.errors import UsageError
    from portwright.eval.repos import repos_root
    from portwright.eval.results import Mode
    from portwright.eval.runner import CassetteDiverged, RunOptions, run_suite
    from portwright.eval.tasks import load_suite

    if mode not in ("cycle", "loop"):
        raise UsageError(f"--mode {mode!r}", key="--mode", fix="use cycle or loop")
    if replay is not None and record is not None:
        raise UsageError("--record and --replay exclude each other", key="--replay",
                         fix="record once against a model endpoint, then replay that folder")
    if replay is not None and not replay.is_dir():
        raise UsageError("not a folder of cassettes", file=replay, key="--replay",
                         fix="pass the folder --record wrote (<task>.<mode>.jsonl files)")
    loaded = load_suite(suite)
    options = RunOptions(mode=Mode(mode), out=output_folder(out), repos=repos_root(repos),
                         model=model, replay=None if replay is None else replay.resolve(),
                         record=None if record is None else output_folder(record, "--record"),
                         jobs=jobs, revalidate=revalidate)
    if as_json:
        report = run_suite(loaded, options, lambda event: print(
            json.dumps(event, default=str), flush=True))
        emit_json(report)
        return
    try:
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err_console, transient=True) as progress:
            report = run_suite(loaded, options, _Board(progress, len(loaded.tasks), mode))
    except CassetteDiverged:
        from portwright.eval.results import read_report
        from portwright.eval.runner import report_path

        # the tasks that ran are in the report; the error follows it
        _summary(read_report(report_path(options.out, Mode(mode))), options.out)
        raise
    _summary(report, options.out)


class _Board:
    """The progress bar, and one line per task as it ends."""

    def __init__(self, progress: Progress, total: int, mode: str) -> None:
        self.progress = progress
        self.bar = progress.add_task(f"eval run ({mode})", total=total)
        self.lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        task = escape(str(event.get("task", "")))
        with self.lock:
            if kind == "task_progress":
                self.progress.update(self.bar, description=f"{task}: "
                                                           f"{escape(str(event['what']))}")
            elif kind == "node_started":
                self.progress.update(self.bar, description=f"{task}: "
                                                           f"{escape(str(event['node']))}")
            elif kind == "task_skipped":
                self.progress.advance(self.bar)
                self.progress.console.print(f"[dim]- {task}: skipped ({escape(event['reason'])})"
                                            "[/]")
            elif kind == "task_dropped":
                self.progress.advance(self.bar)
                self.progress.console.print(f"[yellow]- {task}[/]: dropped (invalid: "
                                            f"{escape(str(event['reason']))})")
            elif kind == "task_error":
                self.progress.advance(self.bar)
                self.progress.console.print(f"[red]error[/] {task}: no result, "
                                            f"{escape(str(event['detail']))}")
            elif kind == "task_finished":
                self.progress.advance(self.bar)
                mark = "[green]resolved[/]" if event["resolved"] else \
                    f"[red]unresolved[/] ({escape(str(event['failure']))})"
                detail = f" [dim]{escape(str(event['detail']))}[/]" if event["detail"] else ""
                self.progress.console.print(f"{mark} {task} [dim]{event['seconds']:.0f} s[/]"
                                            f"{detail}")


def _summary(report: EvalReport, out: Path) -> None:
    from portwright.cli.eval_report import show_report
    from portwright.eval.runner import report_path

    show_report(report)
    console.print(f"report: {report_path(out, report.mode)}", markup=False)
