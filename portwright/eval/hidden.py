"""The hidden tests: put them into a tree, and run them in the task's sandbox.

:func:`apply_hidden` makes a tree (what a run left, or ``parent``, or ``port``) ready for the
hidden tests: every test file the tree changed since ``parent`` (files under the test globs
of :mod:`portwright.pathkinds`) is put back as it was at ``parent``, then every hidden path
is taken from ``port`` (a file deleted at ``port`` is deleted). The blobs are read from the
task's own downstream clone, which the tree never reaches (the port commit is not in a
workspace). The tree is written to without following a link
(:mod:`portwright.safefs`): a tree a sandboxed command shaped cannot make the host write
elsewhere; a link in the way is an :class:`~portwright.errors.UnsafePath`.

:func:`run_tests` runs ids in the sandbox (:func:`test_sandbox`: Docker, the environment
image built from ``[environment] setup``) and reads one outcome per id
(:mod:`portwright.eval.reports`, or the exit code of one command per id for ``exit``); an id
the output does not name counts as failed, and so does every id of a command that was killed
(timeout, memory, output cap). A command that takes the ids (``{tests}``) runs only them:
when it exits non-zero though its output says every one passed, the output lied (a summary
printed by the code under test after the runner's own), and every id failed.
:func:`run_selection` runs selectors and keeps every id seen.

:func:`test_files` and :func:`changed_test_files` tell whether the test commands changed
the tests they ran: a build step (a ``Makefile`` target, a CMake script) or code imported
before a test can rewrite a hidden test, or a test the tree's agent could not change, before
it runs; the scoring then fails the integrity checks.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shlex
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

from portwright import safefs
from portwright.config import SandboxBackend, SandboxConfig
from portwright.errors import UnsafePath
from portwright.eval.reports import parse_report
from portwright.eval.repos import ResolvedTask
from portwright.eval.tasks import PLACEHOLDER, PortTask
from portwright.globs import match_any
from portwright.pathkinds import default_path_kinds
from portwright.sandboxes.base import ExecResult, Sandbox
from portwright.sandboxes.envimage import EnvSource
from portwright.sandboxes.output import iter_log
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

__all__ = ["BuildCache", "apply_hidden", "build_jobs_env", "cache_env", "changed_since",
           "changed_test_files", "run_selection", "run_tests", "run_tests_and_selection",
           "task_image", "test_files", "test_globs", "test_sandbox"]

TEST_FILE_CAP = 256 * 1024 * 1024
"""Largest test file compared before and after the test commands (a larger one counts as
changed)."""


def test_globs() -> list[str]:
    """The globs of test files: the ``tests`` kind of :mod:`portwright.pathkinds`."""
    return default_path_kinds()["tests"]


def _under(path: str, hidden: str) -> bool:
    top = hidden.rstrip("/")
    return path == top or path.startswith(top + "/")


def changed_since(tree: Path, parent: str) -> list[str]:
    """Paths the tree (its work tree: committed, modified or new, ignored files aside)
    differs in from ``parent``."""
    diffed = plumbing.git(tree, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff",
                          parent, "--")
    new = plumbing.git(tree, "ls-files", "-z", "--others", "--exclude-standard")
    return sorted({p.decode("utf-8", "surrogateescape")
                   for p in (diffed + b"\0" + new).split(b"\0") if p})


def _files(task: ResolvedTask, rev: str) -> dict[str, tuple[str, str]]:
    """Path → (mode, blob) of the downstream's tree at ``rev``."""
    return {path: (mode, sha) for mode, sha, path in plumbing.tree_entries(task.downstream, rev)}


def _holds(tree: Path, path: str, data: bytes) -> bool:
    """``path`` in ``tree`` is a regular file (reached without a link) holding ``data``."""
    try:
        return safefs.read_file(tree, path, cap=len(data)) == data
    except (OSError, UnsafePath):
        return False


