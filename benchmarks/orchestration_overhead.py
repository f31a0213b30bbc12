"""How much of a port run is portwright's own overhead?

Runs the demo — the whole port cycle on the rmsnorm → rmsnorm-cpp example's missing row,
agents replayed from ``examples/rmsnorm/demo.cassette.jsonl``, gates in the Docker
sandbox — in ``--repeat`` pairs, each run in a fresh interpreter (as ``portwright run`` is:
no run profits from another's compiled graph, lazily imported modules or other in-process
caches):

* **cold**: the first run in a new project (the example just built) and a new state folder:
  the checkpoint database, the history index and the like are made by this run;
* **warm**: a second run of the same row in the same project and state folder, as every
  run after the first is for a team running its port every night: what the state folder
  keeps (checkpoint database, history index) is there, and so are caches of this user's
  (Python's bytecode, the prompt templates').

It splits each run's wall time (from ``driver.start`` to its return) into:

* **sandbox**: time spent inside the sandbox's own interface — choosing the backend
  (the engine's ping), opening it (image check, handing the worktree over, creating and
  starting the container, setup commands), every command it runs (the gates' and the
  agents' alike, with the per-command cleanup: leftover processes reaped, set-id bits
  swept) and closing it (removing the container, giving the worktree back);
* **model**: time inside the model client (replay: nearly zero);
* **overhead**: the rest — portwright's own work: the graph, checkpoints, host-side git
  (worktree, snapshots of the tree before each gate, commits, diffs), evidence engines,
  prompts, spec, records.

The sandbox opens on a thread of its own while the run's first nodes work on the host
(``RunContext.warm_sandbox``): the overhead is the wall time spent in neither the sandbox
nor the model (the union of their spans, not the sum of their lengths); host work done while
the sandbox opens costs the run no wall time, and counts as none (the per-node overhead
too: a node's time less its overlap with the sandbox's spans).

Also reported per run: the subprocesses the framework started (git, by command) and their
wall time, every checkpoint write's time (p50, p90; ``checkpoint_s`` adds the pending writes
LangGraph saves after each node), the overhead per graph node, the
process's CPU time, and the machine's load average (other users of the machine make wall
times noisy: compare runs interleaved, not across hours). Importing portwright before a
run (``imports_s``) is reported apart: it is paid once per process, before any run.
Goal: overhead ≤ 5 % of the wall time. Writes ``benchmarks/results/orchestration_overhead.json``.

Python's bytecode is compiled for the measured tree before the first run, and the runs may
write it (``PYTHONDONTWRITEBYTECODE`` is dropped from their environment), as after a
``pip install``: otherwise every run would compile from source the modules it imports while
it runs, and count that as overhead.

``--baseline REV`` measures the code of commit ``REV`` (a detached copy of it) in the same
way, its runs interleaved with this tree's, and reports the ratio of the medians: the
machine's load touches both alike.

    python benchmarks/orchestration_overhead.py [--repeat 5]   # 5 cold and 5 warm runs
    python benchmarks/orchestration_overhead.py --baseline main~3 --no-write
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ROW = "rmsnorm-fused-residual"
CASSETTE = ROOT / "examples" / "rmsnorm" / "demo.cassette.jsonl"
RESULT = ROOT / "benchmarks" / "results" / "orchestration_overhead.json"


class Timed:
    """Accumulates wall time of wrapped calls; calls nested in a measured one (a sandbox
    running its setup commands while it opens) are not counted twice."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.spans: list[tuple[datetime, datetime]] = []
        self._depth = threading.local()

    @contextlib.contextmanager
    def measure(self) -> Iterator[None]:
        depth = getattr(self._depth, "value", 0)
        self._depth.value = depth + 1
        start, began = time.perf_counter(), datetime.now(UTC)
        try:
            yield
        finally:
            self._depth.value = depth
            if depth == 0:
                self.seconds.append(time.perf_counter() - start)
                self.spans.append((began, datetime.now(UTC)))

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.measure():
                return fn(*args, **kwargs)

        return timed


