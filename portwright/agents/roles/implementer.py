"""The implementer, in two modes that never mix.

``tests_only``: port the upstream tests of the slice; it may write test paths only.
``implementation_only``: make those tests pass; it may not touch test paths (so it
cannot weaken the tests it is measured by). The framework enforces both through the
workspace, and re-checks the result from git and the sandbox.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from pydantic import Field

from portwright.agents.prompting import Excerpt
from portwright.agents.results import ImplementerReport
from portwright.agents.roles.base import READ_TOOLS, Role, RoleContext
from portwright.agents.tools import Workspace

Mode = Literal["tests_only", "implementation_only"]


class ImplementerContext(RoleContext):
    """What the implementer is given."""

    mode: Mode
    """``tests_only`` or ``implementation_only``."""
    row: str
    """The parity row being ported."""
    spec: str
    """The committed spec of the row (surface table, slice, anchors)."""
    test_globs: list[str] = Field(min_length=1)
    """Downstream paths that are tests."""
    focused_tests: list[str] = Field(default_factory=list)
    """Test ids that must fail before and pass after (for implementation_only)."""
    last_failure: str = ""
    """Output of the last failing gate or test run, when retrying."""


def _confine(context: ImplementerContext, workspace: Workspace) -> Workspace:
    if context.mode == "tests_only":
        return dataclasses.replace(workspace, write_only=list(context.test_globs),
                                   write_never=[])
    return dataclasses.replace(workspace, write_only=None,
                               write_never=list(context.test_globs))


def _check(context: ImplementerContext, report: ImplementerReport,
           workspace: Workspace) -> list[str]:
    if report.mode != context.mode:
        return [f"this turn is {context.mode}, the report says {report.mode}"]
    return []


def sample(mode: Mode = "implementation_only") -> ImplementerContext:
    return ImplementerContext(
        rules_prose="<!-- AGENTS.md -->\n# Port rules\n\nFollow upstream semantics exactly.",
        mode=mode,
        row="| rope scaling | in-progress | specs/rope.md |",
        spec="## Surface\n| item | class |\n| mode: linear | ported |\n\n## Slice\nlinear only",
        test_globs=["tests/**"],
        focused_tests=["tests/test_rope.py::test_linear"],
        excerpts=[Excerpt(ref="upstream src/attn.py:1-2@0123456789ab",
                          text="     1\tdef rope_scaling(x):\n     2\t    return x * 2",
                          why="anchor of the slice")],
    )


ROLE: Role[ImplementerContext, ImplementerReport] = Role(
    name="implementer",
    template="implementer.j2",
    context=ImplementerContext,
    result=ImplementerReport,
    tools=(*READ_TOOLS, "write_file", "edit_file", "run_command"),
    check=_check,
    sample=sample,
    confine=_confine,
)
