"""``portwright eval run``: every task of a suite in one mode, each in its own workspace,
run and sandbox, scored by its hidden tests; resumable.

For each task, in suite order, ``jobs`` at a time (threads: a task's work is in its git
repositories, its sandbox and its model endpoint, and each has its own)::

    OUT/results/<slug>.<mode>.json    exists: the task is skipped (a rerun continues)
    OUT/validation/<slug>.json        eval validate's record (reused, from the output
                                      folder or the validation store of the state folder,
                                      unless ``--revalidate``): an invalid task is
                                      dropped, a valid one gives the regress baseline
    OUT/runs/<mode>/<slug>/           the workspace (upstream/, downstream/) and the
                                      task's state folder (state/: the run, its worktree,
                                      evidence, transcripts), then the scored tree

1. the workspace is prepared (:func:`portwright.eval.workspace.prepare`);
2. the mode runs on the task's row (:func:`portwright.eval.modes.run_mode`), the model from
   the task's ``[model]`` with ``--model``, or a cassette (``--replay``);
3. the tree the run left (its branch's head) is cloned, the integrity checks run on its
   diff from the harness commit, the hidden tests are applied and run in the task's
   sandbox, and ``regress`` is run against the baseline; a link where a hidden test goes,
   or a test file the test commands changed, fails the integrity checks;
4. the :class:`~portwright.eval.results.TaskResult` is written.

At the end the :class:`~portwright.eval.results.EvalReport` of every result of the suite in
this mode is written to ``OUT/report.<mode>.json``. A task that fails for a reason of the
harness (the sandbox, the model endpoint, a crash) gets a result with the ``error`` class;
delete its result file to run it again.

A replayed task whose cassette stops matching the run's requests is no result at all: the
cassette, not the agent, is at fault. Its :class:`~portwright.eval.results.HarnessError` is
kept in its folder (``runs/<mode>/<slug>/harness-error.json``), the other tasks run on, the
report lists it among the tasks without a result, and :func:`run_suite` raises
:class:`CassetteDiverged` (bad input, exit 2) at the end. A rerun runs the task again from a
fresh workspace.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from portwright.agents.llm import LLMClient
from portwright.agents.offline import CassetteMismatch, ReplayModel, load_cassette
from portwright.config import ModelBudget, ModelConfig, PortwrightConfig
from portwright.environment import STATE_ENV, overlay, variable
from portwright.errors import PortwrightError, UnsafeChange, UnsafePath, UsageError
from portwright.eval.harness import row_id
from portwright.eval.hidden import (
    BuildCache,
    apply_hidden,
    changed_test_files,
    run_tests_and_selection,
    test_files,
    test_globs,
    test_sandbox,
)
from portwright.eval.modes import ModelSource, ModeOutcome, OnEvent, run_mode
from portwright.eval.repos import resolve
from portwright.eval.results import EvalReport, Failure, HarnessError, Mode, TaskResult
from portwright.eval.tasks import PortTask, Suite
from portwright.eval.validate import (
    ValidationRecord,
    cache_path,
    record_path,
    seed_dir,
    store_dir,
    validate,
)
from portwright.eval.workspace import Workspace, prepare
from portwright.gates.integrity import check_protected_paths, check_tamper
from portwright.project import Project
from portwright.sandboxes.envimage import EnvSource
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

__all__ = ["CassetteDiverged", "RunOptions", "Score", "cassette_path", "check_cassette",
           "harness_error_path", "report_path", "result_path", "run_suite", "run_task", "score"]

HIDDEN_TESTS = "hidden-tests"
"""The integrity finding of the scoring itself: the hidden tests could not be put in place,
or the test commands changed them."""

ClientFor = Callable[[PortTask, Mode], LLMClient]
"""A model made in process for a task and mode (tests, examples)."""


@dataclass(frozen=True)
class RunOptions:
    """What ``eval run`` was asked."""

    mode: Mode
    out: Path
    """The output folder."""
    repos: Path
    """The folder of the tasks' clones."""
    model: str | None = None
    """``--model``: the model name, over the task's ``[model] name``."""
    replay: Path | None = None
    """``--replay``: a folder of cassettes, ``<slug>.<mode>.jsonl``."""
    record: Path | None = None
    """``--record``: record every call into that folder, ``<slug>.<mode>.jsonl``."""
    jobs: int = 1
    """Tasks at a time."""
    client: ClientFor | None = None
    """A model made in process instead (no endpoint, no cassette)."""
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    """The environment the tasks' configs read ``PORTWRIGHT_*`` overrides from (its
    ``PORTWRIGHT_STATE_DIR`` names the validation store's state folder)."""
    revalidate: bool = False
    """``--revalidate``: validate each task run again, whatever record is kept."""


