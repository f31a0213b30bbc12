"""Gap scan: does the downstream already carry an upstream change?

Public API (the agents' gap-verifier tools are built on these):

- ``scan_range(upstream, downstream, base, head, config, *, progress=None, index=None,
  cache_dir=None) -> GapReport`` — every upstream commit of ``base..head`` (oldest first)
  with its files and their kinds, its signals, the downstream's evidence, and a candidate
  verdict (``not_applicable``/``landed``/``partial``/``missing``/``uncertain``) with a
  confidence;
- ``scan_commit(upstream, downstream, sha, config, *, index=None, cache_dir=None)
  -> CommitGap`` — the same for one commit, on its own;
- ``row_evidence(...)`` (from :mod:`.rows`), ``upstream_repo(project)``,
  ``downstream_index(project)``; the models of :mod:`.gapmodels`.

How it works, room by room: :mod:`portwright.pathkinds` says which files a port carries;
:mod:`.upstream` reads the range in one ``git log -p`` stream and works out each commit's
signals (cached by sha), with :mod:`.behaviour` setting aside changes with no behaviour and
:mod:`.signals` keeping only what survives a port; :mod:`.downstream` looks each signal up in
the port's code; :mod:`.judgement` weighs the evidence.

Across the range: a commit and its revert are both ``not_applicable``; a signal that a later
commit of the range removes again is *superseded* and not counted, and a commit whose every
signal was superseded takes the verdict of the commit that replaced it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from portwright.config import PortwrightConfig
from portwright.errors import ConfigError, RepositoryError
from portwright.evidence.downstream import Downstream
from portwright.evidence.gapmodels import (
    ChangedFile,
    CommitGap,
    Evidence,
    GapReport,
    RowEvidence,
    SymbolEvidence,
    Verdict,
)
from portwright.evidence.history import HistoryIndex, downstream_index
from portwright.evidence.judgement import decide
from portwright.evidence.rows import row_evidence
from portwright.evidence.signals import Signal, key
from portwright.evidence.upstream import CACHE_VERSION, CommitFacts, analyse_range
from portwright.project import Project, record_globs
from portwright.vcs.plumbing import check_repo, git, rev_parse

__all__ = ["ChangedFile", "CommitGap", "Evidence", "GapReport", "RowEvidence", "SymbolEvidence",
           "Verdict", "downstream_index", "row_evidence", "scan_commit", "scan_range",
           "upstream_repo"]

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
MAX_REMOVALS = 6
"""Removed names searched per commit (a removed table must not outweigh everything else)."""


def upstream_repo(project: Project) -> Path:
    """The project's upstream checkout (:meth:`Project.upstream`), checked to be a git
    repository."""
    try:
        return check_repo(project.upstream(), "upstream checkout")
    except RepositoryError as exc:
        raise ConfigError(exc.message, file=project.root / "portwright.toml",
                          key="upstream.source", fix=exc.fix) from exc


def _pairs_of_reverts(facts: list[CommitFacts]) -> dict[str, str]:
    """Commit → its partner, for every change reverted inside the range (by the revert's
    message, or by an exactly inverse change)."""
    partner: dict[str, str] = {}
    seen: dict[str, CommitFacts] = {}
    for fact in facts:
        for target in fact.reverts:
            hit = next((s for s in seen if s.startswith(target)), None)
            if hit is not None:
                partner[hit], partner[fact.sha] = fact.sha, hit
        if fact.sha not in partner and fact.files and not fact.merge:
            hit = next((s for s, f in seen.items() if f.inverse == fact.change and
                        f.change != fact.change and s not in partner), None)
            if hit is not None:
                partner[hit], partner[fact.sha] = fact.sha, hit
        seen[fact.sha] = fact
    return partner


def _without_later(signal: Signal, later: dict[str, str]) -> tuple[Signal, str | None]:
    """``signal`` with what later commits of the range removed left out, and the commit that
    superseded it when nothing is left."""
    if signal.kind == "fixture":
        lines = [line for line in signal.lines if f"line:{line}" not in later]
        dropped = [later[f"line:{line}"] for line in signal.lines if f"line:{line}" in later]
        if dropped and not lines and not signal.gone:
            return signal, dropped[0]
        return signal.model_copy(update={"lines": lines}), None
    return signal, later.get(key(signal))


def _gap(fact: CommitFacts, view: Downstream, later: dict[str, str],
         judged: dict[str, CommitGap]) -> CommitGap:
    signals = list(fact.signals)
    signals += [Signal(kind="removal", text=name, anchor=f"{name}@{fact.sha[:12]}")
                for name in fact.removed if view.spellings(name)][:MAX_REMOVALS]
    evidence: list[Evidence] = []
    superseders: list[str] = []
    for signal in signals:
        trimmed, by = _without_later(signal, later)
        found = view.judge(trimmed)
        if by is not None:
            found = found.model_copy(update={"superseded_by": by})
            superseders.append(by)
        evidence.append(found)
    verdict, confidence, reason = decide(fact, evidence)
    related: list[str] = []
    if evidence and all(e.superseded_by for e in evidence) and verdict is Verdict.UNCERTAIN:
        after = next((judged[s] for s in superseders if s in judged), None)
        if after is not None:
            verdict, confidence = after.verdict, round(after.confidence * 0.9, 2)
            reason = (f"superseded in the range by {after.sha[:12]} ({after.verdict.value}): "
                      f"{after.reason}")
            related = [after.sha]
    by_kind: dict[str, list[str]] = {}
    for signal in fact.signals:
        by_kind.setdefault(signal.kind, []).append(signal.text)
    return CommitGap(
        sha=fact.sha, subject=fact.subject, files=fact.files, kinds=fact.kinds,
        added=by_kind.get("name", []), removed=fact.removed,
        literals=by_kind.get("literal", []), tests=by_kind.get("test", []),
        fixtures=by_kind.get("fixture", []), verdict=verdict, confidence=confidence,
        reason=reason, evidence=evidence, related=related)


def _reverted(fact: CommitFacts, partner: str) -> CommitGap:
    reverts = partner[:12] if fact.reverts else None
    reason = (f"revert of {reverts} inside the range" if reverts else
              f"reverted inside the range by {partner[:12]}")
    return CommitGap(sha=fact.sha, subject=fact.subject, files=fact.files, kinds=fact.kinds,
                     verdict=Verdict.NOT_APPLICABLE, confidence=0.93, reason=reason,
                     related=[partner])


def _judge(facts: list[CommitFacts], view: Downstream,
           progress: Progress | None = None) -> list[CommitGap]:
    partner = _pairs_of_reverts(facts)
    later: dict[str, str] = {}
    judged: dict[str, CommitGap] = {}
    for number, fact in enumerate(reversed(facts), start=1):
        if fact.sha in partner:
            judged[fact.sha] = _reverted(fact, partner[fact.sha])
        else:
            judged[fact.sha] = _gap(fact, view, later, judged)
        for dropped in fact.drops:
            later[dropped] = fact.sha
        if progress is not None:
            progress(number, len(facts))
    return [judged[f.sha] for f in facts]


def _report_file(cache_dir: Path | None, key: list[str]) -> Path | None:
    if cache_dir is None:
        return None
    digest = hashlib.sha1(json.dumps(key).encode()).hexdigest()[:20]
    return cache_dir / f"report-{digest}.json"


def _cached_report(path: Path | None) -> GapReport | None:
    if path is None or not path.is_file():
        return None
    try:
        return GapReport.model_validate_json(path.read_bytes())
    except (OSError, ValueError) as exc:
        logger.warning("gap report cache %s is unreadable (%s)", path, exc)
        return None


def _save_report(path: Path | None, report: GapReport) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(report.model_dump_json(), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        logger.warning("cannot write the gap report cache %s: %s", path, exc)


def scan_range(upstream: Path, downstream: Path, base: str, head: str, config: PortwrightConfig,
               *, progress: Progress | None = None,
               index: HistoryIndex | Callable[[], HistoryIndex] | None = None,
               cache_dir: Path | None = None) -> GapReport:
    """Judge every upstream commit in ``base..head`` against the downstream (see the module
    docstring). ``cache_dir`` keeps the per-commit upstream analysis between runs, and the
    whole report for an unchanged downstream HEAD and config; ``index`` may be a function
    that builds the history index, called only when something must be judged."""
    upstream = check_repo(upstream, "upstream checkout")
    downstream = check_repo(downstream, "downstream repository")
    base_sha, head_sha = rev_parse(upstream, base), rev_parse(upstream, head)
    up = config.upstream
    key = [str(CACHE_VERSION), str(upstream), base_sha, head_sha, str(downstream),
           rev_parse(downstream, "HEAD"), json.dumps(up.path_kinds), json.dumps(up.path_map),
           json.dumps(record_globs(config))]
    cache_file = _report_file(cache_dir, key)
    cached = _cached_report(cache_file)
    if cached is not None:
        return cached
    facts = analyse_range(upstream, base_sha, head_sha, up.path_kinds, up.path_map, cache_dir)
    if index is None:
        index = downstream_index(Project(downstream, config))
    elif not isinstance(index, HistoryIndex):
        index = index()
    view = Downstream(downstream, index, config)
    commits = _judge(facts, view, progress)
    logger.info("scanned %d upstream commits", len(commits))
    report = GapReport(upstream=str(upstream), downstream=str(downstream), base=base_sha,
                       head=head_sha, downstream_head=view.tree.sha, commits=commits)
    _save_report(cache_file, report)
    return report


def scan_commit(upstream: Path, downstream: Path, sha: str, config: PortwrightConfig, *,
                index: HistoryIndex | None = None, cache_dir: Path | None = None) -> CommitGap:
    """One upstream commit judged on its own (no range: no revert or replacement partner)."""
    upstream = check_repo(upstream, "upstream checkout")
    downstream = check_repo(downstream, "downstream repository")
    full = rev_parse(upstream, sha)
    parents = git(upstream, "rev-list", "--parents", "-n", "1", full).decode().split()[1:]
    up = config.upstream
    facts = analyse_range(upstream, parents[0] if parents else None, full, up.path_kinds,
                          up.path_map, cache_dir)
    index = index if index is not None else downstream_index(Project(downstream, config))
    fact = next(f for f in facts if f.sha == full)
    return _judge([fact], Downstream(downstream, index, config))[0]
