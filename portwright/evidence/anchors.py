"""Anchors: citations of upstream source that the framework resolves itself.

Syntax (inside backticks or bare, anywhere in a spec or the ledger)::

    path:LINE
    path:START-END
    path:START-END@SHA
    path:START-END@SHA "an excerpt that must appear in those lines"

``path`` is relative to the upstream root and needs a folder or an extension
(``src/attn.py``, ``README.md``). Without ``@SHA`` an anchor means the pin (or the
revision the caller passes as the default). The excerpt is compared with the cited lines
after collapsing runs of whitespace; inside it, ``\\"`` is a quote and ``\\\\`` a backslash.

:func:`resolve_anchor` reads the file with git at that revision: a missing file, a line out
of range or an excerpt that does not match is an :class:`AnchorError` naming the anchor and
where it was cited. :func:`remap_anchor` re-locates an anchor at a newer revision by content.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from portwright.errors import ParityFileError, RepositoryError, RevisionError
from portwright.vcs import plumbing
from portwright.vcs.git import Repo, commit_sha, path_of, read_blob

logger = logging.getLogger(__name__)

__all__ = [
    "Anchor",
    "AnchorError",
    "AnchorMatch",
    "BlobReader",
    "Remapped",
    "ResolvedAnchor",
    "find_anchors",
    "iter_anchor_matches",
    "parse_anchor",
    "remap_anchor",
    "resolve_anchor",
]


class AnchorError(ParityFileError):
    """An anchor does not resolve: file missing, lines out of range, excerpt drifted."""


class Anchor(BaseModel):
    """A citation of upstream lines."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    """Upstream path, posix, relative to the upstream root."""
    start: int
    """First cited line (1-based)."""
    end: int
    """Last cited line (inclusive; equals ``start`` for one line)."""
    sha: str | None = None
    """Revision the anchor cites; None means the pin."""
    excerpt: str | None = None
    """Text that must appear in the cited lines (whitespace-insensitive)."""

    def render(self) -> str:
        """The anchor in its canonical written form."""
        text = f"{self.path}:{self.start}"
        if self.end != self.start:
            text += f"-{self.end}"
        if self.sha:
            text += f"@{self.sha}"
        if self.excerpt is not None:
            quoted = self.excerpt.replace("\\", "\\\\").replace('"', '\\"')
            text += f' "{quoted}"'
        return text

    def __str__(self) -> str:
        return self.render()


_ANCHOR_RE = re.compile(
    r"(?<![\w/.:@-])"
    r"(?P<path>[\w.+-]+(?:/[\w.+-]+)*)"
    r":(?P<start>\d+)(?:-(?P<end>\d+))?"
    r"(?:@(?P<sha>[0-9a-f]{7,40})\b)?"
    r"(?:[ \t]+\"(?P<excerpt>(?:[^\"\\\n]|\\.)*)\")?"
)


def _is_path(path: str) -> bool:
    if "/" in path:
        return not path.startswith("/")
    name = path.rsplit("/", 1)[-1]
    stem, dot, ext = name.rpartition(".")
    return bool(dot and stem and ext and not ext.isdigit() and not stem.replace(".", "").isdigit())


_ESCAPE = re.compile(r"\\(.)")


def _unquote(text: str) -> str:
    return _ESCAPE.sub(r"\1", text) if "\\" in text else text


@dataclass(frozen=True)
class AnchorMatch:
    """An anchor found in a text, with its span."""

    anchor: Anchor
    """The parsed anchor."""
    line: int
    """1-based line of the text where it starts."""
    start: int
    """Offset of its first character."""
    end: int
    """Offset just past its last character (the closing quote of the excerpt, if any)."""


def _build(match: re.Match[str]) -> Anchor | None:
    path = match.group("path")
    if not _is_path(path):
        return None
    start = int(match.group("start"))
    end = int(match.group("end")) if match.group("end") else start
    excerpt = match.group("excerpt")
    return Anchor(path=path, start=start, end=end, sha=match.group("sha"),
                  excerpt=_unquote(excerpt) if excerpt is not None else None)


def iter_anchor_matches(text: str) -> Iterator[AnchorMatch]:
    """Every anchor in ``text`` with its offsets."""
    line = 1
    last = 0
    for match in _ANCHOR_RE.finditer(text):
        anchor = _build(match)
        if anchor is None:
            continue
        line += text.count("\n", last, match.start())
        last = match.start()
        yield AnchorMatch(anchor=anchor, line=line, start=match.start(), end=match.end())


def find_anchors(text: str) -> list[tuple[Anchor, int]]:
    """Every anchor in ``text`` with the 1-based line it is written on."""
    return [(m.anchor, m.line) for m in iter_anchor_matches(text)]


def parse_anchor(text: str) -> Anchor:
    """Parse one anchor (surrounding backticks and spaces allowed)."""
    value = text.strip().strip("`").strip()
    match = _ANCHOR_RE.fullmatch(value)
    anchor = _build(match) if match else None
    if anchor is None:
        raise AnchorError(
            f"not an anchor: {text!r}",
            fix='write path:LINE, path:START-END, optionally @SHA and a quoted "excerpt"',
        )
    if anchor.end < anchor.start or anchor.start < 1:
        raise AnchorError(f"anchor {value!r} has an empty line range",
                          fix="lines are 1-based and START must not exceed END")
    return anchor


@dataclass
class BlobReader:
    """Reads files of one upstream repository at revisions, each (rev, path) once.

    Uses git's persistent ``cat-file --batch`` process, so thousands of anchors cost one
    process, not thousands.
    """

    repo: Repo
    """The upstream repository."""
    _revs: dict[str, str] = field(default_factory=dict)
    _files: dict[tuple[str, str], list[str] | None] = field(default_factory=dict)

    def commit(self, rev: str) -> str:
        """Full sha of ``rev`` (cached); :class:`RevisionError` when it names no commit."""
        if rev not in self._revs:
            # a full sha this process already found to be a commit there needs no lookup
            known = plumbing.known_commit(path_of(self.repo), rev)
            sha = rev if known else commit_sha(self.repo, rev)
            if sha is None:
                raise RevisionError(
                    f"revision {rev!r} does not name a commit", file=str(self.repo.working_dir),
                    fix="fetch it upstream, or correct the sha / the pin",
                )
            self._revs[rev] = sha
        return self._revs[rev]

    def prefetch(self, wanted: Iterable[tuple[str, str]]) -> None:
        """Read many ``(rev, path)`` files in one ``git cat-file --batch`` round trip."""
        todo: dict[tuple[str, str], None] = {}
        for rev, path in wanted:
            key = (self.commit(rev), path)
            if key not in self._files:
                todo[key] = None
        if not todo:
            return
        request = "".join(f"{sha}:{path}\n" for sha, path in todo).encode()
        done = plumbing.run(Path(self.repo.git_dir), "cat-file", "--batch", stdin=request)
        data, pos = done.stdout, 0
        for key in todo:
            end = data.find(b"\n", pos)
            if end == -1:
                break
            header = data[pos:end].split()
            pos = end + 1
            if len(header) != 3:  # "<spec> missing" / "ambiguous"
                self._files[key] = None
                continue
            size = int(header[2])
            body = data[pos: pos + size]
            pos += size + 1
            self._files[key] = (body.decode("utf-8", errors="replace").splitlines()
                                if header[1] == b"blob" else None)

    def lines(self, rev: str, path: str) -> list[str] | None:
        """Lines of ``path`` at ``rev`` (without line endings), None when absent."""
        sha = self.commit(rev)
        key = (sha, path)
        if key not in self._files:
            data = read_blob(self.repo, f"{sha}:{path}")
            self._files[key] = (None if data is None
                                else data.decode("utf-8", errors="replace").splitlines())
        return self._files[key]


class ResolvedAnchor(BaseModel):
    """An anchor checked against upstream."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    anchor: Anchor
    """The anchor as written."""
    commit: str
    """Full sha of the revision it was resolved at."""
    text: str
    """The cited lines, joined with ``\\n``."""


