"""What the environment image costs: a cold build, a cache hit, and a sandbox opened on it.

Usage: ``python benchmarks/env_image.py [--out FILE] [--hits N] [--opens N]``

- cold build: ``ensure_env_image`` on a fresh repository whose ``[sandbox] setup`` makes a
  virtual environment and pip-installs ``requirements.txt`` (one small pure-Python package,
  ``six``, from PyPI, with network while the image builds) — the image did not exist;
- cache hit: the same call again (reads the committed lockfiles, asks the engine), median
  over ``--hits``;
- per-run overhead: a ``DockerSandbox`` opened (image resolved, container started) and its
  first ``exec`` (``true``) done, on the environment image against the base image,
  interleaved, median over ``--opens`` each — setup is not run per sandbox on either.

The images this creates are removed at the end. Prints the figures and writes them as JSON
(default ``benchmarks/results/env_image.json``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from portwright.config import SandboxConfig  # noqa: E402
from portwright.runs.keys import evidence_key_dir  # noqa: E402
from portwright.sandboxes.docker import DockerSandbox  # noqa: E402
from portwright.sandboxes.engine import docker_client  # noqa: E402
from portwright.sandboxes.envimage import (  # noqa: E402
    LABEL_REPO,
    EnvSource,
    ensure_env_image,
    read_spec,
)
from portwright.sandboxes.selection import docker_status  # noqa: E402

SETUP = ["python3 -m venv --system-site-packages /opt/venv",
         "/opt/venv/bin/pip install --no-cache-dir -r requirements.txt"]
REQUIREMENTS = "six==1.17.0\n"


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {"median_s": round(statistics.median(ordered), 4), "p90_s": round(p90, 4),
            "min_s": round(ordered[0], 4), "n": len(ordered)}


def _repo(path: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    path.mkdir(parents=True)
    (path / "requirements.txt").write_text(REQUIREMENTS)
    (path / "app.py").write_text("import six\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True)


def _open_and_exec(worktree: Path, config: SandboxConfig, source: EnvSource, logs: Path,
                   run_id: str) -> float:
    start = time.perf_counter()
    with DockerSandbox(worktree, config=config, run_id=run_id, log_dir=logs,
                       key_dir=evidence_key_dir(), source=source) as sb:
        result = sb.exec(["true"])
        took = time.perf_counter() - start
    assert result.ok, result.stderr_tail
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path,
                        default=ROOT / "benchmarks" / "results" / "env_image.json")
    parser.add_argument("--hits", type=int, default=10)
    parser.add_argument("--opens", type=int, default=10)
    args = parser.parse_args()
    if docker_status() != "ok":
        raise SystemExit(f"needs a Docker engine: {docker_status()}")
    figures: dict[str, Any] = {}
    load_before = os.getloadavg()
    env_config = SandboxConfig(setup=SETUP, memory="512m")
    base_config = SandboxConfig(memory="512m")
    client = docker_client(timeout=600)
    name = ""
    try:
        with tempfile.TemporaryDirectory(prefix="portwright-bench-env-") as tmp:
            base = Path(tmp)
            worktree = base / f"bench-env-{os.getpid()}"
            _repo(worktree)
            source = EnvSource(worktree, state_dir=base / "state")
            name = read_spec(env_config, source).name

            start = time.perf_counter()
            cold = ensure_env_image(env_config, source, client)
            figures["cold_build_s"] = round(time.perf_counter() - start, 3)
            assert cold.built
            print(f"cold build ({cold.tag}): {figures['cold_build_s']} s")

            hits = []
            for _ in range(args.hits):
                start = time.perf_counter()
                assert not ensure_env_image(env_config, source, client).built
                hits.append(time.perf_counter() - start)
            figures["cache_hit"] = summary(hits)
            print(f"cache hit: {figures['cache_hit']}")

            env_opens, base_opens = [], []
            for i in range(args.opens):
                for side in ("env", "base") if i % 2 == 0 else ("base", "env"):
                    config = env_config if side == "env" else base_config
                    took = _open_and_exec(worktree, config, source, base / "logs" / f"{side}{i}",
                                          f"bench-env-{side}-{i}")
                    (env_opens if side == "env" else base_opens).append(took)
            figures["open_and_first_exec_env_image"] = summary(env_opens)
            figures["open_and_first_exec_base_image"] = summary(base_opens)
            figures["per_run_overhead_s"] = round(statistics.median(env_opens)
                                                  - statistics.median(base_opens), 4)
            print(f"sandbox open + first exec, env image:  {summary(env_opens)}")
            print(f"sandbox open + first exec, base image: {summary(base_opens)}")
            print(f"per-run overhead of the env image: {figures['per_run_overhead_s']} s")
    finally:
        if name:
            for image in client.images.list(filters={"label": f"{LABEL_REPO}={name}"}):
                client.images.remove(image.id, force=True)
        client.close()

    payload = {
        "benchmark": "env_image",
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "kernel": platform.release(),
                    "cpus": os.cpu_count(),
                    "loadavg_1m_before_after": [round(load_before[0], 2),
                                                round(os.getloadavg()[0], 2)]},
        "setup": SETUP,
        "requirements": REQUIREMENTS.strip(),
        "base_image": base_config.image,
        "figures": figures,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
