"""The tools agents call: typed functions whose pydantic argument models are their JSON schema.

Every path goes through :class:`Workspace`, which confines the agent: the run's
downstream worktree read-write, the upstream repository read-only and only at the pin
(read through git, never through its working tree). Absolute paths, ``..`` out of the
worktree, writes into ``.git``, into the upstream checkout or to a protected path
(:mod:`portwright.protected`) are refused with a :class:`~portwright.errors.ConfinementError`,
which the agent loop answers back to the model.

Sandboxed code writes the same worktree while the tools run, so a path is never checked
and then opened: every downstream file is opened through :mod:`portwright.safefs`, which
walks from the worktree root one component at a time and follows no symbolic link (a link
anywhere on the way is refused, not resolved). Listings and searches do not descend through
links either.
"""

from __future__ import annotations

import functools
import json
import logging
import posixpath
import re
import stat
import string
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from portwright import safefs
from portwright.agents.llm import ToolSpec
from portwright.errors import ConfinementError, PortwrightError, ToolError, UnsafePath
from portwright.globs import match_any
from portwright.protected import is_protected, protected_change
from portwright.sandboxes.base import Sandbox
from portwright.sandboxes.output import relative_to
from portwright.values import check_seconds
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

Side = Literal["downstream", "upstream"]


