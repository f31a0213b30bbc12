"""The tinystats example (its ``moving-average`` row missing) built in tmp_path, and the
plans of agents that port that row well or badly. Test modules import the fixtures."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import docker_engine_running
from tests.eval.scripted import LoopPlan
from tests.workflows.porter import Plan

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "tinystats"))

from build import Example, build  # noqa: E402

from tests.examples.test_tinystats import MOVING_AVERAGE, MOVING_AVERAGE_TESTS  # noqa: E402

TESTS = "tests/test_moving_average.py"
RUN_TESTS = "python3 -m pytest -q -p no:cacheprovider tests"


@dataclass
class Tinystats:
    """The built example and the files of a correct port of its moving-average row."""

    example: Example
    implementation: dict[str, str]
    tests: dict[str, str]

    @property
    def repo(self) -> Path:
        return self.example.downstream

    def cycle_plan(self, tests: dict[str, str] | None = None) -> Plan:
        """The scripted porter of the row (``tests``: the tests it ports instead)."""
        return Plan(gap={"status": "missing",
                         "reasoning": "movingAverage landed upstream after the pin; pystats "
                                      "has no moving_average",
                         "evidence": [{"kind": "upstream", "ref": "src/stats.js:1",
                                       "detail": "stats.js, where movingAverage is added"}]},
                    answers={}, tests=tests if tests is not None else self.tests,
                    implementation=self.implementation)

    def oracle(self) -> LoopPlan:
        """A loop agent that ports the row correctly, tests first."""
        return LoopPlan(files={**self.tests, **self.implementation}, commands=[RUN_TESTS])


def port_files(example: Example) -> tuple[dict[str, str], dict[str, str]]:
    """The tests, then the implementation, of a correct port of moving-average."""
    package = example.downstream / "pystats"
    stats = (package / "stats.py").read_text() + MOVING_AVERAGE
    init = (package / "__init__.py").read_text().replace(
        "percentile\n", "moving_average, percentile\n").replace(
        '"percentile"]', '"moving_average", "percentile"]')
    return ({TESTS: MOVING_AVERAGE_TESTS},
            {"pystats/stats.py": stats, "pystats/__init__.py": init})


def build_tinystats(where: Path) -> Tinystats:
    """The example built under ``where``, with its row's correct port."""
    example = build(where / "example")
    tests, implementation = port_files(example)
    return Tinystats(example, implementation, tests)


def needs_engine() -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")
