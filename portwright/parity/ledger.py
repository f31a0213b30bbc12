"""The parity ledger: every change the port introduces, against its upstream reference.

A markdown file (``[artifacts] ledger``, default ``parity-ledger.md``) holding a table with
the columns ``change``, ``upstream``, ``kind``, ``cost`` and ``notes`` (``cost`` and
``notes`` optional; other columns kept and ignored)::

    | change       | upstream                       | kind         | cost          | notes |
    | ------------ | ------------------------------ | ------------ | ------------- | ----- |
    | src/attn.cc  | `attn/fp8.py:10-40 "def fp8("` | port         |               |       |
    | src/cache.cc | 1a2b3c4d5e6f                   | adaptation   |               | arena |
    | src/sched.cc | `sched.py:5-9`                 | divergence   | +2% latency   |       |
    | src/ring.cc  | from-scratch                   | from-scratch |               | see inventory |

``change`` is a downstream path or glob (what the entry covers). ``upstream`` is an anchor,
an upstream commit sha, or ``from-scratch`` (then the item must be in the inventory).
``kind`` is ``port``, ``adaptation``, ``divergence`` (a deliberate one: ``cost`` says what
it costs), ``from-scratch``, or ``not-applicable``: an upstream commit the port does not
carry (docs, CI, a change reverted in the same range), its ``change`` ``-``, its
``upstream`` the commit's sha (``portwright sync`` records these).
"""

from __future__ import annotations

import contextlib
import logging
import re
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from portwright.config import PortwrightConfig
from portwright.errors import ParityFileError
from portwright.evidence.anchors import Anchor, AnchorError, parse_anchor
from portwright.parity._files import read_text, rel, write_text
from portwright.parity._tables import append_row, new_table, tables_with
from portwright.parity.markdown import plain_cell

logger = logging.getLogger(__name__)

__all__ = [
    "LedgerEntry",
    "LedgerKind",
    "add_entry",
    "check_ledger",
    "load_ledger",
    "parse_ledger",
]

CHANGE = ("change", "downstream", "path")
UPSTREAM = ("upstream", "reference", "upstream reference")
KIND = ("kind",)
COST = ("cost",)
NOTES = ("notes", "note")
FROM_SCRATCH = "from-scratch"
_SHA = re.compile(r"^[0-9a-f]{7,40}$")


class LedgerKind(StrEnum):
    """What kind of change an entry records."""

    PORT = "port"
    ADAPTATION = "adaptation"
    DIVERGENCE = "divergence"
    FROM_SCRATCH = "from-scratch"
    NOT_APPLICABLE = "not-applicable"


class LedgerEntry(BaseModel):
    """One ledger row."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    change: str
    """Downstream path or glob the entry covers."""
    upstream: str
    """The reference as written."""
    anchor: Anchor | None = None
    """The reference, when it is an anchor."""
    commit: str | None = None
    """The reference, when it is an upstream commit sha."""
    kind: LedgerKind
    """port / adaptation / divergence / from-scratch."""
    cost: str = ""
    """What a divergence costs (required for divergences)."""
    notes: str = ""
    """Free text."""
    file: str
    """Ledger file, posix, relative to the repo."""
    line: int
    """1-based line of the row."""


def parse_ledger(text: str, relpath: str) -> tuple[list[LedgerEntry], list[str]]:
    """Entries of a ledger's text and the problems found (``file:line: message``)."""
    entries: list[LedgerEntry] = []
    problems: list[str] = []
    kinds = {k.value for k in LedgerKind}
    for table in tables_with(text, CHANGE, UPSTREAM, KIND):
        c_change, c_up, c_kind = (table.column(*CHANGE), table.column(*UPSTREAM),
                                  table.column(*KIND))
        assert c_change is not None
        assert c_up is not None
        assert c_kind is not None
        c_cost, c_notes = table.column(*COST), table.column(*NOTES)
        for row in table.rows:
            at = f"{relpath}:{row.line}"
            cells = row.cells
            change = plain_cell(cells[c_change])
            upstream = cells[c_up].strip()
            kind = plain_cell(cells[c_kind]).lower().replace("_", "-").replace(" ", "-")
            cost = cells[c_cost].strip() if c_cost is not None else ""
            if not change:
                problems.append(f"{at}: entry without a change (the downstream path it covers)")
                continue
            if kind not in kinds:
                problems.append(f"{at}: unknown kind {kind!r}; use one of: {', '.join(kinds)}")
                continue
            anchor = commit = None
            ref = plain_cell(upstream)
            if kind == FROM_SCRATCH or ref.lower() == FROM_SCRATCH:
                if kind != FROM_SCRATCH or ref.lower() not in {FROM_SCRATCH, "", "-"}:
                    problems.append(f"{at}: a from-scratch entry has kind `from-scratch` and "
                                    "upstream `from-scratch`")
                    continue
            elif _SHA.match(ref):
                commit = ref
            else:
                try:
                    anchor = parse_anchor(ref)
                except AnchorError:
                    problems.append(f"{at}: upstream reference {upstream!r} is neither an anchor"
                                    " (path:LINE[-END][@sha]) nor a commit sha")
                    continue
            if kind == LedgerKind.DIVERGENCE and cost in {"", "-"}:
                problems.append(f"{at}: the divergence of {change} has no cost; say what it "
                                "costs (speed, memory, behaviour) in the cost column")
                continue
            entries.append(LedgerEntry(
                change=change, upstream=upstream, anchor=anchor, commit=commit,
                kind=LedgerKind(kind), cost=cost,
                notes=cells[c_notes].strip() if c_notes is not None else "",
                file=relpath, line=row.line,
            ))
    return entries, problems


