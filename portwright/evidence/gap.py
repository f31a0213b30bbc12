"""Gap scan: does the downstream already carry an upstream change?

Public API (the agents' gap-verifier tools are built on these):

- ``scan_range(upstream: Path, downstream: Path, base: str, head: str,
  config: PortwrightConfig, *, progress=None, index=None) -> GapReport`` — for every upstream
  commit in ``base..head`` (oldest first): the files it changed with their kind
  (``source``/``tests``/``docs``/``build`` from ``upstream.path_kinds``), the names, literals,
  test cases and fixture files it added or removed, and a candidate verdict
  (``not_applicable``/``landed``/``partial``/``missing``) with its evidence and a confidence.
- ``row_evidence(upstream: Path, downstream: Path, symbols: list[str], pin: str,
  config: PortwrightConfig, *, index=None) -> RowEvidence`` — a parity row's upstream symbols
  at the pin and at upstream HEAD, the upstream commits since the pin that change their count
  (``git log -S``) or touch a line naming them (``git log -G``), and their downstream
  spellings at HEAD and in history.
- ``upstream_repo(project: Project) -> Path``
- ``downstream_index(project: Project) -> HistoryIndex``

How a commit is judged. Only ``source`` and ``tests`` files carry *signals*:

- ``name`` — a distinctive identifier the commit introduces (absent from the parent tree);
  found downstream under any spelling with the same canonical key (see
  :mod:`portwright.evidence.names`);
- ``literal`` — a new string literal of eight characters or more, found verbatim;
- ``test`` — a test case the commit declares (``def test_x``, ``it("…")``, ``TEST(A, B)``);
- ``fixture`` — a file added under the tests kind that is not code, found downstream by its
  exact content (blob id), at HEAD or in history (``git log --find-object``);
- ``file`` — a new source file, found by its canonical stem (mapped folder first);
- ``removal`` — a name the commit removes from the tree entirely, when the downstream ever had
  it: carried when the downstream no longer has it at HEAD.

Each signal is looked up at downstream HEAD, then in downstream history (the
:class:`~portwright.evidence.history.HistoryIndex`), leaving out portwright's own records
(matrices, ledger, inventory, specs, pin store, AGENTS.md: they name upstream symbols without
porting them). All signals carried at HEAD → ``landed``; some → ``partial``; none → ``missing`` (its
evidence says when history had them: a reverted port). A commit that touches only docs and
build files is ``not_applicable``. Confidence grows with the number of signals
(``1 - 0.5 / (n + 1)`` for clean landed/missing answers), is 0.6 for ``partial`` and 0.3 when
the commit has no distinctive signal at all.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from portwright import globs
from portwright.config import PortwrightConfig
from portwright.errors import ConfigError, RepositoryError
from portwright.evidence import names, tokens
from portwright.evidence.history import CountChange, HistoryIndex, pickaxe
from portwright.evidence.lookup import Location, TreeView, present_in_tree
from portwright.evidence.patch import FilePatch, classify, commit_patch
from portwright.project import Project, record_globs
from portwright.vcs.plumbing import check_repo, git, rev_parse

logger = logging.getLogger(__name__)

MAX_NAMES = 24
MAX_LITERALS = 6
MIN_LITERAL = 8
_CODE_EXTENSIONS = re.compile(r"\.(py|pyi|js|jsx|mjs|cjs|ts|tsx|c|cc|cpp|cxx|h|hh|hpp|cu|rs|go|"
                              r"java|kt|rb|swift|cs)\Z")
_DEFINITION_RE = re.compile(
    r"\b(?:def|class|function|struct|enum|interface|type|fn|func)\s+([A-Za-z_$][A-Za-z0-9_$]*)"
    r"|^(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][A-Za-z0-9_$]*)"
    r"|^\s*(?:[A-Za-z_][\w:<>,*& ]*\s+)?([A-Za-z_]\w*)\s*\([^;]*\)\s*(?:const\s*)?\{")

Progress = Callable[[int, int], None]


class Verdict(StrEnum):
    NOT_APPLICABLE = "not_applicable"
    LANDED = "landed"
    PARTIAL = "partial"
    MISSING = "missing"


SignalKind = Literal["name", "literal", "test", "fixture", "file", "removal"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChangedFile(_Model):
    """One file an upstream commit changed."""

    path: str
    """Upstream path after the change."""
    kind: str
    """``source``, or the ``upstream.path_kinds`` entry that matched (``tests``, ``docs``, …)."""
    status: str
    """``A`` added, ``M`` modified, ``D`` deleted, ``R`` renamed."""
    added_lines: int
    """Lines added."""
    removed_lines: int
    """Lines removed."""
    downstream_path: str | None = None
    """The path through ``upstream.path_map``, when a prefix matched."""


class Evidence(_Model):
    """What the downstream says about one signal."""

    signal: str
    """The upstream name, literal, test case or path."""
    kind: SignalKind
    """What sort of signal it is."""
    upstream_anchor: str
    """Where upstream introduced it: ``path:line@sha``."""
    where: Literal["head", "history", "absent"]
    """Found at downstream HEAD, only in downstream history, or nowhere."""
    matched: str | None = None
    """The downstream spelling or path that matched."""
    path: str | None = None
    """Downstream file of the match (at HEAD)."""
    line: int | None = None
    """Downstream line of the match (at HEAD)."""
    commit: str | None = None
    """Downstream commit that added it (or, when only in history, that removed it)."""
    note: str = ""
    """How it matched, in words."""
    carried: bool = False
    """True when this signal says the downstream carries the change: an addition found at
    HEAD, or a removal that the downstream made too."""


class CommitGap(_Model):
    """The scan's answer for one upstream commit."""

    sha: str
    """Upstream commit."""
    subject: str
    """First line of its message."""
    files: list[ChangedFile]
    """What it changed."""
    kinds: list[str]
    """The distinct kinds of the files it changed."""
    added: list[str] = Field(default_factory=list)
    """Distinctive identifiers it introduced."""
    removed: list[str] = Field(default_factory=list)
    """Distinctive identifiers it removed from the tree entirely."""
    literals: list[str] = Field(default_factory=list)
    """New string literals."""
    tests: list[str] = Field(default_factory=list)
    """Test cases it declares."""
    fixtures: list[str] = Field(default_factory=list)
    """Fixture files it added."""
    verdict: Verdict
    """Candidate verdict, for the gap-verifier to confirm."""
    confidence: float
    """0..1: how sure the scan is of the verdict."""
    reason: str
    """The verdict in one sentence."""
    evidence: list[Evidence] = Field(default_factory=list)
    """One entry per signal searched."""