def _write(tree: Path, path: str, entry: tuple[str, str] | None, blobs: dict[str, bytes]) -> None:
    """``path`` in ``tree`` as ``entry`` says (None: absent), never through a link. A file
    that holds the bytes already is left as it is (its time too: a build tree over it does
    not rebuild what did not change)."""
    try:
        if entry is None:
            safefs.unlink(tree, path)
        elif entry[0] == "120000":
            logger.warning("%s is a symbolic link at the source: not written", path)
        elif not _holds(tree, path, blobs[entry[1]]):
            safefs.write_file(tree, path, blobs[entry[1]])
    except IsADirectoryError as exc:
        raise UnsafePath(path, "is a directory in the tree under test") from exc


def apply_hidden(task: ResolvedTask, tree: Path) -> list[str]:
    """Put the hidden tests into ``tree``: the test files it changed since ``parent`` back
    as they were there, then every hidden path as it is at ``port``. The paths written or
    deleted, sorted."""
    hidden = task.task.hidden.paths
    at_parent, at_port = _files(task, task.parent), _files(task, task.port)
    changed = changed_since(tree, task.parent)
    wanted: dict[str, tuple[str, str] | None] = {}
    for path in changed:
        if match_any(path, test_globs()) and not any(_under(path, h) for h in hidden):
            wanted[path] = at_parent.get(path)
    for path in {*at_parent, *changed, *at_port}:
        if any(_under(path, h) for h in hidden):
            wanted[path] = at_port.get(path)
    blobs = plumbing.cat_blobs(task.downstream, sorted({e[1] for e in wanted.values() if e}))
    for path, entry in sorted(wanted.items()):
        _write(tree, path, entry, blobs)
    return sorted(wanted)


def _is_test(task: ResolvedTask, path: str) -> bool:
    return (match_any(path, test_globs())
            or any(_under(path, h) for h in task.task.hidden.paths))


def test_files(task: ResolvedTask, tree: Path, written: Sequence[str]) -> dict[str, str | None]:
    """Path → sha256 of the bytes (None: absent, or not a regular file reached without a
    link) of every test file of ``tree`` (tracked, or ``written`` by :func:`apply_hidden`):
    the files under the test globs and the hidden paths."""
    tracked = plumbing.git(tree, "ls-files", "-z").split(b"\0")
    paths = {p.decode("utf-8", "surrogateescape") for p in tracked if p} | set(written)
    return {path: _content(tree, path) for path in sorted(paths) if _is_test(task, path)}


def _content(tree: Path, path: str) -> str | None:
    try:
        return hashlib.sha256(safefs.read_file(tree, path, cap=TEST_FILE_CAP)).hexdigest()
    except (OSError, UnsafePath):
        return None


def changed_test_files(tree: Path, before: Mapping[str, str | None]) -> list[str]:
    """The paths of ``before`` (:func:`test_files`) that ``tree`` no longer holds as they
    were."""
    return [path for path, data in before.items() if _content(tree, path) != data]


@dataclass(frozen=True)
class BuildCache:
    """A task's compiler cache (``ccache``): a folder its test sandboxes mount and point
    ``ccache`` and CMake at, when the sandbox's image has ``ccache``.

    Only a build of the task's own downstream at ``parent`` may write it (``eval
    validate``'s first step); every other sandbox — the port's build, the scoring of what a
    run left — mounts it read-only (and ``ccache`` is told so): code of a run can neither
    poison it nor find the port in it, and no task reads another's."""

    path: Path
    writable: bool


CCACHE_TEMP = "/tmp/ccache-tmp"
"""Where ``ccache`` keeps its temporary files (the sandbox's own ``/tmp``: a read-only
cache has no room for them)."""


def cache_env(cache: BuildCache, tree: Path) -> dict[str, str]:
    """The variables that make CMake compile through ``ccache`` into ``cache``, with paths
    under ``tree`` hashed as relative ones (a tree elsewhere hits the same entries), and
    the working folder left out of the hash of a compile with debug information (``-g``,
    a Debug or RelWithDebInfo build; ``hash_dir``): else such a build in a tree elsewhere
    would hit nothing. An object taken from the cache then names the parent's tree in its
    debug information, which no test reads."""
    env = {"CCACHE_DIR": str(cache.path.resolve()), "CCACHE_BASEDIR": str(tree.resolve()),
           "CCACHE_NOHASHDIR": "1", "CCACHE_TEMPDIR": CCACHE_TEMP,
           "CMAKE_C_COMPILER_LAUNCHER": "ccache", "CMAKE_CXX_COMPILER_LAUNCHER": "ccache"}
    if not cache.writable:
        env["CCACHE_READONLY"] = "1"
    return env


