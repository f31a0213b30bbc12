"""Markdown helpers of the parity records: tables with their line numbers, cell rewriting,
YAML front matter and sections.

Tables are found with markdown-it-py's block parser, so a table inside a code fence, an
HTML block or a quoted example is not a table. The stock table rule pushes ~20 tokens per
row; a 5,000-row matrix would spend most of its time building tokens nobody reads. The rule
is therefore wrapped: markdown-it still decides *where* a table starts (header + delimiter
row, indentation, list and blockquote context), and one ``pw_table`` token per table carries
its rows with their 1-based line numbers and cells.

Cells are split on unescaped ``|`` (GitHub's rule: a pipe inside a cell, even inside a code
span, is written ``\\|``). :func:`replace_cells` rewrites the cells of one line and leaves
every other byte of the line — padding, the other cells, the line ending — as it was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_block.state_block import StateBlock
from markdown_it.rules_block.table import table as _stock_table

__all__ = [
    "Section",
    "Table",
    "TableRow",
    "cell_spans",
    "find_tables",
    "line_offsets",
    "link_target",
    "plain_cell",
    "replace_cells",
    "sections",
    "split_cells",
    "split_front_matter",
]


@dataclass(frozen=True)
class TableRow:
    """One body row of a table."""

    line: int
    """1-based line number in the file."""
    cells: list[str]
    """Cell texts, trimmed, with ``\\|`` unescaped; padded with ``""`` to the header width."""


@dataclass(frozen=True)
class Table:
    """A markdown table: its header and body rows, with line numbers."""

    line: int
    """1-based line of the header row."""
    header: list[str]
    """Header cells as written (trimmed)."""
    rows: list[TableRow] = field(default_factory=list)
    """Body rows in file order."""

    def column(self, *names: str) -> int | None:
        """Index of the first header matching one of ``names`` (case-insensitive), or None."""
        wanted = {n.lower() for n in names}
        for index, title in enumerate(self.header):
            if plain_cell(title).lower() in wanted:
                return index
        return None


def split_cells(line: str) -> list[str]:
    """Cells of a table line, trimmed, ``\\|`` unescaped, outer pipes dropped."""
    text = line.strip()
    if "\\" not in text:
        parts = text.split("|")
    else:
        parts = [text[a:b] for a, b in _raw_spans(text)]
        return [p.strip().replace("\\|", "|") for p in parts]
    if parts and parts[0].strip() == "" and text.startswith("|"):
        parts.pop(0)
    if len(parts) > 0 and text.endswith("|") and parts[-1].strip() == "":
        parts.pop()
    return [p.strip() for p in parts]


def _raw_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the cells of ``text`` between unescaped pipes, outer empty cells dropped."""
    bounds = [-1]
    escaped = False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            bounds.append(index)
    bounds.append(len(text))
    spans = [(bounds[i] + 1, bounds[i + 1]) for i in range(len(bounds) - 1)]
    if spans and text[spans[0][0]:spans[0][1]].strip() == "" and len(bounds) > 2 \
            and text[: bounds[1]].strip() == "":
        spans.pop(0)
    if spans and len(bounds) > 2 and text[spans[-1][0]:spans[-1][1]].strip() == "" \
            and text.rstrip().endswith("|"):
        spans.pop()
    return spans


def cell_spans(line: str) -> list[tuple[int, int]]:
    """Offsets in ``line`` of each cell's trimmed content (empty cells: a zero-width span
    in the middle of their padding)."""
    out = []
    for start, end in _raw_spans(line):
        raw = line[start:end]
        stripped = raw.strip()
        if not stripped:
            middle = start + min(1, len(raw))
            out.append((middle, middle))
            continue
        lead = len(raw) - len(raw.lstrip())
        out.append((start + lead, start + lead + len(stripped)))
    return out


def escape_cell(value: str) -> str:
    """``value`` made safe for one table cell (pipes escaped, newlines flattened)."""
    return value.replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def replace_cells(line: str, new: dict[int, str]) -> str:
    """``line`` with cell ``index`` replaced by ``new[index]`` (escaped); every other byte kept.

    A cell with trailing padding keeps its column width where the new text fits in it.
    """
    spans = cell_spans(line)
    out = line
    for index in sorted(new, reverse=True):
        if index >= len(spans):
            raise IndexError(f"the row has {len(spans)} cells, not {index + 1}")
        start, end = spans[index]
        text = escape_cell(new[index])
        if start == end and text:
            # empty cell: keep one space of padding on each side where there is room
            before = out[:start]
            after = out[end:]
            pad_after = len(after) - len(after.lstrip(" "))
            if not before.endswith(" "):
                text = " " + text
            if pad_after == 0:
                text += " "
            out = before + text + after[min(pad_after, len(text)) if pad_after > 1 else 0:]
            continue
        after = out[end:]
        padding = len(after) - len(after.lstrip(" "))
        grow = len(text) - (end - start)
        if grow != 0 and padding > 1:
            keep = max(1, padding - grow)
            after = " " * keep + after[padding:]
        out = out[:start] + text + after
    return out


