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


def _diverge(cassette: Path, request: int) -> str:
    """Edit the recorded request ``request`` (1-based) of ``cassette`` as a re-recording
    against another harness would have left it: its last message's text changed and its
    digest that of the edited request. The earlier requests still match. Returns the old
    text."""
    from portwright.agents.llm import CompletionRequest

    lines = cassette.read_text(encoding="utf-8").splitlines()
    entry = json.loads(lines[request - 1])
    message = entry["request"]["messages"][-1]
    old = message["content"]
    message["content"] = old + "\n(edited: a line the harness no longer writes)"
    entry["request_digest"] = CompletionRequest.model_validate(entry["request"]).digest()
    lines[request - 1] = json.dumps(entry, sort_keys=True)
    cassette.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(old)


def test_a_cassette_that_stops_matching_is_a_harness_error_not_a_result(
        tmp_path: Path) -> None:
    needs_engine()
    build_repos(tmp_path / "repos")
    suite = EXAMPLES / "tinystats"  # two tasks: moving-average, percentile
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    for name in ("tinystats--moving-average.loop.jsonl", "tinystats--percentile.loop.jsonl"):
        shutil.copy(CASSETTES / name, tapes / name)
    bad = tapes / "tinystats--moving-average.loop.jsonl"
    _diverge(bad, 3)
    out = tmp_path / "out"
    args = (str(suite), "--mode", "loop", "--replay", str(tapes), "--repos", "repos",
            "--out", str(out))
    done = eval_run(tmp_path, *args)
    # the other task ran to its end; the diverged one is a harness error, exit 2
    assert done.returncode == 2, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert "tinystats/moving-average" in message, done.stderr
    assert f"{bad}:3" in message, done.stderr
    assert "request 3 differs from the recorded one" in message, done.stderr
    assert "message 5 (tool) changed" in message, done.stderr
    assert "record_cassettes.py" in message, done.stderr
    assert "fix:" in message, done.stderr
    assert "Traceback" not in done.stderr
    assert not (out / "results" / "tinystats--moving-average.loop.json").exists()
    kept = json.loads((out / "results" / "tinystats--percentile.loop.json").read_text())
    assert kept["resolved"] is True
    report = EvalReport.model_validate_json((out / "report.loop.json").read_bytes())
    assert [r.task for r in report.results] == ["tinystats/percentile"]
    assert report.aggregate.tasks == 1
    assert list(report.missing) == ["tinystats/moving-average"]
    assert "request 3" in report.missing["tinystats/moving-average"]
    # eval report says so too
    shown = subprocess.run(
        [sys.executable, "-m", "portwright", "eval", "report", str(out / "report.loop.json")],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT)})
    assert shown.returncode == 0, shown.stderr
    assert "1 task has no result" in " ".join(shown.stdout.split()), shown.stdout
    # --json: the task's error is an event, the last line the error object
    again = eval_run(tmp_path, *args, "--json")
    assert again.returncode == 2, again.stdout + again.stderr
    lines = again.stdout.splitlines()
    events = [json.loads(line) for line in lines[:-1] if line.startswith('{"event"')]
    told = [e["event"] for e in events if e["event"] in ("task_skipped", "task_error")]
    assert told == ["task_skipped", "task_error"]
    error = next(e for e in events if e["event"] == "task_error")
    assert error["cassette"] == str(bad)
    assert error["request"] == 3
    last = json.loads(lines[-1])
    assert last["ok"] is False
    assert last["exit_code"] == 2
    assert last["error"]["file"] == str(bad)
    assert last["error"]["line"] == 3
    # recorded again, the rerun retries only that task, from scratch, and it resolves
    shutil.copy(CASSETTES / bad.name, bad)
    fixed = eval_run(tmp_path, *args, "--json")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    report = EvalReport.model_validate_json((out / "report.loop.json").read_bytes())
    assert [r.task for r in report.results] == [t.id for t in load_suite(suite).tasks]
    assert all(r.resolved for r in report.results)
    assert report.missing == {}


def test_a_cycle_whose_cassette_stops_matching_leaves_no_result(tmp_path: Path) -> None:
    """In the cycle a node blocks the run on the mismatch; that is no result either."""
    needs_engine()
    build_repos(tmp_path / "repos")
    task = EXAMPLES / "tinystats" / "moving-average.toml"
    tapes = tmp_path / "tapes"
    tapes.mkdir()
    bad = tapes / "tinystats--moving-average.cycle.jsonl"
    shutil.copy(CASSETTES / bad.name, bad)
    _diverge(bad, 2)
    out = tmp_path / "out"
    done = eval_run(tmp_path, str(task), "--mode", "cycle", "--replay", str(tapes),
                    "--repos", "repos", "--out", str(out))
    assert done.returncode == 2, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert f"{bad}:2" in message, done.stderr
    assert "request 2 differs from the recorded one" in message, done.stderr
    assert not (out / "results").exists()
    kept = out / "runs" / "cycle" / "tinystats--moving-average" / "harness-error.json"
    assert json.loads(kept.read_text())["request"] == 2
    shown = subprocess.run(
        [sys.executable, "-m", "portwright", "eval", "report", str(out)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT)})
    assert shown.returncode == 0, shown.stderr
    assert "1 task has no result" in " ".join(shown.stdout.split()), shown.stdout
