"""``HistoryIndex``: ``git log -S`` answers from one cached pass over history.

``git log -S NEEDLE`` lists the commits where the number of occurrences of
NEEDLE changes in some file pair (the diff of a file between a commit and its
parent, with git's default rename detection; merges have no diff and never
match). It re-reads every blob of history on every call. The index reads the
history once, as ``git log -p -U0 --text``, and records, for every file pair
of every commit, the net change in the count of each *word token* (a maximal
run of ``[A-Za-z0-9_]``). Because the count of a file is the count in its
added lines minus the count in its removed lines, and because an occurrence of
a needle made of word characters lies inside exactly one word token, the count
of such a needle in a file pair changes exactly when
``sum(token.count(needle) * delta(token))`` over that pair's tokens is non-zero.
Searches for such needles are therefore answered from the index, with the same
commits in the same order as ``git log -S``. Needles with other characters
(spaces, punctuation) are passed to ``git log -S`` itself.

The index is cached as JSON under ``<downstream>/<state_dir>/index/`` and
updated incrementally: when the indexed head is an ancestor of the new head, only
the new commits are read; otherwise (history rewritten) it is rebuilt. New
commits are listed before the old ones, which is ``git log``'s order except when
committer dates run backwards across the two batches.

Public API:

- ``HistoryIndex(repo: Path, ref: str = "HEAD", cache_dir: Path | None = None)``
- ``HistoryIndex.open(repo, ref="HEAD", cache_dir=None, progress=None) -> HistoryIndex``
  (load from cache, update, save)
- ``.update(progress=None) -> int`` (number of commits newly indexed)
- ``.save() -> Path | None``
- ``.search(needle: str) -> list[str]`` (shas, ``git log -S`` order)
- ``.changes(needle: str, exact_token=False) -> list[CountChange]`` (sha and net count
  change per commit)
- ``.token_changes(tokens: Iterable[str], exclude=None) -> list[CountChange]`` (whole
  tokens, summed; ``exclude(path)`` leaves file pairs out)
- ``.tokens() -> Iterable[str]`` (the vocabulary)
- ``downstream_index(project, progress=None) -> HistoryIndex`` (the project's downstream,
  cached in its state folder and brought up to date)
- ``pickaxe(repo, needle, rev="HEAD") -> list[str]`` (plain ``git log -S``, the reference)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from portwright.errors import RepositoryError, UsageError
from portwright.evidence.patch import parse_patch
from portwright.vcs.plumbing import check_repo, git, git_lines, is_ancestor, rev_parse

if TYPE_CHECKING:
    from portwright.project import Project

logger = logging.getLogger(__name__)

INDEX_VERSION = 3
_WORD_RE = re.compile(r"[A-Za-z0-9_]+")
_NEEDLE_RE = re.compile(r"[A-Za-z0-9_]+\Z")
_COMMIT_MARK = b"\x01"
_LOG_ARGS = ("log", "-p", "-U0", "--text", "--no-color", "--no-ext-diff", "--src-prefix=a/",
             "--dst-prefix=b/", f"--format={_COMMIT_MARK.decode()}%H")

Progress = Callable[[int], None]


class CountChange(BaseModel):
    """One commit in which the count of a needle changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sha: str
    """The commit."""
    delta: int
    """Net change of the count over the commit's file pairs (> 0 added, < 0 removed)."""


def pickaxe(repo: Path, needle: str, rev: str = "HEAD", pathspecs: Iterable[str] = ()
            ) -> list[str]:
    """Plain ``git log -S needle rev -- pathspecs``: the commits, newest first."""
    out = git(repo, "log", "-S", needle, "--format=%H", rev, "--", *pathspecs)
    return out.decode().split()


def parse_log(lines: Iterable[bytes]) -> Iterator[tuple[str, list[tuple[str, Counter[str]]]]]:
    """Split ``git log -p -U0`` output (:data:`_LOG_ARGS`) into commits, each a list of file
    pairs with their token count changes (added lines minus removed lines). Each commit's
    patch is read by :func:`~portwright.evidence.patch.parse_patch`, the one hand parser
    (``benchmarks/diff_parse.py``, 2,000 commits of tinygrad: 6.1 CPU-seconds with the
    tokens counted, against 4.8 s for the parser this module had and 8.6 s with unidiff)."""
    sha: str | None = None
    diff: list[bytes] = []
    for line in lines:
        if line[:1] == _COMMIT_MARK:
            if sha is not None:
                yield sha, _pairs(diff)
            sha, diff = line[1:].strip().decode(), []
        else:
            diff.append(line)
    if sha is not None:
        yield sha, _pairs(diff)


