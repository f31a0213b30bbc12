"""The harness commit: what the framework adds to the downstream at ``parent`` so the port
cycle (and the loop) can work on one task.

Its files, each built from the task and from the file the downstream already has at that
path (``existing``: None when it has none):

- ``portwright.toml``: the harness's own (a downstream's own is replaced: a configuration
  cannot be appended to, and the task's ``[environment]`` decides the sandbox): upstream
  source (the workspace's upstream clone), ``path_map``, the records below, ``[sandbox]``
  from ``[environment]`` (Docker), approvals off, the model when one is given;
- ``AGENTS.md``: the downstream's prose kept, the harness's gates in place of its own gates
  block (one block per file; a further block is dropped) or appended as a section: the
  ``tests`` gate runs ``test`` without ``{tests}``, and the checks anchors, spec-complete,
  no-test-weakening, reconciled;
- the matrix (:data:`MATRIX`): one ``missing`` row titled ``title``, listing the upstream
  paths the commits touch; an existing file keeps its tables, the row's table is appended;
- ledger and inventory: kept when they hold their table, else the empty table appended;
- the pin file: the pin written in place of the recorded one, or a pin line appended.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import tomlkit
from markdown_it import MarkdownIt
from pydantic import ValidationError

from portwright.config import CONFIG_FILE, PinConfig, PortwrightConfig
from portwright.errors import ParityFileError, UsageError
from portwright.eval.tasks import PLACEHOLDER, PortTask
from portwright.parity.markdown import escape_cell, find_tables
from portwright.parity.pin import MarkdownPinStore
from portwright.pathkinds import CARRIED, classify, default_path_kinds
from portwright.rules import RULES_NAME

__all__ = ["INVENTORY", "LEDGER", "MATRIX", "PIN_FILE", "SUITE_ID", "harness_files",
           "row_id", "test_gate_command"]

MATRIX = "docs/parity/matrix.md"
LEDGER = "parity-ledger.md"
INVENTORY = "porting-inventory.md"
PIN_FILE = "upstream-sync.md"
SPECS = "specs/"

Reader = Callable[[str], bytes | None]
"""The downstream's bytes at a path at ``parent`` (None: no such file)."""


def _template(name: str) -> str:
    return (resources.files("portwright") / "templates" / name).read_text(encoding="utf-8")


def row_id(task: PortTask) -> str:
    """The matrix row of ``task``: the last part of its id."""
    return task.id.rsplit("/", 1)[-1]


SUITE_ID = "suite.all"
"""The one test id the ``tests`` gate reports for a task whose runner prints no id the
gates read (``report`` ``exit`` or ``tap``): the whole suite, passed or failed."""

READS_IDS = frozenset({"pytest", "gtest"})
"""The reports whose output lines the gates read test ids from
(:func:`portwright.gates.testids.from_output`)."""


def test_gate_command(task: PortTask) -> str:
    """The whole suite, as the ``tests`` gate runs it: ``suite``, else ``test`` with
    ``{tests}`` removed.

    The cycle's red gate needs failing test ids, read from the command's output, and the
    gates read pytest and GoogleTest lines only: for any other ``report`` the command is
    wrapped to print one GoogleTest-style line for the whole suite (:data:`SUITE_ID`, from
    its exit status), and to exit 1 when it failed. Without it the red of such a task could
    never be observed, however its tests failed."""
    if task.environment.suite:
        command = task.environment.suite.strip()
    else:
        command = re.sub(r"[ \t]*" + re.escape(PLACEHOLDER), "", task.environment.test).strip()
    if task.environment.report in READS_IDS:
        return command
    # a subshell on lines of its own: the command may hold `exit`, `&`, `;` or a comment
    return (f"if (\n{command}\n); then echo '[       OK ] {SUITE_ID}'; "
            f"else echo '[  FAILED  ] {SUITE_ID}'; exit 1; fi")