class _WithEnv:
    """A sandbox whose every command gets ``env`` besides its own."""

    def __init__(self, inner: Sandbox, env: Mapping[str, str]) -> None:
        self.inner, self.env = inner, dict(env)
        self.name = inner.name

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None

    def exec(self, argv: Sequence[str], *, timeout: float | None = None,
             env: Mapping[str, str] | None = None, cwd: Path | None = None) -> ExecResult:
        return self.inner.exec(argv, timeout=timeout, env={**self.env, **(env or {})}, cwd=cwd)


_HAS_CCACHE: dict[str, bool] = {}
"""Image → whether it has ``ccache``, as asked of a sandbox of it (an image's tag names
what it was built from: it does not change)."""
_HAS_CCACHE_LOCK = threading.Lock()


def _has_ccache(sandbox: Sandbox) -> bool:
    image = getattr(sandbox, "image", None)
    with _HAS_CCACHE_LOCK:
        known = _HAS_CCACHE.get(image) if isinstance(image, str) else None
    if known is not None:
        return known
    found = sandbox.exec(["sh", "-c", "command -v ccache"], timeout=60).ok
    if isinstance(image, str):
        with _HAS_CCACHE_LOCK:
            _HAS_CCACHE[image] = found
    return found


def _cache_env(sandbox: Sandbox, cache: BuildCache, tree: Path) -> dict[str, str]:
    """The variables that build through ``cache`` when the sandbox's image has ``ccache``,
    else none (asked before any command of the tree runs in it, once per image)."""
    if not _has_ccache(sandbox):
        logger.info("no ccache in the sandbox's image: builds without a compiler cache")
        return {}
    return cache_env(cache, tree)


_CMAKE = re.compile(r"(?:^|[\s;&|(/])cmake\s")


def build_jobs_env(task: PortTask, cpus: float) -> dict[str, str]:
    """The variables that let the builds of ``task``'s test command use the sandbox's
    ``cpus``: ``MAKEFLAGS`` and ``CMAKE_BUILD_PARALLEL_LEVEL`` at that many jobs, when the
    command configures with CMake (whose generated build files name every dependency: a
    parallel build makes the same thing) and more than one CPU is there. A ``-j`` the
    command gives itself wins (make's command line overrides ``MAKEFLAGS``)."""
    jobs = min(int(cpus), os.cpu_count() or 1)
    if jobs <= 1 or not _CMAKE.search(task.environment.test):
        return {}
    return {"MAKEFLAGS": f"-j{jobs}", "CMAKE_BUILD_PARALLEL_LEVEL": str(jobs)}


def _sandbox_config(task: PortTask) -> SandboxConfig:
    env = task.environment
    return SandboxConfig(backend=SandboxBackend.DOCKER, image=env.image, setup=env.setup,
                         env=dict(env.env))


def task_image(task: PortTask, source: EnvSource) -> str:
    """The id of the image the test sandboxes of ``task`` run (:func:`test_sandbox`): its
    environment image, built from ``source`` when it is not there, or ``[environment]
    image`` itself. Its id changes whenever the base image is built again."""
    from portwright.sandboxes.engine import docker_client
    from portwright.sandboxes.images import ensure_image

    client = docker_client()
    try:
        tag = ensure_image(_sandbox_config(task), source.repo, client=client, source=source)
        return str(client.images.get(tag).id)
    finally:
        client.close()