def result_path(out: Path, task: PortTask, mode: Mode) -> Path:
    return out / "results" / f"{task.slug}.{mode.value}.json"


def report_path(out: Path, mode: Mode) -> Path:
    return out / f"report.{mode.value}.json"


def cassette_path(folder: Path, task: PortTask, mode: Mode) -> Path:
    return folder / f"{task.slug}.{mode.value}.jsonl"


def task_folder(out: Path, task: PortTask, mode: Mode) -> Path:
    """The task's workspace and state folder in ``mode``."""
    return out / "runs" / mode.value / task.slug


def harness_error_path(out: Path, task: PortTask, mode: Mode) -> Path:
    """Where a harness error of the task is kept (in its folder: a rerun starts afresh)."""
    return task_folder(out, task, mode) / "harness-error.json"


RECORD_AGAIN = (
    "record the cassette again with the changed harness: `python "
    "benchmarks/port-tasks/examples/record_cassettes.py` (the example tasks), `python "
    "benchmarks/port-tasks/record_cassettes.py --repos DIR --only TASK` (the real pairs), or "
    "`portwright eval run SUITE --record DIR` against a model endpoint (docs/eval.md, Replay "
    "and record); then run the same `eval run` again: the tasks with a result are skipped, "
    "these run again from scratch")


class CassetteDiverged(UsageError):
    """Tasks whose cassette stopped matching the run's requests: no result was written for
    them; every other task ran."""

    def __init__(self, errors: list[HarnessError]) -> None:
        self.errors = errors
        first = errors[0]
        lines = [f"{e.task}: {e.describe()}" for e in errors]
        head = (f"task {first.task} stopped matching its cassette" if len(errors) == 1 else
                f"{len(errors)} tasks stopped matching their cassettes")
        super().__init__(
            f"{head}: a harness error, not a result (the report leaves "
            f"{'it' if len(errors) == 1 else 'them'} out; the other tasks ran)\n  "
            + "\n  ".join(lines), file=first.cassette, line=first.request, key="--replay",
            fix=RECORD_AGAIN)


class _Diverged(Exception):
    """The task's replayed model met a request its cassette does not hold."""

    def __init__(self, error: HarnessError) -> None:
        super().__init__(error.describe())
        self.error = error


def _loop_opening() -> str:
    """The first line of the loop agent's system prompt (what tells a loop cassette)."""
    text = (resources.files("portwright.prompts") / "loop.j2").read_text(encoding="utf-8")
    return next(line for line in text.splitlines() if line.strip()
                and not line.startswith("{%"))


def check_cassette(path: Path, task: PortTask, mode: Mode) -> None:
    """The cassette ``--replay`` gives ``task`` in ``mode`` reads as one, and its first call
    was recorded for this task (its row is named) in this mode (the loop agent's prompt
    opens loop cassettes only). Raises :class:`UsageError` naming the file and line."""
    fix = (f"record it again with --record DIR (it is written as DIR/{path.name}), or drop "
           "--replay")
    if not path.is_file():
        raise UsageError(f"no cassette for task {task.id} in {mode.value} mode", file=path,
                         key="--replay", fix="record one with --record DIR, or drop --replay")
    try:
        entries = load_cassette(path)
    except CassetteMismatch as exc:
        raise UsageError(exc.what, file=path, line=exc.line, key="--replay", fix=fix) from exc
    if not entries:
        return  # a run that made no model call
    request = entries[0].get("request")
    messages = request.get("messages") if isinstance(request, dict) else None
    texts: list[str] = [m["content"] for m in messages or []
                        if isinstance(m, dict) and isinstance(m.get("content"), str)]
    if not texts:
        raise UsageError("its first entry holds no recorded request", file=path, line=1,
                         key="--replay", fix=fix)
    recorded = Mode.LOOP if texts[0].lstrip().startswith(_loop_opening()) else Mode.CYCLE
    if recorded is not mode:
        raise UsageError(f"recorded in {recorded.value} mode, replayed in {mode.value} mode",
                         file=path, line=1, key="--replay", fix=fix)
    row = re.compile(rf"(?<![\w.-]){re.escape(row_id(task))}(?![\w-])")
    if not any(row.search(t) for t in texts):
        raise UsageError(f"recorded for another task: its first request never names the "
                         f"row {row_id(task)!r} of task {task.id}", file=path, line=1,
                         key="--replay", fix=fix)


def _emit(on_event: OnEvent, task: PortTask, mode: Mode, event: str, **data: Any) -> None:
    on_event({"event": event, "task": task.id, "mode": mode.value, **data})


