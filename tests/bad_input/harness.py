"""One bad-input case, run the way a person runs it: the real ``portwright`` command as a
subprocess on a copy of the world, once as text and once with ``--json``. Every
expectation is checked here, in one place; the cases are data (``cases_*.py``).

A failed expectation is classified the way the bad-input sweep counts them:

``hang``        the command did not finish within the case's timeout
``traceback``   a Python traceback instead of a message
``accepted``    exit 0 where the input is wrong
``side effect`` a file of the repositories changed, or a container, process, run folder
                or temporary file was left behind
``vague``       a wrong exit code, a message that does not name the file / line / key /
                variable or carries no fix, or ``--json`` without a JSON error object
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.bad_input.world import World

ROOT = Path(__file__).resolve().parents[2]

Setup = Callable[[World], Any]


def _nothing(world: World) -> None:
    return None


@dataclass(frozen=True)
class Case:
    """One bad input: the command line, the setup mutation, the expectations."""

    id: str
    """Unique, readable: ``area-what``."""
    argv: tuple[str, ...]
    """Arguments after ``portwright -C <downstream>``; ``{pin}``, ``{head}``, ``{tree}``,
    ``{blob}`` and ``{up}`` are filled in from the world."""
    setup: Setup = _nothing
    """The mutation, applied to a fresh copy of the world (then committed)."""
    expect: int = 2
    """Exit code: 2 bad input, 1 a check found problems, 0 a control that must pass."""
    says: tuple[str, ...] = ()
    """Text the message must hold (case-insensitive): the file, line, key or variable."""
    fix: bool = True
    """The message carries a fix (``fix:`` / the JSON error's ``fix``)."""
    json: bool = True
    """Also run with ``--json``; a failure must print a JSON error object on stdout."""
    env: Mapping[str, str | None] = field(default_factory=dict)
    """Extra environment (None removes a variable)."""
    commit: bool = True
    """Commit the mutation (runs obey the committed config and rules)."""
    cwd_repo: str | None = None
    """Run with ``-C`` on this path (relative to the world's root) instead of the port."""
    timeout: float = 60.0
    """Seconds before the command counts as hung."""
    docker: bool = False
    """Needs the Docker engine (skipped without one)."""
    interrupt: tuple[int, float] | None = None
    """Send this signal once the sandbox runs a command (or after this many seconds)."""
    runs_left: bool = False
    """The command may leave a run folder in the state folder (a started run)."""
    after: Callable[[World, Path], str | None] | None = None
    """A further check once the command ended (given the world and the home folder, whose
    ``state`` is the state folder): what is wrong, or None."""
    twice: bool = False
    """Start the command twice at once (concurrency)."""
    bwrap: bool = False
    """Runs bubblewrap, whose unprivileged user binds paths in place: the world lives in a
    folder every user can enter, and commands use the system's temporary folder."""
    known: str = ""
    """A known failure left to another part of portwright: why (the case is a strict
    xfail, so it reports once it passes)."""

    def __str__(self) -> str:
        return self.id


@dataclass
class Outcome:
    mode: str
    code: int | None
    stdout: str
    stderr: str
    seconds: float


@dataclass
class Problem:
    category: str
    """hang, traceback, accepted, side effect, vague."""
    detail: str


ORDER = ("hang", "traceback", "accepted", "side effect", "vague")


def environment(case: Case, world: World, home: Path) -> dict[str, str]:
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "COLUMNS": "200",
        "PYTHONPATH": str(ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PORTWRIGHT_STATE_DIR": str(home / "state"),
        "PORTWRIGHT_EVIDENCE_KEY": str(home / "key" / "evidence.key"),
        "PORTWRIGHT_REFUSE_REAL_MODELS": "1",
        "TMPDIR": str(home / "tmp"),
    }
    if case.bwrap:
        env.pop("TMPDIR")
    for name, value in case.env.items():
        value = fill(value, world) if value is not None else None
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def fill(text: str, world: World) -> str:
    if "{" not in text:
        return text
    return (text.replace("{pin}", world.pin).replace("{head}", world.head)
            .replace("{up}", str(world.up.path)).replace("{down}", str(world.repo))
            .replace("{root}", str(world.root))
            .replace("{prefix}", (world.root / "prefix").read_text() if "{prefix}" in text
                     else "")
            .replace("{tree}", world.up_object("tree") if "{tree}" in text else "")
            .replace("{blob}", world.up_object("blob") if "{blob}" in text else ""))


def command(case: Case, world: World, as_json: bool) -> list[str]:
    args = [fill(a, world) for a in case.argv]
    if as_json:
        at = args.index("--") if "--" in args else len(args)
        args.insert(at, "--json")
    repo = world.root / case.cwd_repo if case.cwd_repo is not None else world.repo
    return [sys.executable, "-m", "portwright", "-C", str(repo), *args]


# -- what must not change ------------------------------------------------------------------

def fingerprint(world: World) -> dict[str, str]:
    """Every working file of both repositories (content, mode, link target), their refs,
    HEAD and index entries."""
    out: dict[str, str] = {}
    for repo in (world.repo, world.up.path):
        if not repo.exists():
            continue
        for path in sorted(repo.rglob("*")):
            rel = path.relative_to(world.root).as_posix()
            if path.relative_to(repo).parts[0] == ".git":
                continue
            if path.is_symlink():
                out[rel] = "link:" + str(path.readlink())
            elif path.is_file():
                out[rel] = f"{path.stat().st_mode:o}:" + hashlib.sha256(
                    path.read_bytes()).hexdigest()
            elif path.is_dir():
                out[rel] = "dir"
        for args in (("for-each-ref",), ("ls-files", "-s"), ("rev-parse", "HEAD")):
            done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                                  text=True, check=False)
            out[f"{repo.name}:git {' '.join(args)}"] = done.stdout
    out.update(_eval_files(world))
    return out