class GapReport(_Model):
    """A gap scan of an upstream range against the downstream."""

    upstream: str
    """Upstream repository path."""
    downstream: str
    """Downstream repository path."""
    base: str
    """Upstream base (exclusive), full sha."""
    head: str
    """Upstream head (inclusive), full sha."""
    downstream_head: str
    """Downstream HEAD the scan searched."""
    commits: list[CommitGap]
    """Oldest first."""

    def counts(self) -> dict[str, int]:
        """Number of commits per verdict."""
        out = {v.value: 0 for v in Verdict}
        for commit in self.commits:
            out[commit.verdict.value] += 1
        return out


class SymbolEvidence(_Model):
    """One symbol (identifier or path) of a parity row, upstream and downstream."""

    symbol: str
    """As written in the row."""
    is_path: bool
    """True when the symbol names a file or folder."""
    upstream_at_pin: list[Location]
    """Where it occurs upstream at the pin."""
    upstream_at_head: list[Location]
    """Where it occurs at upstream HEAD."""
    upstream_changes: list[str]
    """Upstream commits in ``pin..HEAD`` that change its count (``git log -S``)."""
    upstream_touches: list[str] = Field(default_factory=list)
    """Upstream commits in ``pin..HEAD`` that add or remove a line naming it as a whole word
    (``git log -G``): changes of a call's arguments included."""
    downstream_at_head: list[Location]
    """Downstream occurrences at HEAD, any spelling with the same canonical key (source and
    tests files first; portwright's records left out)."""
    downstream_history: list[CountChange]
    """Downstream commits that changed the count of any of its spellings."""