def _squash(text: str) -> str:
    return " ".join(text.split())


def resolve_anchor(
    upstream_repo: Repo,
    anchor: Anchor,
    default_rev: str,
    *,
    cited_in: str | None = None,
    cited_line: int | None = None,
    reader: BlobReader | None = None,
) -> ResolvedAnchor:
    """Resolve ``anchor`` in ``upstream_repo`` at its sha (or ``default_rev``).

    ``cited_in``/``cited_line`` say where the anchor was written; errors name them.
    """
    reader = reader or BlobReader(upstream_repo)
    rev = anchor.sha or default_rev
    where = f"anchor `{anchor.render()}`"

    def fail(message: str, fix: str) -> AnchorError:
        return AnchorError(f"{where}: {message}", file=cited_in, line=cited_line, fix=fix)

    try:
        commit = reader.commit(rev)
    except RevisionError as exc:
        raise fail(f"revision {rev!r} does not exist upstream",
                   "cite a revision that exists upstream (or none: the pin)") from exc
    lines = reader.lines(commit, anchor.path)
    if lines is None:
        raise fail(f"{anchor.path} does not exist upstream at {commit[:12]}",
                   "correct the path, or run `portwright anchors remap` after upstream moves")
    if anchor.start < 1 or anchor.end < anchor.start or anchor.end > len(lines):
        raise fail(f"lines {anchor.start}-{anchor.end} are out of range "
                   f"({anchor.path} has {len(lines)} lines at {commit[:12]})",
                   "cite lines that exist at that revision")
    text = "\n".join(lines[anchor.start - 1: anchor.end])
    if anchor.excerpt is not None and _squash(anchor.excerpt) not in _squash(text):
        near = _find_block(lines, anchor.excerpt)
        hint = f" (it is at line {near} now)" if near else ""
        raise fail(f"the excerpt {anchor.excerpt!r} is not in the cited lines{hint}",
                   "correct the line numbers or the excerpt to what upstream says")
    return ResolvedAnchor(anchor=anchor, commit=commit, text=text)


