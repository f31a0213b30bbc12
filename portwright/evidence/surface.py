"""Surface enumeration: every mode, default, dtype, error path and test of an upstream symbol.

Public API:

- ``enumerate_surface(upstream: Path, symbol: str, rev: str, *, path_kinds=None)
  -> SurfaceReport``

``symbol`` is a function or method name (``layer_norm``, ``LayerNorm.forward``), optionally
prefixed by the file that defines it (``src/norm.py:layer_norm``). The definition is found in
the tree of ``rev`` (files under the tests kind last), parsed, and every item gets an anchor
``path:line@sha`` at that revision:

- Python (``ast``): ``function``, ``parameter`` (default or ``required``, annotation),
  ``branch`` (an ``if``/ternary/``match`` on a parameter: a mode or flag), ``raise``,
  ``assert``, ``dtype`` (``np.float16``, ``torch.bfloat16``, ``dtype="int8"``), ``env``
  (``os.environ[…]``, ``os.getenv``), ``config`` (``config.x``/``cfg.x``/``getattr(config,
  "x")``), ``helper`` (functions of the same module it calls);
- JavaScript / TypeScript / C++ (tree-sitter): ``function``, ``parameter`` (with defaults,
  destructured options included), ``throw``, ``branch`` (``if``/``switch``/ternary), ``helper``;
- tests, every language: ``test`` (each upstream test that references the symbol: pytest
  ids ``path::Class::test``, ``describe > it`` titles, ``TEST(Suite, Name)``) and
  ``parametrize`` (pytest parametrizations of those tests).

Tree-sitter grammars come from the per-language wheels (``tree-sitter-javascript``,
``tree-sitter-typescript``, ``tree-sitter-cpp``) or, failing those, from
``tree_sitter_language_pack`` (which downloads grammars on first use and so fails offline);
when neither works the error says which package to install.
"""

from __future__ import annotations

import ast
import logging
import posixpath
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from portwright.config import UpstreamConfig
from portwright.errors import UsageError
from portwright.evidence.patch import classify
from portwright.vcs.plumbing import check_repo, git, rev_parse, show

logger = logging.getLogger(__name__)

ItemKind = Literal["function", "parameter", "branch", "raise", "throw", "assert", "dtype", "env",
                   "config", "helper", "test", "parametrize"]
Language = Literal["python", "javascript", "typescript", "tsx", "cpp"]

LANGUAGES: dict[str, Language] = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascript", ".ts": "typescript", ".mts": "typescript",
    ".tsx": "tsx", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".h": "cpp", ".cu": "cpp",
}
DTYPE_RE = re.compile(r"\A(?:b?float(?:8\w*|16|32|64)?|bfloat16|half|double|u?int(?:4|8|16|32|64)"
                      r"|bool_?|complex(?:64|128)|fp(?:4|8|16|32)\w*|e[45]m[23]\w*|q[48]_\w+)\Z")
CONFIG_NAMES = frozenset({"config", "cfg", "conf", "settings", "options", "opts", "hparams"})


