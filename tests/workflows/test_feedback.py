"""What the next agent step is told of failed gates."""

from __future__ import annotations

from pathlib import Path

from portwright.gates.models import GateResult
from portwright.workflows.steps import failures


def test_failed_gates_name_worktree_files_relative_to_it(tmp_path: Path) -> None:
    """A gate's output tail names files by where the host keeps the worktree (a traceback,
    a compiler's diagnostics); the implementer reads them relative to its worktree, so a
    retry's prompt is the same in any run folder (a replayed transcript still matches)."""
    root = tmp_path / "runs" / "wt"
    root.mkdir(parents=True)
    results = [
        GateResult(name="tests", passed=False, messages=[
            f'exited 1: File "{root}/test/normalize.py", line 69 / in {root}',
            f"see {root}-old/log and {tmp_path}/elsewhere"]),
        GateResult(name="lint", passed=True, messages=[f"{root}/ok.py: fine"]),
    ]
    text = failures(results, root)
    assert text == (
        'gate tests: exited 1: File "test/normalize.py", line 69 / in .\n'
        f"gate tests: see {root}-old/log and {tmp_path}/elsewhere")
    assert failures(results) == "\n".join(
        f"gate tests: {m}" for m in results[0].messages)
