"""``portwright eval run`` on real tasks of the bundled suite, one per pair, in both modes,
the agents played from the committed cassettes (``benchmarks/port-tasks/cassettes``,
recorded by ``benchmarks/port-tasks/record_cassettes.py``: an oracle answering from each
task's real porting commit), scored in Docker against the real clones: the replay gives
the results committed in ``benchmarks/results/eval-real-replay/``.

Only where the clones are (``PORTWRIGHT_REAL_REPOS``: ``<clones>/<owner>/<name>``, see
``benchmarks/port-tasks/README.md``); CI has no GitHub, so it skips there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from portwright.eval.results import EvalReport, Mode, TaskResult
from portwright.eval.tasks import load_suite
from tests.eval.test_run_cli import eval_run
from tests.eval.tinystats import needs_engine

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmarks" / "port-tasks"
CASSETTES = SUITE / "cassettes"
RESULTS = ROOT / "benchmarks" / "results" / "eval-real-replay"
REAL_REPOS = "PORTWRIGHT_REAL_REPOS"

TASKS = {
    "cmark": "c1af25c0-avoid-repeated-language-in-info-string",
    "commonmark.js": "c8798f34-removed-meta-from-list-of-block-tags",
    "linkify-it-py": "119af39e-fix-parenthesis-after-commas-32",
    "markdown-it-py": "22a65b35-fix-always-suffix-indented-code-block",
}
"""One task of each real pair (the quickest to build and test of its pair)."""

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(3600)]


def committed(mode: Mode) -> dict[str, TaskResult]:
    report = EvalReport.model_validate_json((RESULTS / f"report.{mode.value}.json").read_bytes())
    return {r.task: r for r in report.results}


def test_every_real_task_has_a_committed_result_per_mode() -> None:
    real = [t.id for t in load_suite(SUITE).tasks
            if t.file.relative_to(SUITE).parts[0] != "examples"]
    for mode in Mode:
        assert set(real) <= set(committed(mode)), mode


def test_one_real_task_per_pair_replays_to_its_committed_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = os.environ.get(REAL_REPOS, "").strip()
    if not where:
        pytest.skip(f"the real clones are not here (set {REAL_REPOS} to <clones>)")
    monkeypatch.delenv(REAL_REPOS)  # the test's own: portwright refuses an unknown PORTWRIGHT_*
    repos = Path(where)
    tasks = [load_suite(SUITE / pair / f"{name}.toml").tasks[0] for pair, name in TASKS.items()]
    for task in tasks:
        for repo in (task.upstream.repo, task.downstream.repo):
            if not (repos / repo).is_dir():
                pytest.skip(f"{repo} is not cloned under {REAL_REPOS}")
    needs_engine()
    out = tmp_path / "out"  # not where they were recorded: the workspace is the same
    for mode in Mode:
        expected = committed(mode)
        for task, (pair, name) in zip(tasks, TASKS.items(), strict=True):
            done = eval_run(tmp_path, str(SUITE / pair / f"{name}.toml"), "--mode", mode.value,
                            "--replay", str(CASSETTES), "--repos", str(repos), "--out",
                            str(out), "--jobs", "1")
            assert done.returncode == 0, done.stdout + done.stderr
            got = TaskResult.model_validate_json(
                (out / "results" / f"{task.slug}.{mode.value}.json").read_bytes())
            want = expected[task.id]
            assert got.model_dump(exclude={"wall_seconds"}) == \
                want.model_dump(exclude={"wall_seconds"}), (
                    "a changed harness, prompt or task changes the requests: record again "
                    "(python benchmarks/port-tasks/record_cassettes.py --repos <clones>)")
            # the recorded model; a cassette without a call (a cycle blocked before its
            # first role) names none
            assert got.model == ("fake-model" if got.calls else "replay")
            if mode is Mode.LOOP:
                assert got.resolved, got  # the oracle's loop resolves every real task
