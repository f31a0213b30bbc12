"""The validation store: a task validated once is not validated again in another output
folder while its key — the task as loaded, its shas, the id of the image it runs in and the
validation protocol — is unchanged. Real Docker, the bundled example tasks."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest

from portwright.eval.repos import resolve
from portwright.eval.tasks import PortTask, load_suite
from portwright.eval.validate import (
    PROTOCOL,
    ValidationRecord,
    cache_path,
    record_path,
    store_dir,
    stored_record_path,
    validate,
    validation_key,
)
from tests.conftest import docker_engine_running
from tests.eval.conftest import portwright
from tests.eval.test_examples import SUITE, build_repos

OBSERVED = "parent: building the environment and running the tests"
REUSED = "validated before (reused from the validation store)"


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("example-repos")
    build_repos(dest)
    return dest


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state folder of the test's own: an empty store."""
    monkeypatch.setenv("PORTWRIGHT_STATE_DIR", str(tmp_path / "state"))
    return store_dir()


def _task(name: str) -> PortTask:
    (task,) = [t for t in load_suite(SUITE).tasks if t.id == name]
    return task


def _validate(task: PortTask, repos: Path, out: Path,
              **options: bool) -> tuple[ValidationRecord, list[str]]:
    said: list[str] = []
    record = validate(task, repos, out, progress=lambda _, what: said.append(what),
                      **options)
    return record, said


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _needs_engine() -> None:
    if not docker_engine_running():
        pytest.skip("needs a running Docker engine (make engine)")


def test_the_key_holds_the_image_and_the_protocol(repos: Path, store: Path) -> None:
    task = _task("tinystats/percentile")
    resolved = resolve(task, repos)
    one = validation_key(task, resolved, "sha256:" + "a" * 64)
    assert one == validation_key(task, resolved, "sha256:" + "a" * 64)
    assert one != validation_key(task, resolved, "sha256:" + "b" * 64)
    assert PROTOCOL >= 2
    assert stored_record_path(store, task, one) == store / task.slug / f"{one}.json"
    assert store.parts[-2:] == ("eval", "validation")


@pytest.mark.docker
@pytest.mark.slow
def test_a_new_output_folder_reuses_the_record_and_the_compiler_cache(
        repos: Path, store: Path, tmp_path: Path) -> None:
    _needs_engine()
    task = _task("rmsnorm/rmsnorm-fused-residual")
    first, said = _validate(task, repos, tmp_path / "one")
    assert first.valid, first.reason
    assert OBSERVED in said
    (stored,) = (store / task.slug).glob("*.json")
    assert stored == stored_record_path(store, task, first.key)
    assert ValidationRecord.model_validate_json(stored.read_bytes()) == first
    assert first.image.startswith("sha256:")

    second, said = _validate(task, repos, tmp_path / "two")
    assert OBSERVED not in said
    assert REUSED in said
    assert second == first
    # the output folder holds its own copy, as if it had validated the task itself
    assert json.loads(record_path(tmp_path / "two", task).read_text()) == \
        json.loads(record_path(tmp_path / "one", task).read_text())
    cache = cache_path(tmp_path / "two", task)
    assert cache.is_dir()
    assert not cache.is_symlink()
    assert _files(cache) == _files(cache_path(tmp_path / "one", task))
    assert not (tmp_path / "two" / "validation" / f"{task.slug}.logs").exists()
    assert sorted(p.name for p in (store / task.slug).iterdir()) == \
        sorted([f"{first.key}.json", f"{first.key}.ccache", f"{first.key}.lock"])


