"""Surface enumeration: every mode, default, dtype, error path and test of an upstream symbol.

Public API:

- ``enumerate_surface(upstream: Path, symbol: str, rev: str, *, path_kinds=None)
  -> SurfaceReport`` (models in :mod:`.surfacemodels`)

``symbol`` names a function, a method or a class: ``layer_norm``, ``LayerNorm.forward``,
``Scaler::scale`` (C++), ``Renderer.renderInlineAsText`` (a JavaScript prototype method,
``rules.fence`` a method of an object literal), optionally prefixed by the file that
defines it (``src/norm.py::layer_norm``, or ``src/norm.py:layer_norm``); ``path::default``
is a JavaScript / TypeScript module's default export. In JavaScript, TypeScript, C, C++ and
re2c files it may also name a module-level value (:mod:`.tsvalues`: a regular expression,
a table, a ``#define``, a re2c rule), and an anonymous ``module.exports`` is named after its
file (``lib/re.js::re``). A bare name defined in more than one
place is ambiguous: the error lists every candidate as ``path::Name``. The definition is
parsed at ``rev`` and every item gets an anchor ``path:line@sha``:

- Python (``ast``, :mod:`.pysurface`): a class covers all its methods; parameters, every
  branch arm (``else`` included, any condition, each reason of a compound one), guards,
  raises, asserts, dtype behaviour (names, casts, ``dtype=``), memory-format and shape
  operations, env, config, context-object and module-global reads, helpers;
- JavaScript / TypeScript / C++ (tree-sitter, :mod:`.treesitter`): parameters (defaults and
  destructured options), every branch arm, guard returns as their own kind, throws, reads of
  module-level values, helpers, and the properties of an object the function builds and
  returns (``entry``);
- a module-level value (a Python module constant too, :mod:`.pyvalues`): the value
  (``value``) and its entries (``entry``: array and
  initialiser elements, object properties, concatenated strings, regex alternatives);
- tests, every language: ``test`` — each upstream test that references the symbol or a
  same-module function or class that uses it (pytest ids ``path::Class::test``, ``describe >
  it`` titles, ``TEST(Suite, Name)``) and its ``parametrize`` cases; ``fixture`` — data files
  of the tests kind (spec texts, JSON cases) that name it.
"""

from __future__ import annotations

import ast
import logging
import posixpath
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from portwright.errors import UsageError
from portwright.evidence import names
from portwright.evidence.lexer import family
from portwright.evidence.pysurface import definitions, python_surface
from portwright.evidence.pyvalues import value_definitions, value_surface
from portwright.evidence.surfacemodels import (
    LANGUAGES,
    ItemKind,
    Language,
    SurfaceItem,
    SurfaceReport,
)
from portwright.pathkinds import classify, default_path_kinds
from portwright.vcs.plumbing import check_repo, git, ls_tree, rev_parse, show, show_many

__all__ = ["ItemKind", "SurfaceItem", "SurfaceReport", "enumerate_surface"]

logger = logging.getLogger(__name__)

_PATH_SYMBOL = re.compile(r"(?P<path>[^:]*(?:/|\.[A-Za-z0-9]+))::?(?!:)(?P<rest>.+)\Z")


class _Anchor:
    def __init__(self, path: str, sha: str) -> None:
        self.path = path
        self.sha = sha

    def __call__(self, line: int) -> str:
        return f"{self.path}:{line}@{self.sha}"


def _language(path: str) -> Language | None:
    return LANGUAGES.get(posixpath.splitext(path)[1].lower())


def _split_symbol(symbol: str) -> tuple[str | None, list[str]]:
    path: str | None = None
    prefixed = _PATH_SYMBOL.match(symbol)
    if prefixed and (_language(prefixed.group("path")) or "/" in prefixed.group("path")):
        path, symbol = prefixed.group("path"), prefixed.group("rest")
    parts = [p for p in re.split(r"\.|::|#", symbol) if p]
    if not parts:
        raise UsageError(f"{symbol!r} names no symbol",
                         fix="pass a function name, e.g. `layer_norm`, `Norm.forward` or "
                             "`src/norm.py::layer_norm`")
    return path, parts


