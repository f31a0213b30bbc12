"""A small lexer for the languages the evidence engines read: tokens with their lines.

Regex-based on purpose (it must accept any text, fast): comments and strings are recognised
per language family so that what is code, what is a string and what is a comment is known on
every line — the gap scan takes names only from code, literals only from real strings, and
compares files with comments dropped.

Public API:

- ``Token`` — ``(kind, text, line)``; kinds: ``ident``, ``string``, ``template``, ``regex``,
  ``number``, ``punct``, ``comment``, ``newline``
- ``family(path: str) -> Family | None`` — ``c`` (C, C++, CUDA, JS, TS, Rust, Go, Java, …),
  ``python``, or None (not code)
- ``lex(text: str, family: Family) -> list[Token]``
- ``string_value(token: Token) -> str`` — a string literal's contents, quote style aside
"""

from __future__ import annotations

import posixpath
import re
import sys
from collections import deque
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal, NamedTuple

Family = Literal["c", "python"]
TokenKind = Literal["ident", "string", "template", "regex", "number", "punct", "comment",
                    "newline"]

_C_EXTENSIONS = frozenset({".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx", ".c",
                           ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".cu", ".cuh",
                           ".metal", ".rs", ".go", ".java", ".kt", ".swift", ".cs", ".scala",
                           ".dart", ".zig", ".m", ".mm"})
_PYTHON_EXTENSIONS = frozenset({".py", ".pyi", ".pyx"})
_JS_EXTENSIONS = frozenset({".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx"})

# Blanks before a token are part of its match (``match.group(kind)`` is the token): half
# the matches of a plain alternation would be blanks, each a turn of the Python loop.
_C_TOKEN = re.compile(r"""[ \t\r\f\v]*(?:
    (?P<newline>\n)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?)
  | (?P<template>`(?:[^`\\]|\\.)*`?)
  | (?P<number>\.?\d[\w.]*)
  | (?P<ident>[A-Za-z_$][\w$]*)
  | (?P<punct>.))
""", re.VERBOSE | re.DOTALL)
_PY_TOKEN = re.compile(r"""[ \t\r\f\v]*(?:
    (?P<newline>\n)
  | (?P<space>\\\n)
  | (?P<comment>\#[^\n]*)
  | (?P<string>[rRbBuUfF]{0,2}(?:'''(?:[^\\]|\\.)*?(?:'''|\Z)|\"\"\"(?:[^\\]|\\.)*?(?:\"\"\"|\Z)
                |'(?:[^'\\\n]|\\.)*'?|"(?:[^"\\\n]|\\.)*"?))
  | (?P<number>\.?\d[\w.]*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<punct>.))
""", re.VERBOSE | re.DOTALL)
_REGEX_BODY = re.compile(r"/(?:[^/\\\n\[]|\\.|\[(?:[^\]\\\n]|\\.)*\])+/[a-z]*")
_REGEX_AFTER = frozenset("(,=:[!&|?{};+-*%<>~^") | {"", "return", "typeof", "case", "in", "of",
                                                      "new", "delete", "void", "throw"}


class Token(NamedTuple):
    kind: TokenKind
    text: str
    line: int


def family(path: str, text: str | None = None) -> Family | None:
    """The lexer family of ``path`` from its extension (or, without one, the interpreter of
    its ``#!`` line in ``text``), or None for a file that is not code."""
    extension = posixpath.splitext(path)[1].lower()
    if not extension and text is not None and text.startswith("#!"):
        interpreter = text.split("\n", 1)[0]
        extension = ".py" if "python" in interpreter else ".js" if "node" in interpreter else ""
    if extension in _PYTHON_EXTENSIONS:
        return "python"
    if extension in _C_EXTENSIONS:
        return "c"
    return None


def is_javascript(path: str, text: str | None = None) -> bool:
    """True for JavaScript and TypeScript files (regex literals, module syntax); an
    extensionless file by its ``#!`` line."""
    extension = posixpath.splitext(path)[1].lower()
    if not extension and text is not None and text.startswith("#!"):
        return "node" in text.split("\n", 1)[0]
    return extension in _JS_EXTENSIONS


def lex(text: str, lexer_family: Family, *, regex_literals: bool = False) -> list[Token]:
    """The tokens of ``text``; ``regex_literals`` recognises JavaScript ``/…/flags``."""
    return list(_lex(text, lexer_family, regex_literals))


_RECENT = 32
"""How many recently lexed texts a new text may be lexed against (see ``_Base``)."""
_recent: deque[tuple[str, Family, bool, tuple[Token, ...]]] = deque(maxlen=_RECENT)


