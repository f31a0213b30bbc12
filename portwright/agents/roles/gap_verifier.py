"""The gap verifier: does the port already carry an upstream behaviour?

The framework gathers the evidence first (symbol, literal and fixture search upstream at
the pin and downstream at HEAD and in history); the model weighs it and gives a
:class:`~portwright.agents.results.GapVerdict` whose evidence refs the framework can
re-check.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field

from portwright.agents.evidence import render_row_evidence
from portwright.agents.prompting import Excerpt, cite_around
from portwright.agents.results import GapVerdict
from portwright.agents.roles.base import READ_TOOLS, Role, RoleContext
from portwright.agents.tools import Workspace
from portwright.errors import ToolError
from portwright.evidence.gap import RowEvidence
from portwright.evidence.names import variants
from portwright.vcs import plumbing


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


def context_from_evidence(found: RowEvidence, upstream: Path, *, rules_prose: str,
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


_REF = re.compile(r"^(?P<path>[^:\s]+):(?P<start>\d+)(?:-(?P<end>\d+))?$")
_SHA = re.compile(r"\b[0-9a-f]{7,40}\b")


def _check(context: GapContext, verdict: GapVerdict, workspace: Workspace) -> list[str]:
    """Re-establish every downstream and history ref the verdict cites.

    A downstream ref must be ``path:line[-line]`` inside the worktree whose lines name one
    of the symbols (in any casing a port might use); a history ref must name commits of
    the downstream repository whose change names one. A ``landed`` verdict needs at least
    one ref that holds.
    """
    spellings = {v.lower() for symbol in context.symbols
                 for v in variants(symbol.rpartition("::")[2])}  # `path::name`: its name
    problems: list[str] = []
    held = 0
    for item in verdict.evidence:
        if item.kind == "downstream":
            problem = _check_downstream(item.ref, spellings, workspace)
            held += problem is None and _REF.match(item.ref.strip()) is not None
        elif item.kind == "history":
            problem = None
            if _commit_names(item.ref, spellings, workspace.worktree):
                held += 1
            elif workspace.upstream is None or not _commit_names(item.ref, spellings,
                                                                 workspace.upstream):
                problem = (f"history ref {item.ref!r}: no commit there (downstream or "
                           "upstream) changes the symbol" if _SHA.search(item.ref)
                           else f"history ref {item.ref!r} names no commit sha")
        else:
            continue
        if problem is not None:
            problems.append(problem)
    if verdict.status == "landed" and not held:
        problems.append("a landed verdict needs downstream evidence (path:line that names the "
                        "symbol) or history evidence (a downstream commit that changes it)")
    return problems


def _check_downstream(ref: str, spellings: set[str], workspace: Workspace) -> str | None:
    match = _REF.match(ref.strip())
    if match is None:
        if ref.strip() in {"HEAD", "none", "-"}:
            return None  # an absence, not a citation
        return f"downstream ref {ref!r} is not path:line or path:start-end"
    try:
        lines = workspace.read_text(match["path"]).splitlines()
    except ToolError as exc:
        return f"downstream ref {ref!r}: {exc}"
    start = int(match["start"])
    end = int(match["end"] or start)
    if not 1 <= start <= end <= len(lines):
        return f"downstream ref {ref!r}: the file has {len(lines)} lines"
    cited = "\n".join(lines[start - 1:end]).lower()
    if not any(spelling in cited for spelling in spellings):
        return f"downstream ref {ref!r}: those lines do not name the symbol"
    return None


def _commit_names(ref: str, spellings: set[str], repo_path: Path) -> bool:
    """Whether one of the commits ``ref`` names, in ``repo_path``, changes a spelling."""
    plumbing.check_repo(repo_path)
    for sha in _SHA.findall(ref):
        done = plumbing.run(repo_path, "show", "--format=%B", "--no-color", sha)
        if done.returncode != 0:
            continue
        patch = done.stdout.decode("utf-8", "surrogateescape").lower()
        if any(spelling in patch for spelling in spellings):
            return True
    return False


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
