"""Port tasks: the task files of a suite, loaded with file:line errors.

A task file (TOML, one per task; the format is in ``docs/eval.md``) names the upstream
change to carry, the downstream commit the task starts at and the real porting commit, the
hidden tests, and the environment they run in. A suite is a folder searched recursively for
``*.toml`` or one task file. Files named ``suite.toml`` hold defaults merged under each
task's tables: those of every folder from the suite's root down to the task's folder, the
nearest winning, and the task's own keys over all of them (a key replaces the default's
value whole: tables merge key by key, values do not).

Every bad input is a :class:`~portwright.errors.UsageError` naming the file that set the
value (the task file, or the ``suite.toml``), the line and the fix.

Public API:

- :class:`PortTask` (tables :class:`UpstreamSide`, :class:`DownstreamSide`, :class:`Hidden`,
  :class:`Environment`) and :class:`Suite`
- ``load_suite(path) -> Suite``
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from portwright.config_errors import config_error, line_from_message, locate_key
from portwright.errors import UsageError
from portwright.values import Seconds

__all__ = ["DEFAULTS_FILE", "DownstreamSide", "Environment", "Hidden", "PortTask", "Report",
           "Suite", "UpstreamSide", "load_suite", "load_task"]

DEFAULTS_FILE = "suite.toml"
"""Files of this name hold suite-wide defaults, not tasks."""
PLACEHOLDER = "{tests}"
"""Where the test command takes the test ids."""
EXAMPLE = "see docs/eval.md for a task file"
TABLES = ("upstream", "downstream", "hidden", "environment")
"""The tables a ``suite.toml`` may give defaults for (and ``languages``)."""

Report = Literal["pytest", "tap", "gtest", "exit"]
"""How per-test results are read from the test command's output."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              allow_inf_nan=False)


def _revision(value: str) -> str:
    if not value.strip():
        raise ValueError("an empty revision: write a full commit sha (or a branch or tag)")
    if value.startswith("-") or any(c.isspace() for c in value):
        raise ValueError(f"{value!r} is not a revision: write a full commit sha")
    return value