def _grep_files(upstream: Path, sha: str, name: str) -> list[str]:
    """Files that may define ``name``: a function or class, a value assigned at the start
    of a line (``var X =``, ``#define X``, ``X[] = {``, a re2c rule), and, for an
    anonymous module export named by its file, the files of that stem."""
    word = re.escape(name)
    pattern = (rf"(def|class|function|fn|func|struct|define)[[:space:]]+{word}\b"
               rf"|\b{word}[[:space:]]*(=|:)[[:space:]]*(async[[:space:]]+)?"
               rf"(function|\()|\b{word}[[:space:]]*\("
               rf"|(var|let|const|exports\.)[[:space:]]*{word}[[:space:]]*="
               rf"|^[[:space:]]*{word}[[:space:]]*(=[^=]|:[^:])"
               rf"|\b{word}[[:space:]]*(\[[^]]*\])+[[:space:]]*=")
    out = git(upstream, "grep", "-l", "-I", "-E", "-e", pattern, sha, "--", ok_codes=(0, 1))
    paths = [line.split(":", 1)[1] for line in out.decode("utf-8", "replace").splitlines()]
    stems = [path for _, path in ls_tree(upstream, sha)
             if posixpath.splitext(posixpath.basename(path))[0] == name]
    return [p for p in dict.fromkeys(paths + stems) if _language(p) is not None]


def _stem(path: str) -> str:
    return posixpath.splitext(posixpath.basename(path))[0]


def _defined_in(language: Language, data: bytes, parts: list[str], path: str) -> list[str]:
    """Dotted names of the definitions ``parts`` can mean in one file."""
    if language == "python":
        text = data.decode("utf-8", "replace")
        found = definitions(text, parts[-1])
        wanted = ".".join(parts)
        if len(parts) > 1:
            return [d for d in found if d == wanted or d.endswith("." + wanted)]
        return found or value_definitions(text, parts[0])
    from portwright.evidence import treesitter

    return treesitter.definitions(language, data, parts, _stem(path))


def _candidates(upstream: Path, sha: str, parts: list[str],
                path_kinds: Mapping[str, list[str]]
                ) -> tuple[list[tuple[str, str]], dict[str, bytes | None]]:
    """``(path, dotted name)`` of every definition ``parts`` can mean, tests files last;
    and the files read to find them."""
    out: list[tuple[str, str]] = []
    paths = _grep_files(upstream, sha, parts[-1])[:60]
    blobs = show_many(upstream, sha, paths)
    for path in paths:
        language = _language(path)
        data = blobs[path]
        if language is None or data is None:
            continue
        out += [(path, dotted) for dotted in _defined_in(language, data, parts, path)]
    return sorted(out, key=lambda c: (classify(c[0], path_kinds) == "tests",
                                      _language(c[0]) != "python", c)), blobs


def _pick(symbol: str, candidates: list[tuple[str, str]],
          path_kinds: Mapping[str, list[str]]) -> tuple[str, str]:
    """The one definition ``symbol`` means: in a source file, else in any file but a
    test's, else anywhere. A copy a port never carries (a generated bundle under ``dist/``,
    a demo, a benchmark) makes no name ambiguous while the source defines it; nor does a
    member of that name (``rules.fence``, ``Renderer.fence``) when one definition has the
    bare name."""
    kinds = [classify(path, path_kinds) for path, _ in candidates]
    code = ([c for c, kind in zip(candidates, kinds, strict=True) if kind == "source"]
            or [c for c, kind in zip(candidates, kinds, strict=True) if kind != "tests"]
            or candidates)
    bare = [c for c in code if c[1] == symbol]
    if len(code) > 1 and len(bare) == 1 and "." not in symbol:
        return bare[0]  # `fence`: the function of that name, not `rules.fence`, a member
    if len(code) > 1:
        listed = ", ".join(f"{path}::{dotted}" for path, dotted in code[:12])
        more = f" and {len(code) - 12} more" if len(code) > 12 else ""
        raise UsageError(f"{symbol!r} is defined in {len(code)} places: {listed}{more}",
                         fix="name one of them with its file: `path/to/file::Name`")
    return code[0]


