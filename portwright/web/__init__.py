"""Approval and evidence pages: ``portwright serve`` and ``portwright report --html``.

An ASGI app (Starlette, served by uvicorn) renders Jinja2 templates shipped in this
package; htmx (vendored in ``static/``, no CDN, no build step) refreshes the live parts
when the server's event stream says a run moved. Everything on a page comes from the
run's folder, its checkpoint and git, read by the same code the CLI uses; everything a
model or a command wrote is escaped. Decisions resume a run through
:func:`portwright.workflows.driver.answer`, as ``portwright approve`` does.

Modules: :mod:`~portwright.web.summaries` (the runs list and its cache),
:mod:`~portwright.web.runpage` (one run's evidence), :mod:`~portwright.web.diffs` and
:mod:`~portwright.web.markdown` (highlighted diffs, rendered specs),
:mod:`~portwright.web.render` (templates, the static report),
:mod:`~portwright.web.decisions` (answers and spec checks), :mod:`~portwright.web.security`
(token, CSRF, hosts), :mod:`~portwright.web.app` (the reading routes and the app),
:mod:`~portwright.web.actions` (the routes that change a run), :mod:`~portwright.web.site`
(what they share) and :mod:`~portwright.web.server` (``serve``). Needs the ``web`` extra.
"""
