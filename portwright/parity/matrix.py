"""Coverage matrices: markdown tables of rows, each a unit of parity.

A matrix is any table, in a file matched by ``[artifacts] matrices``, whose header has an
``id`` and a ``status`` column (headers match case-insensitively)::

    | id       | title         | status  | spec                      | upstream          | notes |
    | -------- | ------------- | ------- | ------------------------- | ----------------- | ----- |
    | attn-fp8 | FP8 attention | partial | [spec](specs/attn-fp8.md) | attn/fp8.py, Attn |       |

Columns: ``id`` (also ``row``), ``title`` (also ``name``), ``status`` (one of
``[artifacts] statuses``), ``spec`` (a link or a path; empty or ``-`` for none),
``upstream`` (comma-separated upstream paths or symbols the row covers; optional) and
``notes`` (optional) and ``priority`` (optional: an integer, lower first, or ``P0``…``P9``,
``high`` / ``medium`` / ``low``; rows without one come after, in file order — the order
``portwright run --next N`` takes open rows in). Other columns are kept and ignored. Ids are
unique across matrices.

:func:`update_row` rewrites the cells of one row and leaves every other byte of the file
identical.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from portwright.config import PortwrightConfig
from portwright.errors import ParityFileError
from portwright.globs import match
from portwright.parity._files import glob_files, read_text, rel, write_text
from portwright.parity.markdown import (
    Table,
    find_tables,
    line_offsets,
    link_target,
    plain_cell,
    replace_cells,
    split_cells,
)
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

__all__ = ["MatrixRow", "by_priority", "find_row", "load_rows", "parse_priority", "spec_path",
           "update_row"]

ID_NAMES = ("id", "row", "row id")
TITLE_NAMES = ("title", "name")
STATUS_NAMES = ("status",)
SPEC_NAMES = ("spec",)
UPSTREAM_NAMES = ("upstream",)
NOTES_NAMES = ("notes", "note")
PRIORITY_NAMES = ("priority", "prio")
_WORDS = {"critical": 0, "highest": 0, "high": 1, "medium": 2, "normal": 2, "low": 3,
          "lowest": 4}


class MatrixRow(BaseModel):
    """One row of a coverage matrix."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    """Unique row id."""
    title: str
    """What the row is."""
    status: str
    """One of ``[artifacts] statuses``, spelled as configured."""
    spec: str | None
    """Path of the row's spec (as written in the link), or None."""
    upstream: list[str]
    """Upstream paths or symbols the row covers (may be empty)."""
    notes: str
    """Free text."""
    priority: int | None = None
    """Lower runs first (``P1`` is 1, ``high`` 1, ``medium`` 2, ``low`` 3); None: unset."""
    file: str
    """The matrix file, posix, relative to the downstream repo."""
    line: int
    """1-based line of the row."""


def _is_matrix(table: Table) -> bool:
    return table.column(*ID_NAMES) is not None and table.column(*STATUS_NAMES) is not None


def _status(value: str, allowed: list[str], path: Path, line: int) -> str:
    plain = plain_cell(value)
    lowered = {s.lower(): s for s in allowed}
    found = lowered.get(plain.lower())
    if found is None:
        raise ParityFileError(
            f"unknown status {plain!r}", file=path, line=line, key="status",
            fix=f"use one of: {', '.join(allowed)} (or add it to [artifacts] statuses)",
        )
    return found


def parse_priority(value: str, path: Path, line: int) -> int | None:
    """A priority cell: an integer, ``P<n>``, or a word (critical, high, medium, low…);
    empty or ``-`` for none."""
    plain = plain_cell(value).strip().lower()
    if plain in ("", "-"):
        return None
    number = plain[1:] if plain.startswith("p") and plain[1:].isdigit() else plain
    if number.isdigit():
        return int(number)
    if plain in _WORDS:
        return _WORDS[plain]
    raise ParityFileError(f"unknown priority {plain!r}", file=path, line=line, key="priority",
                          fix="write an integer (lower runs first), P0…P9, or one of: "
                              + ", ".join(_WORDS))


def by_priority(rows: list[MatrixRow]) -> list[MatrixRow]:
    """``rows`` ordered for scheduled runs: by priority (lower first), rows without one
    after, file order otherwise."""
    order = sorted(enumerate(rows), key=lambda pair: (
        pair[1].priority is None, pair[1].priority or 0, pair[0]))
    return [row for _, row in order]