def _repo_name(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", value) or \
            any(part in (".", "..") for part in value.split("/")):
        raise ValueError(f"{value!r} is not owner/name (as in github.com/owner/name)")
    return value


def _repo_path(value: str) -> str:
    if not value.strip() or value.startswith(("/", "~", "-")) or "\\" in value:
        raise ValueError(f"{value!r} is not a path relative to the repository (posix, "
                         "no leading / or -)")
    normal = posixpath.normpath(value)
    if normal in (".", "..") or normal.startswith("../"):
        raise ValueError(f"{value!r} names no file or folder inside the repository")
    return value


def _prefix(value: str) -> str:
    """A path prefix of ``path_map``: relative, inside the repository ('' is its root)."""
    if value == "":
        return value
    if value.startswith(("/", "~", "-")) or "\\" in value or \
            ".." in value.split("/") or not value.strip():
        raise ValueError(f"{value!r} is not a path prefix inside the repository (relative, "
                         "posix, no '..': 'lib/', 'src/', or '' for the root)")
    return value


def _path_map(value: dict[str, str]) -> dict[str, str]:
    for up, down in value.items():
        _prefix(up)
        _prefix(down)
    return value


def _test_id(value: str) -> str:
    if not value.strip() or any(c in value for c in "\n\r\0"):
        raise ValueError("a test id is one non-empty line")
    if value.startswith("-"):
        raise ValueError(f"{value!r} starts with '-': the test command would read it as an "
                         "option")
    return value


def _unique(values: list[str]) -> list[str]:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{value!r} is listed twice")
        seen.add(value)
    return values


Revision = Annotated[str, AfterValidator(_revision)]
RepoName = Annotated[str, AfterValidator(_repo_name)]
RepoPath = Annotated[str, AfterValidator(_repo_path)]
TestId = Annotated[str, AfterValidator(_test_id)]


class UpstreamSide(_Model):
    """The project ported from, and the change to carry."""

    repo: RepoName
    """``owner/name``: the clone is ``<repos>/owner/name``."""
    url: str | None = None
    """Where to clone it from (default: ``https://github.com/<repo>``)."""
    commits: Annotated[list[Revision], AfterValidator(_unique)] = Field(min_length=1)
    """The upstream commits of the change, oldest first (full shas)."""
    pin: Revision | None = None
    """The upstream revision the downstream claims parity with when the task starts
    (default: the parent of ``commits[0]``)."""


class DownstreamSide(_Model):
    """The port, where the task starts and how it was really ported."""

    repo: RepoName
    """``owner/name``: the clone is ``<repos>/owner/name``."""
    url: str | None = None
    """Where to clone it from (default: ``https://github.com/<repo>``)."""
    parent: Revision
    """The commit the task starts at."""
    port: Revision
    """The real porting commit, a descendant of ``parent``: the hidden tests come from it."""


class Hidden(_Model):
    """The tests that decide whether the port works: never shown to the agents."""

    paths: Annotated[list[RepoPath], AfterValidator(_unique)] = Field(default_factory=list)
    """Files or folders (``tests/fixtures/``) taken from ``port`` into the tree under test."""
    tests: Annotated[list[TestId], AfterValidator(_unique)] = Field(min_length=1)
    """Test ids that must fail at ``parent`` and pass at ``port`` (and after the agent)."""
    regress: Annotated[list[TestId], AfterValidator(_unique)] = Field(default_factory=list)
    """Selectors of the tests that must not newly fail (put in ``{tests}``; a command
    without ``{tests}`` runs its whole suite). Empty: no regression check."""


class Environment(_Model):
    """Where and how the downstream's tests run: the ``[sandbox]`` of the workspace."""

    image: str = Field(default="portwright/base:bookworm", min_length=1)
    """The Docker image (``[sandbox] image``)."""
    setup: list[str] = Field(default_factory=list)
    """Commands built into the environment image (``[sandbox] setup``)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables of the test commands (``[sandbox] env``): ``PYTEST_PLUGINS`` names the
    pytest plugins the tests need, since sandboxes load none on their own."""
    test: str
    """The test command; ``{tests}`` is replaced by the test ids (shell-quoted)."""
    report: Report = "pytest"
    """How per-test results are read: ``pytest`` (``-rA`` summary lines), ``tap`` (``ok`` /
    ``not ok`` lines), ``gtest`` (``[       OK ]`` / ``[  FAILED  ]`` lines) or ``exit`` (one
    command per id, its exit code)."""
    path_map: Annotated[dict[str, str], AfterValidator(_path_map)] = Field(default_factory=dict)
    """Upstream path prefix → downstream path prefix (``[upstream] path_map``)."""
    timeout: Seconds = 900.0
    """Seconds one test command may run."""
    suite: str | None = None
    """The command of the cycle's ``tests`` gate: the downstream's whole test suite
    (default: ``test`` with ``{tests}`` removed). Needed with ``report = "exit"``, where
    that would run the test program on nothing."""

    @field_validator("test")
    @classmethod
    def _says_something(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("an empty test command runs nothing")
        return value

    @model_validator(mode="after")
    def _exit_needs_ids(self) -> Environment:
        if self.report == "exit" and PLACEHOLDER not in self.test:
            raise ValueError(f"report = \"exit\" runs the command once per test id: put "
                             f"{PLACEHOLDER} where the id goes")
        if self.report == "exit" and not (self.suite or "").strip():
            raise ValueError("report = \"exit\" needs `suite`, the command that runs the "
                             "whole test suite for the cycle's tests gate (without an id, "
                             "the test command would run nothing)")
        if self.suite is not None and PLACEHOLDER in self.suite:
            raise ValueError(f"`suite` runs the whole test suite: it takes no {PLACEHOLDER}")
        return self


@dataclass(frozen=True)
class TaskSource:
    """Where a task was read from: the files, their texts and which file set each key."""

    file: Path
    texts: dict[Path, str]
    origins: dict[tuple[str, ...], Path] = field(default_factory=dict)
    """``(table, key)`` or ``(key,)`` → the file whose value won."""

    def where(self, loc: tuple[str, ...]) -> tuple[Path, int | None]:
        """The file and line that set ``loc`` (the task file when no file set it)."""
        origin = self.origins.get(loc[:2]) or self.origins.get(loc[:1]) or self.file
        return origin, locate_key(self.texts.get(origin, ""), loc)


class PortTask(_Model):
    """One port task: a real upstream change, the real port of it, and its hidden tests."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)*$",
                    max_length=200)
    """Unique in the suite: ``pair/what`` (letters, digits, ``_.-``, ``/`` between parts)."""
    title: str
    """The matrix row the agents see."""
    languages: str = ""
    """``javascript -> python``: for reports."""
    upstream: UpstreamSide
    downstream: DownstreamSide
    hidden: Hidden
    environment: Environment
    _source: TaskSource | None = PrivateAttr(default=None)

    @field_validator("title")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if not value.strip() or "\n" in value:
            raise ValueError("the title is one non-empty line (it becomes a matrix row)")
        return value

    @property
    def file(self) -> Path:
        """The task file (a placeholder path for a task made in code)."""
        return self._source.file if self._source is not None else Path(f"<task {self.id}>")

    @property
    def slug(self) -> str:
        """The id as one file name (``/`` becomes ``--``)."""
        return self.id.replace("/", "--")

    @property
    def digest(self) -> str:
        """sha256 of the task as loaded (suite defaults included): a changed task file
        changes it."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()

    def error(self, message: str, key: str, fix: str,
              cls: type[UsageError] = UsageError) -> UsageError:
        """A ``cls`` naming the file and line that set ``key`` (dotted), with ``fix``."""
        loc = tuple(key.split("."))
        if self._source is None:
            return cls(message, file=self.file, key=key, fix=fix)
        path, line = self._source.where(loc)
        return cls(message, file=path, line=line, key=key, fix=fix)


class Suite(BaseModel):
    """The tasks of a suite, in file order."""

    model_config = ConfigDict(frozen=True)

    root: Path
    """The folder (or the one file) the suite was loaded from."""
    tasks: list[PortTask]

    def get(self, task_id: str) -> PortTask:
        """The task ``task_id``; a :class:`UsageError` when there is none."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        raise UsageError(f"no task {task_id!r} in the suite", file=self.root,
                         fix="use one of: " + ", ".join(t.id for t in self.tasks))


# -- loading ----------------------------------------------------------------------------


def _read(path: Path) -> tuple[dict[str, Any], str]:
    """The TOML document at ``path`` and its text; errors name the file and line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot be read: {exc.strerror or exc}", file=path,
                         fix="check the path and its permissions") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError("not UTF-8 text", file=path, line=data[: exc.start].count(b"\n") + 1,
                         fix="save the file as UTF-8") from exc
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None) or line_from_message(str(exc))
        raise UsageError(f"not valid TOML: {getattr(exc, 'msg', exc)}", file=path, line=line,
                         fix="fix the TOML syntax at that line (strings need quotes, tables "
                             "[brackets])") from exc


