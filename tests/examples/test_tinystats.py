"""The bundled example: reproducible repos, a consistent port, and the demo end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import docker_engine_running

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "tinystats"))

from build import Example, build  # noqa: E402


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_build_is_reproducible(tmp_path: Path) -> None:
    first, second = build(tmp_path / "a"), build(tmp_path / "b")
    assert first.pin == second.pin
    assert git(first.upstream, "rev-parse", "HEAD") == git(second.upstream, "rev-parse", "HEAD")
    assert git(first.downstream, "rev-parse", "HEAD") == git(second.downstream,
                                                             "rev-parse", "HEAD")


def test_pin_is_three_commits_behind_upstream(tmp_path: Path) -> None:
    example = build(tmp_path)
    behind = git(example.upstream, "rev-list", "--count", f"{example.pin}..HEAD")
    assert behind == "3"
    assert example.pin in (example.downstream / "upstream-sync.md").read_text()


def test_build_refuses_to_overwrite(tmp_path: Path) -> None:
    build(tmp_path)
    with pytest.raises(FileExistsError):
        build(tmp_path)


def test_downstream_tests_pass_at_head(tmp_path: Path) -> None:
    example: Example = build(tmp_path)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests"], cwd=example.downstream, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 passed" in done.stdout


MOVING_AVERAGE = '''

WINDOW_MODES = ("trailing", "centered")


def moving_average(values, window_size=3, *, mode="trailing", min_periods=None):
    """Mean of each window over ``values`` (None where the window holds fewer than
    ``min_periods`` values, by default ``window_size``)."""
    if isinstance(window_size, bool) or not isinstance(window_size, int) or window_size < 1:
        raise ValueError("moving_average: window_size must be a positive integer")
    if mode not in WINDOW_MODES:
        raise TypeError(f"moving_average: unknown mode {mode}")
    need = window_size if min_periods is None else min_periods
    out = []
    for i in range(len(values)):
        start, end = i - window_size + 1, i + 1
        if mode == "centered":
            start = i - window_size // 2
            end = start + window_size
        window = values[max(start, 0):min(end, len(values))]
        out.append(mean(window) if len(window) >= need else None)
    return out
'''

MOVING_AVERAGE_TESTS = '''import pytest


def test_moving_average_trailing_window():
    from pystats import moving_average

    assert moving_average([1, 2, 3, 4], 2) == [None, 1.5, 2.5, 3.5]


def test_moving_average_centered_window_with_min_periods():
    from pystats import moving_average

    assert moving_average([1, 2, 3, 4], 3, mode="centered", min_periods=2) == [1.5, 2, 3, 3.5]


def test_moving_average_rejects_a_bad_window_and_mode():
    from pystats import moving_average

    with pytest.raises(ValueError):
        moving_average([1], 0)
    with pytest.raises(TypeError):
        moving_average([1], 2, mode="leading")
'''


@pytest.mark.docker
@pytest.mark.slow
def test_the_cycle_ports_moving_average(tmp_path: Path) -> None:
    """The whole port cycle on the tinystats row the matrix calls missing: JavaScript's
    movingAverage becomes Python's moving_average, red before green, in the sandbox."""
    if not docker_engine_running():
        pytest.skip("needs a running Docker engine (make engine)")
    from portwright.project import Project
    from portwright.runs.models import EvidenceKind
    from portwright.workflows import driver
    from portwright.workflows.state import RunStatus
    from tests.workflows.porter import Plan, porter

    example = build(tmp_path)
    package = example.downstream / "pystats"
    stats = (package / "stats.py").read_text() + MOVING_AVERAGE
    init = (package / "__init__.py").read_text().replace(
        "percentile\n", "moving_average, percentile\n").replace(
        '"percentile"]', '"moving_average", "percentile"]')
    plan = Plan(gap={"status": "missing", "reasoning": "movingAverage landed upstream after "
                                                       "the pin; pystats has no moving_average",
                     "evidence": [{"kind": "upstream", "ref": "src/stats.js:1",
                                   "detail": "stats.js, where movingAverage is added"}]},
                answers={}, tests={"tests/test_moving_average.py": MOVING_AVERAGE_TESTS},
                implementation={"pystats/stats.py": stats, "pystats/__init__.py": init})
    project = Project.load(example.downstream, at="HEAD")
    result = driver.start(project, "moving-average", lambda event: None, run_id="ma",
                          client=porter(plan))
    assert result.status is RunStatus.DONE, result.values["reason"]
    store = project.store("ma")
    red = store.records(EvidenceKind.RED)[-1]
    assert sorted(red.tests_failed) == [
        "tests/test_moving_average.py::test_moving_average_centered_window_with_min_periods",
        "tests/test_moving_average.py::test_moving_average_rejects_a_bad_window_and_mode",
        "tests/test_moving_average.py::test_moving_average_trailing_window"]
    assert store.records(EvidenceKind.GREEN)[-1].passed
    matrix = git(example.downstream, "show", f"{result.values['branch']}:docs/parity/"
                                            "functions.md")
    assert "| moving-average | Moving average, trailing and centered | ported |" in matrix
