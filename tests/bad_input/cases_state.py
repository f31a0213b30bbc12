"""The run state in states a command cannot read as it is: a checkpoint store that does not
answer or is not one portwright supports, a checkpoint database that is damaged or
emptied, a run's ``run.json`` that is garbage, a state folder that is a file. The listing
commands (``runs``, ``status``) go on with what the run folders tell and say what was
lost; the others stop with the file or setting and the fix.

The states with runs in them hold two real runs of the cycle, ``r1`` (row ``attn-fp8``)
and ``r2`` (``kv-cache``), each blocked at its gap verdict (no model may answer): run once
per process by the real command, then copied into each case's state folder,
``{root}/state``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.bad_input import world as worlds
from tests.bad_input.harness import Case, environment
from tests.bad_input.world import World

STATE = {"PORTWRIGHT_STATE_DIR": "{root}/state"}
"""The case's state folder is in its world, where the setup can fill it."""

REFUSED = "postgresql://port:pw-3c1e@127.0.0.1:1/runs"
"""A Postgres URL nothing listens at (port 1)."""

_CACHE: list[Path] = []
"""The project folder of the state the two runs left (made once per process)."""


def _project_folder(state: Path, repo: Path) -> Path:
    from portwright.project import Project

    return Project.load(repo, environ={"PORTWRIGHT_STATE_DIR": str(state),
                                       "HOME": str(state)}).state_dir


def _ran(w: World) -> Path:
    """The project folder of a state holding the runs ``r1`` and ``r2``, made by the real
    command in a copy of ``w`` (once)."""
    if _CACHE:
        return _CACHE[0]
    cache = w.root.parent / "state-cache"
    made = worlds.copy(w, cache / "world")
    env = environment(Case("state-cache", (), env={"PORTWRIGHT_STATE_DIR": str(cache / "state")}),
                      made, cache / "home")
    (cache / "home" / "tmp").mkdir(parents=True)
    for run_id, row in (("r1", "attn-fp8"), ("r2", "kv-cache")):
        done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(made.repo), "run",
                               row, "--run-id", run_id, "--sandbox", "local", "--allow-local"],
                              capture_output=True, text=True, env=env, check=False, timeout=120)
        assert done.returncode == 1, done.stdout[-1500:] + done.stderr[-1500:]  # blocked
    _CACHE.append(_project_folder(cache / "state", made.repo))
    return _CACHE[0]


def _runs(w: World) -> Path:
    """``{root}/state`` with the runs ``r1`` and ``r2`` (run folders and checkpoints);
    returns the project's folder in it."""
    source = _ran(w)
    target = _project_folder(w.root / "state", w.repo)
    shutil.copytree(source / "runs", target / "runs")
    shutil.copy2(source / "checkpoints.sqlite", target / "checkpoints.sqlite")
    return target


def _random_checkpoints(w: World) -> None:
    (_runs(w) / "checkpoints.sqlite").write_bytes(bytes(range(256)) * 32)


def _empty_checkpoints(w: World) -> None:
    (_runs(w) / "checkpoints.sqlite").write_bytes(b"")


def _garbage_run_json(w: World) -> None:
    (_runs(w) / "runs" / "r1" / "run.json").write_text("garbage{\n")


def _state_file(w: World) -> None:
    (w.root / "statefile").write_text("not a folder\n")


def _state_file_in_config(w: World) -> None:
    _state_file(w)  # a top-level key, before the first table
    w.write("portwright.toml", f'state_dir = "{w.root / "statefile"}"\n'
            + w.read("portwright.toml"))


def _no_run_left(w: World, home: Path) -> str | None:
    left = sorted(p.name for p in (home / "state").glob("projects/*/runs/*"))
    return f"a run folder was made for a run that cannot be checkpointed: {left}" if left \
        else None


CASES = [
    Case("state-checkpoint-url-mysql", ("runs",),
         lambda w: w.config('\n[runs]\ncheckpoint_url = "mysql://u:pw@127.0.0.1/runs"\n'),
         says=("portwright.toml", "runs.checkpoint_url", "postgresql://")),
    Case("state-checkpoint-url-nothing-listens", ("runs",),
         lambda w: w.config(f'\n[runs]\ncheckpoint_url = "{REFUSED}"\n'), expect=1,
         says=("checkpoint_url", "127.0.0.1", "refused", "fix")),
    Case("state-checkpoint-url-nothing-listens-run", ("run", "kv-cache"),
         lambda w: w.config(f'\n[runs]\ncheckpoint_url = "{REFUSED}"\n'), expect=1,
         says=("checkpoint_url", "refused"), after=_no_run_left),
    Case("state-checkpoints-random-runs", ("runs",), _random_checkpoints, env=STATE, expect=0,
         says=("checkpoints.sqlite", "not a database", "r1", "r2", "move it aside")),
    Case("state-checkpoints-random-status", ("status", "r1"), _random_checkpoints, env=STATE,
         expect=0, says=("checkpoints.sqlite", "attn-fp8", "unknown")),
    Case("state-checkpoints-random-resume", ("resume", "r1"), _random_checkpoints, env=STATE,
         says=("checkpoints.sqlite", "move it aside")),
    Case("state-checkpoints-empty-runs", ("runs",), _empty_checkpoints, env=STATE, expect=0,
         says=("checkpoints.sqlite", "no checkpoint", "r1", "r2")),
    Case("state-run-json-garbage-runs", ("runs",), _garbage_run_json, env=STATE, expect=0,
         says=("runs/r1/run.json", "r2", "kv-cache", "blocked")),
    Case("state-run-json-garbage-status", ("status", "r1"), _garbage_run_json, env=STATE,
         expect=0, says=("runs/r1/run.json", "blocked")),
    Case("state-dir-is-a-file", ("runs",), _state_file,
         env={"PORTWRIGHT_STATE_DIR": "{root}/statefile"},
         says=("PORTWRIGHT_STATE_DIR", "statefile", "not a folder")),
    Case("state-dir-is-a-file-config", ("status", "r1"), _state_file_in_config,
         env={"PORTWRIGHT_STATE_DIR": None}, says=("portwright.toml", "state_dir", "statefile")),
]
