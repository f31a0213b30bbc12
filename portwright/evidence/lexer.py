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

_C_TOKEN = re.compile(r"""
    (?P<newline>\n)
  | (?P<space>[ \t\r\f\v]+)
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?)
  | (?P<template>`(?:[^`\\]|\\.)*`?)
  | (?P<number>\.?\d[\w.]*)
  | (?P<ident>[A-Za-z_$][\w$]*)
  | (?P<punct>.)
""", re.VERBOSE | re.DOTALL)
_PY_TOKEN = re.compile(r"""
    (?P<newline>\n)
  | (?P<space>[ \t\r\f\v]+|\\\n)
  | (?P<comment>\#[^\n]*)
  | (?P<string>[rRbBuUfF]{0,2}(?:'''(?:[^\\]|\\.)*?(?:'''|\Z)|\"\"\"(?:[^\\]|\\.)*?(?:\"\"\"|\Z)
                |'(?:[^'\\\n]|\\.)*'?|"(?:[^"\\\n]|\\.)*"?))
  | (?P<number>\.?\d[\w.]*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<punct>.)
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


@lru_cache(maxsize=128)
def _lex(text: str, lexer_family: Family, regex_literals: bool) -> tuple[Token, ...]:
    pattern = _PY_TOKEN if lexer_family == "python" else _C_TOKEN
    tokens: list[Token] = []
    line, pos, end = 1, 0, len(text)
    if text.startswith("#!"):  # a shebang is not code
        pos = text.find("\n") if "\n" in text else end
    while pos < end:
        for match in pattern.finditer(text, pos):
            kind = match.lastgroup
            value = match.group()
            if kind == "newline":
                tokens.append(Token("newline", "\n", line))
                line += 1
                continue
            if kind == "space":
                line += value.count("\n")
                continue
            start = match.start()
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


def _regex_may_start(tokens: list[Token]) -> bool:
    previous = next((t for t in reversed(tokens) if t.kind not in ("newline", "comment")), None)
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