def _layer(merged: dict[str, Any], origins: dict[tuple[str, ...], Path],
           document: dict[str, Any], path: Path) -> None:
    """Lay ``document`` (read from ``path``) over ``merged``: tables key by key."""
    for key, value in document.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
            origins.update({(key, inner): path for inner in value})
        else:
            merged[key] = dict(value) if isinstance(value, dict) else value
            origins[(key,)] = path
            for stale in [k for k in origins if len(k) == 2 and k[0] == key]:
                del origins[stale]
            if isinstance(value, dict):
                origins.update({(key, inner): path for inner in value})


def _defaults(path: Path, text: str, document: dict[str, Any]) -> dict[str, Any]:
    """A ``suite.toml``'s document, after checking it sets only what defaults may."""
    for key in document:
        if key not in (*TABLES, "languages"):
            raise UsageError(
                f"{DEFAULTS_FILE} sets {key!r}, which is not a suite-wide default",
                file=path, line=locate_key(text, (key,)), key=key,
                fix=f"keep only the tables {', '.join(f'[{t}]' for t in TABLES)} and "
                    "`languages` here; ids and titles belong in each task file")
    return document


def load_task(path: Path, defaults: list[Path]) -> PortTask:
    """The task in ``path`` with the ``defaults`` files (outermost first) merged under it."""
    texts: dict[Path, str] = {}
    merged: dict[str, Any] = {}
    origins: dict[tuple[str, ...], Path] = {}
    for default in defaults:
        document, texts[default] = _read(default)
        _layer(merged, origins, _defaults(default, texts[default], document), default)
    document, texts[path] = _read(path)
    _layer(merged, origins, document, path)
    source = TaskSource(path, texts, origins)
    try:
        task = PortTask.model_validate(merged)
    except ValidationError as exc:
        loc = tuple(str(part) for part in exc.errors()[0]["loc"])
        origin, _ = source.where(loc)
        raise config_error(exc, origin, texts.get(origin, ""), {}, PortTask,
                           example=EXAMPLE) from exc
    task._source = source
    return task


