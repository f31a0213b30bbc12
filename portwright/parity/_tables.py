"""Shared machinery of the table-shaped records (ledger, inventory): locate, append."""

from __future__ import annotations

from pathlib import Path

from portwright.parity.markdown import Table, escape_cell, find_tables, line_offsets


def tables_with(text: str, *columns: tuple[str, ...]) -> list[Table]:
    """Tables whose header has a column for each name group of ``columns``."""
    return [t for t in find_tables(text) if all(t.column(*names) is not None for names in columns)]


def append_row(text: str, table: Table, values: dict[int, str]) -> str:
    """``text`` with a new body row after ``table``'s last row; nothing else changes.

    The new row copies the line ending of the table's rows.
    """
    offsets = line_offsets(text)
    last = table.rows[-1].line if table.rows else table.line + 1
    insert_at = offsets[last] if last < len(offsets) else len(text)
    sample_end = insert_at - 1 if insert_at > 0 else 0
    ending = "\r\n" if text[max(0, sample_end - 1): sample_end + 1] == "\r\n" else "\n"
    width = len(table.header)
    cells = [escape_cell(values.get(i, "")) for i in range(width)]
    row = "| " + " | ".join(cells) + " |"
    prefix = text[:insert_at]
    if prefix and not prefix.endswith("\n"):
        prefix += ending
    return prefix + row + ending + text[insert_at:]


def new_table(header: list[str]) -> str:
    """A header and delimiter row."""
    return "| " + " | ".join(header) + " |\n| " + " | ".join("---" for _ in header) + " |\n"


def where(path: Path | str, line: int) -> str:
    return f"{path}:{line}"