class Subprocesses:
    """Every subprocess started while counting: how many per command, and their wall time
    (start to reaped)."""

    def __init__(self) -> None:
        self.count: collections.Counter[str] = collections.Counter()
        self.seconds: collections.Counter[str] = collections.Counter()

    @staticmethod
    def key(args: Any) -> str:
        argv = [str(a) for a in ([args] if isinstance(args, str | bytes) else args)]
        if argv and Path(argv[0]).name == "git":
            rest = argv[3:] if argv[1:2] == ["-C"] else argv[1:]
            while rest[:1] == ["-c"]:  # a configuration value, not the command
                rest = rest[2:]
            words = [w for w in rest if not w.startswith("-")][:1]
            return " ".join(["git", *words])
        return Path(argv[0]).name if argv else "?"

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        popen = subprocess.Popen
        original_init, original_wait = popen.__init__, popen.wait
        counter = self

        def init(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
            self._bench_key, self._bench_start = counter.key(args), time.perf_counter()
            counter.count[self._bench_key] += 1
            original_init(self, args, *rest, **kwargs)

        def wait(self: Any, timeout: float | None = None) -> int:
            code: int = original_wait(self, timeout)
            start = getattr(self, "_bench_start", None)
            if start is not None:
                counter.seconds[self._bench_key] += time.perf_counter() - start
                self._bench_start = None
            return code

        popen.__init__ = init  # type: ignore[method-assign]
        popen.wait = wait  # type: ignore[method-assign]
        try:
            yield
        finally:
            popen.__init__ = original_init  # type: ignore[method-assign]
            popen.wait = original_wait  # type: ignore[method-assign]


def _overlap(span: tuple[datetime, datetime], spans: list[tuple[datetime, datetime]]) -> float:
    a, b = span
    return sum(max(0.0, (min(b, y) - max(a, x)).total_seconds()) for x, y in spans)


def _covered(spans: list[tuple[datetime, datetime]]) -> float:
    """Seconds covered by at least one of ``spans`` (their union)."""
    total, end = 0.0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += (b - a).total_seconds()
            end = b
        elif b > end:
            total += (b - end).total_seconds()
            end = b
    return total


def _per_node(timeline: list[dict[str, Any]], sandbox: Timed) -> dict[str, float]:
    """Overhead (wall minus sandbox) of each node of the run, summed over its visits."""
    out: dict[str, float] = collections.defaultdict(float)
    for step in timeline:
        span = (datetime.fromisoformat(step["started"]), datetime.fromisoformat(step["finished"]))
        wall = (span[1] - span[0]).total_seconds()
        out[step["node"]] += wall - _overlap(span, sandbox.spans)
    return {node: round(seconds, 3) for node, seconds in out.items()}


@contextlib.contextmanager
def _instrumented(replay: Any, model: Timed, checkpoint: Timed, writes: Timed,
                  sandbox: Timed) -> Iterator[None]:
    """Time the model client, checkpoint writes (checkpoints and the pending writes of
    each node) and the sandbox's interface."""
    import portwright.sandboxes as sandboxes
    from portwright.sandboxes.common import SandboxBase
    from portwright.workflows import driver

    replay.complete = model.wrap(replay.complete)
    original_open = driver.open_checkpointer

    @contextlib.contextmanager
    def timed_checkpointer(project: Any) -> Iterator[Any]:
        with original_open(project) as saver:
            saver.put = checkpoint.wrap(saver.put)
            saver.put_writes = writes.wrap(saver.put_writes)
            yield saver

    patched: list[tuple[Any, str, Any]] = [
        (driver, "open_checkpointer", timed_checkpointer),
        (sandboxes, "open_sandbox", sandbox.wrap(sandboxes.open_sandbox)),
        (SandboxBase, "__enter__", sandbox.wrap(SandboxBase.__enter__)),
        (SandboxBase, "exec", sandbox.wrap(SandboxBase.exec)),
        (SandboxBase, "__exit__", sandbox.wrap(SandboxBase.__exit__)),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patched]
    for owner, name, value in patched:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def one_run(scratch: Path, number: int, *, warm: bool, root: Path = ROOT) -> dict[str, Any]:
    """One run of the demo in this (fresh) process, with the code of ``root``: the first in
    a new project and state folder (cold), or a later one in the project and state folder of
    run ``number``'s cold run (warm)."""
    began_imports = time.perf_counter()
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(root / "examples" / "rmsnorm"))
    from build import DOWNSTREAM, build

    from portwright.agents.offline import ReplayModel
    from portwright.project import Project
    from portwright.workflows import driver
    from portwright.workflows.state import RunStatus

    imports = time.perf_counter() - began_imports
    example = build(scratch / f"run-{number}") if not warm else None
    downstream = example.downstream if example else scratch / f"run-{number}" / DOWNSTREAM
    os.environ["PORTWRIGHT_STATE_DIR"] = str(scratch / f"state-{number}")
    project = Project.load(downstream, at="HEAD")
    model, checkpoint, writes, sandbox = Timed(), Timed(), Timed(), Timed()
    replay = ReplayModel(root / CASSETTE.relative_to(ROOT))
    processes = Subprocesses()
    load_before = os.getloadavg()[0]
    with _instrumented(replay, model, checkpoint, writes, sandbox), processes.counting():
        cpu, began = time.process_time(), time.perf_counter()
        result = driver.start(project, ROW, lambda event: None,
                              run_id=f"bench-{number}-{'warm' if warm else 'cold'}",
                              client=replay)
        wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    if result.status is not RunStatus.DONE:
        raise SystemExit(f"the run did not finish: {result.status}: {result.values['reason']}")
    spent = _covered([*sandbox.spans, *model.spans])
    git = {k: v for k, v in processes.count.items() if k.startswith("git")}
    return {"wall_s": round(wall, 3), "sandbox_s": round(_covered(sandbox.spans), 3),
            "model_s": round(sum(model.seconds), 4), "overhead_s": round(wall - spent, 3),
            "overhead_pct": round(100 * (wall - spent) / wall, 2),
            "process_cpu_s": round(cpu, 3), "imports_s": round(imports, 3),
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "git_processes": sum(git.values()),
            "git_s": round(sum(processes.seconds[k] for k in git), 3),
            "subprocesses": dict(processes.count.most_common()),
            "checkpoint_writes": len(checkpoint.seconds),
            "checkpoint_s": round(sum(checkpoint.seconds) + sum(writes.seconds), 3),
            "pending_writes": len(writes.seconds),
            "checkpoint_ms": [round(1000 * s, 3) for s in checkpoint.seconds],
            "overhead_by_node_s": _per_node(result.values["timeline"], sandbox)}


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    writes = [ms for run in runs for ms in run["checkpoint_ms"]]

    def median(key: str) -> float:
        return round(statistics.median(r[key] for r in runs), 4)

    return {
        **{f"{key}_median": median(key) for key in (
            "wall_s", "sandbox_s", "model_s", "overhead_s", "overhead_pct", "process_cpu_s",
            "git_processes", "git_s", "checkpoint_s", "imports_s")},
        "checkpoint_write_ms_p50": round(statistics.median(writes), 3),
        "checkpoint_write_ms_p90": round(sorted(writes)[int(0.9 * (len(writes) - 1))], 3),
        "goal_overhead_pct": 5.0,
    }


