"""The gap verifier: does the port already carry an upstream behaviour?

The framework gathers the evidence first (symbol, literal and fixture search upstream at
the pin and downstream at HEAD and in history); the model weighs it and gives a
:class:`~portwright.agents.results.GapVerdict` whose evidence refs the framework can
re-check.
"""

from __future__ import annotations

import git
from pydantic import Field

from portwright.agents.evidence import render_row_evidence
from portwright.agents.prompting import Excerpt, cite_around
from portwright.agents.results import GapVerdict
from portwright.agents.roles.base import READ_TOOLS, Role, RoleContext
from portwright.evidence.gap import RowEvidence


class GapContext(RoleContext):
    """What the gap verifier is given."""

    symbols: list[str] = Field(min_length=1)
    """Symbols, literals or fixtures that identify the behaviour."""
    upstream_name: str
    """Display name of the upstream project."""
    pin: str
    """The upstream revision the port claims parity with."""
    row: str = ""
    """The parity row (matrix line) being verified, if any."""
    evidence: str = ""
    """What the framework's own search found, as text."""


def context_from_evidence(found: RowEvidence, upstream: git.Repo, *, rules_prose: str,
                          upstream_name: str, row: str = "", per_symbol: int = 5
                          ) -> GapContext:
    """The gap verifier's context from the framework's row evidence: the evidence as text and
    the upstream ranges (at the pin) around the first ``per_symbol`` hits of each symbol."""
    excerpts: list[Excerpt] = []
    for item in found.symbols:
        hits = [(loc.path, loc.line) for loc in item.upstream_at_pin[:per_symbol]]
        excerpts += cite_around(upstream, found.pin, hits, why=f"{item.symbol} at the pin")
    return GapContext(rules_prose=rules_prose, symbols=[s.symbol for s in found.symbols],
                      upstream_name=upstream_name, pin=found.pin, row=row,
                      evidence=render_row_evidence(found), excerpts=excerpts)


def _check(context: GapContext, verdict: GapVerdict) -> list[str]:
    if verdict.status == "landed" and not any(e.kind in ("downstream", "history")
                                               for e in verdict.evidence):
        return ["a landed verdict needs downstream or history evidence of the port"]
    return []


def sample() -> GapContext:
    return GapContext(
        rules_prose="<!-- AGENTS.md -->\n# Port rules\n\nFollow upstream semantics exactly.",
        symbols=["rope_scaling"],
        upstream_name="pyserve",
        pin="0123456789abcdef0123456789abcdef01234567",
        row="| rope scaling | missing | specs/rope.md |",
        evidence="upstream: src/attn.py:1 def rope_scaling(x)\ndownstream HEAD: no match\n"
                 "downstream history (-S rope_scaling): no commits",
        excerpts=[Excerpt(ref="upstream src/attn.py:1-2@0123456789ab",
                          text="     1\tdef rope_scaling(x):\n     2\t    return x * 2",
                          why="definition of rope_scaling")],
    )


ROLE: Role[GapContext, GapVerdict] = Role(
    name="gap_verifier",
    template="gap_verifier.j2",
    context=GapContext,
    result=GapVerdict,
    tools=(*READ_TOOLS, "gap_evidence"),
    check=_check,
    sample=sample,
)
