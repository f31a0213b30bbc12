"""Does a change to a code file change behaviour? Comments, formatting and renames do not.

A file's old and new text are lexed (:mod:`.lexer`) and reduced to *normalised tokens*:
comments, whitespace and line breaks dropped; in JavaScript / TypeScript also the module
plumbing (``import``/``export``/``require``/``module.exports``, ``'use strict'``), the
qualifiers of namespace imports (``entities.decodeHTML`` is ``decodeHTML``), statement
semicolons, trailing commas and the choice of ``var``/``let``/``const``; strings compare by
value, so quote styles do not matter; in Python, docstrings. When the two sequences are equal
the change has no behaviour. When they differ only by a consistent renaming of local names
(never a member, never a name the file defines at the top), it is a rename.

Public API:

- ``change_kind(path: str, old: str | None, new: str | None) -> str | None`` — None when the
  change has behaviour, else why it has none (``"comments or formatting"``, ``"module
  syntax"``, ``"renamed local names"``, ``"empty file"``)
- ``normalised(path: str, text: str) -> list[str]``
"""

from __future__ import annotations

import re
from functools import lru_cache

from portwright.evidence.lexer import Family, Token, family, is_javascript, lex, string_value

_DECLARATIONS = frozenset({"var", "let", "const"})
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_CLOSERS = frozenset({")", "]", "}"})


def normalised(path: str, text: str) -> list[str]:
    """The behaviour-bearing tokens of ``text`` (see the module docstring)."""
    return list(_normalised(family(path, text), is_javascript(path, text), text))


@lru_cache(maxsize=64)
def _normalised(lexer_family: Family | None, javascript: bool, text: str) -> tuple[str, ...]:
    return tuple(_normalise(lexer_family, javascript, text))


def _normalise(lexer_family: Family | None, javascript: bool, text: str) -> list[str]:
    if lexer_family is None:
        return text.split()
    return _normalise_tokens(lex(text, lexer_family, regex_literals=javascript),
                             lexer_family, javascript)


def _normalise_tokens(tokens: list[Token], lexer_family: Family, javascript: bool
                      ) -> list[str]:
    if lexer_family == "python":
        return _fold_strings([_text(t) for t in _drop_docstrings(tokens)])
    tokens = [t for t in tokens if t.kind != "comment"]
    if javascript:
        tokens = _declarations(_module_plumbing(tokens))
    out: list[str] = []
    code = [t for t in tokens if t.kind != "newline"]
    for index, token in enumerate(code):
        if token.text == ";" and token.kind == "punct":
            continue
        if token.kind == "string" and index + 1 < len(code) and code[index + 1].text == ":" \
                and index and code[index - 1].text in ("{", ",") and \
                _IDENTIFIER.fullmatch(string_value(token)):
            out.append(string_value(token))  # {'key': v} is {key: v}
            continue
        if token.text == "," and index + 1 < len(code) and code[index + 1].text in _CLOSERS:
            continue
        out.append(_text(token))
    return _fold_strings(out)


def _text(token: Token) -> str:
    if token.kind in ("string", "template"):
        return '"' + string_value(token) + '"'
    return token.text


def _fold_strings(tokens: list[str]) -> list[str]:
    """Adjacent string literals joined by ``+`` are one string."""
    out: list[str] = []
    for token in tokens:
        if token.startswith('"') and len(out) >= 2 and out[-1] == "+" and \
                out[-2].startswith('"') and (len(out) < 3 or out[-3] not in ("-", "*", "/")):
            out.pop()
            out[-1] = out[-1][:-1] + token[1:]
        else:
            out.append(token)
    return out


def _drop_docstrings(tokens: list[Token]) -> list[Token]:
    """Python tokens without comments, blank lines and statement-level strings (docstrings)."""
    out: list[Token] = []
    at_statement = True
    for index, token in enumerate(tokens):
        if token.kind == "comment":
            continue
        if token.kind == "newline":
            if out and out[-1].kind != "newline":
                out.append(token)
            at_statement = True
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if at_statement and token.kind == "string" and (
                following is None or following.kind in ("newline", "comment")):
            continue
        at_statement = False
        out.append(token)
    return out


def _code(tokens: list[Token], index: int) -> Token | None:
    """The first token at or after ``index`` that is not a line break."""
    while index < len(tokens) and tokens[index].kind == "newline":
        index += 1
    return tokens[index] if index < len(tokens) else None


