"""The structured results the roles give; the framework checks them before using them."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class Evidence(_Result):
    """One observation a verdict rests on."""

    kind: Literal["upstream", "downstream", "history", "test", "note"]
    """Where it was seen: upstream at the pin, downstream HEAD, git history, a test, a note."""
    ref: str = Field(min_length=1)
    """``path:start-end`` (upstream at the pin or downstream), or a commit sha."""
    detail: str = Field(min_length=1)
    """What is there and why it matters."""


class GapStatus(StrEnum):
    """Whether the port carries an upstream behaviour."""

    MISSING = "missing"
    PARTIAL = "partial"
    LANDED = "landed"
    STALE = "stale"


class GapVerdict(_Result):
    """The gap verifier's verdict on one row or upstream change."""

    status: GapStatus
    """``missing`` (not in the port), ``partial`` (some of it), ``landed`` (all of it),
    ``stale`` (the port has it, but an older upstream version of it)."""
    reasoning: str = Field(min_length=1)
    """Why, in a few sentences, citing the evidence."""
    evidence: list[Evidence] = Field(min_length=1)
    """The observations the verdict rests on (at least one)."""
    missing_parts: list[str] = Field(default_factory=list)
    """For ``partial`` / ``stale``: what the port still lacks."""

    @model_validator(mode="after")
    def _parts_for_partial(self) -> GapVerdict:
        if self.status in (GapStatus.PARTIAL, GapStatus.STALE) and not self.missing_parts:
            raise ValueError(f"a {self.status} verdict must list missing_parts")
        return self


class ItemClass(StrEnum):
    PORTED = "ported"
    DEFERRED = "deferred"
    NOT_APPLICABLE = "not_applicable"


class SurfaceItem(_Result):
    """One classified surface item."""

    item: str = Field(min_length=1)
    """The candidate item, exactly as the framework listed it."""
    classification: ItemClass
    """``ported`` (in this slice), ``deferred`` (later), ``not_applicable`` (never)."""
    reason: str = ""
    """Why (required for ``deferred`` and ``not_applicable``)."""

    @model_validator(mode="after")
    def _reason_for_deferral(self) -> SurfaceItem:
        if self.classification is not ItemClass.PORTED and not self.reason.strip():
            raise ValueError(f"{self.item}: a {self.classification} item needs a reason")
        return self


class SurfaceClassification(_Result):
    """The enumerator's classification of every candidate surface item."""

    items: list[SurfaceItem] = Field(min_length=1)
    """Every candidate item, each classified once."""
    slice: str = Field(min_length=1)
    """The slice this run ports, in one or two sentences."""
    answers: dict[str, str] = Field(default_factory=dict)
    """Answers to the questions the spec must answer (dtypes, memory formats), by question."""

    def problems(self, candidates: list[str]) -> list[str]:
        """What is wrong against the framework's candidate list (empty when complete)."""
        given = [i.item for i in self.items]
        out = [f"candidate not classified: {c}" for c in candidates if c not in given]
        out += [f"not a candidate: {g}" for g in given if g not in candidates]
        out += [f"classified twice: {g}" for g in sorted(set(given)) if given.count(g) > 1]
        return out


class ImplementerReport(_Result):
    """What the implementer says it did; the framework re-checks it from git and the sandbox."""

    mode: Literal["tests_only", "implementation_only"]
    """Which half of the work this turn did."""
    summary: str = Field(min_length=1)
    """What changed and why."""
    files: list[str] = Field(default_factory=list)
    """Files written or edited."""
    tests: list[str] = Field(default_factory=list)
    """Focused test ids that cover the change."""
    upstream_refs: list[str] = Field(default_factory=list)
    """Upstream ``path:start-end`` ranges the change follows."""
    notes: str = ""
    """Adaptations, open questions."""


class Severity(StrEnum):
    BLOCKER = "blocker"
    MAJOR = "major"
    MINOR = "minor"
    NIT = "nit"


class Finding(_Result):
    """One review finding, at a place in the change."""

    path: str = Field(min_length=1)
    """File of the downstream change."""
    line: int = Field(ge=1)
    """Line in that file."""
    severity: Severity
    """``blocker`` / ``major`` (must change), ``minor`` / ``nit`` (may)."""
    message: str = Field(min_length=1)
    """What is wrong and what to do."""


class ReviewVerdict(_Result):
    """The fresh reviewer's verdict."""

    decision: Literal["approve", "changes_requested"]
    """``approve`` or ``changes_requested``."""
    summary: str = Field(min_length=1)
    """The review in a few sentences."""
    findings: list[Finding] = Field(default_factory=list)
    """Findings with file:line and severity."""

    @model_validator(mode="after")
    def _findings_for_changes(self) -> ReviewVerdict:
        blocking = [f for f in self.findings if f.severity in (Severity.BLOCKER, Severity.MAJOR)]
        if self.decision == "changes_requested" and not blocking:
            raise ValueError("changes_requested needs at least one blocker or major finding")
        if self.decision == "approve" and blocking:
            raise ValueError("an approval cannot carry blocker or major findings")
        return self
