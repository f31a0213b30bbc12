"""CLI commands of the evidence room: ``gap``, ``surface``, ``trace``.

Tables by default, ``--json`` for machines; progress of long scans goes to stderr.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from portwright.cli.common import console, emit_json, err_console, project, revision
from portwright.errors import ParityFileError, RepositoryError, RevisionError, UsageError
from portwright.vcs.plumbing import git, is_ancestor, rev_parse

if TYPE_CHECKING:
    from portwright.config import PortwrightConfig
    from portwright.evidence.history import HistoryIndex
    from portwright.project import Project

_VERDICT_STYLE = {"landed": "green", "partial": "yellow", "missing": "red",
                  "not_applicable": "dim", "uncertain": "magenta"}


@contextmanager
def _progress(description: str) -> Iterator[Progress]:
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err_console, transient=True)
    with progress:
        progress.add_task(description, total=None)
        yield progress


def _pin(downstream: Path, cfg: PortwrightConfig, given: str | None, upstream: Path,
         option: str) -> str:
    """The upstream commit ``given`` with ``option`` names, else the recorded pin's."""
    if given is not None:
        return revision(upstream, given, option)
    from portwright.parity.pin import resolve_pin

    return resolve_pin(downstream, cfg, upstream)


def _head(upstream: Path, cfg: PortwrightConfig, to: str | None, base: str) -> str:
    """``--to`` (or ``upstream.branch``), checked to descend from ``base``."""
    head = revision(upstream, to, "--to") if to is not None else \
        revision(upstream, cfg.upstream.branch, "upstream.branch")
    if not is_ancestor(upstream, base, head):
        raise RevisionError(
            f"{to or cfg.upstream.branch!r} ({head[:12]}) does not descend from the base "
            f"{base[:12]}: the range base..head would hold commits of another history",
            file=upstream, key="--to" if to is not None else "upstream.branch",
            fix="pass a --to that contains the pin (and a --from that is an ancestor of it)")
    return head


def _full_history(downstream: Path) -> None:
    """Refuse a shallow downstream: its history is what shows a change already landed."""
    if git(downstream, "rev-parse", "--is-shallow-repository").strip() == b"true":
        raise RepositoryError(
            "the downstream repository is a shallow clone: its history is cut off, so "
            "changes that landed earlier would look missing", file=downstream,
            fix=f"run `git fetch --unshallow` in {downstream}")


def _cell(text: object, style: str = "") -> Text:
    """User text as a table cell: never read as rich markup (``state.sCount[startLine]``
    stays whole)."""
    return Text(str(text), style=style)


def _table(title: str, *columns: tuple[str, int | None]) -> Table:
    """A table that wraps instead of cutting: every column folds long words; a column with a
    minimum width (a verdict, an anchor) keeps at least that many characters."""
    table = Table(title=_cell(title), show_lines=False, expand=False)
    for name, minimum in columns:
        table.add_column(name, overflow="fold", min_width=minimum)
    return table


