"""The typer app, global options and the error boundary."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.logging import RichHandler
from rich.markup import escape

from portwright import __version__
from portwright.cli.common import STATE, err_console
from portwright.errors import PortwrightError, RunFailure, UsageError

app = typer.Typer(
    name="portwright",
    help="Port upstream work into a downstream project, one checked step at a time.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"portwright {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    repo: Annotated[
        Path, typer.Option("--repo", "-C", help="The downstream repository (default: here).")
    ] = Path(),
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More logs.")] = 0,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    STATE.repo = repo.resolve()
    if STATE.repo.is_dir():
        os.chdir(STATE.repo)  # like `git -C`: relative paths are read from the repo
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(message)s", datefmt="[%X]",
                        handlers=[RichHandler(console=err_console, show_path=False)])


def main() -> None:
    """Console-script entry point: turns portwright's errors into messages and exit codes."""
    try:
        app()
    except UsageError as exc:
        err_console.print(f"[bold red]error:[/] {escape(exc.render())}", highlight=False)
        sys.exit(2)
    except RunFailure as exc:
        err_console.print(f"[bold red]failed:[/] {escape(str(exc))}", highlight=False)
        sys.exit(1)
    except PortwrightError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        sys.exit(1)
