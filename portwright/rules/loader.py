"""Read a repo's AGENTS.md files (the agents.md convention) into :class:`Rules`.

The prose is plain markdown. The machine part is one fenced TOML block whose
info string carries the word ``portwright``; it renders as an ordinary code
block on any forge::

    ```toml portwright
    [[gate]]
    name = "unit"
    run = "python -m pytest -q"
    phases = ["focused", "full", "pin"]
    timeout = 600
    junit = "build/junit.xml"

    [[gate]]
    name = "anchors"
    check = "anchors"
    phases = ["spec", "pin"]
    ```

Nested ``AGENTS.md`` files apply to their own subtree; the closest file wins.
Every error names the file, the line and the fix.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from pydantic import ValidationError

from portwright.config import locate_key
from portwright.errors import RepositoryError, RulesError
from portwright.rules.models import BuiltinCheck, GatesBlock, Phase, Rules, RulesFile
from portwright.vcs import plumbing

RULES_NAME = "AGENTS.md"
BLOCK_WORD = "portwright"
_SKIP_DIRS = {".git", ".venv", "node_modules", ".portwright", "__pycache__"}


def load_rules(repo: Path, *, at: str | None = None) -> Rules:
    """Every AGENTS.md under ``repo``, root first. A repo without a root file is an error.

    ``at`` reads them from that commit instead of the working files: a run obeys the rules
    of the commit it started at, never files a sandboxed command could have rewritten (or
    replaced by a link)."""
    if at is not None:
        return _load_rules_at(repo, at)
    paths = _find_rules_files(repo)
    if RULES_NAME not in paths:
        raise _no_root_rules(repo)
    links = [rel for rel in paths if (repo / rel).is_symlink()]
    if links:
        raise _linked(repo / links[0])
    files = [parse_rules_file(repo / rel, rel) for rel in paths]
    return Rules(files=files)


def _linked(path: Path) -> RulesError:
    return RulesError("AGENTS.md is a symbolic link; rules must be a file of their own",
                      file=path, fix="replace the link by the rules file itself")


def _no_root_rules(repo: Path, at: str | None = None) -> RulesError:
    where = f" at commit {at[:12]}" if at else ""
    fix = "run `portwright init` to write one with a gates block, or create it by hand"
    return RulesError(f"no AGENTS.md at the repository root{where}", file=repo / RULES_NAME,
                      fix=fix + (" and commit it" if at else ""))


def _load_rules_at(repo: Path, at: str) -> Rules:
    entries = plumbing.tree_entries(repo, at)
    paths = {path: (sha, mode) for mode, sha, path in entries
             if path == RULES_NAME or path.endswith("/" + RULES_NAME)}
    if RULES_NAME not in paths:
        raise _no_root_rules(repo, at)
    links = sorted(p for p, (_, mode) in paths.items() if mode == "120000")
    if links:
        raise _linked(repo / links[0])
    blobs = plumbing.cat_blobs(repo, [sha for sha, _ in paths.values()])
    ordered = sorted(paths, key=lambda p: (p.count("/"), p))
    return Rules(files=[parse_rules_bytes(blobs.get(paths[rel][0], b""), repo / rel, rel)
                        for rel in ordered])


def _find_rules_files(repo: Path) -> list[str]:
    found: list[str] = []
    try:
        out = plumbing.git(repo, "ls-files", "--cached", "--others", "--exclude-standard",
                           "-z").decode("utf-8", "surrogateescape")
        found = [p for p in out.split("\0") if p == RULES_NAME or p.endswith("/" + RULES_NAME)]
        found = [p for p in found if (repo / p).is_file() or (repo / p).is_symlink()]
    except RepositoryError:
        for path in repo.rglob(RULES_NAME):
            rel = path.relative_to(repo)
            if not _SKIP_DIRS.intersection(rel.parts):
                found.append(rel.as_posix())
    return sorted(set(found), key=lambda p: (p.count("/"), p))


def parse_rules_file(path: Path, rel: str) -> RulesFile:
    return parse_rules_bytes(path.read_bytes(), path, rel)


def parse_rules_bytes(raw: bytes, path: Path, rel: str) -> RulesFile:
    """One AGENTS.md from its bytes; ``path`` names it in errors."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RulesError("not UTF-8 text", file=path, fix="save the file as UTF-8") from exc
    blocks = [
        token for token in MarkdownIt("commonmark").parse(text)
        if token.type == "fence" and BLOCK_WORD in token.info.split()
    ]
    if len(blocks) > 1:
        second = blocks[1].map[0] + 1 if blocks[1].map else None
        raise RulesError(
            f"more than one ```{BLOCK_WORD} block",
            file=path, line=second,
            fix="merge the gates into the first block; one block per AGENTS.md",
        )
    block = GatesBlock()
    block_line: int | None = None
    prose = text
    if blocks:
        token = blocks[0]
        assert token.map is not None
        block_line = token.map[0] + 1
        if token.info.split()[0] != "toml":
            raise RulesError(
                f"the {BLOCK_WORD} block must be TOML",
                file=path, line=block_line,
                fix=f"start the block with ```toml {BLOCK_WORD}",
            )
        block = _parse_block(token.content, path, block_line)
        lines = text.splitlines(keepends=True)
        prose = "".join(lines[: token.map[0]] + lines[token.map[1]:])
    directory = rel.rpartition("/")[0]
    return RulesFile(
        path=rel, directory=directory, sha256=hashlib.sha256(raw).hexdigest(),
        prose=prose, block=block, block_line=block_line,
    )


