"""How much time does ``portwright eval run`` spend on its own work per task?

Runs the bundled example tasks (``benchmarks/port-tasks/examples/``: tinystats
moving-average and percentile, rmsnorm fused-residual) in both modes with the replay model
(their recorded transcripts), each task from scratch in a fresh output folder, and splits
each task's wall time into:

* **validation** — the hidden tests run at the parent and at the port in the sandbox
  (:func:`portwright.eval.validate.validate`), the regress baseline recorded;
* **setup** — the task's workspace: the upstream clone at the pin, the downstream at the
  parent and the harness commit (:func:`portwright.eval.workspace.prepare`);
* **run** — the mode itself, the port cycle or the loop agent (not the harness's work: it
  is what is being measured);
* **scoring** — the tree the run left cloned, the integrity checks, the hidden tests applied
  and run, the regress selection run (:func:`portwright.eval.runner.score`);
* **rest** — everything else (loading the task, writing the result, teardown).

Both modes share one output folder, as ``eval validate`` followed by ``eval run`` in each
mode would: the first mode validates each task, the second reuses its record. Each task is
timed twice, side by side: its **first** run ever (an empty state folder: an empty
validation store, so validation is observed), and a **later** run into a new output folder
with the same state folder (validation taken from the store, :mod:`portwright.eval.validate`:
the record copied and the compiler cache linked into the new folder). The harness's own time
per task and mode is setup + validation + scoring + rest (teardown included). Goal: ≤ 10 s
per task. Of that, **commands** is the time inside the task's own commands in validation's
and scoring's sandboxes (its test command and regress selection: the task's build and
tests, which its ``[environment]`` decides), and **own** the rest (workspaces, sandboxes
opened and closed, git, records): what the harness itself costs. A second pass of each
mode over the same folder shows the resumed run (every task skipped).
Every task's environment image is built beforehand, untimed, from a workspace of its own
(:func:`build_images`: ``portwright sandbox build`` has its own benchmark,
``benchmarks/env_image.py``); else a first validation would count the build of a missing
image (``sandbox prune --images`` keeps only each repository's newest). Writes
``benchmarks/results/eval_overhead.json``.

``--real SUITE --repos DIR [--task ID …]`` adds tasks of a real suite (clones under
``DIR``, e.g. ``benchmarks/port-tasks/cmark``; ``--real`` may be given once per suite), which
have no recorded run: each is timed as
validation, setup and the scoring of what a run that ported exactly the real commit would
leave (the port's changes committed on the harness commit: the hidden tests pass), first in
a fresh output folder and state folder, then in a new output folder (validation from the
store); its harness time is the sum. ``--skip-examples`` times only those.

    python benchmarks/eval_overhead.py [--repeat 1] [--real SUITE … --repos DIR [--task ID …]]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "benchmarks" / "port-tasks" / "examples"
CASSETTES = ROOT / "benchmarks" / "port-tasks" / "cassettes"
OUT = ROOT / "benchmarks" / "results" / "eval_overhead.json"
PHASES = ("validation", "setup", "run", "scoring")
RUNS = ("first", "later")
"""A task's first run (empty validation store), and a later one into a new output folder."""

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(SUITE))

from build_repos import build_repos  # noqa: E402

from portwright.eval import runner  # noqa: E402
from portwright.eval.hidden import task_image  # noqa: E402
from portwright.eval.results import Mode  # noqa: E402
from portwright.eval.tasks import PortTask, load_suite  # noqa: E402
from portwright.eval.validate import cache_path, seed_dir, store_dir, validate  # noqa: E402
from portwright.eval.workspace import Workspace, commit_files, prepare  # noqa: E402
from portwright.sandboxes.envimage import EnvSource  # noqa: E402
from portwright.vcs import plumbing  # noqa: E402