@pytest.mark.docker
@pytest.mark.slow
def test_revalidate_and_bad_store_entries_observe_again(
        repos: Path, store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _needs_engine()
    task = _task("tinystats/percentile")
    first, said = _validate(task, repos, tmp_path / "one")
    assert OBSERVED in said
    stored = stored_record_path(store, task, first.key)

    again, said = _validate(task, repos, tmp_path / "two", revalidate=True)
    assert OBSERVED in said  # forced
    assert again.model_dump(exclude={"seconds"}) == first.model_dump(exclude={"seconds"})
    # the output folder's own record is not reused either
    _, said = _validate(task, repos, tmp_path / "two", revalidate=True)
    assert OBSERVED in said

    stored.write_text("{not json")
    with caplog.at_level(logging.WARNING):
        _, said = _validate(task, repos, tmp_path / "three")
    assert OBSERVED in said
    assert str(stored) in caplog.text
    assert "validated again" in caplog.text
    assert ValidationRecord.model_validate_json(stored.read_bytes()).key == first.key

    forged = json.loads(stored.read_text())
    forged["key"] = "0" * 64  # a record filed under a key that is not its own
    stored.write_text(json.dumps(forged))
    _, said = _validate(task, repos, tmp_path / "four")
    assert OBSERVED in said

    extra = json.loads(stored.read_text())
    extra["trusted"] = True  # not the schema
    stored.write_text(json.dumps(extra))
    _, said = _validate(task, repos, tmp_path / "five")
    assert OBSERVED in said

    stored_cache = stored.with_suffix(".ccache")
    for path in sorted(stored_cache.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    stored_cache.rmdir()  # an entry without its compiler cache is incomplete
    _, said = _validate(task, repos, tmp_path / "six")
    assert OBSERVED in said
    assert stored_cache.is_dir()
    _, said = _validate(task, repos, tmp_path / "seven")
    assert REUSED in said


@pytest.mark.docker
@pytest.mark.slow
def test_concurrent_validations_of_a_task_observe_it_once(
        repos: Path, store: Path, tmp_path: Path) -> None:
    _needs_engine()
    task = _task("tinystats/moving-average")
    results: dict[str, tuple[ValidationRecord, list[str]]] = {}

    def one(name: str) -> None:
        results[name] = _validate(task, repos, tmp_path / name)

    threads = [threading.Thread(target=one, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(OBSERVED in said for _, said in results.values()) == [False, True]
    assert results["a"][0] == results["b"][0]
    assert sorted(p.name for p in (store / task.slug).iterdir()) == sorted(
        f"{results['a'][0].key}{suffix}" for suffix in (".json", ".ccache", ".lock"))


@pytest.mark.docker
@pytest.mark.slow
def test_eval_validate_reuses_the_store_and_revalidate_forces(
        repos: Path, tmp_path: Path) -> None:
    _needs_engine()
    suite = SUITE / "tinystats"
    env = {"PORTWRIGHT_STATE_DIR": str(tmp_path / "state")}

    def run(out: str, *more: str) -> list[dict[str, object]]:
        done = portwright("eval", "validate", str(suite), "--repos", str(repos), "--out",
                          str(tmp_path / out), "--json", *more, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        records: list[dict[str, object]] = json.loads(done.stdout)["records"]
        return records

    first = run("one")
    assert run("two") == first
    assert not list((tmp_path / "two" / "validation").glob("*.logs"))
    forced = run("three", "--revalidate")
    assert len(list((tmp_path / "three" / "validation").glob("*.logs"))) == 2
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in forced] == \
        [{k: v for k, v in r.items() if k != "seconds"} for r in first]
    helped = portwright("eval", "run", "--help", env={"COLUMNS": "200"})
    assert "--revalidate" in helped.stdout


@pytest.mark.docker
@pytest.mark.slow
def test_a_bad_store_is_named_on_the_command_line(repos: Path, tmp_path: Path) -> None:
    """A state folder the store cannot be made in: exit 2, the folder and the fix named. A
    stored record that is not one: a warning naming it, and the task validated again."""
    _needs_engine()
    task_file = str(SUITE / "tinystats" / "percentile.toml")
    (tmp_path / "afile").write_text("")
    done = portwright("eval", "validate", task_file, "--repos", str(repos), "--out",
                      str(tmp_path / "one"),
                      env={"PORTWRIGHT_STATE_DIR": str(tmp_path / "afile" / "state")})
    flat = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot make the validation store's folder" in flat
    assert "fix: set PORTWRIGHT_STATE_DIR to a folder you can write" in flat
    assert "Traceback" not in done.stderr

    env = {"PORTWRIGHT_STATE_DIR": str(tmp_path / "state")}
    done = portwright("eval", "validate", task_file, "--repos", str(repos), "--out",
                      str(tmp_path / "two"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    (stored,) = (tmp_path / "state" / "eval" / "validation").rglob("*.json")
    stored.write_text('{"task": "tinystats/percentile"}')
    done = portwright("eval", "validate", task_file, "--repos", str(repos), "--out",
                      str(tmp_path / "three"), env=env)
    flat = "".join(done.stderr.split())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "".join(str(stored).split()) in flat
    assert "key:Fieldrequired" in flat  # what is wrong with it
    assert "validatedagain" in flat
    assert ValidationRecord.model_validate_json(stored.read_bytes()).valid