def _pairs(diff: list[bytes]) -> list[tuple[str, Counter[str]]]:
    pairs: list[tuple[str, Counter[str]]] = []
    for patch in parse_patch(diff):
        counts: Counter[str] = Counter()
        for _, text in patch.added:
            counts.update(_WORD_RE.findall(text))
        for _, text in patch.removed:
            counts.subtract(_WORD_RE.findall(text))
        pairs.append((patch.path, counts))
    return pairs


def downstream_index(project: Project,
                     progress: Callable[[int], None] | None = None) -> HistoryIndex:
    """The downstream's history index, cached in the state folder and brought up to date."""
    return HistoryIndex.open(project.root, "HEAD", project.index_dir, progress)


class HistoryIndex:
    """Word-token count changes of every commit reachable from ``ref`` in ``repo``."""

    def __init__(self, repo: Path, ref: str = "HEAD", cache_dir: Path | None = None) -> None:
        self.repo = check_repo(repo)
        self.ref = ref
        self.cache_dir = cache_dir
        self.head: str | None = None
        self._commits: list[str] = []
        """Commit shas by internal id (the order they were indexed in)."""
        self._order: list[int] = []
        """Internal ids, ``git log`` order (newest first)."""
        self._paths: list[list[str]] = []
        """By internal id: the path of each file pair."""
        self._postings: dict[str, array[int]] = {}
        """Token → flat ``(commit id, pair number, delta)`` triples."""
        self._rank: list[int] | None = None

    # -- building ---------------------------------------------------------------------

    @classmethod
    def open(cls, repo: Path, ref: str = "HEAD", cache_dir: Path | None = None,
             progress: Progress | None = None) -> HistoryIndex:
        """Load the cached index (if any), bring it up to date with ``ref`` and save it."""
        index = cls(repo, ref, cache_dir)
        index._load()
        if index.update(progress) and cache_dir is not None:
            index.save()
        return index

    def update(self, progress: Progress | None = None) -> int:
        """Index the commits that ``ref`` reaches and the index does not; return how many."""
        new_head = rev_parse(self.repo, self.ref)
        if new_head == self.head:
            return 0
        if self.head is not None and not is_ancestor(self.repo, self.head, new_head):
            logger.info("history of %s was rewritten; rebuilding its index", self.repo)
            self._reset()
        span = new_head if self.head is None else f"{self.head}..{new_head}"
        added = self._ingest(git_lines(self.repo, *_LOG_ARGS, span, "--"), progress)
        self.head = new_head
        self._rank = None
        logger.info("indexed %d commits of %s", added, self.repo)
        return added

    def _reset(self) -> None:
        self.head = None
        self._commits = []
        self._paths = []
        self._order = []
        self._postings = {}
        self._rank = None

    def _ingest(self, lines: Iterable[bytes], progress: Progress | None) -> int:
        postings = self._postings
        new_ids: list[int] = []
        for sha, pairs in parse_log(lines):
            commit_id = len(self._commits)
            self._commits.append(sha)
            self._paths.append([path for path, _ in pairs])
            new_ids.append(commit_id)
            for pair_no, (_path, counts) in enumerate(pairs):
                for token, delta in counts.items():
                    if delta:
                        slot = postings.get(token)
                        if slot is None:
                            slot = postings[token] = array("i")
                        slot.extend((commit_id, pair_no, delta))
            if progress is not None:
                progress(len(new_ids))
        self._order = new_ids + self._order
        return len(new_ids)

    # -- cache ------------------------------------------------------------------------

    def _cache_file(self) -> Path | None:
        if self.cache_dir is None:
            return None
        digest = hashlib.sha1(f"{self.repo}\0{self.ref}".encode()).hexdigest()[:16]
        return self.cache_dir / f"history-{digest}.json"

    def save(self) -> Path | None:
        """Write the index to its cache file (no-op without a cache dir); return the path."""
        path = self._cache_file()
        if path is None:
            return None
        payload = {
            "version": INDEX_VERSION, "repo": str(self.repo), "ref": self.ref, "head": self.head,
            "commits": self._commits, "order": self._order, "paths": self._paths,
            "postings": {k: v.tolist() for k, v in self._postings.items()},
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(payload, separators=(",", ":")), encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            raise UsageError("cannot write the history index cache", file=path,
                             fix="check that the state folder is writable") from exc
        return path

    def _load(self) -> None:
        path = self._cache_file()
        if path is None or not path.exists():
            return
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
            if payload.get("version") != INDEX_VERSION or payload.get("repo") != str(self.repo):
                logger.info("ignoring stale history index %s", path)
                return
            self.head = payload["head"]
            self._commits = list(payload["commits"])
            self._paths = [list(p) for p in payload["paths"]]
            self._order = list(payload["order"])
            self._postings = {k: array("i", v) for k, v in payload["postings"].items()}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            logger.warning("history index %s is unreadable (%s); rebuilding it", path, exc)
            self._reset()

    # -- queries ----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._commits)

    def tokens(self) -> Iterable[str]:
        """Every word token whose count changed in some commit."""
        return self._postings.keys()

    def _ranks(self) -> list[int]:
        if self._rank is None:
            rank = [0] * len(self._commits)
            for position, commit_id in enumerate(self._order):
                rank[commit_id] = position
            self._rank = rank
        return self._rank

    def _pair_sums(self, candidates: Iterable[tuple[str, int]]) -> dict[tuple[int, int], int]:
        sums: dict[tuple[int, int], int] = {}
        for token, multiplicity in candidates:
            flat = self._postings[token]
            for i in range(0, len(flat), 3):
                key = (flat[i], flat[i + 1])
                sums[key] = sums.get(key, 0) + multiplicity * flat[i + 2]
        return sums

    def changes(self, needle: str, *, exact_token: bool = False) -> list[CountChange]:
        """Commits where the count of ``needle`` changed, newest first, with the net change.

        With ``exact_token`` only whole word tokens equal to ``needle`` count (``foo`` does not
        match inside ``foobar``); without it the answer is ``git log -S``'s.
        """
        if not needle:
            raise UsageError("the search string is empty", fix="search for a non-empty string")
        if not _NEEDLE_RE.match(needle):
            if exact_token:
                raise UsageError(f"{needle!r} is not a word token",
                                 fix="search for letters, digits and '_' only")
            return self._changes_from_git(needle)
        if exact_token:
            return self.token_changes([needle])
        return self._collect((t, t.count(needle)) for t in self._postings if needle in t)

    def token_changes(self, tokens: Iterable[str],
                      exclude: Callable[[str], bool] | None = None) -> list[CountChange]:
        """Commits where the summed count of the whole word ``tokens`` changed in some file
        pair (a spelling of one name replaced by another in the same file is no change);
        file pairs whose path ``exclude`` accepts are left out."""
        return self._collect(((t, 1) for t in dict.fromkeys(tokens) if t in self._postings),
                             exclude)

    def _collect(self, candidates: Iterable[tuple[str, int]],
                 exclude: Callable[[str], bool] | None = None) -> list[CountChange]:
        per_commit: dict[int, int] = {}
        matched: set[int] = set()
        for (commit_id, pair), total in self._pair_sums(candidates).items():
            if exclude is not None and exclude(self._paths[commit_id][pair]):
                continue
            if total:
                matched.add(commit_id)
                per_commit[commit_id] = per_commit.get(commit_id, 0) + total
        ranks = self._ranks()
        return [CountChange(sha=self._commits[c], delta=per_commit[c])
                for c in sorted(matched, key=ranks.__getitem__)]

    def search(self, needle: str) -> list[str]:
        """``git log -S needle ref``: the shas of the commits that change its count."""
        return [change.sha for change in self.changes(needle)]

    def _changes_from_git(self, needle: str) -> list[CountChange]:
        if self.head is None:
            raise RepositoryError("the history index is empty", file=self.repo,
                                  fix="call update() before searching")
        shas = pickaxe(self.repo, needle, self.head)
        out: list[CountChange] = []
        for sha in shas:
            patch = git(self.repo, "show", "-U0", "--text", "--no-color", "--no-ext-diff",
                        "--src-prefix=a/", "--dst-prefix=b/", "--format=", sha)
            delta = 0
            for pair in parse_patch(patch.splitlines(keepends=True)):
                delta += sum(text.count(needle) for _, text in pair.added)
                delta -= sum(text.count(needle) for _, text in pair.removed)
            out.append(CountChange(sha=sha, delta=delta))
        return out