class Phases:
    """Seconds per task and phase, from the runner's own calls (by thread: tasks may run
    side by side)."""

    def __init__(self) -> None:
        self.seconds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.current: dict[int, str] = {}

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        import threading

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                task = self.current.get(threading.get_ident(), "?")
                self.seconds[task][phase] += time.perf_counter() - began
        return timed

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        import threading

        originals = {name: getattr(runner, name)
                     for name in ("validate", "prepare", "run_mode", "score", "run_task")}
        run_task = originals["run_task"]

        def task_wrapper(task: Any, *args: Any, **kwargs: Any) -> Any:
            self.current[threading.get_ident()] = task.id
            began, commands = time.perf_counter(), COMMANDS.now()
            try:
                return run_task(task, *args, **kwargs)
            finally:
                self.seconds[task.id]["wall"] += time.perf_counter() - began
                self.seconds[task.id]["commands"] += COMMANDS.now() - commands

        runner.validate = self.wrap("validation", originals["validate"])
        runner.prepare = self.wrap("setup", originals["prepare"])
        runner.run_mode = self.wrap("run", originals["run_mode"])
        runner.score = self.wrap("scoring", originals["score"])
        runner.run_task = task_wrapper
        try:
            yield
        finally:
            for name, fn in originals.items():
                setattr(runner, name, fn)


class _Timed:
    """A test sandbox whose commands add their seconds to ``seconds`` (by thread)."""

    def __init__(self, inner: Any, seconds: dict[int, float]) -> None:
        self.inner, self.seconds = inner, seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def exec(self, *args: Any, **kwargs: Any) -> Any:
        import threading

        began = time.perf_counter()
        try:
            return self.inner.exec(*args, **kwargs)
        finally:
            self.seconds[threading.get_ident()] += time.perf_counter() - began


class Commands:
    """Seconds inside the task's own commands in validation's and scoring's sandboxes, by
    thread (the sandbox's ``ccache`` probe runs before it is handed out: not counted)."""

    def __init__(self) -> None:
        self.seconds: dict[int, float] = defaultdict(float)

    def now(self) -> float:
        import threading

        return self.seconds[threading.get_ident()]

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        from portwright.eval import hidden
        from portwright.eval import validate as validating

        original = hidden.test_sandbox

        @contextlib.contextmanager
        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            with original(*args, **kwargs) as sandbox:
                yield _Timed(sandbox, self.seconds)

        name = "test_sandbox"  # as validation and scoring look it up
        for module in (validating, runner):
            setattr(module, name, timed)
        try:
            yield
        finally:
            for module in (validating, runner):
                setattr(module, name, original)


COMMANDS = Commands()


def one_pass(repos: Path, out: Path, mode: Mode) -> dict[str, Any]:
    suite = load_suite(SUITE)
    options = runner.RunOptions(mode=mode, out=out, repos=repos, replay=CASSETTES)
    phases = Phases()
    with phases.installed():
        began = time.perf_counter()
        report = runner.run_suite(suite, options)
        wall = time.perf_counter() - began
        resumed_began = time.perf_counter()
        runner.run_suite(suite, options)  # every task has a result: all skipped
        resumed = time.perf_counter() - resumed_began
    tasks = {}
    for task_id, spent in phases.seconds.items():
        harness = spent["wall"] - spent["run"]
        tasks[task_id] = {**{p: round(spent[p], 3) for p in PHASES},
                          "rest": round(harness - spent["validation"] - spent["setup"]
                                        - spent["scoring"], 3),
                          "wall": round(spent["wall"], 3), "harness": round(harness, 3),
                          "commands": round(spent["commands"], 3),
                          "own": round(harness - spent["commands"], 3)}
    resolved = sum(r.resolved for r in report.results)
    return {"mode": mode.value, "wall_s": round(wall, 3), "resumed_s": round(resumed, 3),
            "resolved": f"{resolved}/{len(report.results)}", "tasks": tasks}


def oracle_head(ws: Workspace) -> str:
    """A commit on the harness commit holding the real port's changes (what a run that
    ported exactly the real commit leaves), made in the workspace's downstream."""
    task = ws.task
    changed = plumbing.git(task.downstream, "diff", "--name-only", "-z", "--no-renames",
                           task.parent, task.port).split(b"\0")
    files: dict[str, bytes | None] = {}  # None: the port deletes the file
    for raw in filter(None, changed):
        path = raw.decode()
        files[path] = plumbing.show(task.downstream, task.port, path)
    return commit_files(ws.downstream, ws.harness, files, "the real port, as a run's result\n")