def enumerate_surface(upstream: Path, symbol: str, rev: str, *,
                      path_kinds: Mapping[str, list[str]] | None = None) -> SurfaceReport:
    """Enumerate the surface of ``symbol`` in ``upstream`` at ``rev`` (see the module
    docstring)."""
    upstream = check_repo(upstream, "upstream checkout")
    sha = rev_parse(upstream, rev)
    kinds = path_kinds if path_kinds is not None else default_path_kinds()
    path, parts = _split_symbol(symbol)
    read: dict[str, bytes | None] = {}
    if path is None:
        candidates, read = _candidates(upstream, sha, parts, kinds)
        if not candidates:
            raise UsageError(f"no definition of {symbol!r} in any Python, JavaScript, "
                             f"TypeScript or C++ file at {sha[:12]}", file=upstream,
                             fix="check the spelling, the revision (--at) or prefix the "
                                 "file: `path/to/file.py::name`")
        path, dotted = _pick(symbol, candidates, kinds)
        parts = dotted.split(".")
    language = _language(path)
    data = read[path] if path in read else show(upstream, sha, path)
    found = _analyse(language, data, parts, _Anchor(path, sha)) if language and data else None
    if found is None or language is None:
        raise UsageError(f"no definition of {symbol!r} in {path} at {sha[:12]}", file=upstream,
                         fix="check the spelling, the revision (--at) or the file")
    definition, items, users = found
    module = posixpath.splitext(posixpath.basename(path))[0]
    name = items[0].name.rsplit(".", 1)[-1]  # a default export's own name
    items += _tests(upstream, sha, name, users, module, kinds)
    items += _fixtures(upstream, sha, name, kinds)
    return SurfaceReport(symbol=symbol, rev=sha, language=language, definition=definition,
                         items=items)


def _analyse(language: Language, data: bytes, parts: list[str],
             anchor: _Anchor) -> tuple[str, list[SurfaceItem], set[str]] | None:
    if language == "python":
        text = data.decode("utf-8", "replace")
        found = python_surface(text, parts, anchor)
        if found is None and len(parts) == 1:
            return value_surface(text, parts[0], anchor)
        return found
    from portwright.evidence import treesitter

    return treesitter.surface(language, data, parts, anchor.path, anchor.sha,
                              _stem(anchor.path))


# -- tests -----------------------------------------------------------------------------


def _test_paths(upstream: Path, sha: str, words: list[str],
                path_kinds: Mapping[str, list[str]]) -> list[str]:
    args = ["grep", "-l", "-I", "-w", "-F"]
    for word in words:
        args += ["-e", word]
    out = git(upstream, *args, sha, "--", ok_codes=(0, 1))
    paths = [line.split(":", 1)[1] for line in out.decode("utf-8", "replace").splitlines()]
    return [p for p in paths if classify(p, path_kinds) == "tests"]


def _tests(upstream: Path, sha: str, name: str, users: set[str], module: str,
           path_kinds: Mapping[str, list[str]]) -> list[SurfaceItem]:
    """Tests that reference ``name``, or a same-module user of it (``llama.Model`` for a
    layer of ``llama.py``)."""
    items: list[SurfaceItem] = []
    paths = _test_paths(upstream, sha, [name, *sorted(users)], path_kinds)
    blobs = show_many(upstream, sha, paths)
    for path in paths:
        language = _language(path)
        data = blobs[path]
        if language is None or data is None:
            continue
        anchor = _Anchor(path, sha)
        if language == "python":
            items += _python_tests(data.decode("utf-8", "replace"), name, users, module, anchor)
        elif language == "cpp":
            items += _cpp_tests(data.decode("utf-8", "replace"), name, anchor)
        else:
            from portwright.evidence import treesitter

            items += treesitter.js_tests(language, data, name, path, sha)
    return items


