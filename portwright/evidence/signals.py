"""Signals of one changed file: what a port of the change would keep, whatever its language.

From code files (lexed, :mod:`.lexer`): the *names* the change defines or introduces (a
function, class or method it defines; multi-word identifiers that are not members of
something else), never type-only names, keywords, comments or string contents; the *literals*
it introduces (messages, and regex or pattern text such as ``\\.{2,}[a-z0-9%/&]|``, compared by
value), each with the literal it replaced when it replaced one; the *tests* it declares.
Module specifiers, template fragments with ``${…}`` and short strings are not literals.

From data fixtures (files of the tests kind that are not code: spec texts, link lists, JSON
cases): the fixture itself (its blob and the blob it replaced) and the distinctive lines it
adds and removes.

Public API:

- ``Signal`` — one signal (pydantic, frozen)
- ``code_signals(path, sha, added, removed, old_text, new_text) -> tuple[list[Signal],
  list[str]]`` — the signals and the keys of what the change drops
- ``fixture_signal(path, sha, status, blobs, added, removed, old_text, target) -> Signal``
- ``key(signal) -> str`` — ``kind:text``, to follow a signal across commits
- ``touched_definitions(path, text, lines) -> list[str]`` — the names a change to ``lines``
  defines, else those whose bodies it changes
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from portwright.evidence import names, tokens
from portwright.evidence.gapmodels import SignalKind, Strength
from portwright.evidence.lexer import Token, family, is_javascript, lex, string_value

MIN_LITERAL = 8
_DEFINERS = frozenset({"function", "class", "def", "fn", "func", "struct", "enum", "trait",
                       "impl", "union", "namespace", "module"})
_TYPE_ONLY = frozenset({"interface", "type", "typedef", "declare"})
_MODULE_LIKE = re.compile(r"\A(?:\.{0,2}/)?[\w@.-]+(?:/[\w@.-]+)*\.(?:m?js|cjs|ts|json|py)\Z"
                          r"|\A\.{1,2}/|\A[\w@-]+/[\w/.-]+\Z")
_FIXTURE_LINE = re.compile(r"[A-Za-z0-9]{2}")


class Signal(BaseModel):
    """One thing a port of the change would carry, and how to look for it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: SignalKind
    text: str
    """The name, the literal's value, the test's title, or the path."""
    anchor: str
    """``path:line@sha`` upstream."""
    strength: Strength = "medium"
    """How telling its absence downstream is."""
    old: str | None = None
    """For a literal: the upstream literal it replaced."""
    blob: str | None = None
    """For a fixture: its new blob (None when deleted)."""
    old_blob: str | None = None
    """For a fixture: the blob it replaced (None when added)."""
    lines: list[str] = []
    """For a fixture: distinctive lines it adds."""
    gone: list[str] = []
    """For a fixture: distinctive lines it removes."""
    target: str | None = None
    """For a fixture or a file: the downstream path through ``path_map``."""
    origin: Literal["source", "tests"] = "source"
    """The kind of file it comes from: a port can carry the code and not the tests."""


def key(signal: Signal) -> str:
    """The identity of a signal across commits of a range."""
    return f"{signal.kind}:{signal.text}"


def _lines(text: str | None, path: str) -> list[Token]:
    lexer_family = family(path, text)
    if text is None or lexer_family is None:
        return []
    return lex(text, lexer_family, regex_literals=is_javascript(path, text))


def _type_only_lines(tokens_: list[Token]) -> set[int]:
    """Lines that declare types only: ``interface`` and ``type X =`` declarations (bodies
    included), ``import type``, ``declare``, ``typedef``."""
    out: set[int] = set()
    depth = 0
    inside = False
    for index, token in enumerate(tokens_):
        first = not index or tokens_[index - 1].line != token.line
        following = tokens_[index + 1].text if index + 1 < len(tokens_) else ""
        word = following if token.text in ("export", "import") else token.text
        if first and not inside and (word in _TYPE_ONLY or
                                     (token.text == "import" and following == "type")):
            inside, depth = True, 0
        if inside:
            out.add(token.line)
            depth += (token.text == "{") - (token.text == "}")
            if depth <= 0 and (token.text in ("}", ";") or (
                    index + 1 < len(tokens_) and tokens_[index + 1].line != token.line
                    and depth == 0 and token.text != "{")):
                inside = False
    return out