class RowEvidence(_Model):
    """The facts a gap-verifier starts from for one parity row."""

    pin: str
    """Upstream pin (full sha)."""
    upstream_head: str
    """Upstream HEAD (``upstream.branch``), full sha."""
    downstream_head: str
    """Downstream HEAD."""
    symbols: list[SymbolEvidence]
    """One entry per symbol of the row."""


# -- repositories ----------------------------------------------------------------------


def upstream_repo(project: Project) -> Path:
    """The project's upstream checkout (:meth:`Project.upstream`), checked to be a git
    repository."""
    try:
        return check_repo(project.upstream(), "upstream checkout")
    except RepositoryError as exc:
        raise ConfigError(exc.message, file=project.root / "portwright.toml",
                          key="upstream.source", fix=exc.fix) from exc


def downstream_index(project: Project,
                     progress: Callable[[int], None] | None = None) -> HistoryIndex:
    """The downstream's history index, cached in the state folder and brought up to date."""
    return HistoryIndex.open(project.root, "HEAD", project.index_dir, progress)


# -- one commit ------------------------------------------------------------------------


class _Signal:
    __slots__ = ("anchor", "blob", "kind", "text")

    def __init__(self, kind: SignalKind, text: str, anchor: str, blob: str | None = None) -> None:
        self.kind = kind
        self.text = text
        self.anchor = anchor
        self.blob = blob


def _is_fixture(patch: FilePatch, kind: str) -> bool:
    return (kind == "tests" and patch.status == "A"
            and _CODE_EXTENSIONS.search(patch.path) is None)


class _CommitFacts:
    """Files, kinds and signals of one upstream commit."""

    def __init__(self, upstream: Path, sha: str, config: PortwrightConfig) -> None:
        self.sha = sha
        parents = git(upstream, "rev-list", "--parents", "-n", "1", sha).decode().split()[1:]
        self.parent = parents[0] if parents else None
        self.merge = len(parents) > 1
        self.subject = git(upstream, "log", "-1", "--format=%s", sha).decode().strip()
        self.patches = [] if self.merge else commit_patch(upstream, sha)
        up = config.upstream
        self.files = [
            ChangedFile(path=p.path, kind=classify(p.path, up.path_kinds), status=p.status,
                        added_lines=len(p.added), removed_lines=len(p.removed),
                        downstream_path=names.map_path(p.path, up.path_map))
            for p in self.patches]
        self.kinds = sorted({f.kind for f in self.files})
        self.signals: list[_Signal] = []
        self.removed: list[str] = []
        if not self.merge:
            self._collect(upstream)

    def _collect(self, upstream: Path) -> None:
        code = [(p, f) for p, f in zip(self.patches, self.files, strict=True)
                if f.kind in ("source", "tests")]
        names_at: dict[str, str] = {}
        literals_at: dict[str, str] = {}
        tests_at: dict[str, str] = {}
        short = self.sha[:12]
        for patch, info in code:
            if _is_fixture(patch, info.kind):
                blob = git(upstream, "rev-parse", f"{self.sha}:{patch.path}").decode().strip()
                self.signals.append(_Signal("fixture", patch.path, f"{patch.path}@{short}", blob))
                continue
            if patch.status == "A" and info.kind == "source":
                self.signals.append(_Signal("file", patch.path, f"{patch.path}:1@{short}"))
            for number, text in patch.added:
                anchor = f"{patch.path}:{number}@{short}"
                for name in tokens.test_blocks(text):
                    if name not in tests_at:
                        tests_at[name] = anchor
                        self.signals.append(_Signal("test", name, anchor))
                for name in _candidate_names(text):
                    names_at.setdefault(name, anchor)
                for literal in tokens.string_literals(text):
                    if _distinctive_literal(literal):
                        literals_at.setdefault(literal, anchor)
        test_names = set(tests_at)
        old_names = present_in_tree(upstream, self.parent, names_at, words=True)
        fresh = [n for n in names_at if n not in old_names and n not in test_names]
        fresh.sort(key=lambda n: (-len(names.split_words(n)), -len(n)))
        self.signals += [_Signal("name", n, names_at[n]) for n in fresh[:MAX_NAMES]]
        old_literals = present_in_tree(upstream, self.parent, literals_at, words=False)
        fresh_literals = [lit for lit in literals_at
                          if lit not in old_literals and lit not in test_names]
        self.signals += [_Signal("literal", lit, literals_at[lit])
                         for lit in fresh_literals[:MAX_LITERALS]]
        removed = {n for patch, _ in code for _, text in patch.removed
                   for n in _candidate_names(text)}
        still = present_in_tree(upstream, self.sha, removed, words=True)
        self.removed = sorted(removed - still)