class SurfaceItem(BaseModel):
    """One item of the surface of a symbol."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ItemKind
    """What sort of item (see the module docstring)."""
    name: str
    """Its name: the parameter, exception, dtype, variable, helper or test id."""
    detail: str
    """The source text that establishes it (a default, a condition, a message)."""
    anchor: str
    """``path:line@sha`` at the enumerated revision."""


class SurfaceReport(BaseModel):
    """The surface of one upstream symbol at one revision."""

    model_config = ConfigDict(extra="forbid")

    symbol: str
    """As asked for."""
    rev: str
    """Full sha of the revision enumerated."""
    language: Language
    """Language of the defining file."""
    definition: str
    """Anchor of the definition."""
    items: list[SurfaceItem]
    """Every item found, definition items first, then tests."""

    def of_kind(self, kind: ItemKind) -> list[SurfaceItem]:
        """The items of one kind."""
        return [item for item in self.items if item.kind == kind]


class _Anchor:
    def __init__(self, path: str, sha: str) -> None:
        self.path = path
        self.sha = sha

    def __call__(self, line: int) -> str:
        return f"{self.path}:{line}@{self.sha}"


# -- locating the definition -----------------------------------------------------------


def _language(path: str) -> Language | None:
    return LANGUAGES.get(posixpath.splitext(path)[1].lower())


def _definition_files(upstream: Path, sha: str, name: str,
                      path_kinds: Mapping[str, list[str]]) -> list[str]:
    pattern = (rf"(def|class|function|fn|func)[[:space:]]+{re.escape(name)}\b"
               rf"|\b{re.escape(name)}[[:space:]]*(=|:)[[:space:]]*(async[[:space:]]+)?"
               rf"(function|\()|\b{re.escape(name)}[[:space:]]*\(")
    out = git(upstream, "grep", "-l", "-I", "-E", "-e", pattern, sha, "--", ok_codes=(0, 1))
    paths = [line.split(":", 1)[1] for line in out.decode("utf-8", "replace").splitlines()]
    paths = [p for p in paths if _language(p) is not None]
    return sorted(paths, key=lambda p: (classify(p, path_kinds) == "tests",
                                        _language(p) != "python", p))


def _split_symbol(symbol: str) -> tuple[str | None, list[str]]:
    path: str | None = None
    prefixed = re.match(r"([^:]+\.[A-Za-z0-9]+):(?!:)(.+)\Z", symbol)
    if prefixed:
        path, symbol = prefixed.group(1), prefixed.group(2)
    parts = [p for p in re.split(r"\.|::|#", symbol) if p]
    if not parts:
        raise UsageError(f"{symbol!r} names no symbol",
                         fix="pass a function name, e.g. `layer_norm` or `Norm.forward`")
    return path, parts


def enumerate_surface(upstream: Path, symbol: str, rev: str, *,
                      path_kinds: Mapping[str, list[str]] | None = None) -> SurfaceReport:
    """Enumerate the surface of ``symbol`` in ``upstream`` at ``rev`` (see the module
    docstring)."""
    upstream = check_repo(upstream, "upstream checkout")
    sha = rev_parse(upstream, rev)
    kinds = path_kinds if path_kinds is not None else UpstreamConfig(source=".").path_kinds
    path, parts = _split_symbol(symbol)
    candidates = [path] if path else _definition_files(upstream, sha, parts[-1], kinds)
    for candidate in candidates:
        language = _language(candidate)
        data = show(upstream, sha, candidate)
        if language is None or data is None:
            continue
        found = _analyse(language, data, parts, _Anchor(candidate, sha))
        if found is None:
            continue
        definition, items = found
        items += _tests(upstream, sha, parts[-1], kinds)
        return SurfaceReport(symbol=symbol, rev=sha, language=language, definition=definition,
                             items=items)
    where = f"in {path}" if path else "in any Python, JavaScript, TypeScript or C++ file"
    raise UsageError(f"no definition of {symbol!r} {where} at {sha[:12]}", file=upstream,
                     fix="check the spelling, the revision (--at) or prefix the file: "
                         "`path/to/file.py:name`")


def _analyse(language: Language, data: bytes, parts: list[str],
             anchor: _Anchor) -> tuple[str, list[SurfaceItem]] | None:
    if language == "python":
        return _python_surface(data.decode("utf-8", "replace"), parts, anchor)
    from portwright.evidence import treesitter

    return treesitter.surface(language, data, parts, anchor.path, anchor.sha)


# -- Python ----------------------------------------------------------------------------


_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _find_python(tree: ast.Module, parts: list[str]) -> _Definition | None:
    scope: list[ast.stmt] = tree.body
    found: _Definition | None = None
    for part in parts:
        found = next((n for n in scope if isinstance(n, _Definition) and n.name == part), None)
        if found is None:
            return _find_anywhere(tree, parts[-1]) if len(parts) == 1 else None
        scope = found.body
    return found


def _find_anywhere(tree: ast.Module, name: str) -> _Definition | None:
    for node in ast.walk(tree):
        if isinstance(node, _Definition) and node.name == name:
            return node
    return None


def _python_surface(text: str, parts: list[str],
                    anchor: _Anchor) -> tuple[str, list[SurfaceItem]] | None:
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        logger.warning("cannot parse %s: %s", anchor.path, exc)
        return None
    node = _find_python(tree, parts)
    if node is None:
        return None
    if isinstance(node, ast.ClassDef):
        init = next((n for n in node.body if isinstance(n, ast.FunctionDef) and
                     n.name == "__init__"), None)
        functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = [init] if init else []
    else:
        functions = [node]
    module_functions = {n.name for n in tree.body
                        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    items = [SurfaceItem(kind="function", name=".".join(parts), detail=_signature(node),
                         anchor=anchor(node.lineno))]
    for function in functions:
        items += _PythonVisitor(function, module_functions, anchor).run()
    return anchor(node.lineno), items


def _signature(node: _Definition) -> str:
    if isinstance(node, ast.ClassDef):
        return f"class {node.name}"
    return f"def {node.name}({ast.unparse(node.args)})"


def _parameters(args: ast.arguments) -> Iterator[tuple[ast.arg, ast.expr | None, str, str]]:
    """``(arg, default, star prefix, note)`` of every parameter, in order."""
    positional = args.posonlyargs + args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        yield arg, default, "", ""
    if args.vararg:
        yield args.vararg, None, "*", "variadic"
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        yield arg, kw_default, "", "keyword-only"
    if args.kwarg:
        yield args.kwarg, None, "**", "variadic keywords"


class _PythonVisitor(ast.NodeVisitor):
    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef,
                 module_functions: set[str], anchor: _Anchor) -> None:
        self.function = function
        self.module_functions = module_functions
        self.anchor = anchor
        self.items: list[SurfaceItem] = []
        self.params: set[str] = set()
        self._seen: set[tuple[str, str, int]] = set()

    def add(self, kind: ItemKind, name: str, detail: str, line: int) -> None:
        if (kind, name, line) not in self._seen:
            self._seen.add((kind, name, line))
            self.items.append(SurfaceItem(kind=kind, name=name, detail=detail,
                                          anchor=self.anchor(line)))

    def run(self) -> list[SurfaceItem]:
        for arg, default, star, note in _parameters(self.function.args):
            if arg.arg in ("self", "cls"):
                continue
            self.params.add(arg.arg)
            parts = [note] if note else []
            if default is not None:
                parts.append(f"default={ast.unparse(default)}")
            elif not star:
                parts.append("required")
            if arg.annotation is not None:
                parts.append(f"annotation={ast.unparse(arg.annotation)}")
            self.add("parameter", star + arg.arg, "; ".join(parts), arg.lineno)
            if default is not None:
                self.visit(default)
        for statement in self.function.body:
            self.visit(statement)
        return self.items

    def _branch(self, test: ast.expr, line: int) -> None:
        """A branch on a parameter, or on an attribute of ``self`` (a mode or flag the
        object carries)."""
        used = sorted({n.id for n in ast.walk(test) if isinstance(n, ast.Name)} & self.params)
        used += sorted({f"self.{n.attr}" for n in ast.walk(test)
                        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                        and n.value.id == "self"})
        if used:
            self.add("branch", ",".join(used), ast.unparse(test), line)

    def visit_If(self, node: ast.If) -> None:
        self._branch(node.test, node.lineno)
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._branch(node.test, node.lineno)
        self.generic_visit(node)

    def visit_Match(self, node: ast.Match) -> None:
        self._branch(node.subject, node.lineno)
        self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        target = exc.func if isinstance(exc, ast.Call) else exc
        name = ast.unparse(target) if target is not None else "re-raise"
        self.add("raise", name, ast.unparse(node), node.lineno)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self.add("assert", ast.unparse(node.test), ast.unparse(node), node.lineno)
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if DTYPE_RE.match(node.attr):
            self.add("dtype", node.attr, ast.unparse(node), node.lineno)
        base = node.value
        if isinstance(base, ast.Name) and base.id in CONFIG_NAMES:
            self.add("config", f"{base.id}.{node.attr}", ast.unparse(node), node.lineno)
        elif isinstance(base, ast.Attribute) and base.attr in CONFIG_NAMES:
            self.add("config", f"{base.attr}.{node.attr}", ast.unparse(node), node.lineno)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and DTYPE_RE.match(node.value):
            self.add("dtype", node.value, repr(node.value), node.lineno)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if ast.unparse(node.value) == "os.environ":
            self.add("env", _const(node.slice), ast.unparse(node), node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = ast.unparse(node.func)
        first = node.args[0] if node.args else None
        if func in ("os.environ.get", "os.getenv", "environ.get", "getenv") and first:
            self.add("env", _const(first), ast.unparse(node), node.lineno)
        elif func == "getattr" and len(node.args) >= 2 and \
                ast.unparse(node.args[0]).split(".")[-1] in CONFIG_NAMES:
            self.add("config", f"{ast.unparse(node.args[0]).split('.')[-1]}."
                     f"{_const(node.args[1])}", ast.unparse(node), node.lineno)
        name = func.removeprefix("self.")
        if name in self.module_functions and name != self.function.name:
            self.add("helper", name, ast.unparse(node), node.lineno)
        self.generic_visit(node)


def _const(node: ast.expr) -> str:
    if isinstance(node, ast.Constant):
        return str(node.value)
    return ast.unparse(node)


# -- tests -----------------------------------------------------------------------------


def _tests(upstream: Path, sha: str, name: str,
           path_kinds: Mapping[str, list[str]]) -> list[SurfaceItem]:
    out = git(upstream, "grep", "-l", "-I", "-w", "-F", "-e", name, sha, "--", ok_codes=(0, 1))
    paths = [line.split(":", 1)[1] for line in out.decode("utf-8", "replace").splitlines()]
    items: list[SurfaceItem] = []
    for path in paths:
        if classify(path, path_kinds) != "tests":
            continue
        language = _language(path)
        data = show(upstream, sha, path)
        if language is None or data is None:
            continue
        anchor = _Anchor(path, sha)
        if language == "python":
            items += _python_tests(data.decode("utf-8", "replace"), name, anchor)
        elif language == "cpp":
            items += _cpp_tests(data.decode("utf-8", "replace"), name, anchor)
        else:
            from portwright.evidence import treesitter

            items += treesitter.js_tests(language, data, name, path, sha)
    return items


def _python_tests(text: str, name: str, anchor: _Anchor) -> list[SurfaceItem]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    items: list[SurfaceItem] = []
    for prefix, node in _test_functions(tree.body, anchor.path):
        if not any(isinstance(n, ast.Name | ast.Attribute) and
                   (getattr(n, "id", None) == name or getattr(n, "attr", None) == name)
                   for n in ast.walk(node)):
            continue
        test_id = f"{prefix}::{node.name}"
        items.append(SurfaceItem(kind="test", name=test_id, detail=f"def {node.name}",
                                 anchor=anchor(node.lineno)))
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call) and \
                    ast.unparse(decorator.func).endswith("parametrize") and decorator.args:
                argnames = _const(decorator.args[0])
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