def run_suite(suite: Suite, options: RunOptions, on_event: OnEvent | None = None
              ) -> EvalReport:
    """Run every task of ``suite`` without a result in ``options.mode``, then write and
    return the report of every task that has one. Bad input (a missing clone, revision or
    cassette) stops before anything runs."""
    say = on_event or (lambda event: None)
    mode = Mode(options.mode)
    pending = [t for t in suite.tasks if not result_path(options.out, t, mode).is_file()]
    for task in pending:
        resolve(task, options.repos)
        if options.replay is not None:
            check_cassette(cassette_path(options.replay, task, mode), task, mode)
    for task in suite.tasks:
        if task not in pending:
            _emit(say, task, mode, "task_skipped", reason="it has a result")
    lock = threading.Lock()

    def locked(event: dict[str, Any]) -> None:
        with lock:
            say(event)

    if options.jobs <= 1 or len(pending) <= 1:
        for task in pending:
            run_task(task, options, locked)
    else:
        pool = ThreadPoolExecutor(max_workers=options.jobs, thread_name_prefix="eval-task")
        try:
            for future in [pool.submit(run_task, task, options, locked) for task in pending]:
                future.result()
        except BaseException:
            # Ctrl-C, or a task that raised: no further task starts; those running end
            # (their sandboxes close with them), and the error goes on
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
    report = collect(suite, options)
    path = report_path(options.out, mode)
    _write(path, report)
    say({"event": "report", "mode": mode.value, "path": str(path)})
    errors = [e for e in (_harness_error(options.out, t, mode) for t in pending)
              if e is not None]
    if errors:
        raise CassetteDiverged(errors)
    return report


def collect(suite: Suite, options: RunOptions) -> EvalReport:
    """The report of the suite's results in ``options.mode`` (tasks without one left out)."""
    mode = Mode(options.mode)
    results = [TaskResult.model_validate_json(path.read_bytes())
               for path in (result_path(options.out, t, mode) for t in suite.tasks)
               if path.is_file()]
    models = sorted({r.model for r in results}) or [options.model or ""]
    have = {r.task for r in results}
    missing = {t.id: _why_missing(options.out, t, mode) for t in suite.tasks
               if t.id not in have}
    return EvalReport(suite=suite.root.name, mode=mode, model=", ".join(models),
                      budget=task_budget(options.environ), results=results, missing=missing)


def _why_missing(out: Path, task: PortTask, mode: Mode) -> str:
    """Why ``task`` has no result in ``mode``: its harness error, its validation, or not
    run."""
    error = _harness_error(out, task, mode)
    if error is not None:
        return error.describe()
    try:
        record = ValidationRecord.model_validate_json(record_path(out, task).read_bytes())
    except (OSError, ValueError):
        return "not run"
    return f"dropped: invalid ({record.reason})" if not record.valid else "not run"


def _harness_error(out: Path, task: PortTask, mode: Mode) -> HarnessError | None:
    """The harness error kept for ``task`` in ``mode``, when its last attempt had one."""
    path = harness_error_path(out, task, mode)
    if result_path(out, task, mode).is_file() or not path.is_file():
        return None
    try:
        return HarnessError.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None


def task_budget(environ: Mapping[str, str]) -> ModelBudget:
    """The budget each task has: ``[model] budget`` of a workspace's config (the harness
    sets none: the defaults) with the ``PORTWRIGHT_MODEL__BUDGET__*`` overrides."""
    data: dict[str, Any] = {}
    overlay(data, environ, PortwrightConfig.model_fields)
    return ModelConfig.model_validate(data.get("model", {})).budget


