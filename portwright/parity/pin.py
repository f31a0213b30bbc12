"""The pin: the upstream revision the port claims parity with.

Three stores, chosen by ``[pin] store`` in ``portwright.toml``:

``markdown``
    A markdown file (``upstream-sync.md``); ``[pin] pattern`` is a regular expression whose
    ``sha`` group is the pin, e.g. ``Pinned commit: `0123abc…```.
``yaml``
    A YAML file and a key path into it: ``[0].commit``, ``upstream.commit``,
    ``ports[2].sha``. Read with ruamel.yaml (round-trip), which knows each value's line.
``toml``
    A TOML file and a dotted key path (``upstream.commit``), read with tomlkit.

Every store reads the sha *as written* and writes by replacing exactly the bytes of the old
sha: comments, quoting, order and every other byte of the file stay as they were.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from portwright.config import PinConfig, PinStoreKind, PortwrightConfig
from portwright.errors import ParityFileError
from portwright.parity._files import write_text

logger = logging.getLogger(__name__)

SHA_RE = re.compile(r"^[0-9a-f]{7,40}$")

__all__ = [
    "MarkdownPinStore",
    "PinLocation",
    "PinStore",
    "TomlPinStore",
    "YamlPinStore",
    "parse_key_path",
    "pin_store",
    "read_pin",
    "resolve_pin",
    "write_pin",
]


@dataclass(frozen=True)
class PinLocation:
    """Where the pin's bytes are in the file's text."""

    sha: str
    """The recorded sha, as written."""
    start: int
    """Offset of its first character in the text."""
    end: int
    """Offset just past its last character."""
    line: int
    """1-based line."""


class PinStore(Protocol):
    """A file that records the pin."""

    @property
    def path(self) -> Path:
        """The file, absolute."""
        ...

    def locate(self, text: str) -> PinLocation:
        """Where the sha is in ``text``; :class:`ParityFileError` when absent or malformed."""
        ...


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise ParityFileError(
            "the pin file is not a file" if path.exists() else "the pin file does not exist",
            file=path,
            fix="create it, or set [pin] file/store in portwright.toml to where the pin is",
        )
    from portwright.parity._files import read_text

    return read_text(path)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _check_sha(value: str, path: Path, line: int | None, key: str | None = None) -> None:
    if not SHA_RE.match(value):
        raise ParityFileError(
            f"the pin {value!r} is not a commit sha (7 to 40 lower-case hex digits)",
            file=path, line=line, key=key,
            fix="write the full upstream commit sha, e.g. from `git rev-parse HEAD` upstream",
        )


@dataclass(frozen=True)
class MarkdownPinStore:
    """The pin in a markdown file, found by a regular expression with a ``sha`` group."""

    path: Path
    """The file, absolute."""
    pattern: str
    """Regular expression with a named group ``sha``."""

    def locate(self, text: str) -> PinLocation:
        matches = list(re.finditer(self.pattern, text))
        if not matches:
            raise ParityFileError(
                "no pin found in this file", file=self.path,
                fix="add a line like `Pinned commit: <40-hex sha>` (or set [pin] pattern)",
            )
        if len({m.group("sha") for m in matches}) > 1:
            raise ParityFileError(
                "more than one pin in this file", file=self.path,
                line=_line_of(text, matches[1].start("sha")),
                fix="keep a single pin line; move history to a list without the word 'pin'",
            )
        match = matches[0]
        line = _line_of(text, match.start("sha"))
        _check_sha(match.group("sha"), self.path, line)
        return PinLocation(match.group("sha"), match.start("sha"), match.end("sha"), line)


def parse_key_path(key: str) -> list[str | int]:
    """``"[0].commit"`` → ``[0, "commit"]``; ``"a.b[2].c"`` → ``["a", "b", 2, "c"]``."""
    parts: list[str | int] = []
    for match in re.finditer(r"\[(-?\d+)\]|([^.\[\]]+)", key):
        if match.group(1) is not None:
            parts.append(int(match.group(1)))
        else:
            parts.append(match.group(2))
    if not parts:
        raise ValueError(f"empty key path {key!r}")
    return parts


def _value_span(text: str, offsets: list[int], line: int, col: int, value: str,
                path: Path, key: str) -> PinLocation:
    """Find ``value`` at or just after ``line``/``col`` (0-based) in ``text``."""
    base = offsets[line] + col if line < len(offsets) else len(text)
    found = text.find(value, base)
    if found == -1 or _line_of(text, found) - 1 > line + 1:
        raise ParityFileError(f"cannot locate the pin's bytes for {key!r}", file=path,
                              line=line + 1, key=key, fix="write the sha as a plain scalar")
    return PinLocation(value, found, found + len(value), _line_of(text, found))


@dataclass(frozen=True)
class YamlPinStore:
    """The pin in a YAML file under a key path; ruamel.yaml knows where each value is."""

    path: Path
    """The file, absolute."""
    key: str
    """Key path such as ``[0].commit``."""

    def locate(self, text: str) -> PinLocation:
        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError

        try:
            data: Any = YAML(typ="rt").load(text)
        except (YAMLError, ValueError, RecursionError) as exc:
            # ValueError: a value YAML cannot build (2001-02-30); RecursionError: nesting
            mark = getattr(exc, "problem_mark", None)
            raise ParityFileError(
                f"not valid YAML: {getattr(exc, 'problem', None) or exc}", file=self.path,
                line=(mark.line + 1) if mark is not None else None,
                fix="fix the YAML syntax at that line",
            ) from exc
        parts = parse_key_path(self.key)
        node = data
        line, col = 0, 0
        for depth, part in enumerate(parts):
            walked = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts[:depth])
            try:
                lc = node.lc
                if isinstance(part, int):
                    line, col = lc.item(part)
                else:
                    line, col = lc.value(part)
                node = node[part]
            except (KeyError, IndexError, TypeError, AttributeError) as exc:
                listed = _through_list(data, parts, depth, node, self.path, self.key,
                                       line + 1 if depth else None)
                if listed is not None:
                    raise listed from exc
                raise ParityFileError(
                    f"key path {self.key!r} not found (stopped at {walked.lstrip('.') or 'top'})",
                    file=self.path, line=line + 1 if depth else None, key=self.key,
                    fix="set [pin] key in portwright.toml to the path of the sha",
                ) from exc
        offsets = _offsets(text)
        value = str(node)
        if not isinstance(node, str):
            # an unquoted all-digit sha is a YAML number: take the bytes as written
            start = offsets[line] + col if line < len(offsets) else len(text)
            raw = re.match(r"[0-9A-Za-z_.+-]*", text[start:])
            value = raw.group(0) if raw else value
        _check_sha(value, self.path, line + 1, self.key)
        return _value_span(text, offsets, line, col, value, self.path, self.key)


@dataclass(frozen=True)
class TomlPinStore:
    """The pin in a TOML file under a dotted key path, read with tomlkit."""

    path: Path
    """The file, absolute."""
    key: str
    """Dotted key path such as ``upstream.commit``."""

    def locate(self, text: str) -> PinLocation:
        import tomlkit
        from tomlkit.exceptions import ParseError

        from portwright.config import locate_key

        try:
            data: Any = tomlkit.parse(text)
        except ParseError as exc:
            raise ParityFileError(f"not valid TOML: {exc}", file=self.path,
                                  line=getattr(exc, "line", None),
                                  fix="fix the TOML syntax at that line") from exc
        parts = parse_key_path(self.key)
        node = data
        for depth, part in enumerate(parts):
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError) as exc:
                listed = _through_list(data, parts, depth, node, self.path, self.key, None)
                if listed is not None:
                    raise listed from exc
                raise ParityFileError(
                    f"key path {self.key!r} not found", file=self.path, key=self.key,
                    fix="set [pin] key in portwright.toml to the path of the sha",
                ) from exc
        names = tuple(str(p) for p in parts if isinstance(p, str))
        found = locate_key(text, names) or 1
        if not isinstance(node, str):
            kind = type(getattr(node, "unwrap", lambda: node)()).__name__
            raise ParityFileError(
                f"the pin under {self.key!r} is a TOML {kind}, not a string: a sha is text",
                file=self.path, line=found, key=self.key,
                fix='quote it: commit = "<40-hex sha>"')
        value = str(node)
        _check_sha(value, self.path, found, self.key)
        return _value_span(text, _offsets(text), found - 1, 0, value, self.path, self.key)


def format_key_path(parts: list[str | int]) -> str:
    """``[0, "commit"]`` → ``"[0].commit"`` (the inverse of :func:`parse_key_path`)."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def _resolves(data: Any, parts: list[str | int]) -> bool:
    node = data
    for part in parts:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    return isinstance(node, str | int)