def _config(task: PortTask, upstream: str, model: Mapping[str, Any] | None) -> str:
    env = task.environment
    document: dict[str, Any] = {
        "upstream": {"source": upstream, "name": task.upstream.repo.split("/")[1],
                     "path_map": dict(env.path_map)},
        "pin": {"store": "markdown", "file": PIN_FILE},
        "artifacts": {"matrices": [MATRIX], "ledger": LEDGER, "inventory": INVENTORY,
                      "specs": SPECS},
        "sandbox": {"backend": "docker", "image": env.image, "setup": list(env.setup),
                    **({"env": dict(env.env)} if env.env else {})},
        "approvals": {"spec": "never", "advance": "never", "pr": "never"},
    }
    if model:
        document["model"] = dict(model)
    try:
        PortwrightConfig.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise task.error(f"the workspace's portwright.toml would be invalid: {first['msg']} "
                         f"at {'.'.join(str(p) for p in first['loc'])}", "environment",
                         "correct [environment] (image, setup, path_map)") from exc
    head = (f"# Written by portwright eval for the task {task.id} ({task.file.name}).\n"
            "# The downstream's own portwright.toml, if it had one, is replaced.\n\n")
    return head + tomlkit.dumps(document)


def _agents(task: PortTask, existing: str | None) -> str:
    def section(heading: bool) -> str:
        return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False,
                                  keep_trailing_newline=True, trim_blocks=True).from_string(
            _template("eval-gates.md")).render(
            heading=heading, task_id=task.id, test_command=test_gate_command(task),
            timeout=task.environment.timeout)

    if existing is None:
        return _template("AGENTS.md") + section(heading=True)
    lines = existing.splitlines(keepends=True)
    blocks = [t.map for t in MarkdownIt("commonmark").parse(existing)
              if t.type == "fence" and "portwright" in t.info.split() and t.map]
    if not blocks:
        return _append(existing, section(heading=True).lstrip("\n"))
    for start, end in reversed(blocks[1:]):
        del lines[start:end]
    start, end = blocks[0]
    lines[start:end] = [section(heading=False).lstrip("\n")]
    return "".join(lines)


def _append(existing: str | None, text: str) -> str:
    if not existing:
        return text
    return existing + ("" if existing.endswith("\n") else "\n") + "\n" + text


def _has_table(existing: str | None, *columns: str) -> bool:
    return existing is not None and any(
        all(t.column(c) is not None for c in columns) for t in find_tables(existing))


def _matrix(task: PortTask, existing: str | None, upstream_paths: list[str],
            commits: list[str], names: list[str]) -> str:
    row = row_id(task)
    if existing is not None and re.search(rf"^\|\s*{re.escape(row)}\s*\|", existing, re.M):
        raise task.error(f"the downstream's {MATRIX} already has a row {row!r} at parent",
                         "id", "give the task an id whose last part is a new row id")
    kinds = default_path_kinds()
    carried = [p for p in upstream_paths if classify(p, kinds) in CARRIED] or upstream_paths
    # the names first: the cycle ports the first one upstream defines, the paths say where
    cells = [row, task.title, "missing", "-", ", ".join([*names, *carried]),
             "upstream " + ", ".join(c[:12] for c in commits)]
    table = ("| id | title | status | spec | upstream | notes |\n"
             "| --- | --- | --- | --- | --- | --- |\n"
             "| " + " | ".join(escape_cell(c) for c in cells) + " |\n")
    if existing is None:
        return "# Coverage matrix\n\n" + table
    return _append(existing, "## Port task (portwright eval)\n\n" + table)


def _pin(task: PortTask, existing: str | None, pin: str) -> str:
    if existing is None:
        return str(jinja2.Template(_template("upstream-sync.md"),
                                   keep_trailing_newline=True).render(pin=pin))
    store = MarkdownPinStore(path=Path(PIN_FILE),
                             pattern=PinConfig().pattern)
    try:
        where = store.locate(existing)
    except ParityFileError as exc:
        if "no pin" not in exc.message:
            raise task.error(f"the downstream's {PIN_FILE} at parent: {exc.message}",
                             "downstream.parent", "start the task at a commit whose pin "
                             "file holds at most one pin") from exc
        return _append(existing, f"Pinned commit: `{pin}`\n")
    return existing[: where.start] + pin + existing[where.end:]


def _text(data: bytes | None, task: PortTask, path: str) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"the downstream's {path} at parent is not UTF-8 text",
                         file=task.file, key="downstream.parent",
                         fix="start the task at a commit whose records are UTF-8") from exc