@dataclass
class Workspace:
    """What the tools of one run may touch."""

    worktree: Path
    """The run's downstream worktree (read-write)."""
    upstream: Path | None = None
    """The upstream checkout (read-only; read through git at ``pin``)."""
    pin: str | None = None
    """The upstream revision every upstream read is made at."""
    sandbox: Sandbox | None = None
    """Where ``run_command`` runs; None when the role may not run commands."""
    output_chars: int = 12_000
    """Most characters of one tool answer; the rest is cut with a note."""
    command_timeout: float = 300.0
    """Upper bound of one command's timeout, in seconds."""
    evidence: EvidenceSources | None = None
    """The deterministic evidence engines the evidence tools call."""
    write_only: list[str] | None = None
    """Globs a write must match (None: anywhere in the worktree), e.g. the test paths."""
    write_never: list[str] = field(default_factory=list)
    """Globs no write may match, e.g. the test paths while implementing."""
    read_cap: int = 8 * 1024 * 1024
    """Most bytes of one downstream file the tools read; a larger file is refused, not cut."""
    _repos: set[Path] = field(default_factory=set, repr=False)
    """Roots already checked to be git repositories."""

    def __post_init__(self) -> None:
        self.worktree = self.worktree.resolve()
        if self.upstream is not None:
            self.upstream = self.upstream.resolve()

    # -- confinement -------------------------------------------------------------------

    def inside(self, rel: str) -> str:
        """``rel`` as a normal posix path inside the worktree (``.`` for its root), or a
        :class:`ConfinementError`. Purely lexical: nothing is resolved, and the file
        operations below follow no link, so ``a/../b`` is ``b`` whatever ``a`` is."""
        normal = posixpath.normpath(_relative(rel, "worktree").as_posix())
        if normal == ".." or normal.startswith("../"):
            raise ConfinementError(
                f"{rel!r} leaves the worktree (through `..`); use a path inside the worktree")
        if ".git" in normal.split("/"):
            raise ConfinementError(f"{rel!r} is inside .git; git state is the framework's")
        return normal

    def writable(self, rel: str) -> str:
        """``rel`` as a path inside the worktree that this step may write, or a
        :class:`ConfinementError` (upstream checkout, protected path, write globs). Files
        protected in part (``pyproject.toml``) are checked on the bytes, by :meth:`write_bytes`."""
        inside = self.inside(rel)
        if is_protected(inside):
            raise ConfinementError(
                f"{rel!r} is a protected path (it steers portwright or the test runner); it is "
                "read from the commit the run started at and may not be written")
        upstream = self._upstream_in_worktree()
        if upstream is not None and (inside == upstream or inside.startswith(upstream + "/")):
            raise ConfinementError(
                f"{rel!r} is in the upstream checkout, which is read-only; write the "
                "downstream file instead"
            )
        self._check_write_globs(rel, inside)
        return inside

    def _upstream_in_worktree(self) -> str | None:
        if self.upstream is None or not self.upstream.is_relative_to(self.worktree):
            return None
        return self.upstream.relative_to(self.worktree).as_posix()

    def _check_write_globs(self, rel: str, inside: str) -> None:
        if self.write_only is not None and not match_any(inside, self.write_only):
            raise ConfinementError(
                f"{rel!r} may not be written in this step; writable here: "
                f"{', '.join(self.write_only)}")
        if match_any(inside, self.write_never):
            raise ConfinementError(
                f"{rel!r} may not be written in this step (it matches "
                f"{', '.join(self.write_never)}); the ported tests are fixed now")

    # -- downstream files (through safefs: no link followed, no check-then-use) ---------

    def read_bytes(self, rel: str) -> bytes:
        """The bytes of the regular file ``rel`` in the worktree (at most ``read_cap``)."""
        inside = self.inside(rel)
        with _opening(rel, "no such file in the worktree"):
            return safefs.read_file(self.worktree, inside, cap=self.read_cap)

    def read_text(self, rel: str) -> str:
        """:meth:`read_bytes` as text (undecodable bytes replaced)."""
        return self.read_bytes(rel).decode("utf-8", errors="replace")

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Replace (or create, with its folders) the file ``rel`` in the worktree, unless
        this step may not write it or the change touches a protected path."""
        inside = self.writable(rel)
        with _opening(rel, "no such folder in the worktree"):
            try:
                before: bytes | None = safefs.read_file(self.worktree, inside,
                                                        cap=self.read_cap)
            except FileNotFoundError:
                before = None
            why = protected_change(inside, before, data)
            if why is not None:
                raise ConfinementError(f"{rel!r} may not be written: {why}")
            safefs.write_file(self.worktree, inside, data)

    def list_downstream(self, rel: str) -> list[str]:
        """The entries of the folder ``rel`` (folders end in ``/``, links in ``@``; links
        are shown, never followed; ``.git`` is left out)."""
        inside = self.inside(rel)
        with _opening(rel, "no such directory in the worktree"):
            found = safefs.entries(self.worktree, inside)
        return [name + ("/" if stat.S_ISDIR(info.st_mode) else
                        "@" if stat.S_ISLNK(info.st_mode) else "")
                for name, info in found if name != ".git"]

    def downstream_path(self, rel: str, *, write: bool = False) -> Path:
        """The path of ``rel`` in the worktree, reached without any link, or a
        :class:`ConfinementError`. To read or write the file use :meth:`read_bytes` and
        :meth:`write_bytes`: opening this path later is a check-then-use window."""
        inside = self.writable(rel) if write else self.inside(rel)
        with _opening(rel, "no such file in the worktree"):
            info = safefs.stat(self.worktree, inside)
        if info is not None and not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a special file"
            raise ConfinementError(f"{rel!r} is {kind}; {_NO_LINKS}")
        return self.worktree if inside == "." else self.worktree / inside

    def upstream_path(self, rel: str) -> str:
        """``rel`` as a path inside the upstream tree at the pin (never leaving it)."""
        if self.upstream is None or self.pin is None:
            raise ToolError("this run has no upstream checkout and pin")
        path = _relative(rel, "upstream tree")
        normal = posixpath.normpath(str(path))
        if normal == ".." or normal.startswith("../"):
            raise ConfinementError(f"{rel!r} leaves the upstream tree; use a path inside it")
        return "" if normal == "." else normal

    def repo(self, side: Side) -> Path:
        """The root of the ``side`` repository, checked to be one."""
        root = self.worktree if side == "downstream" else self.upstream
        if root is None:
            raise ToolError("this run has no upstream checkout")
        if root not in self._repos:
            try:
                plumbing.check_repo(root, f"{side} repository")
            except PortwrightError as exc:
                raise ToolError(str(exc)) from exc
            self._repos.add(root)
        return root

    def rev(self, side: Side) -> str:
        if side == "downstream":
            return "HEAD"
        if self.pin is None:
            raise ToolError("this run has no upstream pin")
        return self.pin

    def cap(self, text: str, hint: str = "narrow the range") -> str:
        if len(text) <= self.output_chars:
            return text
        cut = len(text) - self.output_chars
        return f"{text[: self.output_chars]}\n[… {cut} more characters cut; {hint}]"


def _relative(rel: str, where: str) -> PurePosixPath:
    if not rel.strip():
        rel = "."
    if rel.startswith(("/", "~", "\\")) or (len(rel) > 1 and rel[1] == ":"):
        raise ConfinementError(
            f"{rel!r} is an absolute path; give a path relative to the {where}"
        )
    if "\0" in rel:
        raise ConfinementError("a path cannot hold a NUL byte")
    return PurePosixPath(rel)


_NO_LINKS = ("the file tools open only regular files and folders, and never through a "
             "symbolic link; use the real path inside the worktree")


@contextmanager
def _opening(rel: str, missing: str) -> Iterator[None]:
    """Every error of a downstream file operation as a :class:`ToolError`."""
    try:
        yield
    except UnsafePath as exc:
        raise ConfinementError(f"{rel!r} {exc.reason}; {_NO_LINKS}") from exc
    except FileNotFoundError as exc:
        raise ToolError(f"{rel}: {missing}") from exc
    except OSError as exc:
        raise ToolError(f"{rel}: {(exc.strerror or str(exc)).lower()}") from exc


class InvalidToolCall(ToolError):
    """A call the model got wrong in form: unknown tool, invalid JSON, arguments off schema."""


class EvidenceSources:
    """The evidence engines, as callables (so roles receive them instead of building them)."""

    def __init__(
        self,
        gap: Callable[[list[str]], str] | None = None,
        surface: Callable[[str], str] | None = None,
    ) -> None:
        self.gap = gap
        self.surface = surface


# -- argument models ---------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class ReadFileArgs(_Args):
    path: str
    """Path relative to the downstream worktree (a citation ``path:start-end`` works too)."""
    start_line: int = Field(default=1, ge=1)
    """First line to show (1-based)."""
    end_line: int | None = Field(default=None, ge=1)
    """Last line to show (default: start_line + 399)."""


class ShowUpstreamArgs(_Args):
    path: str
    """Path in the upstream repository (a citation ``path:start-end`` works too)."""
    start_line: int = Field(default=1, ge=1)
    """First line to show (1-based)."""
    end_line: int | None = Field(default=None, ge=1)
    """Last line to show (default: start_line + 399)."""


class ListDirArgs(_Args):
    path: str = "."
    """Directory relative to the repository root."""
    repo: Side = "downstream"
    """``downstream`` (the worktree) or ``upstream`` (at the pin)."""


class SearchArgs(_Args):
    pattern: str = Field(min_length=1)
    """Extended regular expression (``a|b``, ``(ab)+``), or fixed text with fixed_strings."""
    repo: Side = "downstream"
    """``downstream`` (the worktree) or ``upstream`` (at the pin)."""
    path: str | None = None
    """Limit to this path or glob (git pathspec), e.g. ``src/*.py``."""
    fixed_strings: bool = False
    """Search for the text literally."""
    ignore_case: bool = False
    """Match case-insensitively."""


class HistoryArgs(_Args):
    term: str = Field(min_length=1)
    """Text (mode S: commits that change its number of occurrences) or regex (mode G)."""
    mode: Literal["S", "G"] = "S"
    """``S`` (pickaxe on a string) or ``G`` (regex on the diff)."""
    repo: Side = "downstream"
    """``downstream`` (HEAD's history) or ``upstream`` (history up to the pin)."""
    path: str | None = None
    """Limit to this path."""
    max_count: int = Field(default=30, ge=1, le=200)
    """Most commits to list."""


class WriteFileArgs(_Args):
    path: str
    """Path relative to the downstream worktree (parents are created)."""
    content: str
    """The whole new content of the file."""


class EditFileArgs(_Args):
    path: str
    """Path relative to the downstream worktree."""
    search: str = Field(min_length=1)
    """Exact text to replace; must occur exactly once in the file."""
    replace: str
    """Text to put in its place."""


class RunCommandArgs(_Args):
    command: str = Field(min_length=1)
    """Shell command, run from the worktree root inside the run's sandbox."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds before the command is killed (capped by the run's limit)."""


class GapEvidenceArgs(_Args):
    symbols: list[str] = Field(min_length=1)
    """Symbols, literals or fixture names to look for upstream and downstream."""


class SurfaceArgs(_Args):
    symbol: str = Field(min_length=1)
    """The upstream symbol whose surface (modes, defaults, tests) to enumerate."""


# -- tool functions ----------------------------------------------------------------------


def _numbered(text: str, start: int, end: int | None, *, limit: int = 400) -> str:
    lines = text.splitlines()
    if not lines:
        return "(empty file)"
    if start > len(lines):
        raise ToolError(f"start_line {start} is past the end (the file has {len(lines)} lines)")
    last = min(len(lines), end if end is not None else start + limit - 1)
    if last < start:
        raise ToolError("end_line is before start_line")
    body = "\n".join(f"{n:>6}\t{lines[n - 1]}" for n in range(start, last + 1))
    more = "" if last == len(lines) else f"\n[lines {last + 1}-{len(lines)} not shown]"
    return body + more


_CITED = re.compile(r"\A(?P<path>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?(?:@[0-9a-f]{7,40})?\Z")


def _cited(path: str, start: int, end: int | None) -> tuple[str, int, int | None]:
    """``path:10-20`` (a citation) as path and range, when no range was given apart."""
    match = _CITED.match(path)
    if match is None or start != 1 or end is not None:
        return path, start, end
    first = int(match["start"])
    return match["path"], max(first, 1), int(match["end"]) if match["end"] else first


def read_file(ws: Workspace, args: ReadFileArgs) -> str:
    rel, start, end = _cited(args.path, args.start_line, args.end_line)
    return ws.cap(f"{rel}\n{_numbered(ws.read_text(rel), start, end)}")


def show_upstream(ws: Workspace, args: ShowUpstreamArgs) -> str:
    cited, start, end = _cited(args.path, args.start_line, args.end_line)
    rel = ws.upstream_path(cited)
    repo, rev = ws.repo("upstream"), ws.rev("upstream")
    data = plumbing.show(repo, rev, rel)
    if data is None:
        raise ToolError(f"{cited}: not a file in upstream at {rev[:12]}")
    head = f"upstream {rel}@{rev[:12]}"
    return ws.cap(f"{head}\n{_numbered(_decoded(data), start, end)}")


def list_dir(ws: Workspace, args: ListDirArgs) -> str:
    if args.repo == "upstream":
        rel = ws.upstream_path(args.path)
        repo, rev = ws.repo("upstream"), ws.rev("upstream")
        spec = f"{rev}:{rel}" if rel else rev
        done = plumbing.run(repo, "ls-tree", spec)
        if done.returncode != 0:
            raise ToolError(f"{args.path}: not a directory in upstream at {rev[:12]}")
        entries = []
        for line in _decoded(done.stdout).splitlines():
            meta, _, name = line.partition("\t")
            entries.append(name + "/" if meta.split()[1] == "tree" else name)
    else:
        entries = ws.list_downstream(args.path)
    entries.sort()
    return ws.cap("\n".join(entries) or "(empty directory)", "list a subdirectory")


def search(ws: Workspace, args: SearchArgs) -> str:
    pathspec = _pathspec(ws, args.repo, args.path)
    if args.repo == "downstream":
        return ws.cap(_search_downstream(ws, args, pathspec), "narrow the pattern or the path")
    repo, rev = ws.repo("upstream"), ws.rev("upstream")
    flags = ["-n", "-I", "--no-color", "-F" if args.fixed_strings else "-E"]
    if args.ignore_case:
        flags.append("-i")
    done = plumbing.run(repo, "grep", *flags, "-e", args.pattern, rev, "--", *pathspec)
    if done.returncode == 1:
        return "no matches"
    if done.returncode != 0:
        raise ToolError(f"search failed: {_quoted_stderr(done.stderr)}")
    out = "\n".join(line.removeprefix(f"{rev}:")
                    for line in _decoded(done.stdout).splitlines())
    return ws.cap(out, "narrow the pattern or the path")


def _search_downstream(ws: Workspace, args: SearchArgs, pathspec: list[str]) -> str:
    """``git grep --untracked`` done safely: git only names the candidate files (tracked,
    and untracked but not ignored); their bytes are read through safefs, so a file reached
    through a link, or swapped for one, is never read."""
    pattern = _compiled(args)
    done = plumbing.run(ws.repo("downstream"), "ls-files", "-z", "--cached", "--others",
                        "--exclude-standard", "--", *pathspec)
    if done.returncode != 0:
        raise ToolError(f"search failed: {_quoted_stderr(done.stderr)}")
    listed = _decoded(done.stdout)
    found: list[str] = []
    large = 0
    for name in sorted(set(listed.split("\0")) - {""}):
        try:
            data = safefs.read_file(ws.worktree, name, cap=ws.read_cap)
        except (UnsafePath, OSError):  # a link, a special file, deleted, or too large
            large += _over_cap(ws, name)
            continue
        if b"\0" in data[:8000]:
            continue  # binary, as git grep -I
        lines = data.decode("utf-8", errors="replace").split("\n")
        if lines[-1] == "":
            lines.pop()
        found.extend(f"{name}:{n}:{line}" for n, line in enumerate(lines, 1)
                     if pattern.search(line))
    if large:
        found.append(f"[{large} files over {ws.read_cap} bytes not searched]")
    return "\n".join(found) or "no matches"


_POSIX_CLASSES = {"[:alpha:]": "a-zA-Z", "[:digit:]": "0-9", "[:alnum:]": "a-zA-Z0-9",
                  "[:upper:]": "A-Z", "[:lower:]": "a-z", "[:space:]": r"\s", "[:blank:]": r" \t",
                  "[:xdigit:]": "0-9A-Fa-f", "[:punct:]": re.escape(string.punctuation),
                  "[:word:]": r"\w"}
"""POSIX bracket classes of ``git grep -E``, in Python's spelling."""


def _compiled(args: SearchArgs) -> re.Pattern[str]:
    """The pattern of a downstream search, read as ``git grep -E`` reads it upstream."""
    text = re.escape(args.pattern) if args.fixed_strings else args.pattern
    if not args.fixed_strings:
        for posix, python in _POSIX_CLASSES.items():
            text = text.replace(posix, python)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # "possible nested set"
            return re.compile(text, re.IGNORECASE if args.ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"invalid regular expression: {exc}; fix it or use fixed_strings"
                        ) from exc


def _over_cap(ws: Workspace, name: str) -> bool:
    """Whether ``name`` was left out of a search for its size (not for being a link)."""
    try:
        info = safefs.stat(ws.worktree, name)
    except (UnsafePath, OSError):
        return False
    return info is not None and stat.S_ISREG(info.st_mode) and info.st_size > ws.read_cap


def _pathspec(ws: Workspace, side: Side, path: str | None) -> list[str]:
    if path is None:
        return []
    return [(ws.upstream_path(path) if side == "upstream" else ws.inside(path)) or "."]


def git_history(ws: Workspace, args: HistoryArgs) -> str:
    repo, rev = ws.repo(args.repo), ws.rev(args.repo)
    argv = [f"-{args.mode}", args.term, f"--max-count={args.max_count}",
            "--format=%h %ad %s", "--date=short", rev, "--", *_pathspec(ws, args.repo, args.path)]
    done = plumbing.run(repo, "log", *argv)
    if done.returncode != 0:
        raise ToolError(f"history search failed: {_quoted_stderr(done.stderr)}")
    out = _decoded(done.stdout).removesuffix("\n")
    return ws.cap(out or "no commits", "narrow the term or the path")


def _decoded(out: bytes) -> str:
    """git's output as text (bytes that are not UTF-8 kept as surrogates)."""
    return out.decode("utf-8", "surrogateescape")


def _quoted_stderr(err: bytes) -> str:
    """git's message as the tools have always answered it: ``stderr: '…'`` (empty when
    git said nothing)."""
    message = _decoded(err.removesuffix(b"\n"))
    return f"stderr: '{message}'" if message else ""


def write_file(ws: Workspace, args: WriteFileArgs) -> str:
    data = args.content.encode()
    ws.write_bytes(args.path, data)
    return f"wrote {len(data)} bytes to {args.path}"


def edit_file(ws: Workspace, args: EditFileArgs) -> str:
    ws.writable(args.path)  # refuse before reading what this step may not write anyway
    try:
        text = ws.read_bytes(args.path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{args.path} is not UTF-8 text; write the whole file instead") from exc
    count = text.count(args.search)
    if count == 0:
        raise ToolError(f"{args.path}: the search text is not in the file; read the file and "
                        "copy the exact lines, whitespace included")
    if count > 1:
        raise ToolError(f"{args.path}: the search text occurs {count} times; include more "
                        "surrounding lines so it is unique")
    ws.write_bytes(args.path, text.replace(args.search, args.replace, 1).encode())
    line = text[: text.index(args.search)].count("\n") + 1
    return f"edited {args.path} at line {line}"


def run_command(ws: Workspace, args: RunCommandArgs) -> str:
    if ws.sandbox is None:
        raise ToolError("this role has no sandbox to run commands in")
    if args.timeout is not None:
        try:  # a near-zero timeout can freeze a Docker exec mid-start
            check_seconds(args.timeout)
        except ValueError as exc:
            raise ToolError(f"timeout: {exc}") from exc
    timeout = min(args.timeout or ws.command_timeout, ws.command_timeout)
    result = ws.sandbox.exec(["sh", "-c", args.command], timeout=timeout, cwd=ws.worktree)
    status = f"exit code {result.exit_code}"
    if result.timed_out:
        status += f" (killed after {timeout:g}s timeout)"
    if result.oom_killed:
        status += " (killed: out of memory)"
    if result.capped:
        status += " (killed: output cap)"
    parts = [status]
    for name, head, tail, size in (
        ("stdout", result.stdout_head, result.stdout_tail, result.stdout_bytes),
        ("stderr", result.stderr_head, result.stderr_tail, result.stderr_bytes),
    ):
        if not (head or tail):
            continue
        body = head if not tail or size <= len(head.encode()) else (
            f"{head}\n[… {size} bytes in all …]\n{tail}")
        parts.append(f"--- {name}\n{body}")
    return ws.cap(relative_to("\n".join(parts), ws.worktree), "run a command with less output")


def gap_evidence(ws: Workspace, args: GapEvidenceArgs) -> str:
    if ws.evidence is None or ws.evidence.gap is None:
        raise ToolError("no gap evidence engine in this run")
    return ws.cap(ws.evidence.gap(args.symbols), "ask for fewer symbols")


def surface_candidates(ws: Workspace, args: SurfaceArgs) -> str:
    if ws.evidence is None or ws.evidence.surface is None:
        raise ToolError("no surface engine in this run")
    return ws.cap(ws.evidence.surface(args.symbol))


# -- registry ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Tool:
    """A tool: its name, what the model is told, its argument model and its function."""

    name: str
    description: str
    args: type[BaseModel]
    fn: Callable[[Workspace, Any], str]
    writes: bool = False

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description,
                        parameters=json.loads(_schema(self.args)))


@functools.cache
def _schema(args: type[BaseModel]) -> str:
    """The JSON schema of a tool's arguments (without its title), worked out once per
    process: a model class does not change while the process runs."""
    schema = args.model_json_schema()
    schema.pop("title", None)
    return json.dumps(schema)


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("read_file", "Read a downstream file with line numbers, optionally a line range.",
         ReadFileArgs, read_file),
    Tool("show_upstream", "Show an upstream file (at the pin) with line numbers, optionally "
         "a line range: cite it as path:start-end.", ShowUpstreamArgs, show_upstream),
    Tool("list_dir", "List a directory of the downstream worktree or of upstream at the pin "
         "(folders end in /, symbolic links in @).", ListDirArgs, list_dir),
    Tool("search", "Search file contents, like git grep -E (downstream: tracked and untracked "
         "files, not ignored ones) or upstream at the pin.", SearchArgs, search),
    Tool("git_history", "Search git history (log -S / -G) downstream or upstream up to the pin.",
         HistoryArgs, git_history),
    Tool("gap_evidence", "What the framework found for symbols upstream at the pin and "
         "downstream (HEAD and history): the evidence a gap verdict must rest on.",
         GapEvidenceArgs, gap_evidence),
    Tool("surface_candidates", "The candidate surface items of an upstream symbol (modes, "
         "defaults, dtypes, error paths, tests); each must be classified.",
         SurfaceArgs, surface_candidates),
    Tool("write_file", "Write a whole downstream file (created with its folders if new).",
         WriteFileArgs, write_file, writes=True),
    Tool("edit_file", "Replace one exact, unique piece of text in a downstream file.",
         EditFileArgs, edit_file, writes=True),
    Tool("run_command", "Run a shell command in the run's sandbox from the worktree root; "
         "returns exit code and the head and tail of its output.", RunCommandArgs,
         run_command, writes=True),
)}


class Toolbox:
    """The tools one role may call, bound to its workspace."""

    def __init__(self, workspace: Workspace, names: Sequence[str]) -> None:
        unknown = [n for n in names if n not in TOOLS]
        if unknown:
            raise ValueError(f"unknown tools: {', '.join(unknown)}")
        self.workspace = workspace
        self.tools = {n: TOOLS[n] for n in names}

    def specs(self) -> list[ToolSpec]:
        return [t.spec() for t in self.tools.values()]

    def call(self, name: str, raw_arguments: str) -> str:
        """Run one call; every problem the model can fix is a :class:`ToolError`."""
        tool = self.tools.get(name)
        if tool is None:
            raise InvalidToolCall(f"unknown tool {name!r}; the tools are: {', '.join(self.tools)}")
        try:
            data = json.loads(raw_arguments or "{}")
        except json.JSONDecodeError as exc:
            raise InvalidToolCall(f"arguments of {name} are not valid JSON ({exc.msg} at "
                            f"character {exc.pos}); send a JSON object") from exc
        if not isinstance(data, dict):
            raise InvalidToolCall(f"arguments of {name} must be a JSON object")
        try:
            args = tool.args.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(object)'}: {e['msg']}"
                for e in exc.errors())
            raise InvalidToolCall(f"arguments of {name} do not fit its schema: {problems}") from exc
        try:
            return tool.fn(self.workspace, args)
        except UnsafePath as exc:
            raise ConfinementError(f"{name} refused: {exc}; {_NO_LINKS}") from exc
        except (OSError, UnicodeError) as exc:
            raise ToolError(f"{name} failed: {exc}") from exc
