"""The from-scratch inventory: code written without an upstream source.

A markdown file (``[artifacts] inventory``, default ``porting-inventory.md``) with a table
of ``item``, ``path``, ``searched`` and ``notes``::

    | item        | path            | searched                          | notes |
    | ----------- | --------------- | --------------------------------- | ----- |
    | ring buffer | src/util/ring.h | vllm/utils.py, vllm/core/block/   | upstream uses a deque |

``searched`` lists, comma separated, the upstream paths that were searched for a source
before writing the item from scratch. An entry without them is invalid.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from portwright.config import PortwrightConfig
from portwright.errors import ParityFileError
from portwright.parity._files import read_text, rel, write_text
from portwright.parity._tables import append_row, new_table, tables_with
from portwright.parity.markdown import plain_cell

logger = logging.getLogger(__name__)

__all__ = ["InventoryEntry", "add_item", "load_inventory", "parse_inventory"]

ITEM = ("item", "name")
PATH = ("path", "downstream")
SEARCHED = ("searched", "searched upstream", "upstream searched")
NOTES = ("notes", "note", "why")


class InventoryEntry(BaseModel):
    """One item written from scratch."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item: str
    """What was written."""
    path: str
    """Downstream path (or glob) of the code."""
    searched: list[str]
    """Upstream paths searched for a source; never empty."""
    notes: str = ""
    """Why nothing upstream fit."""
    file: str
    """Inventory file, posix, relative to the repo."""
    line: int
    """1-based line of the row."""


def parse_inventory(text: str, relpath: str) -> tuple[list[InventoryEntry], list[str]]:
    """Entries of an inventory's text and the problems found (``file:line: message``)."""
    entries: list[InventoryEntry] = []
    problems: list[str] = []
    for table in tables_with(text, ITEM, SEARCHED):
        c_item, c_searched = table.column(*ITEM), table.column(*SEARCHED)
        assert c_item is not None
        assert c_searched is not None
        c_path, c_notes = table.column(*PATH), table.column(*NOTES)
        for row in table.rows:
            at = f"{relpath}:{row.line}"
            item = plain_cell(row.cells[c_item])
            path = plain_cell(row.cells[c_path]) if c_path is not None else ""
            searched = [plain_cell(s) for s in row.cells[c_searched].split(",")]
            searched = [s for s in searched if s and s not in {"-", "—", "none", "n/a"}]
            if not item:
                problems.append(f"{at}: inventory entry without an item name")
                continue
            if not searched:
                problems.append(f"{at}: {item!r} lists no searched upstream paths; name the "
                                "upstream files or folders searched for a source")
                continue
            entries.append(InventoryEntry(
                item=item, path=path or item, searched=searched,
                notes=row.cells[c_notes].strip() if c_notes is not None else "",
                file=relpath, line=row.line,
            ))
    return entries, problems


def inventory_path(repo: Path, config: PortwrightConfig) -> Path:
    return repo / config.artifacts.inventory


def load_inventory(repo: Path, config: PortwrightConfig, *,
                   strict: bool = True) -> tuple[list[InventoryEntry], list[str]]:
    """The inventory's entries (none when the file does not exist) and its problems."""
    path = inventory_path(repo, config)
    if not path.is_file():
        return [], []
    entries, problems = parse_inventory(read_text(path), rel(repo, path))
    if strict and problems:
        where, _, message = problems[0].partition(": ")
        raise ParityFileError(message, file=path, line=int(where.rsplit(":", 1)[1]),
                              fix="correct the inventory row as the message says")
    return entries, problems


def add_item(repo: Path, config: PortwrightConfig, *, item: str, path: str,
             searched: list[str], notes: str = "") -> InventoryEntry:
    """Append an item; only a new line is inserted (the file is created when missing)."""
    if not [s for s in searched if s.strip()]:
        raise ParityFileError(f"{item!r}: a from-scratch item needs the upstream paths searched",
                              file=inventory_path(repo, config),
                              fix="pass the upstream files or folders that were searched")
    file = inventory_path(repo, config)
    text = read_text(file) if file.is_file() else "# From-scratch inventory\n\n"
    tables = tables_with(text, ITEM, SEARCHED)
    if not tables:
        text = text + ("" if text.endswith("\n\n") or not text else "\n")
        text += new_table(["item", "path", "searched", "notes"])
        tables = tables_with(text, ITEM, SEARCHED)
    table = tables[-1]
    values: dict[int, str] = {}
    for names, value in ((ITEM, item), (PATH, path), (SEARCHED, ", ".join(searched)),
                         (NOTES, notes)):
        column = table.column(*names)
        if column is not None:
            values[column] = value
    new_text = append_row(text, table, values)
    write_text(repo, file, new_text)
    entries, _ = parse_inventory(new_text, rel(repo, file))
    line = (table.rows[-1].line + 1) if table.rows else table.line + 2
    return next(e for e in entries if e.line == line)