def run_task(task: PortTask, options: RunOptions, on_event: OnEvent) -> TaskResult | None:
    """Validate, prepare, run, score and record one task; None when it is dropped (its
    hidden tests do not fail at the parent, or do not pass at the port)."""
    mode = Mode(options.mode)

    def told(event: dict[str, Any]) -> None:
        on_event({**event, "task": task.id, "mode": mode.value})

    _emit(on_event, task, mode, "task_started")
    started = time.monotonic()
    try:
        record = validate(task, options.repos, options.out, progress=lambda _, what: _emit(
            on_event, task, mode, "task_progress", what=f"validation: {what}"),
            store=store_dir(options.environ), revalidate=options.revalidate)
        if not record.valid:
            _emit(on_event, task, mode, "task_dropped", reason=record.reason)
            return None
        _after_harness_error(task, options)
        started = time.monotonic()
        result = _attempt(task, options, record, started, told)
    except _Diverged as diverged:  # the cassette's fault, not the agent's: no result
        _write(harness_error_path(options.out, task, mode), diverged.error)
        _emit(on_event, task, mode, "task_error", cassette=diverged.error.cassette,
              request=diverged.error.request, detail=diverged.error.describe(),
              seconds=round(time.monotonic() - started, 3))
        return None
    except (PortwrightError, OSError) as exc:  # the sandbox, the endpoint, the disk
        logger.warning("task %s (%s): %s", task.id, mode.value, exc, exc_info=True)
        result = TaskResult(task=task.id, mode=mode, model=_model_name(task, options, None),
                            resolved=False, wall_seconds=round(time.monotonic() - started, 3),
                            # a commit refused for what the agent left (a runner's hook, a
                            # link) is the agent's doing: integrity, not the harness's error
                            failure=Failure.INTEGRITY if isinstance(exc, UnsafeChange)
                            else Failure.ERROR,
                            detail=f"{type(exc).__name__}: {_line(str(exc))}")
    _write(result_path(options.out, task, mode), result)
    _emit(on_event, task, mode, "task_finished", resolved=result.resolved,
          failure=None if result.failure is None else result.failure.value,
          detail=result.detail, seconds=result.wall_seconds)
    return result


def _after_harness_error(task: PortTask, options: RunOptions) -> None:
    """A task whose last attempt ended in a harness error starts again from scratch: its
    workspace and state (the run the cassette stopped matching) go."""
    mode = Mode(options.mode)
    if harness_error_path(options.out, task, mode).is_file():
        shutil.rmtree(task_folder(options.out, task, mode))


def _check_replay(task: PortTask, mode: Mode, client: LLMClient | None) -> None:
    """Raise :class:`_Diverged` when ``client`` replays a cassette that stopped matching."""
    if not isinstance(client, ReplayModel) or client.mismatch is None:
        return
    mismatch = client.mismatch
    call = mismatch.call
    if call is not None and call > len(client.entries):
        what = f"the run made request {call}, the cassette holds {len(client.entries)}"
    elif call is not None:
        what = f"request {call} differs from the recorded one ({mismatch.difference})"
    else:
        what = mismatch.difference
    raise _Diverged(HarnessError(task=task.id, mode=mode, cassette=str(client.path),
                                 request=call, what=what))


def _attempt(task: PortTask, options: RunOptions, record: ValidationRecord, started: float,
             told: OnEvent) -> TaskResult:
    mode = Mode(options.mode)
    where = options.out / "runs" / mode.value / task.slug
    told({"event": "task_progress", "what": "preparing the workspace"})
    ws = prepare(task, options.repos, where, seeds=seed_dir(store_dir(options.environ)))
    environ = {**options.environ, STATE_ENV: str(where / "state")}
    if options.model:
        environ[variable("model.name")] = options.model
    project = Project.load(ws.downstream, at=ws.harness, environ=environ)
    source = _source(task, options)
    if source.record is not None:
        # every task recorded has its cassette, even one whose mode makes no model call (a
        # cycle blocked before its first role): a replay of the suite finds them all
        source.record.parent.mkdir(parents=True, exist_ok=True)
        source.record.write_text("", encoding="utf-8")
    told({"event": "task_progress", "what": f"running the {mode.value}"})
    try:
        outcome = run_mode(mode, project, ws.row, run_id=f"eval-{mode.value}-{task.slug}",
                           target=ws.task.commits[-1], model=source, on_event=told)
    except PortwrightError:
        _check_replay(task, mode, source.client)  # the loop's turn ends on it
        raise
    _check_replay(task, mode, source.client)  # a cycle's node blocks the run on it
    told({"event": "task_progress", "what": "running the hidden tests"})
    scored = score(ws, outcome.head, record, where / "scored", run_id=f"eval-score-"
                   f"{mode.value}-{task.slug}", cache=cache_path(options.out, task))
    failure, detail = _verdict(outcome, scored)
    model = source.client.model if source.client is not None else \
        _model_name(task, options, project)
    return TaskResult(
        task=task.id, mode=mode, model=model, resolved=failure is None,
        hidden_passed=scored.passed, hidden_failed=scored.failed,
        regressions=scored.regressions,
        red_observed=outcome.red_observed, gates_passed=outcome.gates_passed,
        review=outcome.review, tokens_in=outcome.tokens_in, tokens_out=outcome.tokens_out,
        cost_usd=outcome.cost_usd, calls=outcome.calls,
        wall_seconds=round(time.monotonic() - started, 3), failure=failure, detail=detail)


