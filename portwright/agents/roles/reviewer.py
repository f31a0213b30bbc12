"""The fresh reviewer: judges the change from the spec, the diff, the evidence and the
rules — never from the implementer's transcript.

Its context model has no place for another role's messages, and
:meth:`~portwright.agents.roles.base.Role.run` checks, before the first call, that none
of the messages passed as ``forbidden`` (the implementer's) reached it.
"""

from __future__ import annotations

from portwright.agents.prompting import Excerpt
from portwright.agents.results import ReviewVerdict
from portwright.agents.roles.base import READ_TOOLS, Role, RoleContext


class ReviewerContext(RoleContext):
    """What the reviewer is given (and nothing else)."""

    row: str
    """The parity row the change ports."""
    spec: str
    """The committed spec of the row."""
    diff: str
    """The change, as the framework computed it from git."""
    evidence: str
    """The framework's evidence: red/green records, gate results."""


def _check(context: ReviewerContext, verdict: ReviewVerdict) -> list[str]:
    changed = {line[6:] for line in context.diff.splitlines() if line.startswith("+++ b/")}
    return [f"finding on {f.path}, which the diff does not change" for f in verdict.findings
            if changed and f.path not in changed]


def sample() -> ReviewerContext:
    return ReviewerContext(
        rules_prose="<!-- AGENTS.md -->\n# Port rules\n\nFollow upstream semantics exactly.",
        row="| rope scaling | in-progress | specs/rope.md |",
        spec="## Slice\nlinear rope scaling",
        diff="--- a/lib/attn.cpp\n+++ b/lib/attn.cpp\n@@ -1 +1,2 @@\n int other();\n"
             "+double rope_scaling(double x) { return x * 2; }\n",
        evidence="red: tests/test_rope.py::test_linear failed (exit 1) at 1a2b3c\n"
                 "green: passed at 4d5e6f\nfull gate: 3/3 passed",
        excerpts=[Excerpt(ref="upstream src/attn.py:1-2@0123456789ab",
                          text="     1\tdef rope_scaling(x):\n     2\t    return x * 2",
                          why="anchor")],
    )


ROLE: Role[ReviewerContext, ReviewVerdict] = Role(
    name="reviewer",
    template="reviewer.j2",
    context=ReviewerContext,
    result=ReviewVerdict,
    tools=READ_TOOLS,
    check=_check,
    sample=sample,
)