def _eval_files(world: World) -> dict[str, str]:
    """The files of an eval case (``eval/``: clones, suite, reports, cassettes), their
    clones' git objects left out, and the clones' refs."""
    out: dict[str, str] = {}
    folder = world.root / "eval"
    if not folder.is_dir():
        return out
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(world.root).as_posix()
        if ".git" in path.relative_to(folder).parts:
            if path.name == ".git":
                done = subprocess.run(["git", "-C", str(path.parent), "for-each-ref"],
                                      capture_output=True, text=True, check=False)
                out[f"{rel}:refs"] = done.stdout
            continue
        if path.is_symlink():
            out[rel] = "link:" + str(path.readlink())
        elif path.is_file():
            out[rel] = f"{path.stat().st_mode:o}:" + hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            out[rel] = "dir"
    return out


def session_processes(sid: int) -> list[str]:
    """Processes still alive in the session the command started."""
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                left.append(f"{entry.name} {(entry / 'cmdline').read_bytes()[:80]!r}")
        except (OSError, ValueError, IndexError):
            continue
    return left


def containers(world: World) -> list[str]:
    """Sandbox containers of this world's repository still present (an engine that does
    not answer within seconds is reported too: a frozen container makes it hang)."""
    from tests.conftest import docker_engine_running

    if not docker_engine_running():
        return []
    import docker

    from portwright.sandboxes.docker import LABEL_WORKTREE

    try:
        client = docker.from_env(timeout=20)
        try:
            found = client.containers.list(
                all=True, filters={"label": f"{LABEL_WORKTREE}={world.repo.resolve()}"})
            return [f"{c.short_id} {c.status}" for c in found]
        finally:
            client.close()
    except Exception as exc:  # the engine hangs or fails: that is what is left behind
        return [f"? the Docker engine does not answer ({type(exc).__name__})"]


def leftovers(case: Case, world: World, home: Path, sid: int) -> list[str]:
    out = [f"process {p}" for p in session_processes(sid)]
    out += [f"container {c}" for c in containers(world)] if case.docker else []
    tmp = home / "tmp"
    # the prompt templates' bytecode cache (jinja2's, portwright.agents.prompting) outlives
    # the process on purpose, as Python's own bytecode does: not a leftover
    out += [f"temporary {p.name}" for p in tmp.iterdir()
            if not p.name.startswith("_jinja2-cache-")] if tmp.is_dir() else []
    if not case.runs_left and case.expect == 2:
        state = home / "state"
        out += [f"run folder {p.relative_to(state)}" for p in state.glob("projects/*/runs/*")]
        out += [f"sandbox folder {p.relative_to(state)}" for p in state.glob("sandbox/*")]
        out += [f"sandbox folder {p.relative_to(state)}"
                for p in state.glob("projects/*/sandbox/*")]
    return out


# -- running -------------------------------------------------------------------------------

def _wait_for_command(home: Path, proc: subprocess.Popen[bytes], deadline: float) -> None:
    """Until the sandbox has started a command (its log exists), or ``deadline``."""
    state = home / "state"
    while time.monotonic() < deadline and proc.poll() is None:
        logs = [p for p in state.rglob("*.log") if "sandbox" in str(p)] if state.exists() \
            else []
        if logs:
            time.sleep(0.5)
            return
        time.sleep(0.1)


def start(case: Case, world: World, home: Path, as_json: bool) -> subprocess.Popen[bytes]:
    (home / "tmp").mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(command(case, world, as_json), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=environment(case, world, home),
                            cwd=world.root, start_new_session=True)


