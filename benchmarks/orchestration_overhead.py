"""How much of a port run is portwright's own overhead?

Runs the demo — the whole port cycle on the rmsnorm → rmsnorm-cpp example's missing row,
agents replayed from ``examples/rmsnorm/demo.cassette.jsonl``, gates in the Docker
sandbox — in-process, ``--repeat`` times, and splits each run's wall time into:

* **sandbox**: time inside sandbox commands (the evidence records' durations: every gate
  command) plus starting the run's container;
* **model**: time inside the model client (replay: nearly zero);
* **overhead**: the rest — graph, checkpoints, git, evidence engines, spec, records.

It also times every checkpoint write (p50, p90). Goal: overhead ≤ 5 % of the wall time.
Writes ``benchmarks/results/orchestration_overhead.json``.

    python benchmarks/orchestration_overhead.py [--repeat 3]
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "rmsnorm"))

ROW = "rmsnorm-fused-residual"
CASSETTE = ROOT / "examples" / "rmsnorm" / "demo.cassette.jsonl"


class Timed:
    """Accumulates wall time of wrapped calls."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    @contextlib.contextmanager
    def measure(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds.append(time.perf_counter() - start)


def one_run(scratch: Path, number: int) -> dict[str, Any]:
    from build import build

    from portwright.agents.offline import ReplayModel
    from portwright.project import Project
    from portwright.sandboxes import docker as docker_backend
    from portwright.workflows import driver
    from portwright.workflows.state import RunStatus

    example = build(scratch / f"run-{number}")
    os.environ["PORTWRIGHT_STATE_DIR"] = str(scratch / f"state-{number}")
    project = Project.load(example.downstream, at="HEAD")

    model_time, checkpoint_time, start_time = Timed(), Timed(), Timed()
    replay = ReplayModel(CASSETTE)
    original_complete = replay.complete

    def complete(request: Any) -> Any:
        with model_time.measure():
            return original_complete(request)

    replay.complete = complete  # type: ignore[method-assign]

    original_open = driver.open_checkpointer

    @contextlib.contextmanager
    def timed_checkpointer(proj: Project) -> Iterator[Any]:
        with original_open(proj) as saver:
            put = saver.put

            def timed_put(*args: Any, **kwargs: Any) -> Any:
                with checkpoint_time.measure():
                    return put(*args, **kwargs)

            saver.put = timed_put  # type: ignore[method-assign]
            yield saver

    original_start = docker_backend.DockerSandbox._start

    def timed_start(self: Any) -> None:
        with start_time.measure():
            original_start(self)

    driver.open_checkpointer = timed_checkpointer  # type: ignore[assignment]
    docker_backend.DockerSandbox._start = timed_start  # type: ignore[method-assign]
    try:
        began = time.perf_counter()
        result = driver.start(project, ROW, lambda event: None, run_id=f"bench-{number}",
                              client=replay)
        wall = time.perf_counter() - began
    finally:
        driver.open_checkpointer = original_open
        docker_backend.DockerSandbox._start = original_start  # type: ignore[method-assign]
    if result.status is not RunStatus.DONE:
        raise SystemExit(f"the run did not finish: {result.status}: {result.values['reason']}")
    records = project.store(f"bench-{number}").records()
    commands = sum(r.duration for r in records if not r.command.startswith("check:"))
    sandbox = commands + sum(start_time.seconds)
    model = sum(model_time.seconds)
    return {"wall_s": round(wall, 3), "sandbox_s": round(sandbox, 3),
            "sandbox_commands_s": round(commands, 3),
            "container_start_s": round(sum(start_time.seconds), 3),
            "model_s": round(model, 4), "overhead_s": round(wall - sandbox - model, 3),
            "overhead_pct": round(100 * (wall - sandbox - model) / wall, 2),
            "checkpoint_writes": len(checkpoint_time.seconds),
            "checkpoint_ms": [round(1000 * s, 3) for s in checkpoint_time.seconds]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="portwright-bench-") as scratch:
        for number in range(args.repeat):
            runs.append(one_run(Path(scratch), number))
            run = runs[-1]
            print(f"run {number + 1}: wall {run['wall_s']:.2f} s = sandbox "
                  f"{run['sandbox_s']:.2f} s + model {run['model_s']:.3f} s + overhead "
                  f"{run['overhead_s']:.2f} s ({run['overhead_pct']:.1f} %)")
    writes = [ms for run in runs for ms in run["checkpoint_ms"]]
    summary = {
        "wall_s_median": statistics.median(r["wall_s"] for r in runs),
        "overhead_s_median": statistics.median(r["overhead_s"] for r in runs),
        "overhead_pct_median": statistics.median(r["overhead_pct"] for r in runs),
        "model_s_median": statistics.median(r["model_s"] for r in runs),
        "checkpoint_write_ms_p50": round(statistics.median(writes), 3),
        "checkpoint_write_ms_p90": round(sorted(writes)[int(0.9 * (len(writes) - 1))], 3),
        "goal_overhead_pct": 5.0,
    }
    print(f"median: wall {summary['wall_s_median']:.2f} s, overhead "
          f"{summary['overhead_s_median']:.2f} s ({summary['overhead_pct_median']:.1f} %); "
          f"checkpoint write p50 {summary['checkpoint_write_ms_p50']:.2f} ms, p90 "
          f"{summary['checkpoint_write_ms_p90']:.2f} ms")
    out = ROOT / "benchmarks" / "results" / "orchestration_overhead.json"
    out.write_text(json.dumps({"machine": {"python": platform.python_version(),
                                           "cpus": os.cpu_count()},
                               "summary": summary, "runs": runs}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
