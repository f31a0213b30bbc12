"""Where a name, a literal or a file's content occurs in one tree of a repository.

``TreeView(repo, rev)`` reads the text files of ``rev`` once (one
``git cat-file --batch``) and answers, from memory:

- ``find_name(name) -> list[Location]`` — identifiers whose canonical key equals the key of
  ``name`` (``computeScale`` finds ``compute_scale``, ``ComputeScale``, ``COMPUTE_SCALE``);
- ``find_literal(text) -> list[Location]`` — verbatim occurrences of a string;
- ``find_blob(sha) -> list[str]`` — paths whose content is that blob;
- ``find_stem(path, path_map) -> list[str]`` — files whose canonical stem matches ``path``'s,
  preferring the mapped folder;
- ``has_path``, ``blobs_of(path)``, ``text_files()``, ``line_set(paths)``.

``present_in_tree(repo, rev, needles, words=…) -> set[str]`` asks ``git grep`` instead, for a
tree too large to hold or needed once.

Files over ``max_file_bytes``, files with NUL bytes and files ``exclude(path)`` accepts are
skipped.
"""

from __future__ import annotations

import logging
import posixpath
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from portwright.evidence import names
from portwright.evidence.tokens import IDENT_RE
from portwright.vcs.plumbing import cat_blobs, git, ls_tree, rev_parse

logger = logging.getLogger(__name__)

MAX_LOCATIONS = 20


class Location(BaseModel):
    """One place in a tree."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    """File path relative to the repository root."""
    line: int
    """1-based line number."""
    text: str
    """What matched (the identifier as spelled there, or the literal)."""


class TreeView:
    """The text of every file of ``repo`` at ``rev``, indexed by canonical identifier."""

    def __init__(self, repo: Path, rev: str = "HEAD", *, max_file_bytes: int = 2_000_000,
                 exclude: Callable[[str], bool] | None = None) -> None:
        self.repo = repo
        self.sha = rev_parse(repo, rev)
        entries = [(blob, path) for blob, path in ls_tree(repo, self.sha)
                   if exclude is None or not exclude(path)]
        self.paths = [path for _, path in entries]
        self._blob_paths: dict[str, list[str]] = defaultdict(list)
        self._path_blob: dict[str, str] = {}
        for blob, path in entries:
            self._blob_paths[blob].append(path)
            self._path_blob[path] = blob
        contents = cat_blobs(repo, list(self._blob_paths))
        self._lines: dict[str, list[str]] = {}
        for blob, path in entries:
            data = contents.get(blob, b"")
            if len(data) > max_file_bytes or b"\0" in data[:8192]:
                continue
            self._lines[path] = data.decode("utf-8", "replace").splitlines()
        self._names: dict[str, list[tuple[str, int, str]]] | None = None

    def _name_map(self) -> dict[str, list[tuple[str, int, str]]]:
        if self._names is None:
            table: dict[str, list[tuple[str, int, str]]] = {}
            keys: dict[str, str] = {}
            findall = IDENT_RE.findall
            for path, lines in self._lines.items():
                for number, line in enumerate(lines, start=1):
                    for token in dict.fromkeys(findall(line)):  # in order: no hash seed
                        key = keys.get(token)
                        if key is None:
                            key = keys[token] = names.canonical(token)
                        if not key:
                            continue
                        found = table.get(key)
                        if found is None:
                            table[key] = [(path, number, token)]
                        elif len(found) < MAX_LOCATIONS:
                            found.append((path, number, token))
            self._names = table
        return self._names

    def find_name(self, name: str) -> list[Location]:
        """Identifiers spelled any way whose canonical key is ``name``'s."""
        key = names.canonical(name)
        found = self._name_map().get(key, []) if key else []
        return [Location(path=path, line=line, text=text) for path, line, text in found]

    def find_token(self, token: str) -> list[Location]:
        """Identifiers spelled exactly ``token``."""
        return [loc for loc in self.find_name(token) if loc.text == token]

    def find_literal(self, text: str) -> list[Location]:
        """Lines containing ``text`` verbatim."""
        found: list[Location] = []
        for path, lines in self._lines.items():
            for number, line in enumerate(lines, start=1):
                if text in line:
                    found.append(Location(path=path, line=number, text=text))
                    if len(found) >= MAX_LOCATIONS:
                        return found
        return found

    def find_blob(self, blob: str) -> list[str]:
        """Paths whose content is exactly the blob ``blob``."""
        return list(self._blob_paths.get(blob, []))

    def has_path(self, path: str) -> bool:
        """True when ``path`` is a file of the tree."""
        return path in self._path_blob

    def blobs_of(self, path: str) -> set[str]:
        """The blob of ``path`` (a set: empty when the tree has no such file)."""
        blob = self._path_blob.get(path)
        return {blob} if blob else set()

    def text_files(self) -> Iterator[tuple[str, list[str]]]:
        """``(path, lines)`` of every text file read."""
        yield from self._lines.items()

    def line_text(self, path: str, line: int) -> str:
        """The text of one line (empty when out of range)."""
        lines = self._lines.get(path, [])
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def line_set(self, paths: Iterable[str]) -> set[str]:
        """The stripped lines of ``paths``."""
        return {line.strip() for path in paths for line in self._lines.get(path, ())}

    def find_stem(self, path: str, path_map: Mapping[str, str]) -> list[str]:
        """Files whose canonical stem equals ``path``'s: the mapped path first, then the
        mapped folder, then anywhere."""
        stem = names.canonical_path(path)
        if not stem:
            return []
        mapped = names.map_path(path, path_map)
        folder = posixpath.dirname(mapped) if mapped else None
        hits = [p for p in self.paths if names.canonical_path(p) == stem]
        return sorted(hits, key=lambda p: (p != mapped,
                                           posixpath.dirname(p) != folder, p))


def present_in_tree(repo: Path, rev: str | None, needles: Iterable[str], *,
                    words: bool) -> set[str]:
    """The ``needles`` that occur in the tree of ``rev`` (whole words with ``words``); none
    when ``rev`` is None (the parent of a root commit)."""
    wanted = sorted(set(needles))
    if rev is None or not wanted:
        return set()
    found: set[str] = set()
    for start in range(0, len(wanted), 200):
        args = ["grep", "-o", "-h", "-I", "-F"] + (["-w"] if words else [])
        for needle in wanted[start:start + 200]:
            args += ["-e", needle]
        out = git(repo, *args, rev, "--", ok_codes=(0, 1))
        found.update(out.decode("utf-8", "replace").splitlines())
    return found
