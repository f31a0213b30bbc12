"""``eval validate``: a task is valid when its hidden tests all fail at ``parent`` and all pass
at ``port``, both with the hidden tests applied as a run's result will be
(:func:`~portwright.eval.hidden.apply_hidden`).

For each task, in a scratch folder of the output (removed afterwards: it holds the port):

1. the workspace (:func:`~portwright.eval.workspace.prepare`), and the task's environment
   image (built when missing: its id is part of the key);
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
folder, keyed (:func:`validation_key`) by the task as loaded (suite defaults included), the
shas its revisions name, the id of the image its sandboxes run and :data:`PROTOCOL`.

**The validation store.** A record and its compiler cache are also kept outside any output
folder, in ``eval/validation/<slug>/<key>.json`` and ``<key>.ccache/`` of the state folder
(:func:`store_dir`: ``$PORTWRIGHT_STATE_DIR``, else ``$XDG_STATE_HOME/portwright``, else
``~/.local/state/portwright``). A later validation of the task with the same key — another
output folder, another ``eval run`` — takes them from there instead of running the tests
again: the record is copied and the cache linked (copied where links cannot be) into its
output folder, which stays self-contained, as if it had validated the task itself (only the
logs of the sandboxes are not there). ``revalidate`` (``--revalidate``) observes the task
again whatever is stored, and replaces the entry.

The store also keeps the *seeds* of the workspaces' repositories (:func:`seed_dir`,
``eval/validation/_seeds/<sha>.git``): each parent's history, and each upstream's up to a
task's last commit, fetched once, which every workspace of a task with that commit,
validation's and the runs', copies instead of fetching it again
(:mod:`portwright.eval.workspace`). Taking an entry or a seed marks it used; ``eval
prune`` (:mod:`portwright.eval.store`) removes those unused for a while.

The store is written by this host, but what is read from it is checked as any input: a
record must parse as a :class:`ValidationRecord` (nothing more, nothing less) and hold the
key it is filed under, its cache must be a folder (not a link); an entry that fails any of
this is ignored (a warning names the file), the task validated again and the entry replaced
— the safe choice, as validation only costs time. An entry is written under a file lock
(one per key: two processes or ``--jobs`` threads validating the same task observe it once,
the second reuses the first's) and its record last, atomically: an entry cut short has no
record and is not used.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock
from filelock import Timeout as LockTimeout
from pydantic import BaseModel, ConfigDict, ValidationError

from portwright.environment import STATE_ENV, private_folder, state_home
from portwright.errors import UsageError
from portwright.eval.hidden import (
    BuildCache,
    apply_hidden,
    run_selection,
    run_tests,
    run_tests_and_selection,
    task_image,
    test_sandbox,
)
from portwright.eval.repos import ResolvedTask, resolve
from portwright.eval.store import SEEDS, touch
from portwright.eval.tasks import PortTask
from portwright.eval.workspace import Workspace, prepare
from portwright.sandboxes.envimage import EnvSource
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

__all__ = ["PROTOCOL", "Progress", "ValidationRecord", "cache_path", "record_path",
           "store_dir", "stored_record_path", "validate", "validate_all", "validation_key"]

PROTOCOL = 2
"""How tasks are validated, as a number: bumped when what validation observes, or how,
changes without the task, its shas or its image changing. It is part of the key, so a
record of another protocol is never reused."""
LOCK_TIMEOUT = 3 * 3600.0
"""Seconds a validation waits for another one of the same task (and key) to end."""

Progress = Callable[[str, str], None]
"""Told ``(task id, what is happening)``."""


class ValidationRecord(BaseModel):
    """What ``eval validate`` observed of one task."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    task: str
    key: str
    """sha256 of :data:`PROTOCOL`, the task as loaded, the shas of its revisions and
    :attr:`image` (:func:`validation_key`)."""
    image: str
    """The id of the image the task's test sandboxes ran."""
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


def validation_key(task: PortTask, resolved: ResolvedTask, image: str) -> str:
    """What determines a task's validation: :data:`PROTOCOL`, the task as loaded, the shas
    its revisions name and the id of the image its sandboxes run (which changes with the
    base image, the setup and the lockfiles)."""
    shas = " ".join([*resolved.commits, resolved.pin, resolved.parent, resolved.port])
    return hashlib.sha256(f"{PROTOCOL} {task.digest} {shas} {image}".encode()).hexdigest()


def record_path(out: Path, task: PortTask) -> Path:
    """Where the validation record of ``task`` is kept under the output folder ``out``."""
    return out / "validation" / f"{task.slug}.json"


