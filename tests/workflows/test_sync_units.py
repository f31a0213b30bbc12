"""The sync's deterministic parts on their own: the verdicts a confirmation may give, the
matrix row that covers an upstream commit, the priority order of open rows."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from portwright.errors import ParityFileError
from portwright.evidence.confirm import allowed_verdicts, why_not
from portwright.evidence.gapmodels import ChangedFile, CommitGap, Evidence, Verdict
from portwright.parity.matrix import MatrixRow, by_priority, parse_priority, rows_of_text
from portwright.workflows.sync_confirm import covering_row
from tests.conftest import GitRepo
from tests.workflows.sync_world import build_sync_world


def signal(carried: bool, strength: str = "medium", superseded: str | None = None
           ) -> Evidence:
    return Evidence.model_validate({
        "signal": "alloc", "kind": "name", "upstream_anchor": "kv/cache.py:4@abc",
        "where": "head" if carried else "absent", "carried": carried, "strength": strength,
        "superseded_by": superseded})


def commit(*evidence: Evidence, files: list[str] | None = None,
           added: list[str] | None = None) -> CommitGap:
    return CommitGap(sha="a" * 40, subject="s", kinds=["source"], verdict=Verdict.UNCERTAIN,
                     confidence=0.5, reason="r", evidence=list(evidence), added=added or [],
                     files=[ChangedFile(path=p, kind="source", status="M", added_lines=1,
                                        removed_lines=1) for p in files or []])


@pytest.mark.parametrize(("evidence", "allowed"), [
    ((), ["missing"]),
    ((signal(False, "strong"),), ["missing"]),
    ((signal(True),), ["missing", "partial", "landed"]),
    ((signal(True), signal(False, "weak")), ["missing", "partial", "landed"]),
    ((signal(True), signal(False, "strong")), ["missing", "partial"]),
    ((signal(True, superseded="b" * 40),), ["missing"]),
])
def test_the_evidence_bounds_a_confirmation(evidence: tuple[Evidence, ...],
                                             allowed: list[str]) -> None:
    assert [v.value for v in allowed_verdicts(commit(*evidence))] == allowed


def test_not_applicable_is_never_an_agents_call() -> None:
    reason = why_not(commit(signal(True)), Verdict.NOT_APPLICABLE)
    assert reason is not None
    assert "scan" in reason
    assert "found none" in (why_not(commit(), Verdict.LANDED) or "")


def _row(row_id: str, upstream: list[str], priority: int | None = None) -> MatrixRow:
    return MatrixRow(id=row_id, title="", status="missing", spec=None, upstream=upstream,
                     notes="", priority=priority, file="m.md", line=1)


def test_a_commit_is_ported_by_the_row_that_names_what_it_changed() -> None:
    rows = [_row("a", ["kv/cache.py", "alloc"]), _row("b", ["`evict_oldest`"]),
            _row("c", ["kv/"])]
    assert covering_row(commit(files=["kv/cache.py"]), rows) == rows[0]
    assert covering_row(commit(files=["x/evict.py"], added=["evict_oldest"]), rows) == rows[1]
    assert covering_row(commit(files=["kv/other.py"]), rows) == rows[2]
    assert covering_row(commit(files=["docs/x.md"]), rows) is None


def test_priority_column_orders_open_rows() -> None:
    text = ("| id | status | priority |\n| --- | --- | --- |\n| a | missing | |\n"
            "| b | missing | P2 |\n| c | missing | high |\n| d | missing | 0 |\n"
            "| e | missing | - |\n")
    rows = rows_of_text(text, Path("m.md"), "m.md", ["missing"])
    assert [r.priority for r in rows] == [None, 2, 1, 0, None]
    assert [r.id for r in by_priority(rows)] == ["d", "c", "b", "a", "e"]
    with pytest.raises(ParityFileError, match="unknown priority 'soon'"):
        parse_priority("soon", Path("m.md"), 3)


def test_run_next_takes_open_rows_by_priority(make_repo: Callable[[str], GitRepo]) -> None:
    from portwright.cli.runs import next_open_rows
    from portwright.project import Project

    world = build_sync_world(make_repo)
    project = Project.load(world.repo, at="HEAD")
    assert next_open_rows(project, 5) == ["kv-evict", "kv-cache"]  # kv-util is ported
    assert next_open_rows(project, 1) == ["kv-evict"]
    both = subprocess.run([sys.executable, "-m", "portwright", "-C", str(world.repo), "run",
                           "kv-cache", "--next", "1"], capture_output=True, text=True,
                          timeout=120)
    assert both.returncode == 2
    assert "--next" in both.stderr