def _parse_block(content: str, path: Path, fence_line: int) -> GatesBlock:
    try:
        data: dict[str, Any] = tomllib.loads(content)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        line = fence_line + int(match.group(1)) if match else fence_line
        raise RulesError(
            f"the gates block is not valid TOML: {str(exc).split(' (at')[0]}",
            file=path, line=line,
            fix="fix the TOML at that line (strings in quotes, lists in [brackets])",
        ) from exc
    try:
        block = GatesBlock.model_validate(data)
    except ValidationError as exc:
        raise _rules_error(exc, content, path, fence_line) from exc
    seen: dict[str, int] = {}
    for index, gate in enumerate(block.gate):
        if gate.name in seen:
            raise RulesError(
                f"gate {gate.name!r} is declared twice",
                file=path, line=_gate_line(content, index, fence_line),
                fix="give each gate its own name",
            )
        seen[gate.name] = index
    return block


def _rules_error(exc: ValidationError, content: str, path: Path, fence_line: int) -> RulesError:
    first = exc.errors()[0]
    loc = tuple(first["loc"])
    line: int | None = None
    if loc and loc[0] in {"gate", "seam", "runtime"} and len(loc) > 1 and isinstance(loc[1], int):
        line = _gate_line(content, loc[1], fence_line, table=str(loc[0]))
        if len(loc) > 2:
            key_line = _key_line(content, line - fence_line, str(loc[2]))
            line = fence_line + key_line if key_line else line
    else:
        found = locate_key(content, tuple(str(p) for p in loc))
        line = fence_line + found if found else fence_line
    key = ".".join(str(p) for p in loc)
    kind = first["type"]
    if kind == "enum" and "phases" in loc:
        fix = f"use one of: {', '.join(p.value for p in Phase)}"
    elif kind == "enum" and "check" in loc:
        fix = f"use one of: {', '.join(c.value for c in BuiltinCheck)}"
    elif kind == "missing":
        fix = f"add `{loc[-1]} = ...` to this entry"
    elif kind == "extra_forbidden" and loc[-1] in GatesBlock.model_fields:
        fix = (f"move `{loc[-1]}` above the first [[{loc[0]}]] table: in TOML, keys after a "
               f"[[{loc[0]}]] header belong to that entry")
    elif kind == "extra_forbidden":
        fix = "remove or rename the key (see the gates syntax in `portwright rules check --help`)"
    else:
        fix = "correct the value as the message says"
    found_value = first.get("input")
    shown = "" if kind in {"missing", "extra_forbidden"} else f"; found {found_value!r}"
    message = ("unknown key " + repr(loc[-1])) if kind == "extra_forbidden" else \
        first["msg"].removeprefix("Value error, ")
    return RulesError(f"{message}{shown}", file=path, line=line, key=key, fix=fix)


def _gate_line(content: str, index: int, fence_line: int, table: str = "gate") -> int:
    count = -1
    for number, line in enumerate(content.splitlines(), start=1):
        if re.match(rf"^\s*\[\[\s*{table}\s*\]\]", line):
            count += 1
            if count == index:
                return fence_line + number
    return fence_line


def _key_line(content: str, start: int, key: str) -> int | None:
    lines = content.splitlines()
    for number in range(max(start, 1), len(lines) + 1):
        line = lines[number - 1]
        if number > start and re.match(r"^\s*\[", line):
            return None
        if re.match(rf"^\s*{re.escape(key)}\s*=", line):
            return number
    return None
