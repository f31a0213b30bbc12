"""``portwright eval``: port tasks, the cycle against a plain agent loop (docs/eval.md)."""

from __future__ import annotations

import typer

from portwright.cli import eval_report

eval_app = typer.Typer(help="Port tasks: mine, validate, run, compare", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add ``portwright eval`` and its commands to ``app``."""
    eval_report.register(eval_app)
    app.add_typer(eval_app, name="eval")