def ledger_path(repo: Path, config: PortwrightConfig) -> Path:
    return repo / config.artifacts.ledger


def load_ledger(repo: Path, config: PortwrightConfig, *,
                strict: bool = True) -> tuple[list[LedgerEntry], list[str]]:
    """The ledger's entries (none when the file does not exist) and its problems.

    With ``strict`` the first problem is raised as a :class:`ParityFileError`.
    """
    path = ledger_path(repo, config)
    if not path.is_file():
        return [], []
    entries, problems = parse_ledger(read_text(path), rel(repo, path))
    if strict and problems:
        where, _, message = problems[0].partition(": ")
        raise ParityFileError(message, file=repo / where.rsplit(":", 1)[0],
                              line=int(where.rsplit(":", 1)[1]),
                              fix="correct the ledger row as the message says")
    return entries, problems


def add_entry(repo: Path, config: PortwrightConfig, *, change: str, upstream: str,
              kind: LedgerKind | str, cost: str = "", notes: str = "") -> LedgerEntry:
    """Append an entry; only a new line is inserted (the file is created when missing)."""
    path = ledger_path(repo, config)
    text = read_text(path) if path.is_file() else "# Parity ledger\n\n"
    tables = tables_with(text, CHANGE, UPSTREAM, KIND)
    if not tables:
        text = text + ("" if text.endswith("\n\n") or not text else "\n")
        text += new_table(["change", "upstream", "kind", "cost", "notes"])
        tables = tables_with(text, CHANGE, UPSTREAM, KIND)
    table = tables[-1]
    values: dict[int, str] = {}
    for names, value in ((CHANGE, change), (UPSTREAM, upstream), (KIND, str(kind)),
                         (COST, cost), (NOTES, notes)):
        column = table.column(*names)
        if column is not None:
            values[column] = value
        elif value:
            raise ParityFileError(f"the ledger has no {names[0]!r} column", file=path,
                                  line=table.line, fix=f"add a {names[0]} column")
    new_text = append_row(text, table, values)
    entries, problems = parse_ledger(new_text, rel(repo, path))
    line = (table.rows[-1].line + 1) if table.rows else table.line + 2
    bad = [p for p in problems if p.startswith(f"{rel(repo, path)}:{line}:")]
    if bad:
        raise ParityFileError(bad[0].split(": ", 1)[1], file=path, line=line,
                              fix="pass a valid entry")
    write_text(repo, path, new_text)
    return next(e for e in entries if e.line == line)


def check_ledger(repo: Path, config: PortwrightConfig, *,
                 resolve: bool = True) -> tuple[list[LedgerEntry], list[str]]:
    """Every problem of the ledger and the inventory, each ``file:line: message``; with
    ``resolve``, every anchor and commit of the ledger is also resolved upstream at the pin
    (one ``git cat-file`` process for all of them). A ledger that does not exist, or holds
    no ledger table, is a :class:`ParityFileError`: a check of nothing never passes."""
    from portwright.errors import RevisionError
    from portwright.evidence.anchors import BlobReader, resolve_anchor
    from portwright.parity.inventory import load_inventory
    from portwright.parity.pin import resolve_pin
    from portwright.project import Project

    path = ledger_path(repo, config)
    if not path.is_file():
        raise ParityFileError(
            "the ledger is not a file" if path.exists() else "the ledger does not exist",
            file=path, fix="create it (`portwright init` writes an empty one), or set "
                           "[artifacts] ledger in portwright.toml to where it is")
    if not tables_with(read_text(path), CHANGE, UPSTREAM, KIND):
        raise ParityFileError(
            "no ledger table in this file", file=path,
            fix="write a table whose header has the columns change | upstream | kind "
                "(cost and notes optional), followed by a | --- | separator line")
    entries, messages = load_ledger(repo, config, strict=False)
    _, inventory_problems = load_inventory(repo, config, strict=False)
    messages += inventory_problems
    if not resolve or not entries:
        return entries, messages
    upstream = Project(repo, config).upstream_repo()
    reader = BlobReader(upstream)
    pin = resolve_pin(repo, config, Path(upstream.working_dir or upstream.git_dir))
    with contextlib.suppress(RevisionError):  # a missing revision is reported per entry
        reader.prefetch((e.anchor.sha or pin, e.anchor.path) for e in entries
                        if e.anchor is not None)
    for entry in entries:
        try:
            if entry.anchor is not None:
                resolve_anchor(upstream, entry.anchor, pin, cited_in=entry.file,
                               cited_line=entry.line, reader=reader)
            elif entry.commit is not None:
                reader.commit(entry.commit)
        except AnchorError as exc:
            messages.append(f"{entry.file}:{entry.line}: {exc.message}")
        except RevisionError:
            messages.append(f"{entry.file}:{entry.line}: upstream commit {entry.commit} "
                            "does not exist upstream")
    return entries, messages
