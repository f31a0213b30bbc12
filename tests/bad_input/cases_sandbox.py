"""Sandbox arguments, interrupts and runs started at once."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from tests.bad_input.harness import Case, Setup
from tests.bad_input.world import World

EXEC = ("sandbox", "exec")
FULL = ("gates", "run", "--phase", "full")


def unit(run: str, timeout: int = 60) -> Setup:
    """The ``unit`` gate runs ``run``."""
    return lambda w: w.replace("AGENTS.md", 'run = "test -f src/attn.py"\nphases = ["focused", '
                               '"full"]\ntimeout = 60', f"run = {json.dumps(run)}\nphases = "
                               f'["focused", "full"]\ntimeout = {timeout}')


def backend(name: str) -> Setup:
    return lambda w: w.config(f'\n[sandbox]\nbackend = "{name}"\n')


def both(*setups: Setup) -> Setup:
    def setup(w: World) -> None:
        for one in setups:
            one(w)
    return setup


def _interrupted(w: World, home: Path) -> str | None:
    marks = list((home / "state").glob("projects/*/runs/*/interrupted"))
    return None if marks else "no `interrupted` mark in the run's folder"


def _two_runs(w: World, home: Path) -> str | None:
    runs = list((home / "state").glob("projects/*/runs/*"))
    if len(runs) != 2:
        return f"{len(runs)} run folders for two runs"
    for run in runs:
        ids = {json.loads(p.read_text())["run_id"] for p in run.glob("evidence/*.json")}
        if ids != {run.name}:
            return f"run {run.name} holds evidence of {ids}"
    return None


def sandbox(body: str) -> Setup:
    return lambda w: w.config(f"\n[sandbox]\n{body}\n")


def _no_env_images(w: World, home: Path) -> str | None:
    """A failed environment image build leaves no image of this world's inputs behind
    (found by their key: other repositories named alike may share the engine)."""
    import docker

    from portwright.project import Project
    from portwright.sandboxes.envimage import LABEL_KEY, EnvSource, read_spec

    config = Project.load(w.repo, at="HEAD").config.sandbox
    client = docker.from_env()
    try:
        key = read_spec(config, EnvSource(w.repo), client).key
        left = client.images.list(filters={"label": f"{LABEL_KEY}={key}"})
    finally:
        client.close()
    return f"environment images left: {[i.tags for i in left]}" if left else None


BUILD = ("sandbox", "build")
SLEEP = unit("sleep 60", timeout=120)
CASES = [
    # the environment image and GPUs
    Case("env-lockfile-glob-matches-nothing", BUILD,
         sandbox('setup = ["true"]\nlockfiles = ["uv.lock"]'), docker=True,
         says=("portwright.toml:7", "sandbox.lockfiles", "uv.lock")),
    Case("env-lockfile-glob-matches-nothing-gates", FULL,
         sandbox('setup = ["true"]\nlockfiles = ["requirements/*.txt"]'), docker=True,
         runs_left=True, says=("portwright.toml:7", "sandbox.lockfiles")),
    Case("env-setup-fails-at-build", BUILD, sandbox('setup = ["echo no-such-dep >&2; exit 3"]'),
         docker=True, timeout=300, after=_no_env_images,
         says=("portwright.toml:6", "sandbox.setup", "build log", "exit 3")),
    Case("env-dockerfile-not-committed", BUILD, sandbox('dockerfile = "ci/Dockerfile"'),
         docker=True, says=("portwright.toml:6", "sandbox.dockerfile", "not committed")),
    Case("env-build-without-setup-ok", BUILD, expect=0, docker=True),
    Case("env-gpus-no-runtime-exec", (*EXEC, "--backend", "docker", "--", "true"),
         sandbox('gpus = "all"'), docker=True,
         says=("portwright.toml:6", "sandbox.gpus", "NVIDIA")),
    Case("env-gpus-no-runtime-gates", FULL, sandbox("gpus = 1"), docker=True, runs_left=True,
         says=("sandbox.gpus", "NVIDIA")),
    Case("env-gpus-no-runtime-doctor", ("doctor",), sandbox('gpus = ["0"]'), docker=True,
         says=("gpus", "NVIDIA")),
    Case("env-gpus-bwrap", (*EXEC, "--backend", "bwrap", "--", "true"), sandbox('gpus = "all"'),
         bwrap=True, says=("sandbox.gpus", "bubblewrap")),

    Case("sb-exec-timeout-zero", (*EXEC, "--timeout", "0", "--", "true"), says=("--timeout",)),
    Case("sb-exec-timeout-negative", (*EXEC, "--timeout", "-1", "--", "true"),
         says=("--timeout",)),
    Case("sb-exec-timeout-nan", (*EXEC, "--timeout", "nan", "--", "true"), says=("--timeout",)),
    Case("sb-exec-timeout-inf", (*EXEC, "--timeout", "inf", "--", "true"), says=("--timeout",)),
    Case("sb-exec-timeout-tiny", (*EXEC, "--timeout", "1e-9", "--", "true"),
         says=("--timeout",)),
    Case("sb-exec-no-command", EXEC, says=("COMMAND",), fix=False),
    Case("sb-exec-backend-unknown", (*EXEC, "--backend", "podman", "--", "true"),
         says=("podman",), fix=False),
    Case("sb-exec-missing-program-docker", (*EXEC, "--backend", "docker", "--",
                                            "no-such-program"), expect=127, docker=True),
    Case("sb-exec-missing-program-bwrap", (*EXEC, "--backend", "bwrap", "--", "no-such-program"),
         expect=127, bwrap=True),
    Case("sb-exec-local-ok", (*EXEC, "--backend", "local", "--", "true"), expect=0),
    Case("sb-run-id-traversal", (*FULL, "--run-id", "../x"), says=("run id",)),
    Case("sb-run-id-slash", (*FULL, "--run-id", "a/b"), says=("run id",)),
    Case("sb-run-id-empty", (*FULL, "--run-id", ""), says=("run id",)),
    Case("sb-run-id-dot", (*FULL, "--run-id", "."), says=("run id",)),
    Case("sb-prune-ok", ("sandbox", "prune"), expect=0, docker=True),
    Case("sb-gates-full-ok", FULL, expect=0, docker=True, runs_left=True),
    Case("sb-gates-no-bytecode", FULL, unit("python3 -c 'import sys; sys.path.insert(0, "
                                            "\"src\"); import attn'"),
         expect=0, docker=True, runs_left=True),
    Case("sb-gates-no-emoji", FULL, unit("echo ':x: :thumbs_up:'; exit 3"), expect=1,
         docker=True, runs_left=True, says=(":x: :thumbs_up:",)),
    Case("sb-gates-failing-json", FULL, unit("exit 3"), expect=1, docker=True, runs_left=True,
         says=("exit",)),
    # interrupts: the sandbox goes, the run says it was interrupted
    Case("sig-term-gates-docker", FULL, SLEEP, expect=143, docker=True, runs_left=True,
         interrupt=(signal.SIGTERM, 30), after=_interrupted, json=False),
    Case("sig-int-gates-docker", FULL, SLEEP, expect=130, docker=True, runs_left=True,
         interrupt=(signal.SIGINT, 30), after=_interrupted, json=False),
    Case("sig-term-gates-bwrap", FULL, both(SLEEP, backend("bwrap")), expect=143,
         runs_left=True, bwrap=True, interrupt=(signal.SIGTERM, 30), after=_interrupted,
         json=False),
    Case("sig-int-exec-docker", (*EXEC, "--backend", "docker", "--", "sleep", "60"), expect=130,
         docker=True, runs_left=True, interrupt=(signal.SIGINT, 30), json=False),
    Case("sig-term-exec-bwrap", (*EXEC, "--backend", "bwrap", "--", "sleep", "60"), expect=143,
         runs_left=True, bwrap=True, interrupt=(signal.SIGTERM, 30), json=False),
    # two runs at once: two run folders, each with its own evidence
    Case("conc-two-gates-runs", ("gates", "run", "--phase", "spec"), expect=0, runs_left=True,
         twice=True, after=_two_runs, json=False),
    Case("conc-two-gates-runs-docker", FULL, expect=0, docker=True, runs_left=True, twice=True,
         after=_two_runs, json=False),
]