def _env() -> dict[str, str]:
    """The runs' environment: this one, bytecode writing allowed."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _compile(root: Path) -> None:
    """Bytecode for the tree's code, as an install leaves it."""
    # the demo's build script, not the example trees it copies into the repositories
    subprocess.run([sys.executable, "-m", "compileall", "-q", "portwright",
                    "examples/rmsnorm/build.py", "benchmarks/orchestration_overhead.py"],
                   cwd=root, env=_env(), check=True, stdout=subprocess.DEVNULL)


@contextlib.contextmanager
def _checkout(rev: str) -> Iterator[Path]:
    """A detached copy of commit ``rev`` of this repository (removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="portwright-baseline-") as folder:
        tree = Path(folder) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--quiet", "--detach",
                        str(tree), rev], check=True)
        try:
            yield tree
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(tree)], check=False)


def _child(scratch: str, number: int, warm: bool, root: Path = ROOT,
           label: str = "") -> dict[str, Any]:
    args = [sys.executable, __file__, "--one", str(number), "--scratch", scratch,
            "--root", str(root)]
    done = subprocess.run([*args, *(["--warm"] if warm else [])], capture_output=True,
                          text=True, check=False, env=_env())
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(done.returncode)
    run: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{label}run {number + 1} {'warm' if warm else 'cold'}: wall {run['wall_s']:.2f} s = "
          f"sandbox {run['sandbox_s']:.2f} s + model {run['model_s']:.3f} s + overhead "
          f"{run['overhead_s']:.2f} s ({run['overhead_pct']:.1f} %); "
          f"{run['git_processes']} git processes ({run['git_s']:.2f} s); "
          f"load {run['load_average'][0]:.1f}")
    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5,
                        help="pairs of runs: a cold one, then a warm one in its project")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--baseline", metavar="REV",
                        help="also measure commit REV, interleaved, and report the ratios")
    parser.add_argument("--no-write", action="store_true",
                        help="print the figures, do not write the result file")
    args = parser.parse_args()
    if args.one is not None:  # a child: one run, its figures as the last line
        print(json.dumps(one_run(args.scratch, args.one, warm=args.warm, root=args.root)))
        return 0
    with contextlib.ExitStack() as stack:
        roots = {"": ROOT}
        if args.baseline:
            roots["baseline "] = stack.enter_context(_checkout(args.baseline))
        runs = _measure(roots, args.repeat)
    summaries = {kind: _summary(of_kind) for kind, of_kind in runs[""].items()}
    baseline = ({kind: _summary(of_kind) for kind, of_kind in runs["baseline "].items()}
                if args.baseline else None)
    _print(summaries, baseline)
    if not args.no_write:
        RESULT.write_text(json.dumps({
            "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "summary": summaries, "runs": runs[""],
            **({"baseline": {"rev": args.baseline, "summary": baseline,
                             "runs": runs["baseline "]}} if baseline else {})},
            indent=2) + "\n")
        print(f"wrote {RESULT.relative_to(ROOT)}")
    return 0


def _measure(roots: dict[str, Path], repeat: int) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``repeat`` cold and warm runs of each tree in ``roots``, interleaved: the machine's
    load touches them all alike."""
    for root in roots.values():
        _compile(root)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        label: {"cold": [], "warm": []} for label in roots}
    with tempfile.TemporaryDirectory(prefix="portwright-bench-") as scratch:
        for number in range(repeat):
            for label, root in roots.items():
                folder = Path(scratch) / (label.strip() or "tree")
                folder.mkdir(exist_ok=True)
                for warm in (False, True):
                    runs[label]["warm" if warm else "cold"].append(
                        _child(str(folder), number, warm, root, label))
    return runs


def _print(summaries: dict[str, Any], baseline: dict[str, Any] | None) -> None:
    for kind, summary in summaries.items():
        print(f"median {kind}: wall {summary['wall_s_median']:.2f} s, overhead "
              f"{summary['overhead_s_median']:.2f} s ({summary['overhead_pct_median']:.1f} %)"
              f"; {summary['git_processes_median']:.0f} git processes; checkpoint write "
              f"p50 {summary['checkpoint_write_ms_p50']:.2f} ms, p90 "
              f"{summary['checkpoint_write_ms_p90']:.2f} ms; imports before the run "
              f"{summary['imports_s_median']:.2f} s")
        if baseline is not None:
            base = baseline[kind]
            print(f"  baseline {kind}: wall {base['wall_s_median']:.2f} s, overhead "
                  f"{base['overhead_s_median']:.2f} s ({base['overhead_pct_median']:.1f} %); "
                  f"{base['git_processes_median']:.0f} git processes; overhead ratio "
                  f"{summary['overhead_s_median'] / base['overhead_s_median']:.2f}")


if __name__ == "__main__":
    sys.exit(main())