def gap(
    from_: Annotated[str | None, typer.Option(
        "--from", help="Upstream base revision (default: the recorded pin).")] = None,
    to: Annotated[str | None, typer.Option(
        "--to", help="Upstream head revision (default: upstream.branch).")] = None,
    row: Annotated[str | None, typer.Option(
        "--row", help="Check one parity row's upstream symbols instead of a range.")] = None,
    commit: Annotated[str | None, typer.Option(
        "--commit", help="Judge one upstream commit and show all its evidence.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Judge every upstream commit since the pin: landed, partial, missing, not applicable or
    uncertain."""
    from portwright.evidence import gap as engine

    proj = project()
    downstream, cfg = proj.root, proj.config
    proj.upstream()  # its errors name where upstream.source was set (file or variable)
    upstream = engine.upstream_repo(proj)
    if commit is not None:
        _gap_commit(proj, upstream, commit, as_json)
        return
    base = _pin(downstream, cfg, from_, upstream, "--from")
    _full_history(downstream)
    if row is not None:
        _gap_row(upstream, downstream, cfg, base, row, as_json)
        return
    head = _head(upstream, cfg, to, base)
    with _progress("reading upstream commits") as progress:
        task = progress.task_ids[0]

        def index() -> HistoryIndex:
            progress.update(task, description="indexing downstream history")
            built = engine.downstream_index(proj, lambda n: progress.update(task, completed=n))
            progress.update(task, description="judging upstream commits", completed=0)
            return built

        report = engine.scan_range(
            upstream, downstream, base, head, cfg, index=index, cache_dir=proj.gap_cache_dir,
            progress=lambda n, total: progress.update(task, completed=n, total=total))
    if as_json:
        emit_json(report)
        return
    table = _table(f"gap {report.base[:10]}..{report.head[:10]}", ("commit", 10),
                   ("subject", None), ("verdict", 14), ("conf.", 5), ("why", None))
    for item in report.commits:
        style = _VERDICT_STYLE[item.verdict.value]
        table.add_row(_cell(item.sha[:10]), _cell(item.subject),
                      _cell(item.verdict.value, style), _cell(f"{item.confidence:.2f}"),
                      _cell(item.reason))
    console.print(table)
    counts = report.counts()
    console.print(", ".join(f"{n} {verdict}" for verdict, n in counts.items() if n) or
                  "no upstream commits in this range", markup=False)


def _gap_commit(proj: Project, upstream: Path, sha: str, as_json: bool) -> None:
    from portwright.evidence import gap as engine

    result = engine.scan_commit(upstream, proj.root, sha, proj.config,
                                index=engine.downstream_index(proj),
                                cache_dir=proj.gap_cache_dir)
    if as_json:
        emit_json(result)
        return
    style = _VERDICT_STYLE[result.verdict.value]
    console.print(Text.assemble((result.sha[:12], "bold"), " ", result.subject))
    console.print(Text.assemble((result.verdict.value, style),
                                f" ({result.confidence:.2f}): {result.reason}"))
    files = _table("files", ("path", 20), ("kind", 6), ("status", 1), ("+/-", 5),
                   ("no behaviour", None))
    for changed in result.files:
        files.add_row(_cell(changed.path), _cell(changed.kind), _cell(changed.status),
                      _cell(f"+{changed.added_lines}/-{changed.removed_lines}"),
                      _cell(changed.no_behaviour or ""))
    console.print(files)
    if not result.evidence:
        console.print("no signal searched", markup=False)
        return
    evidence = _table("evidence", ("signal", None), ("kind", 7), ("carried", 7),
                      ("where", 20), ("how", None))
    for found in result.evidence:
        where = f"{found.path}:{found.line}" if found.path and found.line else \
            found.path or found.where
        carried = "superseded" if found.superseded_by else "yes" if found.carried else "no"
        evidence.add_row(_cell(found.signal), _cell(f"{found.kind} {found.strength}"),
                         _cell(carried), _cell(where), _cell(found.note))
    console.print(evidence)


def _gap_row(upstream: Path, downstream: Path, cfg: PortwrightConfig, pin: str, row_id: str,
             as_json: bool) -> None:
    from portwright.evidence.gap import row_evidence
    from portwright.parity.matrix import load_rows

    rows = load_rows(downstream, cfg)
    row = next((r for r in rows if r.id == row_id), None) or \
        next((r for r in rows if r.id.lower() == row_id.lower()), None)
    if row is None:
        known = ", ".join(r.id for r in rows[:20]) or "none"
        raise UsageError(f"no parity row {row_id!r}", key="--row",
                         fix=f"pass one of the row ids of the matrices: {known}")
    if not row.upstream:
        raise ParityFileError(f"row {row.id!r} names no upstream symbols or paths",
                              file=downstream / row.file, line=row.line,
                              fix="fill the row's upstream column (symbols or paths)")
    evidence = row_evidence(upstream, downstream, row.upstream, pin, cfg)
    if as_json:
        emit_json({"row": row, "evidence": evidence})
        return
    table = _table(f"row {row.id}: {row.title} ({row.status})", ("symbol", 8),
                   ("upstream @ pin", 12), ("upstream @ head", 12),
                   ("changed since pin", 10), ("touched since pin", 10),
                   ("downstream @ HEAD", 12), ("downstream history", 10))
    for item in evidence.symbols:
        changes = [sha[:10] for sha in item.upstream_changes]
        if item.renamed_from:
            changes.append("renamed from " + ", ".join(item.renamed_from))
        table.add_row(
            _cell(item.symbol),
            _cell("\n".join(f"{loc.path}:{loc.line}" for loc in item.upstream_at_pin) or "-"),
            _cell("\n".join(f"{loc.path}:{loc.line}" for loc in item.upstream_at_head) or "-"),
            _cell("\n".join(changes) or "-"),
            _cell("\n".join(sha[:10] for sha in item.upstream_touches) or "-"),
            _cell("\n".join(f"{loc.text} {loc.path}:{loc.line}"
                             for loc in item.downstream_at_head) or "-"),
            _cell("\n".join(f"{c.sha[:10]} {c.delta:+d}" for c in item.downstream_history)
                  or "-"))
    console.print(table)


def surface(
    symbol: Annotated[str, typer.Argument(
        help="Function or method (`layer_norm`, `Norm.forward`, `src/norm.py:layer_norm`).")],
    at: Annotated[str | None, typer.Option(
        "--at", help="Upstream revision (default: the recorded pin).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Enumerate an upstream symbol's surface: parameters, modes, errors, dtypes, tests."""
    from portwright.evidence.gap import upstream_repo
    from portwright.evidence.surface import enumerate_surface

    proj = project()
    downstream, cfg = proj.root, proj.config
    proj.upstream()  # its errors name where upstream.source was set (file or variable)
    upstream = upstream_repo(proj)
    rev = _pin(downstream, cfg, at, upstream, "--at")
    report = enumerate_surface(upstream, symbol, rev, path_kinds=cfg.upstream.path_kinds)
    if as_json:
        emit_json(report)
        return
    table = _table(f"surface of {symbol} ({report.language}) at {report.rev[:10]}",
                   ("kind", 9), ("name", None), ("detail", None), ("anchor", 14))
    for item in report.items:
        table.add_row(_cell(item.kind), _cell(item.name), _cell(item.detail),
                      _cell(item.anchor.rsplit("@", 1)[0]))
    console.print(table)
    console.print(f"{len(report.items)} items; definition {report.definition}", markup=False)


def _default_base(downstream: Path) -> str:
    for candidate in ("origin/HEAD", "main", "master"):
        try:
            branch = rev_parse(downstream, candidate)
        except RevisionError:
            continue
        base = git(downstream, "merge-base", branch, "HEAD").decode().strip()
        if base != rev_parse(downstream, "HEAD"):
            return base
    return "HEAD~1"


def trace(
    base: Annotated[str | None, typer.Option(
        "--base", help="Downstream base revision (default: the merge base with main, or "
                       "HEAD~1).")] = None,
    pin: Annotated[str | None, typer.Option(
        "--pin", help="Upstream revision to trace to (default: the recorded pin).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Trace each name a downstream change adds to its upstream name at the pin, or none."""
    from portwright.evidence.gap import upstream_repo
    from portwright.evidence.trace import trace_changes

    proj = project()
    downstream, cfg = proj.root, proj.config
    proj.upstream()  # its errors name where upstream.source was set (file or variable)
    upstream = upstream_repo(proj)
    start = revision(downstream, base, "--base") if base is not None else \
        _default_base(downstream)
    report = trace_changes(downstream, upstream, start,
                           _pin(downstream, cfg, pin, upstream, "--pin"), cfg)
    if as_json:
        emit_json(report)
        return
    table = _table(f"names added in {report.base[:10]}..{report.head[:10]}, traced to "
                   f"upstream {report.pin[:10]}", ("name", None), ("added at", 12),
                   ("status", 8), ("upstream", None), ("upstream anchor", 12))
    for item in report.items:
        status = _cell(item.status, "green" if item.status == "traced" else "yellow")
        table.add_row(_cell(item.name), _cell(item.downstream_anchor), status,
                      _cell(item.upstream_name or "-"),
                      _cell((item.upstream_anchor or "-").rsplit("@", 1)[0]))
    console.print(table)
    counts = report.counts()
    console.print(f"{counts['traced']} traced, {counts['invented']} invented")


def register(app: typer.Typer) -> None:
    """Add this room's commands to ``app``: ``gap``, ``surface``, ``trace``."""
    app.command("gap")(gap)
    app.command("surface")(surface)
    app.command("trace")(trace)