def _references(node: ast.AST, name: str, users: set[str], module: str) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id == name:
            return True
        if isinstance(child, ast.Attribute):
            if child.attr == name:
                return True
            if child.attr in users and isinstance(child.value, ast.Name) and \
                    child.value.id == module:
                return True
    return False


def _python_tests(text: str, name: str, users: set[str], module: str,
                  anchor: _Anchor) -> list[SurfaceItem]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    direct = {u for u in users if u and not u[0].isupper()}  # functions called by name
    items: list[SurfaceItem] = []
    for prefix, node in _test_functions(tree.body, anchor.path):
        if not _references(node, name, set(users), module) and not any(
                isinstance(n, ast.Name) and n.id in direct for n in ast.walk(node)):
            continue
        test_id = f"{prefix}::{node.name}"
        items.append(SurfaceItem(kind="test", name=test_id, detail=f"def {node.name}",
                                 anchor=anchor(node.lineno)))
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call) and \
                    ast.unparse(decorator.func).endswith("parametrize") and decorator.args:
                first = decorator.args[0]
                argnames = str(first.value) if isinstance(first, ast.Constant) else \
                    ast.unparse(first)
                cases = decorator.args[1] if len(decorator.args) > 1 else None
                count = len(cases.elts) if isinstance(cases, ast.List | ast.Tuple) else "?"
                detail = f"{count} cases: {ast.unparse(cases)}" if cases else ""
                items.append(SurfaceItem(kind="parametrize", name=f"{test_id}[{argnames}]",
                                         detail=detail, anchor=anchor(decorator.lineno)))
    return items


def _test_functions(body: list[ast.stmt], prefix: str
                    ) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and \
                node.name.startswith("test"):
            yield prefix, node
        elif isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or
                                                 node.name.endswith(("Test", "Tests"))):
            yield from _test_functions(node.body, f"{prefix}::{node.name}")


_CPP_TEST_RE = re.compile(r"\b(TEST(?:_F|_P)?)\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*\{")


def _cpp_tests(text: str, name: str, anchor: _Anchor) -> list[SurfaceItem]:
    items: list[SurfaceItem] = []
    word = re.compile(rf"\b{re.escape(name)}\b")
    for match in _CPP_TEST_RE.finditer(text):
        depth, end = 1, match.end()
        while end < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        if word.search(text, match.end(), end):
            line = text.count("\n", 0, match.start()) + 1
            items.append(SurfaceItem(kind="test", name=f"{match.group(2)}.{match.group(3)}",
                                     detail=match.group(0).rstrip("{ "), anchor=anchor(line)))
    return items


def _fixtures(upstream: Path, sha: str, name: str,
              path_kinds: Mapping[str, list[str]]) -> list[SurfaceItem]:
    """Data files of the tests kind (spec texts, JSON or YAML cases) that name the symbol
    — as written, or as its words (``heading`` in ``## ATX headings``)."""
    words = names.split_words(name)
    needles = list(dict.fromkeys([name, " ".join(words)])) if words else [name]
    args = ["grep", "-l", "-I", "-i", "-F"]
    for needle in needles:
        args += ["-e", needle]
    out = git(upstream, *args, sha, "--", ok_codes=(0, 1))
    items: list[SurfaceItem] = []
    for line in out.decode("utf-8", "replace").splitlines():
        path = line.split(":", 1)[1]
        if classify(path, path_kinds) != "tests" or family(path) is not None:
            continue
        items.append(SurfaceItem(kind="fixture", name=path, detail=f"data file naming {name}",
                                 anchor=f"{path}:1@{sha}"))
    return items[:20]