MAX_NAMES = 4
"""Most upstream names a task's row lists."""


_GENERATED = re.compile(r"generated by|@generated|do not edit", re.I)


def _generated(text: str) -> bool:
    """A file a tool writes (``/* Generated by re2c */``): its change is its source's."""
    return _GENERATED.search("\n".join(text.splitlines()[:5])) is not None


def _removed_at(added: list[int], removed: list[int]) -> set[int]:
    """Where the lines ``removed`` (old numbers) were, in the new file: a change that only
    removes an entry of a table touches the table."""
    return {old + sum(n < old for n in added) - sum(n < old for n in removed)
            for old in removed}


def _file_names(path: str, text: str, lines: set[int],
                gone: set[int]) -> tuple[list[str], list[str]]:
    """The names a change to ``lines`` of one source file (and a removal at the lines
    ``gone``) defines or changes: the functions and classes of the lines outside
    module-level values, and those values (a table, a regular expression, a re2c rule, an
    anonymous module export named by its file) as ``path::name``, since such a name may be
    defined in more than one file or not be written at all."""
    from portwright.errors import PortwrightError
    from portwright.evidence import pyvalues
    from portwright.evidence.signals import touched_definitions
    from portwright.evidence.treesitter import touched_values

    try:
        values = pyvalues.touched_values(text, lines | gone) if path.endswith(".py") else \
            touched_values(path, text.encode("utf-8"), lines | gone)
    except PortwrightError:  # no grammar for the language
        values = []
    rest = {n for n in lines if not any(first <= n <= last for _, first, last in values)}
    names = [f"{path}::{name}" for name, _, _ in values]
    return (touched_definitions(path, text, rest) if rest else []), names


def change_names(upstream: Path, commits: list[str]) -> list[str]:
    """The upstream names the ``commits`` define or change, in the source files they touch
    (generated files left out: their source is what a port carries): its functions and
    classes, else (a change to tables, regular expressions, rules only) its module-level
    values. The row's Upstream column lists them first, and the cycle ports the surface of
    the first one upstream defines. See :func:`_file_names`."""
    from portwright.evidence.patch import commit_patch
    from portwright.vcs import plumbing

    kinds = default_path_kinds()
    found: list[str] = []
    values: list[str] = []
    for sha in commits:
        for patch in commit_patch(upstream, sha):
            if patch.status == "D" or classify(patch.path, kinds) != "source":
                continue
            data = plumbing.show(upstream, sha, patch.path)
            text = data.decode("utf-8", "replace") if data is not None else ""
            if data is not None and not _generated(text):
                added = [number for number, _ in patch.added]
                gone = _removed_at(added, [number for number, _ in patch.removed])
                functions, changed = _file_names(patch.path, text, set(added), gone)
                found += functions
                values += changed
    return list(dict.fromkeys(found or values))[:MAX_NAMES]


def harness_files(task: PortTask, read: Reader, *, upstream: str, pin: str,
                  upstream_paths: list[str], commits: list[str], names: Sequence[str] = (),
                  model: Mapping[str, Any] | None = None) -> dict[str, bytes]:
    """Path → bytes of every file of the harness commit of ``task``. ``read`` gives the
    downstream's files at ``parent``; ``upstream`` is the upstream clone's path (relative to
    the downstream's), ``pin`` the pin sha, ``upstream_paths`` what ``commits`` touch
    upstream, ``names`` the upstream names they bring (:func:`change_names`)."""
    def existing(path: str) -> str | None:
        return _text(read(path), task, path)

    files = {
        CONFIG_FILE: _config(task, upstream, model),
        RULES_NAME: _agents(task, existing(RULES_NAME)),
        MATRIX: _matrix(task, existing(MATRIX), upstream_paths, commits, list(names)),
        PIN_FILE: _pin(task, existing(PIN_FILE), pin),
    }
    for path, columns, template in ((LEDGER, ("change", "upstream", "kind"), LEDGER),
                                    (INVENTORY, ("item", "path", "searched"), INVENTORY)):
        text = existing(path)
        files[path] = text if text is not None and _has_table(text, *columns) else \
            _append(text, _template(template))
    return {path: text.encode("utf-8") for path, text in files.items()}
