"""``eval validate``: a task is valid when its hidden tests all fail at ``parent`` and all pass
at ``port``, both with the hidden tests applied as a run's result will be
(:func:`~portwright.eval.hidden.apply_hidden`).

For each task, in a scratch folder of the output (removed afterwards: it holds the port):

1. the workspace (:func:`~portwright.eval.workspace.prepare`);
2. a clone of it at the harness commit: ``regress`` run as it is, then the hidden tests
   applied and run: every one must fail;
3. the same clone at ``port`` (its commit fetched from the task's downstream, checked out
   over the parent's tree so that a build there redoes only what the port changed): the
   hidden tests applied and run: every one must pass; ``regress`` run.

When the task's image has ``ccache``, step 2 fills the task's compiler cache
(:func:`cache_path`, :class:`~portwright.eval.hidden.BuildCache`) and every later build of
the task, step 3 and the scoring of runs, only reads it.

The *regress baseline* is the ids that pass at ``parent`` and at ``port``: what a run's
result must not fail (an id the real port itself drops or breaks is left out). Everything
runs in the task's Docker sandbox, whose environment image is built from the harness commit
(the lockfiles a run will have).

The outcome is a :class:`ValidationRecord`, ``validation/<task slug>.json`` in the output
folder, keyed by the task as loaded (suite defaults included) and the shas its revisions
name: a rerun reuses it while neither changes.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from portwright.eval.hidden import (
    BuildCache,
    apply_hidden,
    run_selection,
    run_tests,
    run_tests_and_selection,
    test_sandbox,
)
from portwright.eval.repos import ResolvedTask, resolve
from portwright.eval.tasks import PortTask
from portwright.eval.workspace import Workspace, prepare
from portwright.sandboxes.envimage import EnvSource
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

__all__ = ["Progress", "ValidationRecord", "cache_path", "record_path", "validate",
           "validate_all"]

Progress = Callable[[str, str], None]
"""Told ``(task id, what is happening)``."""


class ValidationRecord(BaseModel):
    """What ``eval validate`` observed of one task."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    task: str
    key: str
    """sha256 of the task as loaded and the shas of its revisions."""
    valid: bool
    reason: str
    """One line: why it is valid or not."""
    harness: str
    """The harness commit of the workspace."""
    parent: dict[str, bool]
    """Hidden test id → passed at ``parent`` (hidden tests applied)."""
    port: dict[str, bool]
    """Hidden test id → passed at ``port`` (hidden tests applied)."""
    regress_baseline: list[str]
    """Ids that pass at ``parent`` and at ``port``: a run must not fail them."""
    seconds: float


def _key(task: PortTask, resolved: ResolvedTask) -> str:
    shas = " ".join([*resolved.commits, resolved.pin, resolved.parent, resolved.port])
    return hashlib.sha256(f"{task.digest} {shas}".encode()).hexdigest()


def record_path(out: Path, task: PortTask) -> Path:
    """Where the validation record of ``task`` is kept under the output folder ``out``."""
    return out / "validation" / f"{task.slug}.json"


def cache_path(out: Path, task: PortTask) -> Path:
    """The compiler cache of ``task`` under the output folder ``out``
    (:class:`~portwright.eval.hidden.BuildCache`): written by the build at ``parent`` only,
    read by every later build of the task."""
    return out / "validation" / f"{task.slug}.ccache"


def _cached(path: Path, key: str) -> ValidationRecord | None:
    try:
        record = ValidationRecord.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None
    return record if record.key == key else None


def _clone_at(source: Path, dest: Path, rev: str) -> Path:
    plumbing.git(dest.parent, "clone", "--quiet", "--no-checkout", str(source), dest.name)
    plumbing.git(dest, "checkout", "--quiet", "--detach", rev)
    return dest


def _move_to_port(task: ResolvedTask, tree: Path, hidden: list[str]) -> None:
    """Check ``port`` out in ``tree`` (at ``parent`` with the hidden tests applied), the
    build files of the parent's run left in place: the port's commit fetched from the
    task's downstream clone, the hidden paths staged first so that a file the port holds
    as the hidden tests wrote it is not written again. Only what the port changed gets a
    new time, and a build rebuilds only that, as a developer's would."""
    plumbing.git(tree, "-c", "uploadpack.allowAnySHA1InWant=true", "fetch", "--quiet",
                 "--no-tags", "--no-write-fetch-head", str(task.downstream), task.port)
    # the sandbox changed every file's owner and back (their ctimes): without a refresh,
    # git would take them all for changed and write them again
    plumbing.git(tree, "update-index", "-q", "--refresh", ok_codes=(0, 1))
    if hidden:
        plumbing.git(tree, "update-index", "--add", "--remove", "--", *hidden)
    plumbing.git(tree, "checkout", "--quiet", "--force", "--detach", task.port)