def _statement_end(tokens: list[Token], start: int) -> int:
    """Index after an ``import``/``export … from`` statement starting at ``start``: after its
    module string, or at the end of its line when it has none."""
    depth = 0
    index = start + 1
    while index < len(tokens):
        token = tokens[index]
        if token.text == "{":
            depth += 1
        elif token.text == "}":
            depth -= 1
        elif token.kind == "string" and depth == 0:
            index += 1
            while index < len(tokens) and tokens[index].text in (")", ";"):
                index += 1
            return index
        elif token.kind == "newline" and depth == 0 and tokens[index - 1].text not in (
                ",", "{", "as", "*", "from", "import", "export"):
            nxt = _code(tokens, index)
            if nxt is None or nxt.text not in ("from", "as", ",", "}"):
                return index
        index += 1
    return index


def _line_end(tokens: list[Token], start: int) -> int:
    """Index of the line break that ends the statement starting at ``start``."""
    depth = 0
    index = start
    while index < len(tokens):
        text = tokens[index].text
        depth += text in ("(", "[", "{")
        depth -= text in (")", "]", "}")
        if depth <= 0 and (text == ";" or (tokens[index].kind == "newline" and
                           tokens[index - 1].text not in ("=", "+", ",", "("))):
            return index
        index += 1
    return index


def _module_names(tokens: list[Token]) -> dict[str, str]:
    """Names bound to a module (``import * as N``, ``import N from 'm'``, ``var N =
    require('m')``) → a placeholder naming the module's file stem."""
    names: dict[str, str] = {}
    for index, token in enumerate(tokens):
        text = token.text
        if text == "import" and index + 1 < len(tokens):
            end = _statement_end(tokens, index)
            module = next((t for t in reversed(tokens[index + 1:end]) if t.kind == "string"),
                          None)
            nxt = tokens[index + 1]
            if module is None:
                continue
            if nxt.kind == "ident" and nxt.text not in ("type", "typeof"):
                names[nxt.text] = _placeholder(module)
            elif nxt.text == "*" and index + 3 < len(tokens) and tokens[index + 2].text == "as":
                names[tokens[index + 3].text] = _placeholder(module)
        elif text in _DECLARATIONS and index + 5 < len(tokens) and \
                tokens[index + 2].text == "=" and tokens[index + 3].text == "require" and \
                tokens[index + 5].kind == "string":
            names[tokens[index + 1].text] = _placeholder(tokens[index + 5])
    return names


def _placeholder(module: Token) -> str:
    stem = string_value(module).rstrip("/").rsplit("/", 1)[-1]
    return f"<module {stem.split('.', 1)[0]}>"


_MODULE_WORDS = frozenset({"import", "require", "export", "module"}) | _DECLARATIONS


def _module_plumbing(tokens: list[Token]) -> list[Token]:
    """Imports, exports, ``require``, ``module.exports`` and ``'use strict'`` dropped; a
    module-bound name is its module's placeholder, and ``N.x`` of a namespace is ``x``."""
    modules = _module_names(tokens)
    special = _MODULE_WORDS | modules.keys()
    out: list[Token] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        text = token.text
        if text not in special and (token.kind != "string" or "use strict" not in text):
            out.append(token)  # most tokens: nothing below applies
            index += 1
            continue
        nxt = tokens[index + 1] if index + 1 < len(tokens) else None
        following = nxt.text if nxt is not None else ""
        if token.kind == "string" and string_value(token) == "use strict":
            index += 1
        elif text == "import" and following != "(":
            index = _statement_end(tokens, index)
        elif text in _DECLARATIONS and index + 3 < len(tokens) and \
                tokens[index + 1].text in modules and tokens[index + 3].text == "require":
            index = _statement_end(tokens, index + 3)
        elif text == "require" and following == "(" and index + 2 < len(tokens) and \
                tokens[index + 2].kind == "string":
            index += 4 if index + 3 < len(tokens) and tokens[index + 3].text == ")" else 3
            if index + 1 < len(tokens) and tokens[index].text == ".":
                index += 1  # require('m').x is the imported x
            else:
                out.append(Token("ident", _placeholder(tokens[index - 2]), token.line))
        elif text == "export":
            index += 2 if following == "default" else 1
            if index < len(tokens) and tokens[index].text in ("{", "*"):
                index = _statement_end(tokens, index - 1)
        elif text == "module" and following == "." and index + 3 < len(tokens) and \
                tokens[index + 2].text == "exports":
            if tokens[index + 3].text == ".":  # module.exports.x = …: an export
                index = _line_end(tokens, index)
            else:
                index += 4 if tokens[index + 3].text == "=" else 3
        elif token.kind == "ident" and text in modules and (not out or out[-1].text != "."):
            if following == ".":
                index += 2
            else:
                out.append(Token("ident", modules[text], token.line))
                index += 1
        else:
            out.append(token)
            index += 1
    return out


