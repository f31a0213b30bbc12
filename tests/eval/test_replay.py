"""``portwright eval run`` on the bundled example tasks, in both modes, end to end in Docker,
the agents played from the recorded cassettes (``benchmarks/port-tasks/cassettes``, the
examples' written by ``examples/record_cassettes.py`` through the real openai SDK): no model
endpoint, two tasks at a time, then ``eval compare`` on the two reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from portwright.eval.results import EvalReport, Mode
from portwright.eval.tasks import load_suite
from tests.eval.test_run_cli import eval_run
from tests.eval.tinystats import needs_engine

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "benchmarks" / "port-tasks" / "examples"
CASSETTES = EXAMPLES.parent / "cassettes"
sys.path.insert(0, str(EXAMPLES))

from build_repos import build_repos  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800)]


def test_every_task_has_a_cassette_per_mode() -> None:
    tasks = load_suite(EXAMPLES.parent).tasks  # the whole bundled suite, examples and all
    assert sorted(p.name for p in CASSETTES.glob("*.jsonl")) == sorted(
        f"{t.slug}.{m.value}.jsonl" for t in tasks for m in Mode)


def test_both_modes_on_the_bundled_suite_from_the_cassettes(tmp_path: Path) -> None:
    needs_engine()
    build_repos(tmp_path / "repos")
    out = tmp_path / "somewhere" / "out"  # not where they were recorded
    reports: dict[str, EvalReport] = {}
    for mode in ("cycle", "loop"):
        done = eval_run(tmp_path, str(EXAMPLES), "--mode", mode, "--replay", str(CASSETTES),
                        "--repos", "repos", "--out", str(out), "--jobs", "2")
        assert done.returncode == 0, done.stdout + done.stderr
        reports[mode] = EvalReport.model_validate_json(
            (out / f"report.{mode}.json").read_bytes())
    cycle, loop = reports["cycle"], reports["loop"]
    ids = [t.id for t in load_suite(EXAMPLES).tasks]
    for report in (cycle, loop):
        assert [r.task for r in report.results] == ids
        assert all(r.resolved and r.failure is None for r in report.results), (
            "a changed harness or prompt changes the requests: record the cassettes again "
            "(python benchmarks/port-tasks/examples/record_cassettes.py)", report.results)
        assert all(r.model == "fake-model" for r in report.results)  # the recorded one
        assert all(r.hidden_failed == [] and r.regressions == [] for r in report.results)
    assert "3 / 3 (100.0 %)" in done.stdout, done.stdout  # the last mode's table
    assert all(r.red_observed and r.gates_passed and r.review == "approve"
               for r in cycle.results)
    assert all(r.calls == 8 for r in cycle.results)  # gap, surface, tests, code, review…
    assert all(r.calls == 5 for r in loop.results)   # three writes, the tests, done
    # a rerun skips every task; eval compare pairs the two reports
    again = eval_run(tmp_path, str(EXAMPLES), "--mode", "loop", "--replay", str(CASSETTES),
                     "--repos", "repos", "--out", str(out), "--json")
    assert again.returncode == 0, again.stderr
    events = [json.loads(line) for line in again.stdout.splitlines()
              if line.startswith('{"event"')]
    assert [e["event"] for e in events] == ["task_skipped"] * 3 + ["report"]
    compared = subprocess.run(
        [sys.executable, "-m", "portwright", "eval", "compare", str(out / "report.cycle.json"),
         str(out / "report.loop.json"), "--out", str(tmp_path / "cmp"), "--json"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert compared.returncode == 0, compared.stderr
    table = json.loads(compared.stdout)["table"]
    assert table == {"both": 3, "a_only": 0, "b_only": 0, "neither": 0}


def test_a_missing_cassette_stops_before_anything_runs(tmp_path: Path) -> None:
    tapes = tmp_path / "tapes"
    shutil.copytree(CASSETTES, tapes)
    (tapes / "tinystats--percentile.loop.jsonl").unlink()
    build_repos(tmp_path / "repos")
    done = eval_run(tmp_path, str(EXAMPLES), "--mode", "loop", "--replay", str(tapes),
                    "--repos", "repos", "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "no cassette for task tinystats/percentile in loop mode" in done.stderr
    assert not (tmp_path / "out").exists()
