"""A branch's diff, per file, syntax-highlighted with pygments.

The diff comes from host git (hardened, :mod:`portwright.vcs.plumbing`) and is parsed with
unidiff; each hunk's lines are highlighted with the lexer of the file's name (plain text
when none fits), so added and removed lines keep their colours. Pygments escapes what it
highlights; nothing of the diff reaches a page as markup. Large diffs are cut, and say so.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast

from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound
from unidiff.patch import PatchSet

from portwright.errors import PortwrightError, RepositoryError
from portwright.vcs import plumbing

MAX_BYTES = 2 * 1024 * 1024
"""Largest diff read (a cut diff says so)."""
MAX_LINES = 3000
"""Most lines shown of one file."""

Kind = Literal["add", "del", "ctx", "hunk"]


@dataclass(frozen=True)
class Line:
    kind: Kind
    old: int | None
    new: int | None
    html: Markup


@dataclass
class FileDiff:
    path: str
    status: str
    """added, removed, modified, renamed (from …), binary."""
    added: int = 0
    removed: int = 0
    lines: list[Line] = field(default_factory=list)
    cut: bool = False


@functools.lru_cache(maxsize=64)
def _lexer(path: str) -> Lexer:
    try:
        return get_lexer_for_filename(Path(path).name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return cast(Lexer, TextLexer(stripnl=False, ensurenl=False))


_FORMAT = HtmlFormatter(nowrap=True)


def _highlighted(path: str, texts: list[str]) -> list[Markup]:
    """Each of ``texts`` (lines of one hunk, in order) highlighted as ``path``'s language."""
    if not texts:
        return []
    out = highlight("\n".join(texts) + "\n", _lexer(path), _FORMAT).split("\n")
    if len(out) < len(texts):  # a lexer that swallowed a line break: fall back to text
        return [Markup(escape(t)) for t in texts]
    return [Markup(line) for line in out[: len(texts)]]


def _status(patched: object) -> str:
    if getattr(patched, "is_binary_file", False):
        return "binary"
    if getattr(patched, "is_added_file", False):
        return "added"
    if getattr(patched, "is_removed_file", False):
        return "removed"
    if getattr(patched, "is_rename", False):
        return f"renamed from {getattr(patched, 'source_file', '')[2:]}"
    return "modified"


def parse(text: str) -> list[FileDiff]:
    """``git diff`` output as highlighted files."""
    files: list[FileDiff] = []
    for patched in PatchSet(text):
        path = patched.path
        diff = FileDiff(path=path, status=_status(patched), added=patched.added,
                        removed=patched.removed)
        shown = 0
        for hunk in patched:
            if shown >= MAX_LINES:
                diff.cut = True
                break
            header = f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start}," \
                     f"{hunk.target_length} @@ {hunk.section_header}".rstrip()
            diff.lines.append(Line("hunk", None, None, Markup(escape(header))))
            body = [line for line in hunk if line.line_type in ("+", "-", " ")]
            body = body[: MAX_LINES - shown]
            shown += len(body)
            html = _highlighted(path, [line.value.rstrip("\n") for line in body])
            for line, markup in zip(body, html, strict=True):
                kind: Kind = {"+": "add", "-": "del"}.get(line.line_type, "ctx")  # type: ignore[assignment]
                diff.lines.append(Line(kind, line.source_line_no, line.target_line_no,
                                       markup))
        files.append(diff)
    return files


def branch_diff(repo: Path, base: str, head: str, paths: list[str] | None = None
                ) -> tuple[list[FileDiff], bool]:
    """The files ``base..head`` changes (only ``paths`` when given), and whether the diff
    was cut at :data:`MAX_BYTES`. Both ends are resolved to commits first: the diff of two
    commits never changes, so it is highlighted once per process."""
    if not base or not head:
        return [], False
    try:
        ends = [plumbing.rev_parse(repo, rev) if len(rev) != 40 else rev
                for rev in (base, head)]
    except PortwrightError:
        return [], False
    return _diff(repo, ends[0], ends[1], tuple(paths) if paths is not None else None)


@functools.lru_cache(maxsize=128)
def _diff(repo: Path, base: str, head: str, paths: tuple[str, ...] | None
          ) -> tuple[list[FileDiff], bool]:
    args = ["diff", "--no-color", "--no-ext-diff", "-M", base, head]
    if paths is not None:
        args += ["--", *paths]
    try:
        raw = plumbing.git(repo, *args)
    except RepositoryError:
        return [], False
    cut = len(raw) > MAX_BYTES
    if cut:
        raw = raw[:MAX_BYTES]
        raw = raw[: raw.rfind(b"\ndiff --git ") + 1] or raw
    return parse(raw.decode("utf-8", errors="replace")), cut


def stylesheet() -> str:
    """The highlighting colours (pygments' ``default`` style, for ``.highlight``)."""
    formatter = HtmlFormatter(style="default")
    return str(formatter.get_style_defs(".highlight"))  # type: ignore[no-untyped-call]
