"""What every request of one server shares, and the helpers its routes use."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import HTMLResponse

from portwright.project import Project
from portwright.web import render, summaries
from portwright.web.checkpoints import Checkpoints
from portwright.web.decisions import Decider

_RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass
class Site:
    """What every request of one server shares."""

    project: Project
    checkpoints: Checkpoints
    decider: Decider
    index: summaries.RunIndex
    rows: render.RowCache


def site_of(request: Request) -> Site:
    site: Site = request.app.state.site
    return site


def run_id_of(request: Request) -> str:
    run_id = str(request.path_params["run_id"])
    if not _RUN_ID.fullmatch(run_id):
        raise LookupError(run_id)
    return run_id


def html(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status)


def not_found(what: str) -> HTMLResponse:
    body = render.render("message.html", title="Not found", run_id="", back="/",
                         tone="bad", headline=what, detail="")
    return html(body, 404)


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    return await anyio.to_thread.run_sync(fn, *args)