def _declarations(tokens: list[Token]) -> list[Token]:
    """``var``/``let``/``const`` dropped, bare declarators (``var i, ch``) dropped, a list
    ``var a = 1, b = 2`` read as two statements, and a name assigned to itself (``OPENTAG =
    OPENTAG`` once its import is gone) dropped."""
    out: list[Token] = []
    depth = level = 0
    declaring = expect = False
    last = ""
    index = 0
    while index < len(tokens):
        token = tokens[index]
        text = token.text
        if text in _DECLARATIONS and token.kind == "ident":
            declaring = expect = last != "("  # for (let i = 0, n = …): the list stays
            level = depth
            index += 1
            continue
        depth += text in ("(", "[", "{")
        depth -= text in (")", "]", "}")
        if depth < level:
            declaring = expect = False
        if declaring and depth == level and expect and token.kind == "ident":
            expect = False
            raw_next = tokens[index + 1] if index + 1 < len(tokens) else None
            nxt = _code(tokens, index + 1)
            if nxt is None or nxt.text in (",", ";") or \
                    (raw_next is not None and raw_next.kind == "newline" and nxt.text != "="):
                index += 2 if nxt is not None and nxt.text == "," and raw_next is nxt else 1
                expect = nxt is not None and nxt.text == ","
                last = ","
                continue
            if nxt.text == "=" and index + 2 < len(tokens) and tokens[index + 2].text == text \
                    and (index + 3 >= len(tokens) or tokens[index + 3].text not in (".", "(", "[")):
                index += 3
                continue
        if declaring and depth == level:
            if text == ";" or (token.kind == "newline" and last not in (",", "=", "+", "(", "[",
                                                                         "{")):
                declaring = expect = False
            elif text == ",":
                expect = True
                last = ","
                index += 1
                continue
        if token.kind != "newline":
            last = text
        out.append(token)
        index += 1
    return out


_MODULE_PATH = re.compile(r"\A\.{0,2}/|\.(?:m?js|cjs|ts|json)\Z|\A[\w@.-]+/[\w@./-]+\Z")


def _values(path: str, text: str) -> list[str]:
    lexer_family = family(path, text) or "c"
    tokens = lex(text, lexer_family, regex_literals=is_javascript(path, text))
    if lexer_family == "python":
        tokens = _drop_docstrings(tokens)
    return [string_value(t) if t.kind != "number" else t.text for t in tokens
            if t.kind in ("string", "template", "regex", "number")]


def _new_values(path: str, old: str, new: str) -> bool:
    """True when ``new`` holds a string or number literal that no run of ``old``'s literals
    spells (module paths and ``use strict`` aside): a quick sign of behaviour."""
    before = _values(path, old)
    joined = "".join(before)
    known = set(before)
    return any(v not in known and v not in joined and v != "use strict" and
               not _MODULE_PATH.search(v) for v in _values(path, new))


def exported(path: str, text: str) -> set[str]:
    """The names a JavaScript / TypeScript module exports (``export …``, ``module.exports``,
    ``exports.x``)."""
    tokens = [t for t in lex(text, "c", regex_literals=is_javascript(path, text))
              if t.kind not in ("comment", "newline")]
    names: set[str] = set()
    for index, token in enumerate(tokens):
        nxt = tokens[index + 1].text if index + 1 < len(tokens) else ""
        if token.text == "export":
            names |= _export_names(tokens, index + 1)
        elif token.text == "exports" and index and tokens[index - 1].text == "." and \
                nxt == "." and index + 2 < len(tokens):
            names.add(tokens[index + 2].text)
        elif token.text == "exports" and (not index or tokens[index - 1].text != ".") and \
                nxt == ".":
            names.add(tokens[index + 2].text if index + 2 < len(tokens) else "")
        elif token.text == "exports" and index >= 2 and tokens[index - 2].text == "module" \
                and nxt == "=":
            names.add("default")
    return names