def real_task(task: PortTask, repos: Path, out: Path) -> dict[str, Any]:
    """Validation, setup and the scoring of the oracle's head of one real task, timed."""
    spent: dict[str, float] = {}
    commands = COMMANDS.now()
    began = time.perf_counter()
    record = validate(task, repos, out)
    spent["validation"] = time.perf_counter() - began
    if not record.valid:
        raise SystemExit(f"{task.id} is not valid: {record.reason}")
    began = time.perf_counter()
    ws = prepare(task, repos, out / "runs" / "oracle" / task.slug,  # as `eval run` does
                 seeds=seed_dir(store_dir()))
    spent["setup"] = time.perf_counter() - began
    head = oracle_head(ws)
    began = time.perf_counter()
    scored = runner.score(ws, head, record, out / "runs" / "oracle" / task.slug / "scored",
                          run_id=f"eval-overhead-{task.slug}", cache=cache_path(out, task))
    spent["scoring"] = time.perf_counter() - began
    if scored.failed or scored.regressions:
        raise SystemExit(f"{task.id}: the real port does not resolve it: {scored}")
    harness, commands = sum(spent.values()), COMMANDS.now() - commands
    return {**{k: round(v, 3) for k, v in spent.items()}, "harness": round(harness, 3),
            "commands": round(commands, 3), "own": round(harness - commands, 3),
            "resolved": True}


def build_images(tasks: list[PortTask], repos: Path, scratch: Path) -> None:
    """The environment image of each of ``tasks`` built when missing, from a workspace in
    ``scratch`` that uses no seed (the state folder is left as it was)."""
    for task in tasks:
        ws = prepare(task, repos, scratch / "images" / task.slug)
        task_image(task, EnvSource(ws.downstream, ws.harness))


def real_pass(suite_path: Path, repos: Path, ids: list[str], scratch: Path) -> dict[str, Any]:
    """Each real task timed in a fresh output folder (first), then in another one
    (later: validation from the store)."""
    suite = load_suite(suite_path)
    tasks = [t for t in suite.tasks if not ids or t.id in ids]
    build_images(tasks, repos, scratch)
    results: dict[str, dict[str, Any]] = {}
    for task in tasks:
        results[task.id] = {}
        for run in RUNS:
            t = real_task(task, repos, scratch / f"real-{run}")
            results[task.id][run] = t
            print(f"real  {task.id:40} {run:5} harness {t['harness']:6.2f} s (validation "
                  f"{t['validation']:.2f}, setup {t['setup']:.2f}, scoring {t['scoring']:.2f}; "
                  f"commands {t['commands']:.2f}, own {t['own']:.2f})")
    return {"suite": str(suite_path.relative_to(ROOT)) if suite_path.is_relative_to(ROOT)
            else suite_path.name, "tasks": results}


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def _max(values: list[float]) -> float | None:
    return round(max(values), 3) if values else None


