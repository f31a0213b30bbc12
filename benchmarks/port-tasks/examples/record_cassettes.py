"""Re-record the replay cassettes of the bundled example tasks:
``benchmarks/port-tasks/cassettes/<task slug>.<mode>.jsonl``, one per task and mode.

``portwright eval run benchmarks/port-tasks/examples --replay benchmarks/port-tasks/cassettes``
plays the agents from these, with no model endpoint. They are fixtures, written by this
script: it builds the tasks' repositories (``build_repos.py``), serves a scripted model on
a local OpenAI-compatible endpoint and runs ``portwright eval run --record`` against it in
each mode (``../recording.py``, shared with the real pairs' recorder).

The scripted model answers each task from its reference port (the ``reference/<row>``
branch), the way a competent model would:

- cycle: the scripted porter (``tests/workflows/porter.py``): the gap is missing, every
  surface item ported, the tests written first (each test imports inside its function, so
  that it fails as a test before the implementation, not at collection), then the
  reference's implementation, and an approving review;
- loop: the reference port's files written, the tests run once (their output kept out of
  the transcript: only whether they passed), then ``done``.

    python benchmarks/port-tasks/examples/record_cassettes.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(ROOT))
from build_repos import build_repos  # noqa: E402
from recording import CASSETTES, MODEL, record, show  # noqa: E402

if TYPE_CHECKING:
    from portwright.agents.offline import ScriptedModel

PYTEST = "python3 -m pytest -q -p no:cacheprovider tests >/dev/null 2>&1 && echo green"
CMAKE = ("cmake -S . -B build >/dev/null 2>&1 && cmake --build build -j 2 >/dev/null 2>&1 "
         "&& ./build/test_rmsnorm >/dev/null 2>&1 && echo green")

PERCENTILE_TEST = '''import pytest


def test_percentile_interpolates_between_ranks():
    from pystats import percentile

    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([1, 2, 3, 4], 0) == 1
    assert percentile([1, 2, 3, 4], 100) == 4


def test_percentile_rejects_p_outside_0_100():
    from pystats import percentile

    with pytest.raises(ValueError):
        percentile([1], 101)
    with pytest.raises(ValueError):
        percentile([1], -1)
'''
"""The cycle's ported test of percentile: the reference adds its test to test_stats.py,
importing percentile at the top, which stops the collection of the whole file before the
implementation exists (a collection error is no red)."""

@dataclass(frozen=True)
class Example:
    """What the scripted model needs of one task besides its reference port."""

    repo: str
    """The downstream repository (``owner/name`` under the repos folder)."""
    command: str
    """The loop agent's test run."""
    evidence: str
    """The gap verdict's upstream reference at the pin, and what it shows."""
    detail: str
    tests: dict[str, str] = field(default_factory=dict)
    """The cycle's ported tests (default: the reference's test files)."""


TASKS = {
    "moving-average": Example("tinystats/pystats", PYTEST, "src/stats.js:1",
                              "stats.js at the pin: no movingAverage; upstream adds it "
                              "after the pin"),
    "percentile": Example("tinystats/pystats", PYTEST, "src/stats.js:1",
                          "stats.js at the pin: no percentile; upstream adds it after the pin",
                          tests={"tests/test_percentile.py": PERCENTILE_TEST}),
    "rmsnorm-fused-residual": Example("rmsnorm/rmsnorm-cpp", CMAKE, "rmsnorm/norm.py:1",
                                      "norm.py at the pin: rms_norm takes no residual"),
}
"""The rows of the bundled example tasks."""


def reference_files(repo: Path, row: str) -> tuple[dict[str, str], dict[str, str]]:
    """The files the reference port of ``row`` changes, as (tests, the rest)."""
    branch = f"reference/{row}"
    paths = subprocess.run(["git", "-C", str(repo), "diff", "--name-only", f"{branch}^",
                            branch], check=True, capture_output=True, text=True
                           ).stdout.split()
    files = {path: show(repo, branch, path) for path in paths}
    tests = {p: t for p, t in files.items() if p.startswith("tests/")}
    return tests, {p: t for p, t in files.items() if p not in tests}


def scripted_model(repos: Path) -> ScriptedModel:
    """The model that answers every task of the examples, in both modes."""
    from tests.eval.scripted import LoopPlan, both_modes, by_row
    from tests.workflows.porter import Plan

    models = {}
    for row, task in TASKS.items():
        tests, implementation = reference_files(repos / task.repo, row)
        cycle = Plan(
            gap={"status": "missing", "reasoning": f"upstream brings {row} after the pin, and "
                                                   "the port does not carry it",
                 "evidence": [{"kind": "upstream", "ref": task.evidence,
                               "detail": task.detail}]},
            answers={}, tests=task.tests or tests, implementation=implementation)
        loop = LoopPlan(files={**tests, **implementation}, commands=[task.command],
                        summary=f"Ported {row} from upstream with its tests; they pass.")
        models[row] = both_modes(cycle, loop, model=MODEL)
    return by_row(models, model=MODEL)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="eval-record-") as name:
        scratch = Path(name)
        build_repos(scratch / "repos")
        code = record([HERE], scratch / "repos", scripted_model(scratch / "repos"), scratch)
    for cassette in sorted(CASSETTES.glob("*.jsonl")):
        print(f"recorded {cassette.relative_to(ROOT)}")
    return code


if __name__ == "__main__":
    sys.exit(main())