def cache_path(out: Path, task: PortTask) -> Path:
    """The compiler cache of ``task`` under the output folder ``out``
    (:class:`~portwright.eval.hidden.BuildCache`): written by the build at ``parent`` only,
    read by every later build of the task."""
    return out / "validation" / f"{task.slug}.ccache"


def store_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The validation store (module docstring): ``eval/validation`` of the state folder
    that ``environ`` (default: this process's) names."""
    return state_home(environ) / "eval" / "validation"


def seed_dir(store: Path) -> Path:
    """The seeds of the workspaces' repositories (:func:`~portwright.eval.workspace.prepare`):
    each parent's and upstream last commit's history, fetched once, in ``store`` (a name no
    task's slug can have)."""
    return store / SEEDS


def stored_record_path(store: Path, task: PortTask, key: str) -> Path:
    """The record of ``task`` under ``key`` in ``store``; its compiler cache is beside it
    (``.ccache``), and so is the entry's lock (``.lock``)."""
    return store / task.slug / f"{key}.json"


def _cached(path: Path, key: str) -> ValidationRecord | None:
    """The output folder's own record when it holds ``key``; one that does not parse is
    ignored (with a warning) and the task validated again."""
    if not path.is_file():
        return None
    try:
        record = ValidationRecord.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        logger.warning("ignoring the validation record %s (%s): the task is validated again "
                       "and the record replaced", path, _first_line(exc))
        return None
    return record if record.key == key else None


def _first_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError) and exc.errors():
        error = exc.errors()[0]
        where = ".".join(map(str, error["loc"]))
        return f"{where}: {error['msg']}" if where else error["msg"]
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _stored(store: Path, task: PortTask, key: str) -> ValidationRecord | None:
    """The store's record of ``task`` under ``key``, checked (module docstring); None when
    there is none or it fails a check (a warning names the file)."""
    path = stored_record_path(store, task, key)
    if not path.exists():
        return None
    problem = None
    try:
        record = ValidationRecord.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        problem = f"it is not a validation record: {_first_line(exc)}"
    else:
        cache = path.with_suffix(".ccache")
        if record.key != key or record.task != task.id:
            problem = f"it holds the record of {record.task} under key {record.key[:16]}"
        elif cache.is_symlink() or not cache.is_dir():
            problem = f"its compiler cache {cache.name} is not a folder"
    if problem is not None:
        logger.warning("ignoring the stored validation record %s (%s): the task is validated "
                       "again and the entry replaced", path, problem)
        return None
    return record


@contextmanager
def _entry_lock(store: Path, task: PortTask, key: str,
                say: Callable[[str], None]) -> Iterator[None]:
    """Hold the store's lock of ``task`` under ``key`` (the folder made when missing)."""
    path = stored_record_path(store, task, key).with_suffix(".lock")
    try:
        private_folder(path.parent)
    except OSError as exc:
        raise UsageError(f"cannot make the validation store's folder: {exc.strerror or exc}",
                         file=path.parent, key=STATE_ENV,
                         fix=f"set {STATE_ENV} to a folder you can write") from exc
    lock = FileLock(str(path))
    try:
        try:
            lock.acquire(timeout=0)
        except LockTimeout:
            say("waiting for another validation of this task")
            lock.acquire(timeout=LOCK_TIMEOUT)
    except LockTimeout as exc:
        raise UsageError(f"another validation of {task.id} has held its lock for over "
                         f"{LOCK_TIMEOUT:.0f} s", file=path,
                         fix="if no portwright process validates it any more, retry") from exc
    try:
        yield
    finally:
        lock.release()


def _link_tree(source: Path, dest: Path) -> None:
    """``dest`` (absent) made a copy of the folder ``source``: its folders and regular files
    (hard links where the file system allows, else copies with the same mode and, where
    this process may, the same owner: the sandbox's user reads them); links and other
    files are left out."""
    dest.mkdir(parents=True)
    _same_owner(source, dest)
    for folder, dirs, files in os.walk(source, followlinks=False):
        here = dest / Path(folder).relative_to(source)
        for name in dirs:
            if not (Path(folder) / name).is_symlink():
                (here / name).mkdir()
                _same_owner(Path(folder) / name, here / name)
        for name in files:
            src = Path(folder) / name
            if src.is_symlink() or not src.is_file():
                continue
            try:
                os.link(src, here / name)
            except OSError:
                shutil.copy2(src, here / name)
                _same_owner(src, here / name)


