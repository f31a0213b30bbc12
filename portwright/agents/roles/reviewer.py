"""The fresh reviewer: judges the change from the spec, the diff, the evidence, the tamper
flags and the rules — never from the implementer's transcript.

Its context model has no place for another role's messages, and
:meth:`~portwright.agents.roles.base.Role.run` checks, before the first call, that none
of the messages passed as ``forbidden`` (the implementer's) reached it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from portwright.agents.prompting import Excerpt
from portwright.agents.results import ReviewVerdict
from portwright.agents.roles.base import READ_TOOLS, Role, RoleContext
from portwright.agents.tools import Workspace
from portwright.errors import RepositoryError, RevisionError
from portwright.gates.tamper import TamperFlag, has_rules, tamper_flags
from portwright.globs import match_any
from portwright.rules import Rules
from portwright.vcs import plumbing


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
    tamper_flags: list[TamperFlag] = Field(default_factory=list)
    """Lines of the change outside the tests that reach into the test runner or its
    reporting (:mod:`portwright.gates.tamper`), for the reviewer to judge."""


def change_since(worktree: Path, base: str, *, text: bool = False,
                 paths: Sequence[str] | None = None) -> tuple[str, list[str]]:
    """The diff of the worktree against ``base`` (new untracked files included) and the
    changed paths, computed from git alone; the index is left as it is. ``text`` shows
    every file as text, whatever ``.gitattributes`` says; ``paths`` limits both to those."""
    if paths is not None and not paths:
        return "", []
    limit = ["--", *paths] if paths is not None else []
    change = _changed(worktree, base, limit)
    return (_diff(worktree, change, text=text, limit=limit, untracked=change.untracked),
            [*change.tracked, *change.untracked])


@dataclass(frozen=True)
class _Change:
    base: str
    sha: str
    """The commit ``base`` names."""
    tracked: list[str]
    """Tracked paths that differ from ``sha`` (deleted ones included)."""
    untracked: list[str]
    """New files, sorted (ignored ones excepted)."""


def _changed(worktree: Path, base: str, limit: list[str]) -> _Change:
    plumbing.check_repo(worktree, "worktree")
    sha = plumbing.rev_parse(worktree, base)
    try:
        names = _text(plumbing.git(worktree, "diff", sha, "--name-only", "--no-renames", "-z",
                                   *limit))
        untracked = _text(plumbing.git(worktree, "ls-files", "--others", "--exclude-standard",
                                       "-z", *limit))
    except RepositoryError as exc:
        raise RevisionError(f"cannot diff the worktree against {base}", file=worktree,
                            fix="pass a revision of this repository") from exc
    return _Change(base, sha, [p for p in names.split("\0") if p],
                   sorted(p for p in untracked.split("\0") if p))


def _diff(worktree: Path, change: _Change, *, text: bool, limit: list[str],
          untracked: list[str]) -> str:
    """The diff of the worktree against the change's base (limited by the pathspecs of
    ``limit``), then each file of ``untracked`` shown as new."""
    options = ["--no-color", "--no-ext-diff", "--no-textconv", *(["--text"] if text else [])]
    try:
        diff = _text(plumbing.git(worktree, "diff", change.sha, *options, *limit))
    except RepositoryError as exc:
        raise RevisionError(f"cannot diff the worktree against {change.base}", file=worktree,
                            fix="pass a revision of this repository") from exc
    pieces = [diff] if diff else []
    for path in untracked:
        # exit status 1 means "they differ", the normal case here
        pieces.append(_text(plumbing.run(worktree, "diff", "--no-index", *options, "--",
                                         "/dev/null", path).stdout))
    return "\n".join(pieces)


def _text(out: bytes) -> str:
    """git's output as text, its last newline dropped (the pieces are joined with one)."""
    return out.removesuffix(b"\n").decode("utf-8", "surrogateescape")


def context_from_change(worktree: Path, base: str, *, rules: Rules, row: str, spec: str,
                        evidence: str, tests: Sequence[str],
                        excerpts: Sequence[Excerpt] = ()) -> ReviewerContext:
    """The reviewer's fresh context: the spec, the diff git shows, the framework's evidence,
    the tamper flags of the change outside ``tests`` (globs) and the rules that apply to the
    changed paths. Nothing of the implementer's turn."""
    change = _changed(worktree, base, [])  # one look at the index for both diffs
    diff = _diff(worktree, change, text=False, limit=[], untracked=change.untracked)
    paths = [*change.tracked, *change.untracked]
    scanned = [p for p in paths if has_rules(p) and not match_any(p, tests)]
    chosen = set(scanned)
    flags = tamper_flags(_diff(
        worktree, change, text=True, limit=["--", *scanned],
        untracked=[p for p in change.untracked if p in chosen]) if scanned else "")
    return ReviewerContext(rules_prose=rules.prose_for(paths), row=row, spec=spec, diff=diff,
                           evidence=evidence, tamper_flags=flags, excerpts=list(excerpts))


def _check(context: ReviewerContext, verdict: ReviewVerdict, workspace: Workspace) -> list[str]:
    changed = {line[6:] for line in context.diff.splitlines()
               if line.startswith(("+++ b/", "--- a/"))}
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