def _arrow_after(code: list[Token], start: int) -> bool:
    """True when the ``(`` at ``start`` opens the parameters of an arrow function
    (``(a, b) =>``), not a parenthesised value (``isEscaped = (ch === 0x5c)``, a C cast)."""
    depth = 0
    for index in range(start, min(len(code), start + 400)):
        text = code[index].text
        depth += (text == "(") - (text == ")")
        if depth == 0:
            following = "".join(t.text for t in code[index + 1:index + 3])
            return following == "=>" or following.startswith(":")  # `): T =>`
    return False


def _is_definition(code: list[Token], index: int) -> bool:
    """True when the identifier at ``index`` is a name being defined here."""
    before = code[index - 1].text if index else ""
    after = code[index + 1].text if index + 1 < len(code) else ""
    after2 = code[index + 2].text if index + 2 < len(code) else ""
    if before in _DEFINERS:
        return True
    if after == "=" and after2 in ("function", "async", "class"):
        return True
    if after == "=" and after2 == "(":  # an arrow function, not a parenthesised value
        return _arrow_after(code, index + 2)
    if before == "." and index >= 2 and code[index - 2].text == "prototype" and after == "=":
        return True
    line = code[index].line
    starts_line = index == 0 or code[index - 1].line != line
    return starts_line and after == "(" and any(  # a method: name(args) { on one line
        t.text == "{" and t.line == line for t in code[index + 2:index + 40])


def touched_definitions(path: str, text: str, lines: set[int]) -> list[str]:
    """The names ``text`` (the file ``path``, lexed by its language) defines on ``lines``;
    when it defines none there, those whose definition is the nearest above one of
    ``lines`` (the function or class a changed line most likely belongs to). Each once, in
    the order found; short and common names included (``sub``), unlike the gap's signals."""
    code = [t for t in _lines(text, path) if t.kind not in ("comment", "newline")]
    defined = [(t.line, t.text) for i, t in enumerate(code)
               if t.kind == "ident" and t.text not in tokens.KEYWORDS
               and _is_definition(code, i)]
    found = [name for line, name in defined if line in lines]
    if not found:
        for line in sorted(lines):
            above = [name for at, name in defined if at <= line]
            if above:
                found.append(above[-1])
    return list(dict.fromkeys(found))


def _plumbing_lines(tokens_: list[Token]) -> set[int]:
    """Lines of module plumbing (``import``, ``export … from``, ``require(…)``,
    ``#include``): they name modules, not behaviour."""
    out: set[int] = set()
    for index, token in enumerate(tokens_):
        first = not index or tokens_[index - 1].line != token.line
        if (first and token.text in ("import", "from", "include", "using")) or \
                token.text in ("require", "createRequire"):
            out.add(token.line)
    return out


def _title_words(title: str) -> int:
    return len([w for w in names.split_words(title) if w not in ("test", "should", "it")])


