"""How fast are the pages of ``portwright serve`` with a thousand runs?

Builds a small downstream repository and 1,000 stored runs in the real format, cheaply:
each run's folder gets its manifest, signed evidence records and logs (through the run
store), transcripts (through the transcript writer), verdict, surface, classification and
review files; its checkpoint is written by the compiled cycle itself (``update_state`` as
a node, so status and next node are the graph's own); its branch points at one port
commit. Then ``portwright serve``'s app runs under uvicorn on loopback and the runs page
and one run's page are fetched over HTTP ``--requests`` times each: p50 / p95 latency
(goal: p95 ≤ 150 ms), plus the first, cold runs page (the summary cache is built then).
Writes ``benchmarks/results/web_runs.json``.

    python benchmarks/web_runs.py [--runs 1000] [--requests 200]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "benchmarks" / "results" / "web_runs.json"
GOAL_P95_MS = 150.0

CACHE = '''"""A KV cache."""


def alloc(n, fill=0):
    """Allocate ``n`` slots filled with ``fill``."""
    if n < 0:
        raise ValueError("n must be >= 0")
    return [fill] * n
'''
TESTS = '''import pytest

from kv.cache import alloc


def test_alloc():
    assert alloc(3) == [0, 0, 0]


def test_alloc_negative():
    with pytest.raises(ValueError):
        alloc(-1)
'''
MATRIX = ("# Kernels\n\n| ID | Title | Status | Spec | Upstream | Notes |\n"
          "| --- | --- | --- | --- | --- | --- |\n| kv-cache | KV cache | {} | - | "
          "kv/cache.py, alloc | |\n")
LEDGER = ("# Ledger\n\n| change | upstream | kind | cost | notes |\n"
          "| --- | --- | --- | --- | --- |\n")


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, input=stdin,
                          capture_output=True, text=True).stdout.strip()


def commit(repo: Path, message: str, files: dict[str, str]) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def repositories(scratch: Path) -> tuple[Path, str, str, str]:
    """Upstream and downstream; returns (downstream, pin, base, port commit)."""
    up, down = scratch / "upstream", scratch / "downstream"
    for repo in (up, down):
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
    pin = commit(up, "kv cache", {"kv/__init__.py": "", "kv/cache.py": CACHE,
                                  "tests/test_cache.py": TESTS})
    base = commit(down, "scaffold", {
        "portwright.toml": '[upstream]\nsource = "../upstream"\n',
        "AGENTS.md": "# Rules\n\nPort kv faithfully.\n",
        "upstream-sync.md": f"# Upstream sync\n\nPinned commit: `{pin}`\n",
        "docs/parity/kernels.md": MATRIX.format("missing"), "parity-ledger.md": LEDGER,
        "tests/test_smoke.py": "def test_smoke():\n    assert True\n"})
    spec = (f"---\nrow: kv-cache\npin: {pin}\nslice: the whole function\n---\n# kv-cache\n\n"
            "## Surface\n\n| item | kind | status | reason | anchor |\n| --- | --- | --- | --- "
            "| --- |\n| alloc | function | ported | | `kv/cache.py:4` |\n\n## Anchors\n\n"
            "- `kv/cache.py:4`\n")
    git(down, "checkout", "-q", "-b", "port")
    port = commit(down, "port kv-cache", {
        "kv/__init__.py": "", "kv/cache.py": CACHE, "tests/test_cache.py": TESTS,
        "specs/kv-cache.md": spec, "docs/parity/kernels.md": MATRIX.format("ported"),
        "parity-ledger.md": LEDGER + "| kv/cache.py | kv/cache.py:4 | port | | |\n"})
    git(down, "checkout", "-q", "main")
    return down, pin, base, port


def transcript(path: Path, role: str, rng: random.Random) -> None:
    from portwright.agents.transcript import Transcript

    t = Transcript(path)
    t.write("start", role=role, model="bench", tools=["read_file", "write_file"], max_steps=40)
    t.write("message", message={"role": "system", "content": f"You are the {role}. " * 40})
    t.write("message", message={"role": "user", "content": "Port kv/cache.py:4. " * 20})
    for step in range(rng.randint(1, 4)):
        t.write("message", step=step, message={
            "role": "assistant", "content": None, "tool_calls": [{
                "id": f"c{step}", "name": "write_file",
                "arguments": json.dumps({"path": "kv/cache.py", "content": CACHE})}]})
        t.write("usage", prompt_tokens=rng.randint(800, 3000),
                completion_tokens=rng.randint(50, 400), cost_usd=rng.random() / 100)
        t.write("message", step=step, message={"role": "tool", "content": "written",
                                               "tool_call_id": f"c{step}"})
    t.write("end", status="done", reason="result submitted", steps=2, result={"ok": True},
            spent={"calls": 2, "wall_seconds": 0.0})


def one_run(project: Any, checkpoints: Any, run_id: str, number: int, pin: str, base: str,
            rng: random.Random, created: datetime) -> None:
    from portwright.runs.models import EvidenceKind, EvidenceRecord
    from portwright.workflows.state import CycleState, GateRef, Node, RunStatus, Step

    store = project.store(run_id)
    store.write_manifest(command="run kv-cache", commit=base, rules_digests={},
                         config=project.config)
    folder = store.dir
    gates: list[GateRef] = []
    for phase, gate, kind, code in (("spec", "anchors", EvidenceKind.GATE, 0),
                                    ("red", "focused", EvidenceKind.RED, 1),
                                    ("focused", "focused", EvidenceKind.GREEN, 0),
                                    ("full", "unit", EvidenceKind.GATE, 0)):
        log = f"{gate} output\n" + "tests/test_cache.py::test_alloc PASSED\n" * 20
        rel, digest = store.write_log(gate, log.encode())
        record = store.add(EvidenceRecord(
            phase=phase, gate=gate, kind=kind, command="python3 -m pytest -q", exit_code=code,
            passed=True, duration=rng.random() * 3, commit=base, tree=base, sandbox="docker",
            timestamp=created, log=rel, log_sha256=digest,
            tests_failed=["tests/test_cache.py::test_alloc"] if code else [],
            tests_passed=[] if code else ["tests/test_cache.py::test_alloc"]))
        gates.append(GateRef(phase=phase, name=gate, passed=True,
                             record=int(record.name.split("-")[0])))
    for role in ("gap_verifier", "enumerator", "implementer", "implementer", "reviewer"):
        n = len(list(folder.glob(f"transcript-{role}-*.jsonl"))) + 1
        transcript(folder / f"transcript-{role}-{n}.jsonl", role, rng)
    (folder / "gap.json").write_text(json.dumps({
        "status": "missing", "reasoning": "alloc exists upstream only", "missing_parts": [],
        "evidence": [{"kind": "upstream", "ref": "kv/cache.py:4-8", "detail": "def alloc"}]}))
    (folder / "classification.json").write_text(json.dumps({
        "slice": "the whole function", "answers": {},
        "items": [{"item": "function: alloc", "classification": "ported", "reason": ""}]}))
    (folder / "surface.json").write_text(json.dumps({
        "symbol": "alloc", "rev": pin, "language": "python", "definition": f"kv/cache.py:4@{pin}",
        "items": [{"kind": "function", "name": "alloc", "detail": "def alloc(n, fill=0)",
                   "anchor": f"kv/cache.py:4@{pin}"}]}))
    (folder / "review-1.json").write_text(json.dumps({
        "decision": "approve", "summary": "follows the spec", "findings": []}))
    nodes = list(Node)[:14]
    steps = [Step(node=node, started=created + timedelta(seconds=i),
                  finished=created + timedelta(seconds=i + rng.random()))
             for i, node in enumerate(nodes)]
    status, as_node = [(RunStatus.DONE, "open_pr"), (RunStatus.DONE, "open_pr"),
                       (RunStatus.BLOCKED, "blocked"), (RunStatus.RUNNING, "implement")][number % 4]
    state = CycleState(row="kv-cache", run_id=run_id, base=base, branch=f"portwright/{run_id}",
                       pin=pin, target=pin, symbols=["alloc"], symbol="alloc",
                       spec_path="specs/kv-cache.md", gap="missing", timeline=steps,
                       gates=gates, status=status,
                       reason="the implement bound is exhausted" if status is RunStatus.BLOCKED
                       else "")
    checkpoints.graph.update_state({"configurable": {"thread_id": run_id}},
                                   state.model_dump(), as_node=as_node)


def build_runs(project: Any, count: int, pin: str, base: str, port: str) -> float:
    from portwright.web.checkpoints import Checkpoints

    rng = random.Random(7)
    start = time.perf_counter()
    now = datetime.now(UTC)
    refs = []
    with Checkpoints(project) as checkpoints:
        for number in range(count):
            run_id = f"run-{number:04d}"
            one_run(project, checkpoints, run_id, number, pin, base, rng,
                    now - timedelta(minutes=count - number))
            refs.append(f"update refs/heads/portwright/{run_id} {port}\n")
    git(project.root, "update-ref", "--stdin", stdin="".join(refs))
    return time.perf_counter() - start


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(root: Path) -> tuple[Any, str]:
    import uvicorn

    from portwright.web.app import create_app
    from portwright.web.security import Guard

    port = free_port()
    app = create_app(root, Guard.for_bind("127.0.0.1", None))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning", access_log=False))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"


def timed(client: Any, url: str, count: int) -> list[float]:
    out = []
    for _ in range(count):
        start = time.perf_counter()
        answer = client.get(url)
        out.append((time.perf_counter() - start) * 1000)
        assert answer.status_code == 200, (url, answer.status_code, answer.text[:300])
    return out


def figures(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {"p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[max(0, math.ceil(len(ordered) * 0.95) - 1)], 2),
            "max_ms": round(ordered[-1], 2), "requests": len(ordered)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="web-runs-") as tmp:
        scratch = Path(tmp)
        os.environ["PORTWRIGHT_STATE_DIR"] = str(scratch / "state")
        os.environ["PORTWRIGHT_EVIDENCE_KEY"] = str(scratch / "key" / "evidence.key")
        import httpx

        from portwright.project import Project

        down, pin, base, port = repositories(scratch)
        project = Project.load(down)
        build_s = build_runs(project, args.runs, pin, base, port)
        server, url = serve(down)
        try:
            with httpx.Client(base_url=url, timeout=60) as client:
                cold = timed(client, "/", 1)[0]
                page = client.get("/")
                listed = page.text.count("<tr data-run=")
                assert listed == args.runs, listed
                run_id = f"run-{args.runs // 2:04d}"
                first_run = timed(client, f"/runs/{run_id}", 1)[0]
                runs_page = figures(timed(client, "/", args.requests))
                run_page = figures(timed(client, f"/runs/{run_id}", args.requests))
                filtered = figures(timed(client, "/?status=blocked", args.requests // 4))
        finally:
            server.should_exit = True
    load = os.getloadavg()
    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_avg_1_5_15": [round(x, 2) for x in load]},
        "runs": args.runs, "build_runs_s": round(build_s, 2),
        "runs_page_cold_ms": round(cold, 1), "run_page_first_ms": round(first_run, 1),
        "runs_page": runs_page, "run_page": run_page, "runs_page_filtered": filtered,
        "runs_page_bytes": len(page.content), "goal_p95_ms": GOAL_P95_MS,
        "meets_goal": runs_page["p95_ms"] <= GOAL_P95_MS and run_page["p95_ms"] <= GOAL_P95_MS,
    }
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