def _through_list(data: Any, parts: list[str | int], depth: int, node: Any, path: Path,
                  key: str, line: int | None) -> ParityFileError | None:
    """The error for a key that names a field of a list (``upstream.commit`` where the file
    holds ``- commit: …``): which list, and the ``[0].commit`` form that indexes it — the
    first such path that reaches a value, else the one that keeps every name."""
    if not isinstance(parts[depth], str) or not isinstance(node, list):
        return None
    before, rest = parts[:depth], parts[depth:]
    candidates = [[*before, 0, *rest], [*before, 0, *rest[1:]]]
    hint = next((c for c in candidates if c != [*before, 0] and _resolves(data, c)),
                candidates[0])
    where = format_key_path(before) or "the top of the file"
    return ParityFileError(
        f"key path {key!r}: {where} is a list, not a table of keys; index it: "
        f"{format_key_path(hint)}", file=path, line=line, key=key,
        fix=f'set [pin] key = "{format_key_path(hint)}" in portwright.toml (the [0].commit '
            "form: [N] picks the N-th item of a list, counting from 0)")


def _offsets(text: str) -> list[int]:
    from portwright.parity.markdown import line_offsets

    return line_offsets(text)


def pin_store(repo: Path, config: PortwrightConfig | PinConfig) -> PinStore:
    """The store ``config`` describes, for the downstream ``repo``."""
    pin = config.pin if isinstance(config, PortwrightConfig) else config
    path = repo / pin.file
    if pin.store is PinStoreKind.MARKDOWN:
        return MarkdownPinStore(path=path, pattern=pin.pattern)
    if not pin.key:
        raise ParityFileError(
            f"a {pin.store.value} pin store needs a key path", file=repo / "portwright.toml",
            key="pin.key", fix='set [pin] key, e.g. key = "upstream.commit"',
        )
    if pin.store is PinStoreKind.YAML:
        return YamlPinStore(path=path, key=pin.key)
    return TomlPinStore(path=path, key=pin.key)


