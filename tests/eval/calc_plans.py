"""The scripted agents of the calc pair (tests/eval/conftest.py): the cycle's porter, a loop
oracle, and a loop agent that weakens the test and breaks the code."""

from __future__ import annotations

from pathlib import Path

from portwright.eval.tasks import Suite, load_suite
from tests.eval.conftest import DOWN_V2, TEST_SUB, Pair, build_pair, task_toml
from tests.eval.scripted import LoopPlan
from tests.workflows.porter import Plan

QUIET_TESTS = "python3 -m pytest -q -p no:cacheprovider tests >/dev/null && echo green"
"""The loop agent's test run, its answer the same every time (no timings)."""


def calc_suite(where: Path) -> tuple[Pair, Suite]:
    """The calc pair built under ``where`` (``where/repos``) and a suite of its one task."""
    pair = build_pair(where / "repos")
    (where / "suite").mkdir()
    (where / "suite" / "sub.toml").write_text(task_toml(pair), encoding="utf-8")
    return pair, load_suite(where / "suite")


PORTED_TEST = "def test_sub():\n    from calc import sub\n\n    assert sub(3, 2) == 1\n"
"""The cycle's ported test: the import inside, so that it fails as a test (a red) rather
than stopping the collection."""


def cycle_plan(tests: dict[str, str] | None = None) -> Plan:
    return Plan(gap={"status": "missing", "reasoning": "sub exists upstream only",
                     "evidence": [{"kind": "upstream", "ref": "src/calc.js:4-6",
                                   "detail": "function sub(a, b)"}]},
                answers={}, tests=tests or {"tests/test_sub.py": PORTED_TEST},
                implementation={"calc.py": DOWN_V2})


ORACLE = LoopPlan(files={"tests/test_sub.py": TEST_SUB, "calc.py": DOWN_V2},
                  commands=[QUIET_TESTS])
WEAKENER = LoopPlan(
    files={"tests/test_sub.py": "import pytest\n\n\n@pytest.mark.skip('later')\n"
                                "def test_sub():\n    assert False\n",
           "calc.py": DOWN_V2.replace("return a - b", "return b - a")},
    commands=[QUIET_TESTS], summary="Ported sub; every test passes.")
