"""The enumerator: classify every candidate surface item of an upstream symbol.

The framework lists the candidates (syntax trees over upstream at the pin, the tests
that reference the symbol); the model classifies each one. A classification that skips
a candidate, invents one or classifies one twice is refused and answered back.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from portwright.agents.evidence import candidate_labels
from portwright.agents.prompting import Excerpt, cite_around
from portwright.agents.results import SurfaceClassification
from portwright.agents.roles.base import READ_TOOLS, Role, RoleContext
from portwright.agents.tools import Workspace
from portwright.evidence.surface import SurfaceReport


class EnumeratorContext(RoleContext):
    """What the enumerator is given."""

    symbol: str
    """The upstream symbol being ported."""
    pin: str
    """The upstream revision."""
    row: str = ""
    """The parity row, if any."""
    candidates: list[str] = Field(min_length=1)
    """The framework's candidate items; each must be classified exactly once."""
    questions: list[str] = Field(default_factory=list)
    """Questions the rules require every spec to answer (``[spec] questions``)."""
    feedback: str = ""
    """Why the last classification (or the spec made of it) was sent back."""


def context_from_surface(report: SurfaceReport, upstream: Path, *, rules_prose: str,
                         row: str = "", questions: list[str] | None = None,
                         feedback: str = "") -> EnumeratorContext:
    """The enumerator's context from the framework's surface report: one candidate per item,
    and the upstream ranges (at the report's revision) the items are anchored at."""
    hits: list[tuple[str, int]] = []
    for anchor in [report.definition, *(item.anchor for item in report.items)]:
        place = anchor.rsplit("@", 1)[0]
        path, _, line = place.rpartition(":")
        if path and line.isdigit():
            hits.append((path, int(line)))
    excerpts = cite_around(upstream, report.rev, hits, before=2, after=8,
                           why=f"surface of {report.symbol}")
    return EnumeratorContext(rules_prose=rules_prose, symbol=report.symbol, pin=report.rev,
                             row=row, candidates=candidate_labels(report), excerpts=excerpts,
                             questions=list(questions or []), feedback=feedback)


def _check(context: EnumeratorContext, result: SurfaceClassification,
           workspace: Workspace) -> list[str]:
    missing = [f"question not answered: {q}" for q in context.questions
               if not result.answers.get(q, "").strip()]
    return result.problems(context.candidates) + missing


def sample() -> EnumeratorContext:
    return EnumeratorContext(
        rules_prose="<!-- AGENTS.md -->\n# Port rules\n\nFollow upstream semantics exactly.",
        symbol="rope_scaling",
        pin="0123456789abcdef0123456789abcdef01234567",
        row="| rope scaling | missing | specs/rope.md |",
        candidates=["mode: linear", "mode: dynamic", "default: factor=1.0",
                    "error: factor <= 0", "test: tests/test_attn.py::test_rope"],
        excerpts=[Excerpt(ref="upstream src/attn.py:1-2@0123456789ab",
                          text="     1\tdef rope_scaling(x):\n     2\t    return x * 2",
                          why="definition")],
    )


ROLE: Role[EnumeratorContext, SurfaceClassification] = Role(
    name="enumerator",
    template="enumerator.j2",
    context=EnumeratorContext,
    result=SurfaceClassification,
    tools=(*READ_TOOLS, "surface_candidates"),
    check=_check,
    sample=sample,
)
