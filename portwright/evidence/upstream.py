"""The upstream side of a gap scan: what each commit of a range changed, and its signals.

One ``git log -p`` stream reads the whole range (``--full-index``: every file's blobs), one
``git cat-file --batch`` reads the old and new text of the code and fixture files, another
the source and tests files of the base tree, where the candidate names are counted; the
counts are then carried through the range, so whether a name is new to the code (absent
from the parent tree's source and tests) or gone (absent after the commit) needs no process
per commit. Merge commits have no diff of their own.

Each commit's facts depend only on the commit and the scan's settings, so they are cached by
sha (one JSON file per settings digest): a warm rerun reads the cache and starts no git
process for the upstream but ``rev-list``.

Public API:

- ``CommitFacts`` — one commit's files, signals and what it drops (pydantic)
- ``analyse_range(upstream, base, head, path_kinds, path_map, cache_dir=None)
  -> list[CommitFacts]`` — oldest first (topological order)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from portwright.evidence import behaviour, names, signals
from portwright.evidence.gapmodels import ChangedFile
from portwright.evidence.lexer import family
from portwright.evidence.patch import FilePatch, parse_patch
from portwright.evidence.signals import Signal
from portwright.evidence.tokens import IDENT_RE, code_identifiers, distinctive
from portwright.pathkinds import CARRIED, classify
from portwright.vcs.plumbing import cat_blobs, git, git_lines, ls_tree

logger = logging.getLogger(__name__)

CACHE_VERSION = 1
_MARK = b"\x01"
_END = b"\x02"
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,40})")
MAX_NAMES = 24


class CommitFacts(BaseModel):
    """One upstream commit as the scan sees it."""

    model_config = ConfigDict(extra="forbid")

    sha: str
    parents: list[str]
    subject: str
    reverts: list[str] = Field(default_factory=list)
    """Commits its message says it reverts."""
    files: list[ChangedFile] = Field(default_factory=list)
    signals: list[Signal] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    """Names it removes from the tree entirely."""
    drops: list[str] = Field(default_factory=list)
    """Signal keys it removes (``name:…``, ``literal:…``, ``line:…``)."""
    change: str = ""
    """Digest of its added and removed lines per file (a revert has the inverse digest)."""
    inverse: str = ""
    """Digest of the same change reversed."""

    @property
    def merge(self) -> bool:
        return len(self.parents) > 1

    @property
    def kinds(self) -> list[str]:
        return sorted({f.kind for f in self.files})

    @property
    def no_behaviour(self) -> str | None:
        """Why none of its source and tests files changes behaviour, or None."""
        carried = [f for f in self.files if f.kind in CARRIED]
        reasons = sorted({f.no_behaviour for f in carried if f.no_behaviour})
        if carried and all(f.no_behaviour for f in carried):
            return " and ".join(reasons)
        return None


class _Raw:
    """A commit read from the stream, before its signals are worked out."""

    def __init__(self, sha: str, parents: list[str], subject: str, body: str) -> None:
        self.sha = sha
        self.parents = parents
        self.subject = subject
        self.reverts = _REVERTS.findall(body)
        self.patches: list[FilePatch] = []


def _span(base: str | None, head: str) -> list[str]:
    """``base..head``, or ``head`` alone when ``base`` is None (a root commit)."""
    return [f"{base}..{head}"] if base else ["-1", head]


def _stream(upstream: Path, base: str | None, head: str) -> Iterator[_Raw]:
    args = ("log", "--reverse", "--topo-order", "-p", "-U0", "--full-index", "-M",
            "--no-color", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/",
            "--format=%x01%H %P%x00%s%x00%b%x02", *_span(base, head), "--")
    current: _Raw | None = None
    header: list[bytes] = []
    diff: list[bytes] = []
    for line in git_lines(upstream, *args):
        if line.startswith(_MARK) or header:
            header.append(line)
            if _END in line:
                if current is not None:
                    current.patches = parse_patch(diff)
                    yield current
                current, diff = _header("".join(h.decode("utf-8", "replace") for h in header)), []
                header = []
            continue
        diff.append(line)
    if current is not None:
        current.patches = parse_patch(diff)
        yield current


def _header(text: str) -> _Raw:
    text = text.lstrip("\x01").split("\x02", 1)[0]
    ids, subject, body = [*text.split("\x00"), "", ""][:3]
    sha, *parents = ids.split()
    return _Raw(sha, parents, subject.strip(), body)


def _digest(pairs: Iterable[tuple[str, list[str], list[str]]]) -> str:
    payload = json.dumps(sorted((p, sorted(a), sorted(r)) for p, a, r in pairs))
    return hashlib.sha1(payload.encode()).hexdigest()


class _Before:
    """The counts as they were before a commit: the counts after it, minus its delta."""

    def __init__(self, after: Counter[str], delta: Counter[str]) -> None:
        self.after = after
        self.delta = delta

    def __getitem__(self, name: str) -> int:
        return self.after[name] - self.delta[name]


class _Counts:
    """Occurrences of candidate names in the source and tests files of the tree, carried
    through the range (a name is *new* when the code of the parent tree lacks it)."""

    def __init__(self, upstream: Path, base: str | None, candidates: set[str],
                 path_kinds: Mapping[str, list[str]]) -> None:
        self.candidates = candidates
        self.path_kinds = path_kinds
        self.counts: Counter[str] = Counter()
        if base is None or not candidates:
            return
        blobs = [sha for sha, path in ls_tree(upstream, base) if self.counted(path)]
        for data in cat_blobs(upstream, blobs).values():
            if b"\0" in data[:8192]:
                continue
            for line in data.decode("utf-8", "replace").splitlines():
                self.counts.update(t for t in code_identifiers(line) if t in candidates)

    def counted(self, path: str) -> bool:
        """Names are counted in code files of the source and tests kinds."""
        return family(path) is not None and classify(path, self.path_kinds) in CARRIED

    def apply(self, patches: list[FilePatch]) -> Counter[str]:
        delta: Counter[str] = Counter()
        for patch in patches:
            if not self.counted(patch.path):
                continue
            for _, text in patch.added:
                delta.update(t for t in code_identifiers(text) if t in self.candidates)
            for _, text in patch.removed:
                delta.subtract(t for t in code_identifiers(text) if t in self.candidates)
        self.counts.update(delta)
        return delta


def _cache_file(cache_dir: Path | None, upstream: Path, path_kinds: Mapping[str, list[str]],
                path_map: Mapping[str, str]) -> Path | None:
    if cache_dir is None:
        return None
    settings = json.dumps([CACHE_VERSION, str(upstream), dict(path_kinds), dict(path_map)])
    return cache_dir / f"upstream-{hashlib.sha1(settings.encode()).hexdigest()[:16]}.json"


def _load(path: Path | None) -> dict[str, CommitFacts]:
    if path is None or not path.is_file():
        return {}
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        return {sha: CommitFacts.model_validate(v) for sha, v in payload.items()}
    except (OSError, ValueError, ValidationError) as exc:
        logger.warning("upstream cache %s is unreadable (%s); rebuilding it", path, exc)
        return {}


def _save(path: Path | None, facts: Mapping[str, CommitFacts]) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({s: f.model_dump(mode="json") for s, f in facts.items()},
                                  separators=(",", ":")), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        logger.warning("cannot write the upstream cache %s: %s", path, exc)


def analyse_range(upstream: Path, base: str | None, head: str,
                  path_kinds: Mapping[str, list[str]], path_map: Mapping[str, str],
                  cache_dir: Path | None = None) -> list[CommitFacts]:
    """The facts of every commit of ``base..head`` (``head`` alone when ``base`` is None),
    oldest first (see the module docstring)."""
    shas = git(upstream, "rev-list", "--reverse", "--topo-order",
               *_span(base, head)).decode().split()
    cache_path = _cache_file(cache_dir, upstream, path_kinds, path_map)
    cached = _load(cache_path)
    if shas and all(sha in cached for sha in shas):
        return [cached[sha] for sha in shas]
    raws = list(_stream(upstream, base, head))
    facts = _analyse(upstream, base, raws, path_kinds, path_map)
    cached.update((f.sha, f) for f in facts)
    _save(cache_path, cached)
    order = {sha: i for i, sha in enumerate(shas)}
    return sorted(facts, key=lambda f: order.get(f.sha, len(order)))


def _analyse(upstream: Path, base: str | None, raws: list[_Raw],
             path_kinds: Mapping[str, list[str]], path_map: Mapping[str, str]
             ) -> list[CommitFacts]:
    wanted: list[str] = []
    for raw in raws:
        for patch in raw.patches:
            if classify(patch.path, path_kinds) in CARRIED and not patch.binary:
                wanted += [b for b in (patch.old_blob, patch.new_blob) if b]
    texts = {sha: data.decode("utf-8", "replace")
             for sha, data in cat_blobs(upstream, list(dict.fromkeys(wanted))).items()
             if b"\0" not in data[:8192]}
    candidates = {t for raw in raws for patch in raw.patches
                  if family(patch.path) is not None and classify(patch.path, path_kinds) in CARRIED
                  for _, line in [*patch.added, *patch.removed]
                  for t in IDENT_RE.findall(line) if len(t) >= 4}
    counts = _Counts(upstream, base, candidates, path_kinds)
    out: list[CommitFacts] = []
    for raw in raws:
        delta = counts.apply(raw.patches)
        out.append(_facts(raw, texts, path_kinds, path_map, _Before(counts.counts, delta),
                          delta, counts.counts))
    return out


def _pair_moves(patches: list[FilePatch], path_kinds: Mapping[str, list[str]]
                ) -> dict[str, FilePatch]:
    """Added files paired with a deleted file of the same canonical stem and kind (a move that
    git's rename detection missed because the text changed too)."""
    deleted: dict[tuple[str, str], FilePatch] = {}
    for patch in patches:
        if patch.status == "D":
            deleted.setdefault((names.canonical_path(patch.path),
                                classify(patch.path, path_kinds)), patch)
    out: dict[str, FilePatch] = {}
    for patch in patches:
        slot = (names.canonical_path(patch.path), classify(patch.path, path_kinds))
        if patch.status == "A" and slot in deleted:
            out[patch.path] = deleted.pop(slot)
    return out


def _facts(raw: _Raw, texts: Mapping[str, str], path_kinds: Mapping[str, list[str]],
           path_map: Mapping[str, str], before: _Before, delta: Counter[str],
           after: Counter[str]) -> CommitFacts:
    facts = CommitFacts(sha=raw.sha, parents=raw.parents, subject=raw.subject,
                        reverts=raw.reverts)
    if facts.merge:
        return facts
    moves = _pair_moves(raw.patches, path_kinds)
    known = "\0".join(texts.get(p.old_blob, "") for p in raw.patches if p.old_blob)
    paired = {p.path for p in moves.values()}
    found: dict[str, signals.Signal] = {}
    for patch in raw.patches:
        kind = classify(patch.path, path_kinds)
        old_patch = moves.get(patch.path)
        old_blob = old_patch.old_blob if old_patch is not None else patch.old_blob
        old_text = texts.get(old_blob) if old_blob else None
        new_text = texts.get(patch.new_blob) if patch.new_blob else None
        if patch.status == "R" and patch.old_blob is None and not patch.added:
            old_text = new_text = ""  # a move with no change
        reason = None
        if kind in CARRIED and not patch.binary:
            reason = "moved" if patch.path in paired else _no_behaviour(
                patch, kind, old_text, new_text, old_patch, before, after)
        facts.files.append(ChangedFile(
            path=patch.path, kind=kind, status=patch.status, added_lines=len(patch.added),
            removed_lines=len(patch.removed),
            old_path=old_patch.path if old_patch is not None else patch.old_path,
            downstream_path=names.map_path(patch.path, path_map), no_behaviour=reason))
        if kind not in CARRIED or reason or patch.binary:
            continue
        _file_signals(facts, patch, kind, (old_text, new_text), path_map, found, known)
    facts.signals = _ranked(list(found.values()), before)
    facts.removed = sorted(t for t, d in delta.items()
                           if d < 0 and after[t] <= 0 and before[t] > 0 and distinctive(t)
                           and sum(w.isalpha() for w in names.split_words(t)) >= 2
                           and not _ESCAPE.fullmatch(t))
    facts.drops += [f"name:{t}" for t in facts.removed]
    pairs = [(p.path, [t for _, t in p.added], [t for _, t in p.removed]) for p in raw.patches]
    facts.change = _digest(pairs)
    facts.inverse = _digest((p, r, a) for p, a, r in pairs)
    return facts


def _no_behaviour(patch: FilePatch, kind: str, old_text: str | None, new_text: str | None,
                  old_patch: FilePatch | None, before: _Before, after: Counter[str]
                  ) -> str | None:
    """Why a change to a source or tests file has no behaviour, or None."""
    if not patch.added and patch.removed:
        unused = _unused(patch, before, after)
        if unused:
            return unused
    if family(patch.path, new_text or old_text) is None and kind != "source":
        return None  # a data fixture: every line is behaviour
    reason = behaviour.change_kind(patch.path, old_text, new_text, lines=(
        {n for n, _ in patch.removed}, {n for n, _ in patch.added}))
    if reason and old_patch is not None:
        return f"moved from {old_patch.path}; {reason}"
    return reason


_ESCAPE = re.compile(r"[uUxX][0-9A-Fa-f]{2,8}")
"""``\u010A`` read as a name: a character escape, not an identifier."""
_DEFINED = re.compile(r"^\s*(?:export\s+)?(?:var|let|const|function|def|class|static)\s+"
                      r"([A-Za-z_$][\w$]*)")


def _unused(patch: FilePatch, before: _Before, after: Counter[str]) -> str | None:
    """When a change only removes definitions that nothing else in the code names (every
    occurrence of each name goes with it, none is exported or public), why it has no
    behaviour."""
    defined: list[str] = []
    for _, text in patch.removed:
        match = _DEFINED.match(text)
        if match:
            defined.append(match.group(1))
            public = text.lstrip().startswith("export") or (
                text[:1] not in (" ", "\t") and text.startswith(("def ", "class ")) and
                not match.group(1).startswith("_"))
            if public:
                return None
    removed = Counter(t for _, text in patch.removed for t in code_identifiers(text))
    if defined and all(before[n] > 0 and after[n] <= 0 and removed[n] == before[n]
                       for n in defined):
        return f"removes code nothing uses ({', '.join(defined)})"
    return None


def _file_signals(facts: CommitFacts, patch: FilePatch, kind: str,
                  texts: tuple[str | None, str | None], path_map: Mapping[str, str],
                  found: dict[str, signals.Signal], known: str) -> None:
    old_text, new_text = texts
    if family(patch.path, new_text or old_text) is None and kind == "tests":
        signal = signals.fixture_signal(
            patch.path, facts.sha, (patch.old_blob, patch.new_blob),
            [t for _, t in patch.added], [t for _, t in patch.removed], old_text, new_text,
            names.map_path(patch.path, path_map))
        if signal.lines or signal.gone or patch.status == "A":
            found.setdefault(signals.key(signal), signal)
        facts.drops += [f"line:{line}" for line in signal.gone]
        return
    new, drops = signals.code_signals(patch.path, facts.sha, {n for n, _ in patch.added},
                                      {n for n, _ in patch.removed}, old_text, new_text,
                                      tests=kind == "tests", known=known)
    for signal in new:
        found.setdefault(signals.key(signal), signal)
    facts.drops += drops
    if patch.status == "A" and kind == "source" and patch.old_path is None:
        signal = signals.Signal(kind="file", text=patch.path, anchor=f"{patch.path}:1@"
                                f"{facts.sha[:12]}", target=names.map_path(patch.path, path_map))
        found.setdefault(signals.key(signal), signal)


def _ranked(found: list[signals.Signal], before: _Before) -> list[signals.Signal]:
    """Names new to the tree only (most words first, at most :data:`MAX_NAMES`), then the
    other signals."""
    fresh = [s for s in found if s.kind == "name" and before[s.text] <= 0]
    fresh.sort(key=lambda s: (s.strength != "strong", -len(names.split_words(s.text)),
                              -len(s.text)))
    return fresh[:MAX_NAMES] + [s for s in found if s.kind != "name"]