def _find_block(lines: list[str], excerpt: str) -> int | None:
    wanted = _squash(excerpt)
    if not wanted:
        return None
    for number, line in enumerate(lines, start=1):
        if wanted in _squash(line):
            return number
    return None


class Remapped(BaseModel):
    """The outcome of re-locating one anchor at a new revision."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    old: Anchor
    """The anchor as written."""
    new: Anchor | None
    """The anchor at the new revision; None when it could not be placed."""
    reason: str = ""
    """Why it could not be placed (empty when it was)."""


def _renamed_path(repo: Repo, old_rev: str, new_rev: str, path: str) -> str | None:
    try:
        out = plumbing.git(path_of(repo), "diff", "--name-status", "-M", "-z", old_rev,
                           new_rev).decode("utf-8", "surrogateescape")
    except RepositoryError:
        return None
    fields = [f for f in out.split("\0") if f]
    index = 0
    while index < len(fields):
        status = fields[index]
        if status.startswith("R") and index + 2 < len(fields):
            if fields[index + 1] == path:
                return fields[index + 2]
            index += 3
        elif status.startswith("C"):
            index += 3
        else:
            index += 2
    return None


def remap_anchor(
    upstream_repo: Repo,
    anchor: Anchor,
    default_rev: str,
    to_rev: str,
    *,
    reader: BlobReader | None = None,
) -> Remapped:
    """Re-locate ``anchor`` (valid at its sha or ``default_rev``) at ``to_rev``, by content.

    The cited block is looked up in the same file at ``to_rev`` (or where git's rename
    detection says the file went). Exactly one exact match moves the anchor; none or several
    leave it unplaced with the reason. An anchor that carried an ``@sha`` gets the new sha,
    abbreviated to the same length; one without keeps meaning the pin.
    """
    reader = reader or BlobReader(upstream_repo)
    old_rev = reader.commit(anchor.sha or default_rev)
    new_rev = reader.commit(to_rev)
    old_lines = reader.lines(old_rev, anchor.path)
    if old_lines is None or anchor.end > len(old_lines):
        return Remapped(old=anchor, new=None,
                        reason="does not resolve at its own revision; fix it by hand first")
    block = old_lines[anchor.start - 1: anchor.end]
    path = anchor.path
    new_lines = reader.lines(new_rev, path)
    if new_lines is None:
        moved = _renamed_path(upstream_repo, old_rev, new_rev, path)
        new_lines = reader.lines(new_rev, moved) if moved else None
        if new_lines is None:
            return Remapped(old=anchor, new=None,
                            reason=f"{path} does not exist at {new_rev[:12]} (deleted?)")
        path = moved or path
    size = len(block)
    hits = [i for i in range(len(new_lines) - size + 1) if new_lines[i: i + size] == block]
    if not hits:
        return Remapped(old=anchor, new=None,
                        reason=f"the cited lines changed by {new_rev[:12]}; re-read upstream")
    if len(hits) > 1:
        nearest = min(hits, key=lambda i: abs(i + 1 - anchor.start))
        tied = [h for h in hits if abs(h + 1 - anchor.start) == abs(nearest + 1 - anchor.start)]
        if len(tied) > 1:
            return Remapped(old=anchor, new=None,
                            reason=f"the cited lines occur {len(hits)} times at {new_rev[:12]}")
        hits = [nearest]
    start = hits[0] + 1
    sha = new_rev[: len(anchor.sha)] if anchor.sha else None
    new = anchor.model_copy(update={"path": path, "start": start, "end": start + size - 1,
                                    "sha": sha})
    return Remapped(old=anchor, new=new)