def _reason(parent: dict[str, bool], port: dict[str, bool]) -> str:
    passing = [i for i, ok in parent.items() if ok]
    failing = [i for i, ok in port.items() if not ok]
    parts = []
    if passing:
        parts.append("passes at parent already: " + ", ".join(passing))
    if failing:
        parts.append("fails at port: " + ", ".join(failing))
    return "; ".join(parts) or f"all {len(port)} hidden test(s) fail at parent and pass at port"


def _observe(ws: Workspace, scratch: Path, logs: Path, cache: Path,
             say: Callable[[str], None]) -> tuple[dict[str, bool], dict[str, bool], list[str]]:
    """Hidden outcomes at parent and at port, and the regress baseline. One tree serves
    both: the port is checked out over the parent's, and its build only redoes what the
    port changed. The parent's build fills the task's compiler cache; the port's only reads
    it (nothing of the port goes into it)."""
    task = ws.task.task
    source = EnvSource(ws.downstream, ws.harness)
    regress = task.hidden.regress
    tree = _clone_at(ws.downstream, scratch / "tree", ws.harness)
    say("parent: building the environment and running the tests")
    with test_sandbox(task, tree, source=source, log_dir=logs / "parent",
                      run_id=f"eval-validate-{task.slug}-parent",
                      cache=BuildCache(cache, writable=True)) as sandbox:
        before = run_selection(task, sandbox, regress) if regress else {}
        written = apply_hidden(ws.task, tree)
        at_parent = run_tests(task, sandbox, task.hidden.tests)
    _move_to_port(ws.task, tree, written)
    apply_hidden(ws.task, tree)
    say("port: running the tests")
    with test_sandbox(task, tree, source=source, log_dir=logs / "port",
                      run_id=f"eval-validate-{task.slug}-port",
                      cache=BuildCache(cache, writable=False)) as sandbox:
        at_port, after = run_tests_and_selection(task, sandbox, task.hidden.tests, regress)
    baseline = sorted(i for i, ok in before.items() if ok and after.get(i))
    return at_parent, at_port, baseline


def validate(task: PortTask, repos: Path, out: Path, *,
             progress: Progress | None = None) -> ValidationRecord:
    """The validation record of ``task`` (its clones in ``repos``, its workspace and record
    under ``out``): reused when the task and its shas are unchanged, else observed."""
    def say(what: str) -> None:
        if progress is not None:
            progress(task.id, what)

    resolved = resolve(task, repos)
    key, path = _key(task, resolved), record_path(out, task)
    cached = _cached(path, key)
    if cached is not None:
        say("validated before (task and shas unchanged)")
        return cached
    started = time.monotonic()
    say("preparing the workspace")
    ws = prepare(task, repos, out / "work" / task.slug)
    scratch = path.with_suffix(".trees")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    cache = cache_path(out, task)
    shutil.rmtree(cache, ignore_errors=True)  # filled again from this parent alone
    try:
        at_parent, at_port, baseline = _observe(ws, scratch, path.with_suffix(".logs"), cache,
                                                say)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # the port must not stay in the output
    valid = not any(at_parent.values()) and all(at_port.values())
    record = ValidationRecord(task=task.id, key=key, valid=valid,
                              reason=_reason(at_parent, at_port), harness=ws.harness,
                              parent=at_parent, port=at_port, regress_baseline=baseline,
                              seconds=round(time.monotonic() - started, 2))
    temp = path.with_suffix(".json.tmp")
    temp.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    temp.replace(path)
    say("valid" if valid else f"invalid: {record.reason}")
    return record


def validate_all(tasks: list[PortTask], repos: Path, out: Path, *, jobs: int = 1,
                 progress: Progress | None = None) -> list[ValidationRecord]:
    """:func:`validate` of every task, ``jobs`` at a time, in the tasks' order. Every task's
    clones and revisions are checked first, so bad input stops before any sandbox starts."""
    for task in tasks:
        resolve(task, repos)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(validate, task, repos, out, progress=progress)
                   for task in tasks]
        return [future.result() for future in futures]
