"""The ASGI app: the runs page, a run's page, its approvals, and their event streams.

Pages are rendered on the server; htmx swaps the live parts when a stream says
``changed``. Reads run in worker threads (git, the checkpointer, the run's folder); a
decision is handed to :class:`~portwright.web.decisions.Decider`. Every route that changes
state takes POST and checks the CSRF token itself; the token, the hosts and the origin are
checked by :class:`~portwright.web.security.GuardMiddleware` before any route.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import AsyncIterator, Callable
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from portwright.errors import PortwrightError, UsageError
from portwright.project import Project
from portwright.web import actions, markdown, render, runpage, summaries
from portwright.web.checkpoints import Checkpoints
from portwright.web.decisions import Decider
from portwright.web.diffs import _lexer, stylesheet
from portwright.web.security import Guard, GuardMiddleware
from portwright.web.site import Site, html, in_thread, not_found, run_id_of, site_of

logger = logging.getLogger(__name__)

POLL = 1.0
"""Seconds between two looks at the state folder for an event stream."""
HEARTBEAT = 15.0
_SHA = re.compile(r"[0-9a-f]{7,40}")


# ------------------------------------------------------------------------------ runs


def _filtered(site: Site, status: str, row: str) -> tuple[list[summaries.RunSummary], int,
                                                            list[str]]:
    every = site.index.runs()
    wanted = [r for r in every if (not status or r.status == status or
                                   (status == "done" and r.status == "landed"))
              and (not row or r.row == row)]
    return wanted, len(every), sorted({r.row for r in every})


def _runs_context(request: Request, site: Site) -> dict[str, Any]:
    status = request.query_params.get("status", "")
    row = request.query_params.get("row", "")
    runs, total, rows = _filtered(site, status, row)
    query = urlencode({k: v for k, v in (("status", status), ("row", row)) if v})
    return {"runs": runs, "rows_html": site.rows.html(runs), "total": total, "rows": rows,
            "status": status, "row": row,
            "query": query, "statuses": [(k, v) for k, v in summaries.LABELS.items()
                                         if k != "landed"]}


async def runs_page(request: Request) -> Response:
    site = site_of(request)
    context = await in_thread(_runs_context, request, site)
    return html(render.render("runs.html", **context))


async def runs_table(request: Request) -> Response:
    site = site_of(request)
    context = await in_thread(_runs_context, request, site)
    return html(render.render("_runs_table.html", **context))


def _stream(request: Request, stamp: Callable[[], str]) -> StreamingResponse:
    async def events() -> AsyncIterator[str]:
        last = await in_thread(stamp)
        quiet = 0.0
        yield "retry: 2000\n\n"
        while True:
            await anyio.sleep(POLL)
            now = await in_thread(stamp)
            if now != last:
                last, quiet = now, 0.0
                yield "event: changed\ndata: {}\n\n"
                continue
            quiet += POLL
            if quiet >= HEARTBEAT:
                quiet = 0.0
                yield ": still here\n\n"

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"X-Accel-Buffering": "no"})


async def runs_events(request: Request) -> Response:
    site = site_of(request)
    return _stream(request, site.index.stamp)


# ------------------------------------------------------------------------------- run


def _run_context(request: Request, site: Site, run_id: str, *, fragment: bool = False
                 ) -> dict[str, Any]:
    page = runpage.build(site.project, site.checkpoints, run_id)
    request_ = page.request
    description = markdown.render(str(request_.get("description", ""))) if request_ \
        else Markup("")
    return {"page": page, "static": False, "csrf": request.state.csrf,
            "description": description, "failure": site.decider.failure(run_id),
            "inflight": site.decider.inflight(run_id), "fragment": fragment}


async def run_page(request: Request) -> Response:
    site = site_of(request)
    try:
        context = await in_thread(_run_context, request, site, run_id_of(request))
    except (LookupError, UsageError):
        return not_found(f"no run {request.path_params['run_id']!r} in this project")
    return html(render.render("run.html", **context))


async def run_live(request: Request) -> Response:
    site = site_of(request)
    try:
        context = await in_thread(_run_context, request, site, run_id_of(request))
    except (LookupError, UsageError):
        return not_found("no such run")
    return html(render.render("_live.html", **context))


async def run_events(request: Request) -> Response:
    site = site_of(request)
    try:
        run_id = run_id_of(request)
    except LookupError:
        return not_found("no such run")

    def stamp() -> str:
        mark = summaries.run_stamp(site.project, site.checkpoints, run_id)
        return f"{mark}|{site.decider.inflight(run_id)}|{site.decider.failure(run_id)}"

    return _stream(request, stamp)


async def run_log(request: Request) -> Response:
    site = site_of(request)
    try:
        store = site.project.store(run_id_of(request))
        seq = int(request.path_params["seq"])
    except (LookupError, UsageError, ValueError):
        return not_found("no such log")
    paths = sorted(store.evidence_dir.glob(f"{seq:04d}-*.json")) \
        if store.evidence_dir.is_dir() else []
    if not paths:
        return not_found("no such record")
    try:
        record = store.read(paths[0])
    except PortwrightError as exc:
        return PlainTextResponse(f"the record does not verify: {exc}", status_code=409)
    return PlainTextResponse(store.log_text(record))


def _upstream_lines(site: Site, path: str, at: str) -> list[Markup] | None:
    from portwright.vcs import plumbing

    data = plumbing.show(site.project.upstream(), at, path)
    if data is None:
        return None
    text = data.decode("utf-8", errors="replace")
    html = highlight(text, _lexer(path), HtmlFormatter(nowrap=True)).split("\n")
    return [Markup(line) for line in html[: text.count("\n") + 1]]


async def upstream_view(request: Request) -> Response:
    site = site_of(request)
    path = str(request.path_params["path"])
    at = request.query_params.get("at", "")
    if not _SHA.fullmatch(at) or path.startswith(("/", "-")) or ".." in path.split("/"):
        return not_found("the upstream view shows a file at a commit sha")
    try:
        run_id = run_id_of(request)
        lines = await in_thread(_upstream_lines, site, path, at)
    except (LookupError, PortwrightError):
        lines = None
    if lines is None:
        return not_found(f"{path} is not in upstream at {at}")
    return html(render.render("upstream.html", run_id=run_id, path=path, at=at, lines=lines))


async def run_transcript(request: Request) -> Response:
    site = site_of(request)
    try:
        found = await in_thread(runpage.transcript, site.project, run_id_of(request),
                              str(request.path_params["name"]))
    except (LookupError, UsageError):
        found = None
    if found is None:
        return not_found("no such transcript")
    return html(render.render("_events.html", t=found))


async def run_report(request: Request) -> Response:
    site = site_of(request)
    try:
        text = await in_thread(render.report_html, site.project, site.checkpoints,
                             run_id_of(request))
    except (LookupError, UsageError):
        return not_found("no such run")
    return html(text)


# ------------------------------------------------------------------------------- misc


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


async def login(request: Request) -> Response:
    return RedirectResponse("/", status_code=303)  # the guard set the cookie


async def favicon(request: Request) -> Response:
    return Response(status_code=204)


async def highlight_css(request: Request) -> Response:
    return Response(stylesheet(), media_type="text/css")


ROUTES: list[BaseRoute] = [
    Route("/", runs_page),
    Route("/runs-table", runs_table),
    Route("/events", runs_events),
    Route("/runs/{run_id}", run_page),
    Route("/runs/{run_id}/live", run_live),
    Route("/runs/{run_id}/events", run_events),
    Route("/runs/{run_id}/logs/{seq:int}", run_log),
    Route("/runs/{run_id}/upstream/{path:path}", upstream_view),
    Route("/runs/{run_id}/transcripts/{name}", run_transcript),
    Route("/runs/{run_id}/report.html", run_report),
    *[Route(f"/runs/{{run_id}}/{kind}", actions.decision_route(kind), methods=["POST"])
      for kind in ("approve", "reject", "respond", "edit")],
    Route("/runs/{run_id}/spec/check", actions.spec_check, methods=["POST"]),
    Route("/healthz", healthz),
    Route("/login", login),
    Route("/favicon.ico", favicon),
    Route("/static/highlight.css", highlight_css),
    Mount("/static", StaticFiles(directory=str(resources.files("portwright.web") / "static")),
          name="static"),
]


def _warm(index: summaries.RunIndex) -> None:
    try:
        index.runs()
    except Exception:  # a failure here shows again, with its page, on the first request
        logger.exception("could not read the runs' summaries")


def create_app(root: Path, guard: Guard, *, allow_local: bool = False) -> Starlette:
    """The app serving the project at ``root``."""
    project = Project.load(root)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        with Checkpoints(project) as checkpoints:
            index = summaries.RunIndex(project, checkpoints)
            app.state.site = Site(project, checkpoints,
                                  Decider(project.root, checkpoints, allow_local=allow_local),
                                  index, render.RowCache())
            # the first look at many runs reads each one: done before anyone asks
            threading.Thread(target=_warm, args=(index,), name="warm-index",
                             daemon=True).start()
            yield

    app = Starlette(routes=ROUTES, lifespan=lifespan)
    app.add_middleware(GuardMiddleware, guard=guard)
    return app