@contextmanager
def test_sandbox(task: PortTask, tree: Path, *, source: EnvSource, log_dir: Path,
                 run_id: str, cache: BuildCache | None) -> Iterator[Sandbox]:
    """A Docker sandbox on ``tree`` running the environment image of ``task`` (its
    ``setup`` built on ``image``, the lockfiles read from ``source``); with ``cache``, its
    compilers go through that :class:`BuildCache` when the image has ``ccache``; a CMake
    build runs as many jobs as the sandbox has CPUs (:func:`build_jobs_env`)."""
    from portwright.runs.keys import evidence_key_dir
    from portwright.sandboxes.mounts import Mount
    from portwright.sandboxes.ownership import command_identity
    from portwright.sandboxes.selection import open_sandbox

    config = _sandbox_config(task)
    mount = None
    if cache is not None:
        cache.path.mkdir(parents=True, exist_ok=True)
        if cache.writable:  # the commands' user writes it (an unprivileged uid for root)
            who = command_identity(tree)
            os.chown(cache.path, who.uid, who.gid)
        mount = Mount(cache.path, read_only=not cache.writable)
    with open_sandbox(config, worktree=tree, run_id=run_id, log_dir=log_dir,
                      key_dir=evidence_key_dir(), source=source, cache=mount) as sandbox:
        extra = build_jobs_env(task, config.cpus)
        if cache is not None:
            extra.update(_cache_env(sandbox, cache, tree))
        yield _WithEnv(sandbox, extra) if extra else sandbox


def _command(task: PortTask, ids: Sequence[str]) -> str:
    return task.environment.test.replace(PLACEHOLDER, " ".join(shlex.quote(i) for i in ids))


def _stdout(result: ExecResult) -> Iterator[bytes]:
    if result.log_path:
        try:
            yield from iter_log(Path(result.log_path), "stdout")
            return
        except (OSError, ValueError) as exc:
            logger.warning("cannot read the log %s: %s", result.log_path, exc)
    yield (result.stdout_head + result.stdout_tail).encode()


def _killed(result: ExecResult) -> bool:
    return result.timed_out or result.oom_killed or result.capped


def _run(task: PortTask, sandbox: Sandbox, ids: Sequence[str]) -> ExecResult:
    command = _command(task, ids)
    logger.info("hidden tests: %s", command)
    return sandbox.exec(["sh", "-c", command], timeout=task.environment.timeout)


def run_tests(task: PortTask, sandbox: Sandbox, ids: Sequence[str]) -> dict[str, bool]:
    """Id → passed for each of ``ids``, run in ``sandbox``; an id the output does not name,
    or whose command was killed, failed."""
    if task.environment.report == "exit":
        return {i: not _killed(r) and r.exit_code == 0
                for i in ids for r in [_run(task, sandbox, [i])]}
    result = _run(task, sandbox, ids)
    if _killed(result):
        return dict.fromkeys(ids, False)
    seen = parse_report(task.environment.report, _stdout(result), asked=ids)
    outcomes = {i: seen.get(i, False) for i in ids}
    if PLACEHOLDER in task.environment.test and result.exit_code != 0 and all(outcomes.values()):
        logger.warning("the test command exited %s though its output says every test passed: "
                       "every test failed", result.exit_code)
        return dict.fromkeys(ids, False)
    return outcomes


def run_tests_and_selection(task: PortTask, sandbox: Sandbox, ids: Sequence[str],
                            selectors: Sequence[str]) -> tuple[dict[str, bool], dict[str, bool]]:
    """:func:`run_tests` of ``ids`` and :func:`run_selection` of ``selectors`` (none: an
    empty selection). When ``test`` takes no ids (no ``{tests}``: the command runs every
    test whatever is asked) and reports them, one run answers both."""
    if not selectors:
        return run_tests(task, sandbox, ids), {}
    if task.environment.report == "exit" or PLACEHOLDER in task.environment.test:
        return run_tests(task, sandbox, ids), run_selection(task, sandbox, selectors)
    result = _run(task, sandbox, ids)
    if _killed(result):
        return dict.fromkeys(ids, False), {}
    seen = parse_report(task.environment.report, _stdout(result), asked=ids)
    return ({i: seen.get(i, False) for i in ids},
            parse_report(task.environment.report, _stdout(result)))


def run_selection(task: PortTask, sandbox: Sandbox, selectors: Sequence[str]) -> dict[str, bool]:
    """Id → passed for every id the run of ``selectors`` names (``exit``: each selector is
    an id); empty when the command was killed."""
    if task.environment.report == "exit":
        return run_tests(task, sandbox, selectors)
    result = _run(task, sandbox, selectors)
    if _killed(result):
        return {}
    return parse_report(task.environment.report, _stdout(result))