def read_pin(repo: Path, config: PortwrightConfig) -> str:
    """The recorded pin, as written (may be abbreviated)."""
    store = pin_store(repo, config)
    return store.locate(_read_text(store.path)).sha


def resolve_pin(repo: Path, config: PortwrightConfig, upstream: Path) -> str:
    """The full upstream commit sha the recorded pin names; a :class:`ParityFileError`
    naming the pin's file and line (and why: absent, a tree, ambiguous, a shallow clone…)
    when it names none."""
    from portwright.errors import RevisionError
    from portwright.vcs.plumbing import rev_parse

    store = pin_store(repo, config)
    where = store.locate(_read_text(store.path))
    try:
        return rev_parse(upstream, where.sha)
    except RevisionError as exc:
        raise ParityFileError(
            f"the pin {where.sha} names no commit of the upstream repository {upstream}: "
            f"{exc.message}", file=store.path, line=where.line,
            fix=f"{exc.fix}; or record an upstream commit as the pin") from exc


def write_pin(repo: Path, config: PortwrightConfig, sha: str) -> None:
    """Record ``sha`` as the pin, replacing only the old sha's bytes."""
    store = pin_store(repo, config)
    _check_sha(sha, store.path, None)
    text = _read_text(store.path)
    where = store.locate(text)
    new = text[: where.start] + sha + text[where.end:]
    write_text(repo, store.path, new)
    logger.info("pin %s -> %s in %s", where.sha, sha, store.path)
