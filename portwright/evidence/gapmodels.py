"""The data of a gap scan: per-commit answers, their evidence, and a row's evidence.

Public API: ``Verdict``, ``SignalKind``, ``Strength``, ``ChangedFile``, ``Evidence``,
``CommitGap``, ``GapReport``, ``SymbolEvidence``, ``RowEvidence`` (all pydantic, ``extra``
forbidden).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from portwright.evidence.history import CountChange
from portwright.evidence.lookup import Location


class Verdict(StrEnum):
    NOT_APPLICABLE = "not_applicable"
    LANDED = "landed"
    PARTIAL = "partial"
    MISSING = "missing"
    UNCERTAIN = "uncertain"
    """The scan cannot decide (behaviour with no signal a port keeps, or signals that
    disagree): the gap-verifier decides, from the evidence listed."""


SignalKind = Literal["name", "literal", "test", "fixture", "file", "removal"]
Strength = Literal["strong", "medium", "weak"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChangedFile(_Model):
    """One file an upstream commit changed."""

    path: str
    """Upstream path after the change."""
    kind: str
    """``source``, ``tests``, or a kind a port does not carry (see
    :mod:`portwright.pathkinds`)."""
    status: str
    """``A`` added, ``M`` modified, ``D`` deleted, ``R`` renamed."""
    added_lines: int
    """Lines added."""
    removed_lines: int
    """Lines removed."""
    old_path: str | None = None
    """Path before a rename (or the deleted file a new one replaces)."""
    downstream_path: str | None = None
    """The path through ``upstream.path_map``, when a prefix matched."""
    no_behaviour: str | None = None
    """Why the change to this source or tests file has no behaviour (comments, formatting,
    module syntax, renamed locals), or None."""


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
    strength: Strength = "medium"
    """How much the answer weighs: ``strong`` (identical fixture, the upstream's previous text
    still downstream, a new API name), ``medium``, ``weak`` (a name a port may well spell
    otherwise)."""
    superseded_by: str | None = None
    """A later upstream commit in the range that replaced this signal; it is not counted."""
    origin: Literal["source", "tests"] = "source"
    """Whether the signal comes from the upstream's code or from its tests."""


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
    """New string and regex literals."""
    tests: list[str] = Field(default_factory=list)
    """Test cases it declares."""
    fixtures: list[str] = Field(default_factory=list)
    """Data fixture files it added or changed."""
    verdict: Verdict
    """Candidate verdict, for the gap-verifier to confirm."""
    confidence: float
    """0..1: how often a verdict given with this confidence is right."""
    reason: str
    """The verdict in one sentence."""
    evidence: list[Evidence] = Field(default_factory=list)
    """One entry per signal searched."""
    related: list[str] = Field(default_factory=list)
    """Other commits of the range the verdict rests on (a revert, a later replacement)."""


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
    """Upstream commits in ``pin..HEAD`` that change its count (``git log -S``), or, for a
    single file, that change the file under any of its names (``git log --follow``)."""
    upstream_touches: list[str] = Field(default_factory=list)
    """Upstream commits in ``pin..HEAD`` that add or remove a line naming it as a whole word
    (``git log -G``): changes of a call's arguments included."""
    renamed_from: list[str] = Field(default_factory=list)
    """Earlier paths of a file symbol, newest first (the renames ``--follow`` crossed)."""
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