_LINK = re.compile(r"^\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)$")
_CODE = re.compile(r"^`+(?P<inner>.*?)`+$")


def plain_cell(text: str) -> str:
    """A cell's text without surrounding code ticks or emphasis."""
    value = text.strip()
    match = _CODE.match(value)
    if match:
        value = match.group("inner").strip()
    return value.strip("*_ ").strip()


def link_target(text: str) -> str | None:
    """The target of a cell holding a link (``[spec](specs/a.md)``), a bare path, or None
    for an empty cell or a dash."""
    value = text.strip()
    if value in {"", "-", "—", "n/a", "none"}:
        return None
    match = _LINK.match(value)
    if match:
        return match.group("target")
    return plain_cell(value) or None


def _fast_table(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """The stock table rule's header checks, then one token carrying every row."""
    if not _stock_table(state, start, end, True):
        return False
    if silent:
        return True
    terminators = state.md.block.ruler.getRules("blockquote")
    header = split_cells(state.getLines(start, start + 1, state.blkIndent, False))
    rows: list[TableRow] = []
    width = len(header)
    line = start + 2
    while line < end:
        if state.sCount[line] < state.blkIndent:
            break
        first = state.bMarks[line] + state.tShift[line]
        text = state.src[first: state.eMarks[line]]
        # a line that starts with a pipe cannot open a fence, quote, list, heading or rule
        if not text.startswith("|") and any(rule(state, line, end, True) for rule in terminators):
            break
        if not text.strip() or state.is_code_block(line):
            break
        cells = split_cells(text)
        if len(cells) < width:
            cells += [""] * (width - len(cells))
        rows.append(TableRow(line=line + 1, cells=cells[:width] if width else cells))
        line += 1
    token = state.push("pw_table", "table", 0)
    token.map = [start, line]
    token.meta = {"table": Table(line=start + 1, header=header, rows=rows)}
    state.line = line
    return True


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"maxNesting": 50}).enable("table")
    md.block.ruler.at("table", _fast_table, {"alt": ["paragraph", "reference"]})
    md.disable(["inline", "text_join"], ignoreInvalid=True)
    return md


def find_tables(text: str) -> list[Table]:
    """Every table of a markdown document, in order."""
    return [tok.meta["table"] for tok in _parser().parse(text) if tok.type == "pw_table"]


def line_offsets(text: str) -> list[int]:
    """Offset of the start of each line (index 0 is line 1)."""
    offsets = [0]
    find = text.find
    pos = find("\n")
    while pos != -1:
        offsets.append(pos + 1)
        pos = find("\n", pos + 1)
    return offsets


_FRONT = re.compile(r"\A---[ \t]*\r?\n(?P<body>.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)",
                    re.DOTALL | re.MULTILINE)


def split_front_matter(text: str) -> tuple[str | None, int, str, int]:
    """``(front matter or None, its first line, body, the body's first line)``."""
    match = _FRONT.match(text)
    if not match:
        return None, 0, text, 1
    body_line = text[: match.end()].count("\n") + 1
    return match.group("body"), 2, text[match.end():], body_line


@dataclass(frozen=True)
class Section:
    """A ``##`` section of a document: its heading, where it starts, what it says."""

    title: str
    """Heading text."""
    line: int
    """1-based line of the heading."""
    level: int
    """Heading level (2 for ``##``)."""
    body: str
    """Text up to the next heading of the same or a higher level."""
    body_line: int
    """1-based line where the body starts."""


def sections(text: str, first_line: int = 1) -> list[Section]:
    """Headings of ``text`` (ATX, outside code fences) with their bodies."""
    md = _parser()
    tokens = md.parse(text)
    heads: list[tuple[int, int, str]] = []
    lines = text.split("\n")
    for index, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map is not None:
            inline = tokens[index + 1]
            heads.append((tok.map[0], int(tok.tag[1]), inline.content.strip()))
    out: list[Section] = []
    for pos, (start, level, title) in enumerate(heads):
        stop = len(lines)
        for later_start, later_level, _ in heads[pos + 1:]:
            if later_level <= level:
                stop = later_start
                break
        body = "\n".join(lines[start + 1: stop])
        out.append(Section(title=title, line=start + first_line, level=level, body=body,
                           body_line=start + 1 + first_line))
    return out