def _distinctive_literal(text: str) -> bool:
    """A message-like literal: long enough, with a space, no escapes (paths and module
    specifiers differ between languages and are left to the ``file`` signal)."""
    return len(text) >= MIN_LITERAL and " " in text.strip() and "\\" not in text


def _candidate_names(text: str) -> list[str]:
    """Distinctive names of a line: any name it defines (functions, classes, top-level
    constants), and multi-word identifiers that are not members of something else
    (``Number.isInteger`` is an API in use, not a name of the change)."""
    defined = {g for m in _DEFINITION_RE.finditer(text) for g in m.groups() if g}
    out = []
    for match in tokens.IDENT_RE.finditer(text):
        name = match.group()
        if not tokens.distinctive(name):
            continue
        member = text[:match.start()].rstrip().endswith(".")
        if name in defined or (len(names.split_words(name)) >= 2 and not member):
            out.append(name)
    return list(dict.fromkeys(out))


# -- the downstream side ---------------------------------------------------------------


def _evidence(signal: _Signal, where: Literal["head", "history", "absent"], *,
              matched: str | None = None, path: str | None = None, line: int | None = None,
              commit: str | None = None, note: str = "", carried: bool | None = None
              ) -> Evidence:
    if carried is None:
        carried = where != "head" if signal.kind == "removal" else where == "head"
    return Evidence(signal=signal.text, kind=signal.kind, upstream_anchor=signal.anchor,
                    where=where, matched=matched, path=path, line=line, commit=commit, note=note,
                    carried=carried)


