"""The routes that change a run: approve, reject, respond, edit, and the spec check an
edit is previewed with. Each reads its form, checks the session's CSRF token (the guard
has checked the token and the origin already) and hands the decision to the
:class:`~portwright.web.decisions.Decider`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from portwright.errors import UsageError
from portwright.web import markdown, render
from portwright.web.decisions import Outcome, check_spec
from portwright.web.security import csrf_ok
from portwright.web.site import Site, html, in_thread, not_found, run_id_of, site_of


def _answer(request: Request, run_id: str, outcome: Outcome) -> Response:
    if request.headers.get("hx-request") == "true":
        tone = "ok" if outcome.sent else "bad"
        return html(render.render("_decision.html", tone=tone, headline=outcome.headline,
                                   detail=outcome.detail), outcome.status)
    if outcome.sent:
        return RedirectResponse(f"/runs/{run_id}", status_code=303)
    return html(render.render("message.html", title="Decision", run_id=run_id,
                               back=f"/runs/{run_id}", tone="bad", headline=outcome.headline,
                               detail=outcome.detail), outcome.status)


async def _form(request: Request) -> tuple[dict[str, str], Response | None]:
    form = await request.form()
    values = {k: v for k, v in form.items() if isinstance(v, str)}
    await form.close()
    if not csrf_ok(request, values.get("csrf")):
        return values, PlainTextResponse("refused: the form lacks this session's CSRF token; "
                                         "reload the page", status_code=403)
    return values, None


def _decision(kind: str, values: dict[str, str], action: str) -> dict[str, Any] | Outcome:
    message = values.get("message", "").strip()
    if kind == "approve":
        return {"type": "approve"}
    if kind in ("reject", "respond"):
        if not message:
            return Outcome(400, f"a {kind} needs a message",
                           "say what is wrong: the agent that redoes the step reads it")
        return {"type": kind, "message": message}
    return {"type": "edit", "edited_action": {"name": action, "args": {"spec": values.get(
        "spec", "")}}}


def _decide(site: Site, run_id: str, kind: str, values: dict[str, str]) -> Outcome:
    current, pending = site.checkpoints.pending(run_id)
    action = str(current.waiting["action_requests"][0]["name"]) if current.waiting else ""
    decision = _decision(kind, values, action)
    if isinstance(decision, Outcome):
        return decision
    if kind == "edit" and pending and pending == values.get("interrupt"):
        text = values.get("spec", "")
        if not text.strip():
            return Outcome(400, "an edit of the spec must give its text")
        checked = check_spec(site.project, site.checkpoints, run_id, text)
        if not checked.passed:
            return Outcome(422, "refused: the edited spec fails the spec checks",
                           checked.messages())
    return site.decider.send(run_id, values.get("interrupt", ""), decision)


def decision_route(kind: str) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        values, refusal = await _form(request)
        if refusal is not None:
            return refusal
        site = site_of(request)
        try:
            run_id = run_id_of(request)
            outcome = await in_thread(_decide, site, run_id, kind, values)
        except (LookupError, UsageError):
            return not_found(f"no run {request.path_params['run_id']!r} in this project")
        return _answer(request, run_id, outcome)

    endpoint.__name__ = f"{kind}_run"
    return endpoint


async def spec_check(request: Request) -> Response:
    values, refusal = await _form(request)
    if refusal is not None:
        return refusal
    site = site_of(request)
    text = values.get("spec", "")
    try:
        run_id = run_id_of(request)
        checked = await in_thread(check_spec, site.project, site.checkpoints, run_id, text)
    except (LookupError, UsageError):
        return not_found(f"no run {request.path_params['run_id']!r} with a spec")
    front, body = markdown.render_spec(text, link=markdown.upstream_link(run_id))
    return html(render.render("_spec_check.html", passed=checked.passed,
                              results=checked.results, front=front, html=body))
