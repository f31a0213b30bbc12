"""The validation store pruned (``portwright eval prune``): what it holds that nothing has
used for a while is removed.

The store (:mod:`portwright.eval.validate`) keeps, per task, an *entry* for each key it was
validated under — ``<slug>/<key>.json`` (the record), ``<key>.ccache/`` (its compiler
cache), ``<key>.lock`` — and a *seed* per commit a workspace fetches (``_seeds/<sha>.git``:
a parent, an upstream's last commit). Nothing else removes them, so a machine that runs
the suite every night, its images rebuilt now and then, keeps every older key's compiler
cache. An entry's last use is its record's time:
written when the task is validated, touched each time a validation takes it from the store;
a seed's is its folder's time, touched each time a workspace copies it. ``prune_store``
removes each entry and seed whose last use is older than the age given, and the leftovers of
a write cut short (``*.tmp``, ``*.partial``) as old.

An entry is removed under its lock, taken without waiting: one that a validation holds is
left for the next prune (:attr:`PruneReport.in_use`); what cannot be removed (a permission)
is named (:attr:`PruneReport.failed`) and the prune goes on. Its record goes first, so an entry cut
short by a crash here is never used (validation ignores an entry without a record). A seed
has no lock: a workspace copying one as it goes fails its copy and fetches the commit
instead. Nothing is followed out of the store: a link found in it is removed as a link.

The sizes reported are those of the files removed; a compiler cache is also linked into the
output folders that took it (hard links), whose copies stay, so the disk gets back less
when those folders are kept.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import time
from pathlib import Path
from typing import Literal

from filelock import FileLock
from filelock import Timeout as LockTimeout
from pydantic import BaseModel, ConfigDict

from portwright.environment import STATE_ENV
from portwright.errors import UsageError
from portwright.eval import DEFAULT_AGE

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_AGE", "PruneReport", "Removed", "parse_age", "prune_store", "touch"]

SEEDS = "_seeds"
"""The seeds' folder in the store (:func:`portwright.eval.validate.seed_dir`): a name no
task's slug can have."""
_UNITS = {"m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_AGE = re.compile(r"(\d+(?:\.\d+)?)([mhdw])")
_LEFTOVER = (".tmp", ".partial")


class Removed(BaseModel):
    """One thing the prune removed (or, in a dry run, would remove)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["entry", "seed", "leftover"]
    path: str
    """The entry's record, the seed's folder, or the leftover."""
    bytes: int
    days_unused: float


class PruneReport(BaseModel):
    """What ``portwright eval prune`` did."""

    model_config = ConfigDict(frozen=True)

    store: str
    older_than_seconds: float
    dry_run: bool
    removed: list[Removed]
    in_use: list[str]
    """Entries (``<slug>/<key>``) whose lock a validation held: left as they are."""
    failed: list[str]
    """``path: why`` of each thing that could not be removed (a permission, a file the
    system keeps): the prune goes on with the rest."""
    freed_bytes: int


def parse_age(text: str) -> float:
    """Seconds in an age such as ``30d``, ``12h``, ``90m``, ``2w`` (or ``0``: everything
    not in use); a :class:`UsageError` naming ``--older-than`` otherwise."""
    value = text.strip()
    if value == "0":
        return 0.0
    if (match := _AGE.fullmatch(value)) is None:
        raise UsageError(f"{text!r} is not an age", key="--older-than",
                         fix="give a number and a unit: m (minutes), h, d or w, such as "
                             f"{DEFAULT_AGE} or 12h (0 for everything not in use)")
    return float(match.group(1)) * _UNITS[match.group(2)]


def touch(path: Path) -> None:
    """Mark ``path`` (a stored record, a seed) used now; a store that cannot be written is
    not an error here (the entry is only pruned sooner)."""
    try:
        os.utime(path, follow_symlinks=False)
    except OSError as exc:
        logger.debug("cannot mark %s used: %s", path, exc)


def _size(path: Path) -> int:
    """Bytes of the files at or under ``path``, links not followed."""
    if path.is_symlink() or not path.is_dir():
        try:
            return path.lstat().st_size
        except OSError:
            return 0
    total = 0
    for folder, _, files in os.walk(path, followlinks=False):
        for name in files:
            try:
                total += (Path(folder) / name).lstat().st_size
            except OSError:
                continue
    return total


def _remove(path: Path) -> None:
    """``path`` removed: a link or a file unlinked, a folder removed with what is in it
    (``shutil.rmtree`` follows no link)."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def _mtime(path: Path) -> float | None:
    try:
        return path.lstat().st_mtime
    except OSError:
        return None


class _Pruner:
    def __init__(self, store: Path, older_than: float, dry_run: bool) -> None:
        self.store, self.dry_run = store, dry_run
        self.now = time.time()
        self.cutoff = self.now - older_than
        self.removed: list[Removed] = []
        self.in_use: list[str] = []
        self.failed: list[str] = []

    def _days(self, when: float) -> float:
        return round((self.now - when) / 86400.0, 2)

    def _drop(self, kind: Literal["entry", "seed", "leftover"], shown: Path, paths: list[Path],
              when: float) -> None:
        size = sum(_size(p) for p in paths)
        if not self.dry_run:
            for path in paths:
                try:
                    _remove(path)
                except OSError as exc:
                    self.failed.append(f"{path}: {exc.strerror or exc}")
                    return
        self.removed.append(Removed(kind=kind, path=str(shown), bytes=size,
                                    days_unused=self._days(when)))

    def _stray(self, path: Path) -> bool:
        """Whether ``path``, where the store keeps a folder, is a link or a file: then
        removed as a leftover when old (never followed)."""
        if not path.is_symlink() and path.is_dir():
            return False
        when = _mtime(path)
        if when is not None and when < self.cutoff:
            self._drop("leftover", path, [path], when)
        return True

    def task_folder(self, folder: Path) -> None:
        if self._stray(folder):
            return
        keys: dict[str, list[Path]] = {}
        for path in sorted(folder.iterdir()):
            keys.setdefault(path.name.split(".", 1)[0], []).append(path)
        for key, paths in keys.items():
            self.entry(folder, key, paths)
        if not self.dry_run and not any(folder.iterdir()):
            try:
                folder.rmdir()
            except OSError as exc:
                self.failed.append(f"{folder}: {exc.strerror or exc}")

    def entry(self, folder: Path, key: str, paths: list[Path]) -> None:
        record = folder / f"{key}.json"
        lock_path = folder / f"{key}.lock"
        last = _mtime(record) if record in paths else None
        if last is None:  # no record: the leftovers of a write cut short, by their own time
            last = max(filter(None, map(_mtime, paths)), default=self.now)
        if last >= self.cutoff:
            return
        rest = [p for p in paths if p not in (record, lock_path)]
        if lock_path.is_symlink():  # never locked through: opening it would follow it
            self._drop("entry", record, [record, *rest, lock_path], last)
            return
        if self.dry_run and not lock_path.exists():  # a dry run makes no lock file
            self._drop("entry", record, [record, *rest], last)
            return
        lock = FileLock(str(lock_path))
        try:
            lock.acquire(timeout=0)
        except LockTimeout:
            self.in_use.append(str(folder / key))
            return
        except OSError as exc:
            self.failed.append(f"{lock_path}: {exc.strerror or exc}")
            return
        try:
            if (now := _mtime(record)) is not None and now >= self.cutoff:
                return  # a validation took it between the look and the lock
            self._drop("entry", record, [record, *rest], last)  # the record first
        finally:
            lock.release()
        if not self.dry_run:
            try:
                lock_path.unlink(missing_ok=True)
            except OSError as exc:
                self.failed.append(f"{lock_path}: {exc.strerror or exc}")

    def seeds(self, folder: Path) -> None:
        if self._stray(folder):
            return
        for path in sorted(folder.iterdir()):
            when = _mtime(path)
            if when is None or when >= self.cutoff:
                continue
            kind: Literal["seed", "leftover"] = \
                "leftover" if path.name.endswith(_LEFTOVER) else "seed"
            self._drop(kind, path, [path], when)


def prune_store(store: Path, *, older_than: float, dry_run: bool = False) -> PruneReport:
    """Remove from the validation store ``store`` every entry and seed not used for
    ``older_than`` seconds (module docstring); with ``dry_run``, only say what would go."""
    pruner = _Pruner(store, older_than, dry_run)
    try:
        if not store.is_symlink() and store.is_dir():
            for path in sorted(store.iterdir()):
                if path.name == SEEDS:
                    pruner.seeds(path)
                else:
                    pruner.task_folder(path)
    except OSError as exc:  # a folder of the store that cannot be read
        raise UsageError(f"cannot read the validation store: {exc.strerror or exc}",
                         file=Path(exc.filename) if exc.filename else store,
                         fix="give this user read and write access to the state folder, or "
                             f"point {STATE_ENV} at another one") from exc
    return PruneReport(store=str(store), older_than_seconds=older_than, dry_run=dry_run,
                       removed=pruner.removed, in_use=pruner.in_use, failed=pruner.failed,
                       freed_bytes=sum(r.bytes for r in pruner.removed))