class _Downstream:
    """Downstream HEAD and history, searched by signal."""

    def __init__(self, repo: Path, index: HistoryIndex, config: PortwrightConfig) -> None:
        self.repo = repo
        self.index = index
        self.records = record_globs(config)
        self.tree = TreeView(repo, "HEAD", exclude=self.is_record)
        self.path_map = dict(config.upstream.path_map)
        self.path_kinds = dict(config.upstream.path_kinds)
        self._canon: dict[str, list[str]] | None = None

    def spellings(self, name: str) -> list[str]:
        """Every token of downstream history with the canonical key of ``name``."""
        if self._canon is None:
            table: dict[str, list[str]] = {}
            for token in self.index.tokens():
                table.setdefault(names.canonical(token), []).append(token)
            self._canon = table
        return self._canon.get(names.canonical(name), [])

    def is_record(self, path: str) -> bool:
        """True for portwright's own records (matrices, ledger, pin, …): they name upstream
        symbols without porting them."""
        return globs.match_any(path, self.records)

    def pathspecs(self) -> list[str]:
        """Git pathspecs of the whole tree but the records."""
        return [".", *(f":(exclude,glob){g}**" if g.endswith("/") else f":(exclude,glob){g}"
                       for g in self.records)]

    def name_history(self, name: str) -> list[CountChange]:
        """Downstream commits that changed the count of the name, any spelling, outside the
        parity records."""
        return self.index.token_changes(self.spellings(name), exclude=self.is_record)

    def judge(self, signal: _Signal) -> Evidence:
        if signal.kind == "fixture":
            return self._judge_fixture(signal)
        if signal.kind == "file":
            hits = self.tree.find_stem(signal.text, self.path_map)
            if hits:
                return _evidence(signal, "head", matched=hits[0], path=hits[0], line=1,
                                note="file with the same canonical stem")
            return _evidence(signal, "absent", note="no file with this stem")
        if signal.kind == "test":
            return self._judge_test(signal)
        if signal.kind == "removal":
            return self._judge_removal(signal)
        if signal.kind == "literal" or not names.is_identifier(signal.text):
            return self._judge_literal(signal)
        return self._judge_name(signal)

    def _judge_test(self, signal: _Signal) -> Evidence:
        """A test case: its name verbatim, or a test function whose words (``test`` aside)
        are the test's words (``it("clamps a value")`` ↔ ``def test_clamps_a_value``)."""
        if not names.is_identifier(signal.text.replace(".", "_")):
            literal = self._judge_literal(signal)
            if literal.where != "absent":
                return literal
        words = [w for w in names.split_words(signal.text) if w != "test"]
        key = "_".join(words)
        for candidate in (f"test_{key}", key, f"{key}_test"):
            hits = self.tree.find_name(candidate)
            if hits and key:
                return _evidence(signal, "head", matched=hits[0].text, path=hits[0].path,
                                 line=hits[0].line, note="test with the same words")
        return _evidence(signal, "absent", note="no test with this name or these words")

    def code_first(self, hits: list[Location]) -> tuple[list[Location], bool]:
        """``hits`` with source and tests files first, and whether any is in one."""
        order = {"source": 0, "tests": 1}
        ranked = sorted(hits, key=lambda h: order.get(classify(h.path, self.path_kinds), 2))
        return ranked, bool(ranked) and classify(ranked[0].path, self.path_kinds) in order

    def _judge_name(self, signal: _Signal) -> Evidence:
        hits, in_code = self.code_first(self.tree.find_name(signal.text))
        history = self.name_history(signal.text)
        if hits:
            hit = hits[0]
            added = next((c.sha for c in reversed(history) if c.delta > 0), None)
            how = "same spelling" if hit.text == signal.text else "normalised spelling"
            if not in_code:
                how = f"{how}, only in docs/build files: not a port"
            return _evidence(signal, "head", matched=hit.text, path=hit.path, line=hit.line,
                             commit=added, note=how, carried=in_code)
        if history:
            gone = history[0]
            return _evidence(signal, "history", matched=signal.text, commit=gone.sha,
                            note=f"in history ({len(history)} commits) but gone at HEAD; "
                                 f"last changed by {gone.sha[:12]} (reverted?)")
        return _evidence(signal, "absent", note="no spelling with this canonical key")

    def _judge_removal(self, signal: _Signal) -> Evidence:
        hits = self.tree.find_name(signal.text)
        if hits:
            return _evidence(signal, "head", matched=hits[0].text, path=hits[0].path,
                             line=hits[0].line, note="upstream removed it; downstream still has it")
        history = self.name_history(signal.text)
        last = history[0].sha if history else None
        return _evidence(signal, "history", matched=signal.text, commit=last,
                         note="removed downstream too")

    def _judge_literal(self, signal: _Signal) -> Evidence:
        hits, in_code = self.code_first(self.tree.find_literal(signal.text))
        if hits:
            note = "verbatim" if in_code else "verbatim, only in docs/build files: not a port"
            return _evidence(signal, "head", matched=signal.text, path=hits[0].path,
                             line=hits[0].line, note=note, carried=in_code)
        shas = pickaxe(self.repo, signal.text, self.tree.sha, self.pathspecs())
        if shas:
            return _evidence(signal, "history", matched=signal.text, commit=shas[0],
                            note=f"in history, gone at HEAD; last changed by {shas[0][:12]}")
        return _evidence(signal, "absent", note="not found verbatim")

    def _judge_fixture(self, signal: _Signal) -> Evidence:
        assert signal.blob is not None
        paths = self.tree.find_blob(signal.blob)
        shas = git(self.repo, "log", f"--find-object={signal.blob}", "--format=%H",
                   self.tree.sha, "--", *self.pathspecs()).decode().split()
        if paths:
            return _evidence(signal, "head", matched=paths[0], path=paths[0], line=1,
                             commit=shas[-1] if shas else None,
                             note="identical content (same blob)")
        if shas:
            return _evidence(signal, "history", matched=signal.blob, commit=shas[0],
                            note="identical content in history, gone at HEAD")
        return _evidence(signal, "absent", note="no file with identical content")


