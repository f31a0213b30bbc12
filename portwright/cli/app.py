"""The typer app, global options and the error boundary."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import IO, Annotated, Any, NoReturn

import typer
from rich.logging import RichHandler
from rich.markup import escape

from portwright import __version__
from portwright.cli.common import STATE, err_console
from portwright.errors import PortwrightError, RunFailure, UsageError
from portwright.redact import redact

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


TEMPORAL_BRIDGE = "temporalio.bridge.temporal_sdk_bridge"
"""The Temporal SDK's native core. Its threads can outlive the event loop and take the GIL
while the interpreter finalizes, which aborts the process (``Fatal Python error:
PyGILState_Release``, SIGABRT: temporalio/sdk-python#300) after the command's work is done."""


def main() -> None:
    """:func:`run_main`; a process that loaded :data:`TEMPORAL_BRIDGE` (``submit``,
    ``schedule``, ``worker``…) then exits without finalizing the interpreter
    (:func:`exit_now`): the command is over, its output flushed."""
    try:
        run_main()
    except SystemExit as exc:
        if TEMPORAL_BRIDGE in sys.modules:
            exit_now(exc.code)
        raise


def exit_now(code: object) -> NoReturn:
    """Exit with ``code`` as ``sys.exit`` would (None: 0; a text: printed, 1), logs and
    standard streams flushed first, without finalizing the interpreter."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe: nothing more can be said there
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


class Redacted:
    """A text stream that redacts (:mod:`portwright.redact`) everything written to it:
    the CLI's standard output and error (its printing, rich's consoles, its logs)."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redact(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def run_main() -> None:
    """Turns portwright's errors into messages and exit codes.

    Exit codes: 0 ok, 1 a check failed or a run could not go on, 2 bad input (a
    :class:`~portwright.errors.UsageError`, an unknown option), 128+N stopped by signal N
    (Ctrl-C: 130, ``kill``: 143). With ``--json`` a failure also prints a JSON error
    object on stdout. SIGTERM takes the path of Ctrl-C: a run marks itself
    ``interrupted`` and its sandbox is removed before the process exits.
    """
    as_json = wants_json(sys.argv[1:])
    if not isinstance(sys.stdout, Redacted):
        sys.stdout, sys.stderr = Redacted(sys.stdout), Redacted(sys.stderr)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stop)
    try:
        result = app(standalone_mode=False, prog_name="portwright")
        if _STOPPED or result == 128 + signal.SIGINT:  # typer's answer to Ctrl-C
            raise KeyboardInterrupt
    except (typer.Abort, KeyboardInterrupt):
        code = 128 + (_STOPPED[0] if _STOPPED else signal.SIGINT)
        _fail(code, "interrupted", as_json, kind="interrupted", prefix="stopped")
    except typer.TyperException as exc:  # a bad option or argument
        if type(exc).__name__ == "NoArgsIsHelpError" and not as_json:
            getattr(exc, "show", print)()  # `portwright` alone: the help
            sys.exit(2)
        context = getattr(exc, "ctx", None)
        where = context.command_path if context is not None else "portwright"
        message = getattr(exc, "format_message", exc.__str__)()
        _fail(int(getattr(exc, "exit_code", 2)), message, as_json, kind="usage",
              fix=f"see `{where} --help`")
    except UsageError as exc:
        _fail(2, exc.render(), as_json, kind=type(exc).__name__, error=exc)
    except RunFailure as exc:
        _fail(1, getattr(exc, "message", None) or str(exc), as_json, kind=type(exc).__name__,
              prefix="failed", fix=getattr(exc, "fix", None))
    except PortwrightError as exc:
        _fail(1, str(exc), as_json, kind=type(exc).__name__)
    sys.exit(result if isinstance(result, int) else 0)


_STOPPED: list[int] = []
"""The signal that stopped the process, once one did."""


def _stop(signum: int, frame: object) -> None:
    """SIGINT and SIGTERM: stop like Ctrl-C does (``KeyboardInterrupt``, which closes
    sandboxes and marks the run). Further signals are ignored so the clean-up runs to its
    end; SIGKILL still ends the process."""
    _STOPPED.append(signum)
    for other in (signal.SIGINT, signal.SIGTERM):
        signal.signal(other, signal.SIG_IGN)
    raise KeyboardInterrupt


def wants_json(argv: list[str]) -> bool:
    """Whether ``--json`` was asked for (before a ``--`` that ends the options)."""
    options = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in options


def _fail(code: int, message: str, as_json: bool, *, kind: str, prefix: str = "error",
          fix: str | None = None, error: UsageError | None = None) -> NoReturn:
    """Print the failure (as a JSON error object too with ``--json``) and exit ``code``."""
    if as_json:
        payload: dict[str, Any] = {"type": kind, "message": message, "fix": fix}
        if error is not None:
            payload.update(message=error.message, file=error.file, line=error.line,
                           key=error.key, fix=error.fix)
        # one line: a whole document for --json, one more line for JSON-lines output
        print(json.dumps({"ok": False, "exit_code": code, "error": payload}))
    tail = f"\n  fix: {fix}" if fix and error is None else ""
    err_console.print(f"[bold red]{prefix}:[/] {escape(message + tail)}", highlight=False)
    sys.exit(code)
