"""The pages' templates (files in this package, Jinja2, autoescaped, strict, every value
they show redacted) and the static report: the run page without buttons, scripts or links
to the server, as one ``report.html`` with its CSS inline."""

from __future__ import annotations

import functools
import threading
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from portwright import __version__
from portwright.errors import UsageError
from portwright.project import Project
from portwright.redact import redact
from portwright.web import runpage
from portwright.web.checkpoints import Checkpoints
from portwright.web.diffs import stylesheet
from portwright.web.summaries import RunSummary, label

REPORT = "report.html"
"""The static report's name in the run's folder."""


def ago(value: datetime | str | None, now: datetime | None = None) -> str:
    """``3 min``, ``2 h 5 min``, ``4 d`` since ``value``."""
    if value is None or value == "":
        return "-"
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    seconds = max(0, int(((now or datetime.now(UTC)) - when).total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    if minutes < 48 * 60:
        return f"{minutes // 60} h {minutes % 60} min"
    return f"{minutes // (24 * 60)} d"


def duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def when(value: datetime | str | None) -> str:
    if value is None or value == "":
        return "-"
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _shown(value: Any) -> Any:
    """What a template shows of ``value``: text and markup redacted."""
    if isinstance(value, Markup):
        return Markup(redact(str(value)))
    return redact(value) if isinstance(value, str) else value


@functools.cache
def environment() -> Environment:
    env = Environment(loader=PackageLoader("portwright.web", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      finalize=_shown)
    env.filters.update(ago=ago, duration=duration, when=when, label=label,
                       short=lambda sha: str(sha or "")[:12],
                       money=lambda usd: f"${float(usd):.4f}",
                       thousands=lambda n: f"{int(n):,}")
    env.globals["version"] = __version__
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


_AGE = "\x00age\x00"


class RowCache:
    """The runs table's rows, each rendered once per summary: a row is rendered again only
    when its run's stamp changes; its age is filled in per request."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[str, str, str]] = {}
        self._lock = threading.Lock()

    def html(self, runs: list[RunSummary], now: datetime | None = None) -> Markup:
        now = now or datetime.now(UTC)
        template = environment().get_template("_run_row.html")
        parts: list[str] = []
        with self._lock:
            for run in runs:
                hit = self._rows.get(run.run_id)
                if hit is None or hit[0] != run.stamp:
                    before, _, after = template.render(run=run, age=_AGE).partition(_AGE)
                    hit = (run.stamp, before, after)
                    self._rows[run.run_id] = hit
                parts += [hit[1], str(escape(ago(run.created, now))), hit[2]]
        return Markup("".join(parts))  # rendered by the autoescaping template


@functools.cache
def inline_css() -> str:
    """The pages' stylesheet and the highlighting colours, for a file that stands alone."""
    css = resources.files("portwright.web").joinpath("static/app.css").read_text("utf-8")
    return css + "\n" + stylesheet()


def report_html(project: Project, checkpoints: Checkpoints, run_id: str) -> str:
    """The static report of ``run_id``: one self-contained HTML file."""
    page = runpage.build(project, checkpoints, run_id, static=True)
    return render("report.html", page=page, css=inline_css(), static=True,
                  generated=datetime.now(UTC), csrf="", failure="", inflight="",
                  description="")


def write_report(project: Project, run_id: str, out: Path | None = None) -> Path:
    """Write the static report of ``run_id`` (into its run folder unless ``out``)."""
    with Checkpoints(project) as checkpoints:
        text = report_html(project, checkpoints, run_id)
    path = out if out is not None else project.run_dir(run_id) / REPORT
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        why = ("its folder does not exist" if not path.parent.is_dir() else
               "it is a folder" if path.is_dir() else exc.strerror or str(exc))
        raise UsageError(f"cannot write the report to {path}: {why}", key="--output",
                         fix="give a file path in a folder that exists and you may write "
                             "(e.g. -o report.html)") from exc
    return path