# -- verdicts --------------------------------------------------------------------------


def _verdict(facts: _CommitFacts, evidence: list[Evidence]) -> tuple[Verdict, float, str]:
    if facts.merge:
        return Verdict.NOT_APPLICABLE, 0.9, "merge commit: its changes are judged on its parents"
    if not facts.files:
        return Verdict.NOT_APPLICABLE, 0.9, "empty commit"
    if not set(facts.kinds) & {"source", "tests"}:
        kinds = "/".join(facts.kinds)
        return Verdict.NOT_APPLICABLE, 0.9, f"changes only {kinds} files"
    if not evidence:
        return (Verdict.MISSING, 0.3,
                "no distinctive name, literal, test or fixture to search for: judge by hand")
    n = len(evidence)
    carried = [e for e in evidence if e.carried]
    reverted = [e for e in evidence if e.where == "history" and e.kind != "removal"]
    sure = round(1 - 0.5 / (n + 1), 2)
    if len(carried) == n:
        return Verdict.LANDED, sure, f"all {n} signals carried by downstream HEAD"
    if carried:
        missing = ", ".join(e.signal for e in evidence if not e.carried)
        return (Verdict.PARTIAL, 0.6,
                f"{len(carried)} of {n} signals carried at HEAD; not carried: {missing}")
    if reverted:
        return (Verdict.MISSING, sure,
                f"none of {n} signals at HEAD; {len(reverted)} were in downstream history "
                "and removed (a reverted port?)")
    return Verdict.MISSING, sure, f"none of {n} signals carried by the downstream"


def _commit_gap(facts: _CommitFacts, downstream: _Downstream) -> CommitGap:
    relevant = not facts.merge and bool(set(facts.kinds) & {"source", "tests"})
    signals = list(facts.signals)
    signals += [_Signal("removal", name, f"{name}@{facts.sha[:12]}") for name in facts.removed
                if downstream.spellings(name)]  # only names the downstream ever had
    evidence = [downstream.judge(s) for s in signals] if relevant else []
    verdict, confidence, reason = _verdict(facts, evidence)
    by_kind: dict[str, list[str]] = {}
    for signal in facts.signals:
        by_kind.setdefault(signal.kind, []).append(signal.text)
    return CommitGap(
        sha=facts.sha, subject=facts.subject, files=facts.files, kinds=facts.kinds,
        added=by_kind.get("name", []), removed=facts.removed, literals=by_kind.get("literal", []),
        tests=by_kind.get("test", []), fixtures=by_kind.get("fixture", []), verdict=verdict,
        confidence=confidence, reason=reason, evidence=evidence)


def scan_range(upstream: Path, downstream: Path, base: str, head: str, config: PortwrightConfig,
               *, progress: Progress | None = None, index: HistoryIndex | None = None
               ) -> GapReport:
    """Judge every upstream commit in ``base..head`` against the downstream (see the module
    docstring for how)."""
    upstream = check_repo(upstream, "upstream checkout")
    downstream = check_repo(downstream, "downstream repository")
    base_sha, head_sha = rev_parse(upstream, base), rev_parse(upstream, head)
    shas = git(upstream, "rev-list", "--reverse", "--topo-order",
               f"{base_sha}..{head_sha}").decode().split()
    index = index if index is not None else downstream_index(Project(downstream, config))
    view = _Downstream(downstream, index, config)
    commits: list[CommitGap] = []
    for number, sha in enumerate(shas, start=1):
        commits.append(_commit_gap(_CommitFacts(upstream, sha, config), view))
        if progress is not None:
            progress(number, len(shas))
    logger.info("scanned %d upstream commits", len(commits))
    return GapReport(upstream=str(upstream), downstream=str(downstream), base=base_sha,
                     head=head_sha, downstream_head=view.tree.sha, commits=commits)


