"""Carrying a port run's branch into the sync's branch.

Port runs work in parallel from the same base, so each appends to the ledger and rewrites
its own matrix row: git sees those as conflicts when two of them touch neighbouring lines.
Those records are portwright's own, and it merges them itself: the sync's side is kept and
the port's record changes are applied to it again (ledger and inventory rows it added, the
status and spec of each matrix row it changed). A conflict in anything else (code, tests,
a spec) is a real one: the merge is abandoned and the caller is told which paths.
"""

from __future__ import annotations

import logging
import posixpath
from pathlib import Path

from portwright.config import PortwrightConfig
from portwright.globs import match_any
from portwright.parity._files import read_text, write_text
from portwright.parity.matrix import rows_of_text, update_row
from portwright.project import record_globs
from portwright.vcs import plumbing
from portwright.vcs.worktree import commit_step, find_step

logger = logging.getLogger(__name__)

__all__ = ["merge_port"]


def merge_port(root: Path, config: PortwrightConfig, *, sync_id: str, run_id: str,
               branch: str, base: str) -> list[str]:
    """Merge ``branch`` (a port run's) into the sync's worktree at ``root`` as the step
    ``merge-<run_id>``; returns the paths that conflict for real (nothing merged then)."""
    step = f"merge-{run_id}"
    if find_step(root, sync_id, step) is not None:
        return []
    done = plumbing.run(root, "merge", "--no-ff", "--no-commit", "--no-edit", branch)
    conflicted = _conflicted(root)
    if done.returncode != 0 and not conflicted:
        plumbing.run(root, "merge", "--abort")
        return [done.stderr.decode("utf-8", "replace").strip() or "git merge failed"]
    records = record_globs(config)
    matrices = list(config.artifacts.matrices)
    real = [p for p in conflicted if not match_any(p, records)
            or (not match_any(p, matrices) and not _is_table_file(p, config))]
    if real:
        plumbing.run(root, "merge", "--abort")
        return real
    for path in conflicted:
        plumbing.git(root, "checkout", "--ours", "--", path)
        if match_any(path, matrices):
            _reapply_rows(root, config, path, base, branch)
        else:
            _reapply_lines(root, path, base, branch)
        plumbing.git(root, "add", "--", path)
    commit_step(root, sync_id, step, f"sync: carry {branch}", allow_empty=True)
    return []


def _conflicted(root: Path) -> list[str]:
    out = plumbing.git(root, "diff", "--name-only", "--diff-filter=U", "-z")
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def _is_table_file(path: str, config: PortwrightConfig) -> bool:
    return posixpath.normpath(path) in {posixpath.normpath(config.artifacts.ledger),
                                        posixpath.normpath(config.artifacts.inventory)}


def _text_at(root: Path, rev: str, path: str) -> str:
    data = plumbing.show(root, rev, path)
    return "" if data is None else data.decode("utf-8", "replace")


def _reapply_lines(root: Path, path: str, base: str, branch: str) -> None:
    """Table rows the port added to a ledger or inventory, appended after our last row."""
    before = set(_text_at(root, base, path).splitlines())
    added = [line for line in _text_at(root, branch, path).splitlines()
             if line.startswith("|") and line not in before]
    file = root / path
    lines = read_text(file).splitlines()
    new = [line for line in added if line not in lines]
    if not new:
        return
    last = max((i for i, line in enumerate(lines) if line.startswith("|")), default=len(lines) - 1)
    lines[last + 1:last + 1] = new
    write_text(root, file, "\n".join(lines) + "\n")


def _reapply_rows(root: Path, config: PortwrightConfig, path: str, base: str,
                  branch: str) -> None:
    """Matrix rows whose status or spec the port changed, changed again on our side."""
    statuses = config.artifacts.statuses
    old = {r.id: r for r in rows_of_text(_text_at(root, base, path), root / path, path,
                                         statuses)}
    for row in rows_of_text(_text_at(root, branch, path), root / path, path, statuses):
        was = old.get(row.id)
        if was is None or (was.status, was.spec) == (row.status, row.spec):
            continue
        update_row(root, config, row.id, status=row.status if row.status != was.status
                   else None, spec=row.spec if row.spec != was.spec and row.spec else None)