def code_signals(path: str, sha: str, added: set[int], removed: set[int],
                 old_text: str | None, new_text: str | None, *, tests: bool = False,
                 known: str = "") -> tuple[list[Signal], list[str]]:
    """The names, literals and tests a change to a code file introduces (on its ``added``
    lines of ``new_text``), and the keys of the names and literals it removes (its
    ``removed`` lines of ``old_text``). A literal is new when no literal of the old file
    holds it; a test is new when no file the commit touched had its title (``known``)."""
    short = sha[:12]
    new_tokens = [t for t in _lines(new_text, path) if t.kind not in ("comment", "newline")]
    old_tokens = [t for t in _lines(old_text, path) if t.kind not in ("comment", "newline")]
    old_values = {string_value(t) for t in old_tokens if t.kind in ("string", "template",
                                                                       "regex")}
    new_values = {string_value(t) for t in new_tokens if t.kind in ("string", "template",
                                                                       "regex")}
    old_joined = "\0".join(old_values) + "\0" + known
    removed_literals = [string_value(t) for t in old_tokens
                        if t.line in removed and t.kind in ("string", "template", "regex")
                        and _distinctive_literal(string_value(t))]
    skip = _type_only_lines(new_tokens) | _plumbing_lines(new_tokens)
    origin: Literal["source", "tests"] = "tests" if tests else "source"
    out: dict[str, Signal] = {}
    for index, token in enumerate(new_tokens):
        if token.line not in added or token.line in skip:
            continue
        anchor = f"{path}:{token.line}@{short}"
        if token.kind == "ident" and not tests and tokens.distinctive(token.text):
            member = index > 0 and new_tokens[index - 1].text == "."
            defined = _is_definition(new_tokens, index)
            if defined or (not member and len(names.split_words(token.text)) >= 2):
                strength: Strength = "strong" if defined else "weak"
                out.setdefault(f"name:{token.text}", Signal(kind="name", text=token.text,
                                                             anchor=anchor, strength=strength,
                                                             origin=origin))
        elif token.kind in ("string", "template", "regex"):
            value = string_value(token)
            if token.kind == "template" and "${" in value:
                continue
            if not _distinctive_literal(value) or value in old_joined:
                continue
            old = _replaced(value, removed_literals, new_values)
            message = tests or len(value.split()) >= 3
            out.setdefault(f"literal:{value}", Signal(
                kind="literal", text=value, anchor=anchor, old=old,
                strength="medium" if message else "weak", origin=origin))
    old_source = (old_text or "") + known
    for line_no, line in _added_text(new_text, added):
        for title in tokens.test_blocks(line):
            out.pop(f"literal:{title}", None)
            if title in old_source or _title_words(title) < 2:
                continue  # a test that was there already, or a title too short to search
            out.setdefault(f"test:{title}", Signal(kind="test", text=title, origin="tests",
                                                    anchor=f"{path}:{line_no}@{short}"))
    drops = [f"literal:{value}" for value in removed_literals if value not in new_values]
    return list(out.values()), drops


def _added_text(text: str | None, added: set[int]) -> list[tuple[int, str]]:
    if text is None:
        return []
    lines = text.splitlines()
    return [(n, lines[n - 1]) for n in sorted(added) if 0 < n <= len(lines)]


def _distinctive_literal(value: str) -> bool:
    """A literal a port would keep: a message (words and a space) or pattern text (letters
    and punctuation), eight characters or more; not a module path, not ``use strict``."""
    stripped = value.strip()
    if len(stripped) < MIN_LITERAL or stripped == "use strict" or "\n" in stripped:
        return False
    if _MODULE_LIKE.search(stripped):
        return False
    letters = sum(c.isalnum() for c in stripped)
    marks = sum(not c.isalnum() and not c.isspace() for c in stripped)
    if " " in stripped and letters >= 3:
        return True  # a message
    return len(stripped) >= 10 and ((letters >= 3 and marks >= 2) or marks >= 8)


def _replaced(value: str, removed: list[str], kept: set[str]) -> str | None:
    """The removed literal ``value`` most resembles (the text it replaced), if any."""
    best, best_ratio = None, 0.5
    for old in removed:
        if old in kept or abs(len(old) - len(value)) > max(len(old), len(value)) // 2:
            continue
        matcher = difflib.SequenceMatcher(None, old[:400], value[:400])
        if matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best, best_ratio = old, ratio
    return best


def fixture_signal(path: str, sha: str, blobs: tuple[str | None, str | None],
                   added: list[str], removed: list[str], old_text: str | None,
                   new_text: str | None, target: str | None) -> Signal:
    """A data fixture the change adds or edits: its blobs and distinctive lines."""
    old_lines = set((old_text or "").splitlines())
    new_lines = set((new_text or "").splitlines())
    fresh = [line.strip() for line in added
             if line not in old_lines and _FIXTURE_LINE.search(line)]
    gone = [line.strip() for line in removed
            if line not in new_lines and _FIXTURE_LINE.search(line)]
    return Signal(kind="fixture", text=path, anchor=f"{path}@{sha[:12]}", old_blob=blobs[0],
                  blob=blobs[1], lines=list(dict.fromkeys(fresh)),
                  gone=list(dict.fromkeys(gone)), target=target, strength="strong",
                  origin="tests")
