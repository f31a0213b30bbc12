"""``portwright eval prune``: the validation store's entries and seeds not used for a while
are removed; one in use, or used lately, stays; nothing a link points at is touched."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from filelock import FileLock

from portwright.eval.store import PruneReport, parse_age, prune_store
from portwright.eval.validate import seed_dir, store_dir
from tests.conftest import docker_engine_running
from tests.eval.conftest import portwright
from tests.eval.test_examples import SUITE, build_repos

DAY = 86400.0
KEY = "a" * 64
OTHER = "b" * 64


def _age(path: Path, days: float) -> None:
    """``path`` (not what a link points at) last modified ``days`` ago."""
    when = time.time() - days * DAY
    os.utime(path, (when, when), follow_symlinks=False)


def _entry(store: Path, slug: str, key: str, *, days: float) -> Path:
    """A stored entry as validation writes it: the record, its compiler cache, its lock."""
    folder = store / slug
    (folder / f"{key}.ccache" / "0").mkdir(parents=True)
    (folder / f"{key}.ccache" / "0" / "object").write_bytes(b"x" * 1000)
    (folder / f"{key}.lock").write_text("")
    record = folder / f"{key}.json"
    record.write_text("{}")
    for path in (record, folder / f"{key}.ccache", folder / f"{key}.lock"):
        _age(path, days)
    return record


def _seed(store: Path, parent: str, *, days: float) -> Path:
    seed = seed_dir(store) / f"{parent}.git"
    (seed / "objects" / "pack").mkdir(parents=True)
    (seed / "objects" / "pack" / "pack-1.pack").write_bytes(b"p" * 500)
    _age(seed, days)
    return seed


def test_entries_and_seeds_unused_for_longer_go_and_the_rest_stays(tmp_path: Path) -> None:
    store = tmp_path / "store"
    old = _entry(store, "tinystats--percentile", KEY, days=40)
    recent = _entry(store, "tinystats--percentile", OTHER, days=2)
    lonely = _entry(store, "cmark--8be7f66a", KEY, days=31)
    old_seed = _seed(store, "1" * 40, days=45)
    new_seed = _seed(store, "2" * 40, days=1)

    report = prune_store(store, older_than=30 * DAY)

    assert isinstance(report, PruneReport)
    assert not old.exists()
    assert not old.with_suffix(".ccache").exists()
    assert not old.with_suffix(".lock").exists()
    assert recent.exists()
    assert recent.with_suffix(".ccache").is_dir()
    assert not lonely.parent.exists()  # its task's folder held nothing else
    assert not old_seed.exists()
    assert new_seed.is_dir()
    removed = {(r.kind, Path(r.path).name) for r in report.removed}
    assert removed == {("entry", f"{KEY}.json"), ("entry", f"{KEY}.json"),
                       ("seed", old_seed.name)}
    assert len(report.removed) == 3
    assert report.freed_bytes >= 2 * 1000 + 500
    assert report.in_use == []


def test_a_dry_run_removes_nothing_and_says_the_same(tmp_path: Path) -> None:
    store = tmp_path / "store"
    old = _entry(store, "tinystats--percentile", KEY, days=40)
    seed = _seed(store, "1" * 40, days=45)
    dry = prune_store(store, older_than=30 * DAY, dry_run=True)
    assert old.exists()
    assert old.with_suffix(".ccache").is_dir()
    assert seed.is_dir()
    real = prune_store(store, older_than=30 * DAY)
    assert dry.dry_run
    assert not real.dry_run
    assert [r.path for r in dry.removed] == [r.path for r in real.removed]
    assert dry.freed_bytes == real.freed_bytes
    assert not old.exists()
    assert not seed.exists()


def test_an_entry_being_validated_stays(tmp_path: Path) -> None:
    store = tmp_path / "store"
    old = _entry(store, "tinystats--percentile", KEY, days=40)
    held = threading.Event()
    done = threading.Event()

    def hold() -> None:  # another validation of the task, under the entry's lock
        with FileLock(str(old.with_suffix(".lock"))):
            held.set()
            done.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)
        report = prune_store(store, older_than=30 * DAY)
    finally:
        done.set()
        holder.join()
    assert old.exists()
    assert old.with_suffix(".ccache").is_dir()
    assert report.removed == []
    assert report.in_use == [str(old.parent / KEY)]


def test_links_in_the_store_are_removed_and_what_they_point_at_is_not(
        tmp_path: Path) -> None:
    """Whatever is in the store, pruning never walks out of it."""
    store = tmp_path / "store"
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    (outside / "keep" / "file").write_text("mine")
    store.mkdir()
    (store / "planted--task").symlink_to(outside)  # a task's folder that is a link
    (store / "real--task").mkdir()
    (store / "real--task" / f"{KEY}.ccache").symlink_to(outside / "keep")
    (store / "real--task" / f"{KEY}.json").symlink_to(outside / "keep" / "file")
    seed_dir(store).mkdir()
    (seed_dir(store) / f"{'3' * 40}.git").symlink_to(outside)
    for link in [store / "planted--task", store / "real--task" / f"{KEY}.ccache",
                 store / "real--task" / f"{KEY}.json", seed_dir(store) / f"{'3' * 40}.git"]:
        _age(link, 60)

    prune_store(store, older_than=30 * DAY)

    assert (outside / "keep" / "file").read_text() == "mine"
    assert not (store / "planted--task").is_symlink()
    assert not (store / "real--task").exists()
    assert not (seed_dir(store) / f"{'3' * 40}.git").is_symlink()


def test_what_cannot_be_removed_is_named_and_the_rest_goes(tmp_path: Path) -> None:
    """A file the system keeps (immutable here): exit 1, its path named, every other old
    thing removed all the same."""
    store = tmp_path / "state" / "eval" / "validation"
    stuck = _entry(store, "tinystats--percentile", KEY, days=40)
    other = _entry(store, "tinystats--moving-average", KEY, days=40)
    kept = stuck.with_suffix(".ccache") / "0" / "object"
    if subprocess.run(["chattr", "+i", str(kept)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i does not work here (not root, or not such a file system)")
    try:
        done = portwright("eval", "prune", "--json",
                          env={"PORTWRIGHT_STATE_DIR": str(tmp_path / "state")})
        assert done.returncode == 1, done.stdout + done.stderr
        report = json.loads(done.stdout)
        assert [f.split(": ")[0] for f in report["failed"]] == [str(stuck.with_suffix(".ccache"))]
        assert [r["path"] for r in report["removed"]] == [str(other)]
        assert not other.exists()
        assert not stuck.exists()  # the record goes first: the entry is never used again
        text = portwright("eval", "prune", env={"PORTWRIGHT_STATE_DIR": str(tmp_path / "state")})
        assert text.returncode == 1
        assert "cannot remove" in text.stderr
        assert "Traceback" not in text.stderr
    finally:
        subprocess.run(["chattr", "-i", str(kept)], check=False)


def test_a_missing_store_has_nothing_to_prune(tmp_path: Path) -> None:
    report = prune_store(tmp_path / "nowhere", older_than=0)
    assert report.removed == []
    assert report.freed_bytes == 0


@pytest.mark.parametrize(("text", "seconds"), [
    ("30d", 30 * DAY), ("12h", 12 * 3600.0), ("90m", 5400.0), ("0", 0.0), ("1.5d", 1.5 * DAY),
    ("2w", 14 * DAY)])
def test_ages_are_read_with_their_unit(text: str, seconds: float) -> None:
    assert parse_age(text) == seconds


@pytest.mark.parametrize("text", ["", "30", "d", "-1d", "30 days", "1e3d", "5y"])
def test_a_bad_age_exits_2_naming_the_option_and_the_fix(text: str, tmp_path: Path) -> None:
    done = portwright("eval", "prune", "--older-than", text,
                      env={"PORTWRIGHT_STATE_DIR": str(tmp_path / "state")})
    flat = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--older-than" in flat
    assert "fix:" in flat
    assert "30d" in flat
    assert "Traceback" not in done.stderr


@pytest.mark.docker
@pytest.mark.slow
def test_prune_after_real_validations_keeps_what_was_used_lately(tmp_path: Path) -> None:
    """A real validation fills the store; reusing an entry (and its seed) marks it used, so
    that a prune keeps it; once unused for longer than the age it goes, and the next
    validation observes the task again."""
    if not docker_engine_running():
        pytest.skip("needs a running Docker engine (make engine)")
    repos = tmp_path / "repos"
    build_repos(repos)
    task_file = str(SUITE / "tinystats" / "percentile.toml")
    env = {"PORTWRIGHT_STATE_DIR": str(tmp_path / "state")}

    def validate(out: str) -> None:
        done = portwright("eval", "validate", task_file, "--repos", str(repos), "--out",
                          str(tmp_path / out), env=env)
        assert done.returncode == 0, done.stdout + done.stderr

    def prune(*more: str) -> list[dict[str, str]]:
        done = portwright("eval", "prune", "--json", *more, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        removed: list[dict[str, str]] = json.loads(done.stdout)["removed"]
        return removed

    validate("one")
    store = tmp_path / "state" / "eval" / "validation"
    (record,) = (store / "tinystats--percentile").glob("*.json")
    # two seeds: the upstream's history up to the task's last commit, and the parent's
    seeds = sorted(seed_dir(store).glob("*.git"))
    assert len(seeds) == 2
    for path in (record, *seeds):
        _age(path, 40)

    validate("two")  # from the store: the entry and the seeds are used again
    assert time.time() - record.stat().st_mtime < DAY
    assert all(time.time() - seed.stat().st_mtime < DAY for seed in seeds)
    assert prune("--older-than", "30d") == []

    for path in (record, *seeds):
        _age(path, 40)
    removed = prune("--older-than", "30d")
    assert sorted(r["kind"] for r in removed) == ["entry", "seed", "seed"]
    assert not record.exists()
    assert not any(seed.exists() for seed in seeds)
    validate("three")
    assert list((tmp_path / "three" / "validation").glob("*.logs"))  # observed, not reused
    assert store_dir(env) == store