def _source(task: PortTask, options: RunOptions) -> ModelSource:
    mode = Mode(options.mode)
    if options.client is not None:
        return ModelSource(client=options.client(task, mode))
    if options.replay is not None:  # made here: the runner reads where it stopped matching
        return ModelSource(client=ReplayModel(cassette_path(options.replay, task, mode)))
    return ModelSource(
        record=None if options.record is None else cassette_path(options.record, task, mode))


def _model_name(task: PortTask, options: RunOptions, project: Project | None) -> str:
    """The model the agents used: the cassette's, ``--model``, or the config's."""
    mode = Mode(options.mode)
    if options.replay is not None:
        try:
            return ReplayModel(cassette_path(options.replay, task, mode)).model
        except PortwrightError:
            return "replay"
    if options.model:
        return options.model
    return project.config.model.name if project is not None else "unknown"


class Score(BaseModel):
    """What the hidden tests and the integrity checks found on the tree a run left."""

    passed: list[str]
    """Hidden test ids that passed."""
    failed: list[str]
    """Hidden test ids that failed (or did not appear in the output)."""
    regressions: list[str]
    """Baseline regress ids that fail now."""
    integrity: list[str]
    """What the integrity checks found (empty: they passed)."""


def score(ws: Workspace, head: str, record: ValidationRecord, tree: Path, *,
          run_id: str, cache: Path | None = None) -> Score:
    """Clone the workspace's downstream at ``head`` into ``tree`` (made afresh), run the
    integrity checks on its diff from the harness commit, apply the hidden tests, and run
    them and ``regress`` in the task's sandbox; its builds read the task's compiler
    ``cache`` (read-only: the code under test cannot write it), when there is one."""
    task = ws.task.task
    if tree.exists():
        shutil.rmtree(tree)
    tree.parent.mkdir(parents=True, exist_ok=True)
    plumbing.git(tree.parent, "clone", "--quiet", "--no-checkout", str(ws.downstream),
                 tree.name)
    plumbing.git(tree, "checkout", "--quiet", "--detach", head)
    checks = [check_protected_paths(tree, base=ws.harness),
              check_tamper(tree, base=ws.harness, tests=test_globs(), fail=True)]
    integrity = [f"{c.name}: {m}" for c in checks if not c.passed for m in c.messages]
    try:
        written = apply_hidden(ws.task, tree)
    except UnsafePath as exc:  # a link, or a folder, where a hidden test goes
        return Score(passed=[], failed=list(task.hidden.tests),
                     regressions=list(record.regress_baseline),
                     integrity=[*integrity, f"{HIDDEN_TESTS}: {exc.path} {exc.reason}: the "
                                            "hidden tests cannot be put in place"])
    before = test_files(ws.task, tree, written)
    with test_sandbox(task, tree, source=EnvSource(ws.downstream, ws.harness),
                      log_dir=tree.parent / "scored-logs", run_id=run_id,
                      cache=BuildCache(cache, writable=False)
                      if cache is not None and cache.is_dir() else None) as sandbox:
        hidden, regress = run_tests_and_selection(task, sandbox, task.hidden.tests,
                                                  task.hidden.regress)
    integrity += [f"{HIDDEN_TESTS}: {path} was changed by the test command itself (a build "
                  "step or the code under test rewrote a test before it ran)"
                  for path in changed_test_files(tree, before)]
    return Score(passed=[i for i, ok in hidden.items() if ok],
                 failed=[i for i, ok in hidden.items() if not ok],
                 regressions=[i for i in record.regress_baseline if not regress.get(i)],
                 integrity=integrity)


def _verdict(outcome: ModeOutcome, scored: Score) -> tuple[Failure | None, str]:
    """Resolved (no failure) when every hidden test passed, nothing regressed and the
    integrity checks passed; otherwise why, the most telling first: the integrity checks,
    then how the mode ended, then the hidden tests."""
    if scored.integrity:
        return Failure.INTEGRITY, _line(scored.integrity[0])
    if not scored.failed and not scored.regressions:
        return None, outcome.detail if outcome.failure is not None else ""
    if outcome.failure is not None:
        return outcome.failure, outcome.detail
    failing = [*scored.failed, *scored.regressions]
    return Failure.HIDDEN_TESTS, _line(
        f"{len(scored.failed)} of {len(scored.failed) + len(scored.passed)} hidden test(s) "
        f"failed, {len(scored.regressions)} regression(s): {', '.join(failing[:5])}")


def _line(text: str, width: int = 300) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= width else first[: width - 1] + "…"


def _write(path: Path, value: BaseModel) -> None:
    """``value`` as JSON at ``path``, written whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(value.model_dump_json(indent=2) + "\n", encoding="utf-8")
    temp.replace(path)