def _check_tables(text: str, tables: list[Table], path: Path) -> None:
    """A matrix file holds a matrix, and nothing that merely looks like one: a table with a
    status but no id column, or a matrix header without its separator line (markdown then
    reads no table at all, and the rows would silently vanish)."""
    for table in tables:
        if table.column(*STATUS_NAMES) is not None and table.column(*ID_NAMES) is None:
            raise ParityFileError(
                "a table with a status column but no id column", file=path, line=table.line,
                fix=f"name the row id column {ID_NAMES[0]!r} (also accepted: "
                    f"{', '.join(repr(n) for n in ID_NAMES[1:])})")
    headers = {t.line for t in tables}
    fence = ""
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")) and len(line) - len(stripped) < 4:
            mark = stripped[:3]
            fence = "" if fence == mark else (fence or mark)
            continue
        if fence or number in headers or not stripped.startswith("|"):
            continue
        cells = {plain_cell(c).lower() for c in split_cells(line)}
        if cells & set(ID_NAMES) and cells & set(STATUS_NAMES):
            raise ParityFileError(
                "a matrix header without its separator line", file=path, line=number,
                fix="add a line like | --- | --- | ... under the header (one --- per column)")
    if not any(_is_matrix(t) for t in tables):
        raise ParityFileError(
            "no coverage matrix in this file", file=path,
            fix="write a table with id and status columns (title, spec, upstream, notes "
                "optional), or narrow [artifacts] matrices so it does not match this file")


def rows_of_text(text: str, path: Path, relpath: str, statuses: list[str]) -> list[MatrixRow]:
    """The matrix rows of one file's text."""
    rows: list[MatrixRow] = []
    tables = find_tables(text)
    _check_tables(text, tables, path)
    for table in tables:
        if not _is_matrix(table):
            continue
        c_id = table.column(*ID_NAMES)
        c_status = table.column(*STATUS_NAMES)
        assert c_id is not None
        assert c_status is not None
        c_title = table.column(*TITLE_NAMES)
        c_spec = table.column(*SPEC_NAMES)
        c_up = table.column(*UPSTREAM_NAMES)
        c_notes = table.column(*NOTES_NAMES)
        c_priority = table.column(*PRIORITY_NAMES)
        for row in table.rows:
            cells = row.cells
            row_id = plain_cell(cells[c_id])
            if not row_id:
                raise ParityFileError("a matrix row without an id", file=path, line=row.line,
                                      fix="give every row a unique id in the id column")
            upstream = ([plain_cell(u) for u in cells[c_up].split(",") if plain_cell(u)]
                        if c_up is not None else [])
            rows.append(MatrixRow(
                id=row_id,
                title=cells[c_title] if c_title is not None else "",
                status=_status(cells[c_status], statuses, path, row.line),
                spec=link_target(cells[c_spec]) if c_spec is not None else None,
                upstream=upstream,
                notes=cells[c_notes] if c_notes is not None else "",
                priority=(parse_priority(cells[c_priority], path, row.line)
                          if c_priority is not None else None),
                file=relpath,
                line=row.line,
            ))
    return rows


def load_rows(repo: Path, config: PortwrightConfig) -> list[MatrixRow]:
    """Every row of every matrix, in file order; ids are unique across matrices."""
    rows: list[MatrixRow] = []
    seen: dict[str, MatrixRow] = {}
    for pattern in config.artifacts.matrices:
        if not glob_files(repo, [pattern]):
            raise ParityFileError(
                f"the matrices glob {pattern!r} matches no file", file=repo / "portwright.toml",
                key="artifacts.matrices",
                fix="correct the glob in [artifacts] matrices (relative to the repository), "
                    "or create the matrix it names")
    for path in glob_files(repo, config.artifacts.matrices):
        relpath = rel(repo, path)
        for row in rows_of_text(read_text(path), path, relpath, config.artifacts.statuses):
            first = seen.get(row.id)
            if first is not None:
                raise ParityFileError(
                    f"row id {row.id!r} is already used at {first.file}:{first.line}",
                    file=path, line=row.line, fix="give each row a unique id",
                )
            seen[row.id] = row
            rows.append(row)
    return rows