def _same_owner(source: Path, dest: Path) -> None:
    info = source.stat()
    dest.chmod(info.st_mode & 0o7777 & ~0o6000)  # never a set-id bit
    with contextlib.suppress(PermissionError):  # not root: the files stay this user's
        os.chown(dest, info.st_uid, info.st_gid)


def _replace_tree(source: Path, dest: Path) -> None:
    """``dest`` replaced by a copy of ``source`` (:func:`_link_tree`), made beside it
    first."""
    temp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(temp, ignore_errors=True)
    _link_tree(source, temp)
    shutil.rmtree(dest, ignore_errors=True)
    temp.rename(dest)


def _write_record(path: Path, record: ValidationRecord) -> None:
    """``record`` at ``path``, written whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    temp.replace(path)


def _take(store: Path, record: ValidationRecord, out: Path, task: PortTask) -> None:
    """The stored ``record`` and its compiler cache copied into the output folder ``out``
    (its logs of an earlier validation there removed: they are not this record's)."""
    stored = stored_record_path(store, task, record.key)
    _replace_tree(stored.with_suffix(".ccache"), cache_path(out, task))
    path = record_path(out, task)
    shutil.rmtree(path.with_suffix(".logs"), ignore_errors=True)
    _write_record(path, record)


def _keep(store: Path, record: ValidationRecord, out: Path, task: PortTask) -> None:
    """``record`` and the output folder's compiler cache put in the store, the record last.
    A store that cannot be written is warned about: the output folder has the record."""
    stored = stored_record_path(store, task, record.key)
    try:
        stored.unlink(missing_ok=True)  # an entry without its record is never used
        _replace_tree(cache_path(out, task), stored.with_suffix(".ccache"))
        _write_record(stored, record)
    except OSError as exc:
        logger.warning("the validation of %s is not kept in the store %s: %s", task.id,
                       store, exc)


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


def _observed(ws: Workspace, key: str, image: str, out: Path,
              say: Callable[[str], None]) -> ValidationRecord:
    """The task of ``ws`` validated in its sandboxes, its record written to ``out``."""
    task = ws.task.task
    started = time.monotonic()
    path = record_path(out, task)
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
    record = ValidationRecord(task=task.id, key=key, image=image, valid=valid,
                              reason=_reason(at_parent, at_port), harness=ws.harness,
                              parent=at_parent, port=at_port, regress_baseline=baseline,
                              seconds=round(time.monotonic() - started, 2))
    _write_record(path, record)
    say("valid" if valid else f"invalid: {record.reason}")
    return record


def validate(task: PortTask, repos: Path, out: Path, *, progress: Progress | None = None,
             store: Path | None = None, revalidate: bool = False) -> ValidationRecord:
    """The validation record of ``task`` (its clones in ``repos``, its workspace and record
    under ``out``): the output folder's own while its key holds, else the store's (``store``,
    default :func:`store_dir`) copied into ``out``, else observed and kept in both.
    ``revalidate`` observes it whatever is kept."""
    def say(what: str) -> None:
        if progress is not None:
            progress(task.id, what)

    resolved = resolve(task, repos)
    store = store_dir() if store is None else store
    say("preparing the workspace")
    ws = prepare(task, repos, out / "work" / task.slug, seeds=seed_dir(store))
    say("the environment image")
    image = task_image(task, EnvSource(ws.downstream, ws.harness))
    key = validation_key(task, resolved, image)
    if not revalidate and (cached := _cached(record_path(out, task), key)) is not None:
        say("validated before (task, shas and image unchanged)")
        return cached
    with _entry_lock(store, task, key, say):
        if not revalidate and (stored := _stored(store, task, key)) is not None:
            touch(stored_record_path(store, task, key))  # used: `eval prune` keeps it
            _take(store, stored, out, task)
            say("validated before (reused from the validation store)")
            return stored
        record = _observed(ws, key, image, out, say)
        _keep(store, record, out, task)
    return record


def validate_all(tasks: list[PortTask], repos: Path, out: Path, *, jobs: int = 1,
                 progress: Progress | None = None, store: Path | None = None,
                 revalidate: bool = False) -> list[ValidationRecord]:
    """:func:`validate` of every task, ``jobs`` at a time, in the tasks' order. Every task's
    clones and revisions are checked first, so bad input stops before any sandbox starts."""
    for task in tasks:
        resolve(task, repos)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(validate, task, repos, out, progress=progress, store=store,
                               revalidate=revalidate)
                   for task in tasks]
        return [future.result() for future in futures]