def summarize(passes: list[dict[str, Any]], real: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and max harness per task of each run (first, later), and the validation's."""
    summary: dict[str, Any] = {"goal_s_per_task": 10.0}
    for run in RUNS:
        mine = [t for p in passes if p["run"] == run for t in p["tasks"].values()]
        harness = [t["harness"] for t in mine]
        prefix = "" if run == "first" else "later_"
        summary[f"{prefix}harness_s_per_task_median"] = _median(harness)
        summary[f"{prefix}harness_s_per_task_max"] = _max(harness)
        summary[f"{prefix}own_s_per_task_max"] = _max([t["own"] for t in mine])
        summary[f"{prefix}validation_s_per_task_median"] = _median(
            [t["validation"] for p in passes if p["run"] == run and p["mode"] == "loop"
             for t in p["tasks"].values()])
        real_harness = [r[run]["harness"] for p in real for r in p["tasks"].values()]
        if real_harness:
            summary[f"real_{prefix}harness_s_per_task_median"] = _median(real_harness)
            summary[f"real_{prefix}harness_s_per_task_max"] = _max(real_harness)
            summary[f"real_{prefix}own_s_per_task_max"] = _max(
                [r[run]["own"] for p in real for r in p["tasks"].values()])
    return summary


def side_by_side(passes: list[dict[str, Any]], real: list[dict[str, Any]]
                 ) -> list[dict[str, Any]]:
    """One row per task and mode: the median over the repetitions of the harness (and the
    validation) of the first run and of the later run, and their ratio."""
    seen: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for p in passes:
        for task, t in p["tasks"].items():
            seen[task, p["mode"]][f"{p['run']}_harness_s"].append(t["harness"])
            seen[task, p["mode"]][f"{p['run']}_validation_s"].append(t["validation"])
            seen[task, p["mode"]][f"{p['run']}_own_s"].append(t["own"])
    for p in real:
        for task, runs in p["tasks"].items():
            for run in RUNS:
                seen[task, "oracle"][f"{run}_harness_s"].append(runs[run]["harness"])
                seen[task, "oracle"][f"{run}_validation_s"].append(runs[run]["validation"])
                seen[task, "oracle"][f"{run}_own_s"].append(runs[run]["own"])
    rows = []
    for (task, mode), values in seen.items():
        row: dict[str, Any] = {"task": task, "mode": mode,
                               "repetitions": len(values["first_harness_s"])}
        row.update({name: _median(got) for name, got in values.items()})
        if row.get("first_harness_s") and row.get("later_harness_s") is not None:
            row["later_over_first"] = round(row["later_harness_s"] / row["first_harness_s"], 3)
        rows.append(row)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--real", type=Path, action="append", default=[],
                        help="a real suite to time as well (repeatable)")
    parser.add_argument("--repos", type=Path, help="the real suite's clones")
    parser.add_argument("--task", action="append", default=[],
                        help="a task of the real suite (repeatable; default: all)")
    parser.add_argument("--skip-examples", action="store_true")
    args = parser.parse_args()
    if args.real and args.repos is None:
        parser.error("--real needs --repos")
    known = {t.id for suite in args.real for t in load_suite(suite.resolve()).tasks}
    if missing := sorted(set(args.task) - known):
        parser.error(f"no such task in the --real suites: {missing}")
    passes: list[dict[str, Any]] = []
    load_before = [round(x, 2) for x in os.getloadavg()]
    real: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pw-eval-overhead-") as scratch, \
            COMMANDS.installed():
        repos = Path(scratch) / "repos"
        if not args.skip_examples:
            build_repos(repos)
            build_images(load_suite(SUITE).tasks, repos, Path(scratch))
        for number in range(args.repeat):
            # a state folder of this repetition's own: its first runs find an empty store
            os.environ["PORTWRIGHT_STATE_DIR"] = str(Path(scratch) / f"state-{number}")
            for suite in args.real:
                real.append(real_pass(suite.resolve(), args.repos.resolve(), args.task,
                                      Path(scratch) / f"real-{number}"))
            if args.skip_examples:
                continue
            for run in RUNS:
                for mode in (Mode.LOOP, Mode.CYCLE):
                    result = {"run": run, **one_pass(
                        repos, Path(scratch) / f"out-{number}-{run}", mode)}
                    passes.append(result)
                    for task, t in result["tasks"].items():
                        print(f"{run:5} {mode.value:5} {task:40} harness {t['harness']:6.2f} s "
                              f"(validation {t['validation']:.2f}, setup {t['setup']:.2f}, "
                              f"scoring {t['scoring']:.2f}, rest {t['rest']:.2f}); "
                              f"run {t['run']:.2f} s")
                    print(f"{run} {mode.value}: {result['resolved']} resolved, "
                          f"{result['wall_s']:.1f} s; resumed in {result['resumed_s']:.2f} s")
    summary = summarize(passes, real)
    rows = side_by_side(passes, real)
    results = {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
               "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                           "load_average_at_start": load_before,
                           "load_average": [round(x, 2) for x in os.getloadavg()]},
               "summary": summary, "side_by_side": rows, "passes": passes, "real": real}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\n{'task':48} {'mode':6} {'first: harness (validation) own':>34} "
          f"{'later: harness (validation) own':>34} {'later/first':>11}")
    for row in rows:
        print(f"{row['task']:48} {row['mode']:6} "
              f"{row.get('first_harness_s', 0):16.2f} s ({row.get('first_validation_s', 0):5.2f})"
              f"{row.get('first_own_s', 0):6.2f} s"
              f"{row.get('later_harness_s', 0):18.2f} s ({row.get('later_validation_s', 0):5.2f})"
              f"{row.get('later_own_s', 0):6.2f} s"
              f"{row.get('later_over_first', 0):11.2f}")
    for run in RUNS:
        prefix = "" if run == "first" else "later_"
        if summary[f"{prefix}harness_s_per_task_median"] is not None:
            print(f"{run} run: harness per task median "
                  f"{summary[f'{prefix}harness_s_per_task_median']:.2f} s, max "
                  f"{summary[f'{prefix}harness_s_per_task_max']:.2f} s (goal 10 s); "
                  f"own at most {summary[f'{prefix}own_s_per_task_max']:.2f} s")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
