"""CLI commands of the web room: ``serve`` (the pages; needs the ``web`` extra)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from portwright.cli.common import err_console, project


def register(app: typer.Typer) -> None:
    """Add this room's commands to ``app``."""
    app.command()(serve)


def _token(token: str | None, token_file: Path | None) -> str | None:
    from portwright.errors import UsageError

    if token is not None and token_file is not None:
        raise UsageError("--token and --token-file both given", key="--token",
                         fix="pass one of them")
    if token_file is None:
        return token
    try:
        text = token_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the token: {exc}", file=token_file,
                         fix="pass a readable file holding the token on one line") from exc
    if not text:
        raise UsageError("the token file is empty", file=token_file,
                         fix="write the token into it")
    return text


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on; other than loopback needs "
                                           "--token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8765,
    token: Annotated[str | None, typer.Option(
        help="The token every request needs (Authorization: Bearer, or /login?token=); "
             "unset: one is made and printed.",
        envvar="PORTWRIGHT_WEB_TOKEN", show_envvar=True)] = None,
    token_file: Annotated[Path | None, typer.Option(
        "--token-file", help="Read the token from this file.")] = None,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="Also answer requests for this host name (repeatable).")] = None,
    allow_local: Annotated[bool, typer.Option(
        "--allow-local", help="Resumed runs may use the unisolated local backend.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print where it serves as one JSON line (errors as JSON too).")] = False,
) -> None:
    """Serve the runs, their evidence and their approvals as web pages."""
    from portwright.errors import UsageError

    try:
        from portwright.web import server
    except ImportError as exc:
        raise UsageError(f"portwright serve needs the web extra ({exc.name} is missing)",
                         fix="pip install 'portwright[web]'") from exc
    given = _token(token, token_file)
    # a token always: one made for this server when none is given (any local process or
    # page could otherwise approve runs), printed once, as a link that signs in
    secret = given if given is not None else server.new_token()
    guard = server.guard_for(host, given, allow_host or [], made=secret)
    root = project().root
    sock = server.bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    login = f"{url}login?token={secret}" if given is None else f"{url}login?token=<your token>"
    if as_json:
        print(json.dumps({"event": "serving", "url": url, "token": True,
                          "token_made": given is None, "login_url": login}), flush=True)
    else:
        err_console.print(f"portwright serve: {url}  (Ctrl-C stops)", markup=False,
                          highlight=False)
        err_console.print(f"sign in once by opening {login}", markup=False, highlight=False)
    server.serve(root, sock=sock, guard=guard, allow_local=allow_local)