def spec_path(repo: Path, row: MatrixRow) -> str | None:
    """The row's spec as a repo-relative posix path: the link read relative to the matrix
    file when that file exists (markdown's rule), else relative to the repo root."""
    if not row.spec or "://" in row.spec:
        return None
    import posixpath

    link = row.spec.split("#", 1)[0]
    beside = posixpath.normpath(posixpath.join(posixpath.dirname(row.file), link))
    if not beside.startswith("../") and (repo / beside).is_file():
        return beside
    return posixpath.normpath(link.lstrip("/"))


def find_row(repo: Path, config: PortwrightConfig, row_id: str) -> MatrixRow:
    """The row with ``row_id``; :class:`ParityFileError` when no matrix has it."""
    for row in load_rows(repo, config):
        if row.id == row_id:
            return row
    raise ParityFileError(f"no matrix row has id {row_id!r}",
                          file=", ".join(config.artifacts.matrices),
                          fix="check the id with `portwright rows`")


def _committed_matrices(repo: Path, patterns: list[str], commit: str) -> list[str]:
    """Paths of the files committed at ``commit`` that the matrices globs match (a folder
    stands for the ``.md`` files under it, as for :func:`glob_files`)."""
    found: set[str] = set()
    for mode, _, path in plumbing.tree_entries(repo, commit):
        if mode == "120000":
            continue
        for pattern in patterns:
            if any(ch in pattern for ch in "*?["):
                hit = match(path, pattern)
            else:
                folder = pattern.strip("/")
                hit = path == folder or (path.startswith(f"{folder}/") and path.endswith(".md"))
            if hit:
                found.add(path)
                break
    return sorted(found)


def require_row_at(repo: Path, config: PortwrightConfig, row_id: str, commit: str) -> None:
    """Raise :class:`ParityFileError` unless a matrix committed at ``commit`` has a row
    ``row_id`` (a run reads the matrices of the commit it starts from)."""
    files = _committed_matrices(repo, config.artifacts.matrices, commit)
    ids: list[str] = []
    for path in files:
        text = (plumbing.show(repo, commit, path) or b"").decode("utf-8", "replace")
        ids += [r.id for r in rows_of_text(text, repo / path, path, config.artifacts.statuses)]
    if row_id in ids:
        return
    where = ", ".join(files) if files else (
        f"no file matches [artifacts] matrices ({', '.join(config.artifacts.matrices)})")
    known = ", ".join(ids[:12]) + (f" … ({len(ids)} rows)" if len(ids) > 12 else "")
    raise ParityFileError(
        f"no matrix row has id {row_id!r} at {commit[:12]}"
        + (f" (rows: {known})" if ids else " (the matrices have no rows)"),
        file=where, key="ROW",
        fix="pick a row id that `portwright rows` lists, or add the row to a matrix and "
            "commit it (a run reads the committed matrices)")


def update_row(
    repo: Path,
    config: PortwrightConfig,
    row_id: str,
    *,
    status: str | None = None,
    spec: str | None = None,
    notes: str | None = None,
) -> MatrixRow:
    """Rewrite cells of row ``row_id``; only that line's bytes change. Returns the new row.

    ``spec`` is written as ``[spec](PATH)``.
    """
    row = find_row(repo, config, row_id)
    path = repo / row.file
    text = read_text(path)
    if status is not None:
        _status(status, config.artifacts.statuses, path, row.line)
    table = next(t for t in find_tables(text)
                 if _is_matrix(t) and any(r.line == row.line for r in t.rows))
    new: dict[int, str] = {}
    for names, value in ((STATUS_NAMES, status), (SPEC_NAMES, None if spec is None
                                                   else f"[spec]({spec})"),
                         (NOTES_NAMES, notes)):
        if value is None:
            continue
        column = table.column(*names)
        if column is None:
            raise ParityFileError(f"the matrix has no {names[0]!r} column", file=path,
                                  line=table.line, fix=f"add a {names[0]} column to the header")
        new[column] = value
    offsets = line_offsets(text)
    start = offsets[row.line - 1]
    stop = offsets[row.line] if row.line < len(offsets) else len(text)
    raw = text[start:stop]
    body = raw.rstrip("\r\n")
    ending = raw[len(body):]
    updated = replace_cells(body, new) + ending
    write_text(repo, path, text[:start] + updated + text[stop:])
    logger.info("matrix row %s updated at %s:%d", row_id, row.file, row.line)
    return find_row(repo, config, row_id)