@lru_cache(maxsize=128)
def _lex(text: str, lexer_family: Family, regex_literals: bool) -> tuple[Token, ...]:
    base = _Base.nearest(text, lexer_family, regex_literals)
    tokens = _scan(text, lexer_family, regex_literals, base)
    _recent.append((text, lexer_family, regex_literals, tokens))
    return tokens


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix (slice compares run in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


class _Base:
    """An earlier version of a text and its tokens, lined up with the new text: the tokens
    of the lines before the first change are taken as they are, and once the new text's lexer
    stands at the start of a line inside the unchanged tail in the state the old lexer stood
    in there, the old tokens of the rest are taken with their lines shifted. A commit's new
    file differs from its old one in a few lines, so most of its tokens are never lexed
    again; the result is exactly a full lex's (``tests/evidence/test_tokens.py`` checks it on
    random edits)."""

    def __init__(self, old: str, tokens: tuple[Token, ...], new: str) -> None:
        self.tokens = tokens
        prefix = _common_prefix(old, new)
        suffix = _common_prefix(old[prefix:][::-1], new[prefix:][::-1])
        self.first_changed_line = new.count("\n", 0, prefix) + 1
        tail_new = len(new) - suffix
        # the first line start whose newline lies in the unchanged tail (so it is a line
        # start in both texts)
        start = new.find("\n", tail_new) + 1
        if start <= 0:  # no line starts in the unchanged tail
            self.tail_line, self.shift = sys.maxsize, 0
        else:
            self.tail_line = new.count("\n", 0, start) + 1
            self.shift = self.tail_line - (old.count("\n", 0, start - len(new) + len(old)) + 1)
        self.worth = prefix + suffix
        self._newline_at: dict[int, int] | None = None

    @property
    def newline_at(self) -> dict[int, int]:
        """The index of the newline token ending each line of the old text."""
        if self._newline_at is None:
            self._newline_at = {t.line: i for i, t in enumerate(self.tokens)
                                if t.kind == "newline"}
        return self._newline_at

    @classmethod
    def nearest(cls, text: str, lexer_family: Family, regex_literals: bool) -> _Base | None:
        """The recent text most of ``text`` is shared with (over half of it), or None."""
        best: _Base | None = None
        for old, old_family, old_regex, tokens in _recent:
            if old_family != lexer_family or old_regex != regex_literals or old == text:
                continue
            candidate = cls(old, tokens, text)
            if candidate.worth * 2 > len(text) and (best is None or candidate.worth > best.worth):
                best = candidate
        return best

    def head(self) -> list[Token]:
        """The old tokens of the lines before the first change, up to the last newline."""
        kept = 0
        for index, token in enumerate(self.tokens):
            if token.line + (token.text.count("\n") if token.kind != "newline" else 0) \
                    >= self.first_changed_line:
                break
            if token.kind == "newline":
                kept = index + 1
        return list(self.tokens[:kept])

    def tail(self, tokens: list[Token], line: int) -> list[Token] | None:
        """The rest of the tokens when the new lexer, at the start of ``line`` after
        ``tokens``, can take the old ones from here; else None."""
        if line < self.tail_line:
            return None
        index = self.newline_at.get(line - self.shift - 1)
        if index is None or _code_key(_last_code(tokens)) != \
                _code_key(_last_code(self.tokens, index + 1)):
            return None
        rest = self.tokens[index + 1:]
        if not self.shift:
            return list(rest)
        shift = self.shift
        return [Token(t.kind, t.text, t.line + shift) for t in rest]


def _last_code(tokens: Sequence[Token], stop: int | None = None) -> Token | None:
    """The last token (before index ``stop``) that decides whether a ``/`` starts a regex
    literal."""
    for index in range(len(tokens) if stop is None else stop, 0, -1):
        token = tokens[index - 1]
        if token.kind not in ("newline", "comment"):
            return token
    return None


def _code_key(token: Token | None) -> tuple[str, str] | None:
    return None if token is None else (token.kind, token.text)


def _scan(text: str, lexer_family: Family, regex_literals: bool,
          base: _Base | None) -> tuple[Token, ...]:
    pattern = _PY_TOKEN if lexer_family == "python" else _C_TOKEN
    tokens: list[Token] = []
    line, pos, end = 1, 0, len(text)
    if base is not None and base.first_changed_line > 1:
        tokens = base.head()
        if tokens:
            line = tokens[-1].line + 1
            pos = _line_start(text, line)
    if pos == 0 and text.startswith("#!"):  # a shebang is not code
        pos = text.find("\n") if "\n" in text else end
    while pos < end:
        for match in pattern.finditer(text, pos):
            kind = match.lastgroup
            assert kind is not None
            value = match.group(kind)
            if kind == "newline":
                tokens.append(Token("newline", "\n", line))
                line += 1
                if base is not None:
                    rest = base.tail(tokens, line)
                    if rest is not None:
                        tokens.extend(rest)
                        return tuple(tokens)
                continue
            if kind == "space":  # a backslash-newline continuation
                line += 1
                continue
            start = match.start(kind)
            if regex_literals and value == "/" and text[start + 1:start + 2] not in ("/", "*") \
                    and _regex_may_start(tokens):
                found = _REGEX_BODY.match(text, start)
                if found:
                    tokens.append(Token("regex", found.group(), line))
                    pos = found.end()
                    break
            tokens.append(Token(kind, value, line))  # type: ignore[arg-type]
            if kind in ("comment", "string", "template"):
                line += value.count("\n")
        else:
            pos = end
    return tuple(tokens)


def _line_start(text: str, line: int) -> int:
    """The offset where 1-based ``line`` of ``text`` starts."""
    pos = 0
    for _ in range(line - 1):
        pos = text.index("\n", pos) + 1
    return pos


def _regex_may_start(tokens: list[Token]) -> bool:
    previous = _last_code(tokens)
    if previous is None:
        return True
    return previous.kind in ("punct", "ident") and previous.text in _REGEX_AFTER and \
        previous.text not in (")", "]")


@lru_cache(maxsize=65536)
def string_value(token: Token) -> str:
    """What a string, template or regex token holds at run time, so that one text compares
    equal across quote styles and languages: quotes and prefixes dropped; in a plain string
    ``\\\\`` and escaped quotes undone; a raw string or a regex literal's body as written (the
    flags of ``/…/flags`` dropped)."""
    if token.kind == "regex":
        return token.text[1:token.text.rfind("/")]
    text = token.text
    prefix = len(text) - len(text.lstrip("rRbBuUfF"))
    raw = "r" in text[:prefix].lower()
    text = text[prefix:]
    for quote in ('"""', "'''", '"', "'", "`"):
        if text.startswith(quote):
            body = text[len(quote):]
            if body.endswith(quote) and len(body) >= len(quote):
                body = body[:-len(quote)]
            return body if raw else re.sub(r"\\([\\'\"`])", r"\1", body)
    return text