# -- rows ------------------------------------------------------------------------------


def _word_regex(symbol: str) -> str:
    """A POSIX extended regular expression matching ``symbol`` as a whole word."""
    escaped = re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", symbol)
    return f"(^|[^A-Za-z0-9_$]){escaped}([^A-Za-z0-9_$]|$)"


def _looks_like_path(symbol: str) -> bool:
    return "/" in symbol or names.strip_extension(symbol) != symbol


def _grep(repo: Path, rev: str, symbol: str) -> list[Location]:
    out = git(repo, "grep", "-n", "-I", "-w", "-F", "-e", symbol, rev, "--", ok_codes=(0, 1))
    found: list[Location] = []
    for raw in out.decode("utf-8", "replace").splitlines()[:20]:
        _rev, path, line, _text = raw.split(":", 3)
        found.append(Location(path=path, line=int(line), text=symbol))
    return found


def _path_locations(tree: TreeView, symbol: str) -> list[Location]:
    prefix = symbol.rstrip("/")
    return [Location(path=p, line=1, text=symbol) for p in tree.paths
            if p == prefix or p.startswith(prefix + "/")][:20]


def row_evidence(upstream: Path, downstream: Path, symbols: list[str], pin: str,
                 config: PortwrightConfig, *, index: HistoryIndex | None = None) -> RowEvidence:
    """The upstream and downstream facts about a row's symbols (see the module docstring)."""
    upstream = check_repo(upstream, "upstream checkout")
    downstream = check_repo(downstream, "downstream repository")
    pin_sha = rev_parse(upstream, pin)
    head_sha = rev_parse(upstream, config.upstream.branch)
    index = index if index is not None else downstream_index(Project(downstream, config))
    view = _Downstream(downstream, index, config)
    at_pin, at_head = TreeView(upstream, pin_sha), TreeView(upstream, head_sha)
    out: list[SymbolEvidence] = []
    for symbol in symbols:
        if _looks_like_path(symbol):
            mapped = names.map_path(symbol, config.upstream.path_map) or symbol
            stems = view.tree.find_stem(mapped, config.upstream.path_map)
            out.append(SymbolEvidence(
                symbol=symbol, is_path=True,
                upstream_at_pin=_path_locations(at_pin, symbol),
                upstream_at_head=_path_locations(at_head, symbol),
                upstream_changes=git(upstream, "log", "--format=%H", f"{pin_sha}..{head_sha}",
                                     "--", symbol.rstrip("/")).decode().split(),
                downstream_at_head=_path_locations(view.tree, mapped)
                or [Location(path=p, line=1, text=p) for p in stems[:5]],
                downstream_history=[]))
            continue
        out.append(SymbolEvidence(
            symbol=symbol, is_path=False,
            upstream_at_pin=_grep(upstream, pin_sha, symbol),
            upstream_at_head=_grep(upstream, head_sha, symbol),
            upstream_changes=git(upstream, "log", "-S", symbol, "--format=%H",
                                 f"{pin_sha}..{head_sha}", "--").decode().split(),
            upstream_touches=git(upstream, "log", f"-G{_word_regex(symbol)}", "--format=%H",
                                 f"{pin_sha}..{head_sha}", "--").decode().split(),
            downstream_at_head=view.code_first(view.tree.find_name(symbol))[0],
            downstream_history=view.name_history(symbol)))
    return RowEvidence(pin=pin_sha, upstream_head=head_sha, downstream_head=view.tree.sha,
                       symbols=out)