def _export_names(tokens: list[Token], index: int) -> set[str]:
    if index >= len(tokens):
        return set()
    head = tokens[index].text
    if head == "default":
        return {"default"}
    if head in ("function", "class", "async", "const", "let", "var", "interface", "type",
                "enum"):
        rest = [t.text for t in tokens[index:index + 4] if t.kind == "ident"]
        named = [t for t in rest if t not in ("function", "class", "async", "const", "let",
                                              "var", "interface", "type", "enum")]
        return {named[0]} if named else set()
    if head != "{":
        return set()
    names: set[str] = set()
    while index < len(tokens) and tokens[index].text != "}":
        token = tokens[index]
        after = tokens[index + 1].text if index + 1 < len(tokens) else ""
        if token.kind == "ident" and after in (",", "}"):
            names.add(token.text)
        index += 1
    return names


def _defined_names(tokens: list[str]) -> set[str]:
    return {tokens[i + 1] for i, t in enumerate(tokens[:-1])
            if t in ("function", "class", "def", "struct", "enum", "interface", "fn")}


def _renamed(old: list[str], new: list[str]) -> bool:
    """True when ``new`` is ``old`` with some local names consistently renamed."""
    if len(old) != len(new):
        return False
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    defined = _defined_names(old) | _defined_names(new)
    for index, (a, b) in enumerate(zip(old, new, strict=True)):
        if a == b:
            continue
        identifiers = a[:1].isalpha() or a[:1] in "_$"
        if not identifiers or not (b[:1].isalpha() or b[:1] in "_$"):
            return False
        if a in defined or b in defined or (index and old[index - 1] == "."):
            return False
        if forward.setdefault(a, b) != b or backward.setdefault(b, a) != a:
            return False
    return bool(forward)


_PLUMBING = re.compile(r"\b(?:import|export|require|exports)\b")


def _on_lines(path: str, text: str, numbers: set[int]) -> list[Token]:
    """The tokens of ``text`` (lexed whole: comments and strings keep their context) that lie
    on the given lines."""
    lexer_family = family(path, text) or "c"
    return [t for t in lex(text, lexer_family, regex_literals=is_javascript(path, text))
            if t.line in numbers]


def _window(path: str, old: str, new: str, lines: tuple[set[int], set[int]]) -> str | None:
    """The verdict on the changed lines alone, when they decide it: equal once normalised
    (or equal up to renamed locals) → why there is no behaviour; module plumbing among them
    → None (the whole file must be read); otherwise → ``"behaviour"``."""
    removed, added = _on_lines(path, old, lines[0]), _on_lines(path, new, lines[1])
    if any(_PLUMBING.fullmatch(t.text) for t in [*removed, *added] if t.kind == "ident"):
        return None
    javascript = is_javascript(path, new)
    before = _normalise_tokens(removed, "c", javascript)
    after = _normalise_tokens(added, "c", javascript)
    if before == after:
        return "comments, formatting or module syntax"
    if _renamed(before, after):
        return "renamed local names"
    return "behaviour"


def change_kind(path: str, old: str | None, new: str | None, *,
                lines: tuple[set[int], set[int]] | None = None) -> str | None:
    """None when the change from ``old`` to ``new`` (None: absent) has behaviour; else why it
    has none. With the numbers of the change's removed and added ``lines``, those lines decide when
    they can (a local edit), and the whole files are compared only when module plumbing
    moved."""
    if (old is None or not old.strip()) and (new is None or not new.strip()):
        return "empty file"
    if old is None or new is None:
        return None
    if _new_values(path, old, new):
        return None  # a new string or number: behaviour (quick, before normalising)
    if lines is not None and family(path, new) == "c":
        local = _window(path, old, new, lines)
        if local is not None:
            return None if local == "behaviour" else local
    before, after = normalised(path, old), normalised(path, new)
    if is_javascript(path, new) and exported(path, old) != exported(path, new):
        return None  # a name exported or withdrawn changes the API
    if before == after:
        return "comments, formatting or module syntax"
    if _renamed(before, after):
        return "renamed local names"
    return None