def _defaults_for(task_file: Path, root: Path) -> list[Path]:
    """The ``suite.toml`` files that apply to ``task_file``: from ``root`` down."""
    folders = [task_file.parent]
    while folders[-1] != root and root in folders[-1].parents:
        folders.append(folders[-1].parent)
    return [f / DEFAULTS_FILE for f in reversed(folders) if (f / DEFAULTS_FILE).is_file()]


def _check_entry(entry: Path, root: Path) -> None:
    """A ``*.toml`` found in the suite ``root`` is a regular file (or a folder) in it: a
    link out of the suite, a dangling link, a pipe or a device is never silently skipped
    (a task would be missing from every run) nor read (a pipe or a device can block)."""
    fix = "replace it by a copy of the task file, or remove it"
    if entry.is_symlink():
        target = entry.resolve()
        if not target.exists():
            raise UsageError(f"a symbolic link to {entry.readlink()}, which does not exist",
                             file=entry, fix=fix)
        if target != root and root not in target.parents:
            raise UsageError(f"a symbolic link to {target}, outside the suite ({root}): the "
                             "suite.toml defaults that apply depend on where a task file is",
                             file=entry, fix=fix)
    if entry.exists() and not (entry.is_file() or entry.is_dir()):
        raise UsageError("not a regular file (a pipe, socket or device)", file=entry, fix=fix)


def load_suite(path: Path) -> Suite:
    """The suite at ``path``: a folder (every ``*.toml`` under it but ``suite.toml``) or one
    task file, with the ``suite.toml`` defaults merged under each task."""
    given, path = path, path.resolve()
    if path.is_dir():
        root = path
        entries = sorted(p for p in path.rglob("*.toml")
                         if not any(part.startswith(".") for part in p.relative_to(path).parts))
        for entry in entries:
            _check_entry(entry, root)
        files = [p for p in entries if p.name != DEFAULTS_FILE and p.is_file()]
        if not files:
            raise UsageError("no task files (*.toml) in this folder", file=path,
                             fix=f"add one TOML file per task ({EXAMPLE})")
    elif path.is_file():
        if path.name == DEFAULTS_FILE:
            raise UsageError(f"{DEFAULTS_FILE} holds suite defaults, not a task", file=path,
                             fix="pass the folder of the suite, or one task file")
        root, files = path.parent, [path]
    elif path.exists():
        raise UsageError("not a regular file or a folder", file=given,
                         fix="pass a folder of task files or one task file (*.toml)")
    else:
        raise UsageError("no such suite: neither a folder nor a task file", file=given,
                         fix="pass a folder of task files or one task file (*.toml)")
    tasks: list[PortTask] = []
    first: dict[str, PortTask] = {}
    for file in files:
        task = load_task(file, _defaults_for(file, root))
        earlier = first.get(task.id) or first.get(task.slug)
        if earlier is not None:
            same = f"task id {task.id!r} is used twice" if earlier.id == task.id else (
                f"task ids {earlier.id!r} and {task.id!r} name the same result files "
                f"({task.slug}.*: '/' is written '--')")
            raise task.error(same, "id",
                             f"give each task its own id (the other is in {earlier.file})")
        first[task.id] = first[task.slug] = task
        tasks.append(task)
    return Suite(root=path, tasks=tasks)