def finish(case: Case, proc: subprocess.Popen[bytes], home: Path, as_json: bool,
           started: float) -> Outcome:
    if case.interrupt is not None:
        signum, wait = case.interrupt
        _wait_for_command(home, proc, started + wait)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)
    try:
        out, err = proc.communicate(timeout=max(1.0, case.timeout - (time.monotonic()
                                                                     - started)))
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    return Outcome("json" if as_json else "text", code, out.decode("utf-8", "replace"),
                   err.decode("utf-8", "replace"), time.monotonic() - started)


def judge(case: Case, outcome: Outcome) -> list[Problem]:
    """What is wrong with one run of a case."""
    tag = f"[{outcome.mode}] "
    text = outcome.stdout + outcome.stderr
    shown = (f"exit {outcome.code}; stdout {outcome.stdout[-600:]!r}; "
             f"stderr {outcome.stderr[-900:]!r}")
    if outcome.code is None:
        return [Problem("hang", f"{tag}no answer after {case.timeout:g} s; {shown}")]
    if "Traceback (most recent call last)" in outcome.stderr:
        return [Problem("traceback", tag + outcome.stderr.strip().splitlines()[-1][:300])]
    if case.expect != 0 and outcome.code == 0:
        return [Problem("accepted", f"{tag}exit 0 where {case.expect} was expected; {shown}")]
    problems: list[Problem] = []
    if outcome.code != case.expect:
        problems.append(Problem("vague", f"{tag}exit {outcome.code}, expected {case.expect}; "
                                         f"{shown}"))
    if case.interrupt is not None:
        return problems
    if case.expect == 0:
        missing = [s for s in case.says if s.lower() not in text.lower()]
        return problems + ([Problem("vague", f"{tag}output does not show {missing}; {shown}")]
                           if missing else [])
    error: dict[str, Any] | None = None
    if outcome.mode == "json":
        try:
            payload = json.loads(outcome.stdout)
        except ValueError:
            return [*problems, Problem("vague", f"{tag}stdout is not JSON; {shown}")]
        error = payload.get("error") if isinstance(payload, dict) else None
        if case.expect == 2 and not isinstance(error, dict):
            problems.append(Problem("vague", f"{tag}no JSON error object; {shown}"))
        if case.expect == 1 and not isinstance(error, dict) and not (
                isinstance(payload, dict) and (payload.get("ok") is False
                                               or payload.get("passed") is False)):
            problems.append(Problem("vague", f"{tag}JSON says neither error nor failure"))
        text = outcome.stdout if error is None else json.dumps(error) + outcome.stderr
    lowered = text.lower()
    missing = [s for s in case.says if s.lower() not in lowered]
    if missing:
        problems.append(Problem("vague", f"{tag}message does not name {missing}; {shown}"))
    if case.fix and case.expect == 2:
        has_fix = bool(error.get("fix")) if isinstance(error, dict) else "fix:" in lowered
        if not has_fix:
            problems.append(Problem("vague", f"{tag}no fix given; {shown}"))
    return problems


def check(case: Case, world: World, home: Path) -> list[Problem]:
    """Run ``case`` in text and json modes; every problem found."""
    problems: list[Problem] = []
    modes = (False, True) if case.json else (False,)
    for as_json in modes:
        mode = "json" if as_json else "text"
        before = fingerprint(world)
        started = time.monotonic()
        procs = [start(case, world, home, as_json) for _ in range(2 if case.twice else 1)]
        for proc in procs:
            problems += judge(case, finish(case, proc, home, as_json, started))
        after = fingerprint(world)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        if changed:
            problems.append(Problem("side effect", f"[{mode}] changed: {changed[:8]}"))
        left = [x for proc in procs for x in leftovers(case, world, home, proc.pid)]
        if left:
            problems.append(Problem("side effect", f"[{mode}] left behind: {left[:8]}"))
        if case.after is not None:
            wrong = case.after(world, home)
            if wrong:
                problems.append(Problem("accepted" if case.expect != 0 or case.interrupt
                                        else "side effect", f"[{mode}] {wrong}"))
        cleanup(world, home)
    return problems


def cleanup(world: World, home: Path) -> None:
    """Remove what a run may legitimately leave, so the next mode starts clean."""
    import shutil

    for folder in (home / "tmp", home / "state"):
        shutil.rmtree(folder, ignore_errors=True)
    for name in containers(world):
        if not name.startswith("?"):
            subprocess.run(["docker", "rm", "-f", name.split()[0]], capture_output=True,
                           check=False, timeout=60)


def category(problems: list[Problem]) -> str:
    """The one category a failed case counts under (the most severe)."""
    found = {p.category for p in problems}
    return next(c for c in ORDER if c in found)
