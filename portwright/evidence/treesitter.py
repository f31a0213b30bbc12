"""JavaScript, TypeScript and C++ surfaces with tree-sitter (used by :mod:`.surface`).

Public API:

- ``parser(language: str) -> Any`` — a tree-sitter parser, or a UsageError naming the
  package to install
- ``surface(language, data: bytes, parts: list[str], path: str, sha: str)
  -> tuple[str, list[SurfaceItem], set[str]] | None`` — the definition's anchor, its items and
  the module's functions that call it
- ``definitions(language, data, parts) -> list[str]`` — what ``parts`` can name in a file
- ``js_tests(language, data: bytes, name: str, path: str, sha: str) -> list[SurfaceItem]``
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from portwright.errors import UsageError
from portwright.evidence import tsvalues
from portwright.evidence.surfacemodels import SurfaceItem
from portwright.evidence.tscollect import Collector, ModuleFacts, parameters_node
from portwright.evidence.tsnodes import (
    JS_FUNCTIONS,
    cpp_name,
    enclosing_class,
    js_name,
    js_owner,
    node_line,
    node_text,
    walk,
)

logger = logging.getLogger(__name__)

_GRAMMARS = {
    "javascript": ("tree_sitter_javascript", "language", "tree-sitter-javascript"),
    "typescript": ("tree_sitter_typescript", "language_typescript", "tree-sitter-typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx", "tree-sitter-typescript"),
    "cpp": ("tree_sitter_cpp", "language", "tree-sitter-cpp"),
    "re2c": ("tree_sitter_cpp", "language", "tree-sitter-cpp"),  # C with rules in comments
}
_TEST_CALLS = {"it", "test", "describe"}


@lru_cache(maxsize=8)
def parser(language: str) -> Any:
    """A parser for ``language``: from its grammar wheel, else from the language pack."""
    module_name, attr, package = _GRAMMARS[language]
    try:
        import tree_sitter

        module = importlib.import_module(module_name)
        return tree_sitter.Parser(tree_sitter.Language(getattr(module, attr)()))
    except ImportError:
        logger.debug("%s is not installed; trying tree_sitter_language_pack", module_name)
    try:
        import tree_sitter_language_pack

        return tree_sitter_language_pack.get_parser("cpp" if language == "re2c" else language)
    except Exception as exc:
        raise UsageError(
            f"no tree-sitter grammar for {language}: tree_sitter_language_pack could not load "
            f"it ({exc})",
            fix=f"`pip install {package}` (works offline once installed), or run once with "
                "network access so tree_sitter_language_pack can download the grammar") from exc


def _default_export(root: Any, data: bytes) -> Any | None:
    """The function a module exports as its default (``export default function …``, or
    ``export default name`` of a function declared in the module)."""
    for node in root.children:
        if node.type != "export_statement" or not any(c.type == "default"
                                                      for c in node.children):
            continue
        for child in node.named_children:
            if child.type in JS_FUNCTIONS:
                return child
            if child.type == "identifier":
                return _find("javascript", root, data, [node_text(data, child)])
    return None


def _anonymous_export(root: Any, data: bytes) -> Any | None:
    """The function a CommonJS module exports with no name (``module.exports = function
    (…) {…}``)."""
    for node in root.children:
        inner = node.named_children[0] if node.type == "expression_statement" and \
            node.named_children else None
        if inner is None or inner.type != "assignment_expression":
            continue
        left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
        if left is not None and right is not None and right.type in JS_FUNCTIONS and \
                node_text(data, left) == "module.exports" and \
                right.child_by_field_name("name") is None:
            return right
    return None


def _functions(language: str, root: Any, data: bytes) -> Iterator[tuple[Any, str | None,
                                                                        str | None]]:
    """``(node, name, scope)`` of every function of a file."""
    for node in walk(root):
        if language in ("cpp", "re2c"):
            if node.type != "function_definition":
                continue
            name, scope = cpp_name(node, data)
            yield node, name, scope or enclosing_class(node, data)
        elif node.type in JS_FUNCTIONS:
            yield node, js_name(node, data), enclosing_class(node, data) or js_owner(node, data)


def _find(language: str, root: Any, data: bytes, parts: list[str],
          stem: str | None = None) -> Any | None:
    if parts == ["default"] and language not in ("cpp", "re2c"):
        return _default_export(root, data)
    want, owner = parts[-1], parts[-2] if len(parts) > 1 else None
    for node, name, scope in _functions(language, root, data):
        if name == want and (owner is None or scope == owner):
            return node
    if owner is None and want == stem and language not in ("cpp", "re2c"):
        return _default_export(root, data) or _anonymous_export(root, data)
    return None


def _values(language: str, root: Any, data: bytes, stem: str | None) -> list[str]:
    """The module-level values of a file, and the rules of a re2c file."""
    values = tsvalues.value_names("cpp" if language == "re2c" else language, root, data, stem)
    if language == "re2c":
        values += [name for name, _, _ in tsvalues.rules(data.decode("utf-8", "replace"))]
    return values


def definitions(language: str, data: bytes, parts: list[str],
                stem: str | None = None) -> list[str]:
    """Dotted names (``Class.method``) of the functions and module-level values
    (:mod:`.tsvalues`) ``parts`` can name in ``data``; an anonymous module export by the
    file's ``stem``."""
    root = parser(language).parse(data).root_node
    want, owner = parts[-1], parts[-2] if len(parts) > 1 else None
    out = [f"{scope}.{name}" if scope else name
           for _node, name, scope in _functions(language, root, data)
           if name == want and (owner is None or scope == owner)]
    if owner is None and not out and (
            want in _values(language, root, data, stem) or
            (want == stem and _find(language, root, data, parts, stem) is not None)):
        out.append(want)
    return list(dict.fromkeys(out))


def _users(root: Any, data: bytes, name: str, module: ModuleFacts) -> set[str]:
    """Module functions whose body calls ``name``."""
    return _functions_naming(root, data, name, module,
                             re.compile(rf"(?<![\w$.]){re.escape(name)}\s*\("))


def _readers(root: Any, data: bytes, name: str, module: ModuleFacts) -> set[str]:
    """Module functions whose body reads the module-level value ``name``."""
    return _functions_naming(root, data, name, module,
                             re.compile(rf"(?<![\w$.]){re.escape(name)}(?![\w$])"))


def _functions_naming(root: Any, data: bytes, name: str, module: ModuleFacts,
                      pattern: re.Pattern[str]) -> set[str]:
    """Module functions other than ``name`` whose body ``pattern`` finds."""
    out: set[str] = set()
    for node in walk(root):
        if node.type in JS_FUNCTIONS:
            own = js_name(node, data)
            if own and own != name and own in module.functions and \
                    pattern.search(node_text(data, node)):
                out.add(own)
    return out


def _value_surface(language: str, root: Any, data: bytes, parts: list[str], path: str,
                   sha: str, stem: str | None) -> tuple[str, list[SurfaceItem], set[str]] | None:
    """The surface of a module-level value (:mod:`.tsvalues`), or None if absent."""
    if len(parts) != 1:
        return None
    if language == "re2c":
        items = tsvalues.rule_items(data.decode("utf-8", "replace"), parts[0], path, sha)
        if items is not None:
            return items[0].anchor, items, set()
    base = "cpp" if language == "re2c" else language
    value = tsvalues.find_value(base, root, data, parts[0], stem)
    if value is None:
        return None
    items = tsvalues.value_items(value, data, path, sha)
    users = set() if base == "cpp" else \
        _readers(root, data, parts[0], ModuleFacts(base, root, data))
    return items[0].anchor, items, users


def surface(language: str, data: bytes, parts: list[str], path: str, sha: str,
            stem: str | None = None) -> tuple[str, list[SurfaceItem], set[str]] | None:
    """The surface items of the function or module-level value ``parts`` names in
    ``data`` (an anonymous module export by the file's ``stem``), or None if absent."""
    root = parser(language).parse(data).root_node
    function = _find(language, root, data, parts, stem)
    if function is None:
        return _value_surface(language, root, data, parts, path, sha, stem)
    base = "cpp" if language == "re2c" else language
    module = ModuleFacts(base, root, data)
    collector = Collector(data, path, sha)
    head = node_text(data, function).split("{", 1)[0]
    own = js_name(function, data) if base != "cpp" else parts[-1]
    shown = own if parts == ["default"] and own else ".".join(parts)
    if own is None and base != "cpp" and parts == [stem]:
        head = (f"the anonymous module export of {path}, named {stem} after its file: "
                f"module.exports = {head}")
    collector.add("function", shown, head, function)
    params = parameters_node(base, function)
    if params is not None:
        for child in [params] if params.type == "identifier" else params.named_children:
            collector.parameter(child)
    body = function.child_by_field_name("body")
    if body is not None:
        collector.body(body, own or parts[-1], module)
        collector.built(body)
    users = _users(root, data, own or parts[-1], module) if base != "cpp" else set()
    return f"{path}:{node_line(function)}@{sha}", collector.items, users


# -- tests -----------------------------------------------------------------------------


def _test_call(node: Any, data: bytes) -> tuple[str, str] | None:
    """``(kind, title)`` of ``it("…", …)`` / ``test.each(…)("…")`` / ``describe("…")``."""
    if node.type != "call_expression":
        return None
    callee = node.child_by_field_name("function")
    arguments = node.child_by_field_name("arguments")
    if callee is None or arguments is None or not arguments.named_children:
        return None
    base = node_text(data, callee).split(".", 1)[0].split("(", 1)[0]
    first = arguments.named_children[0]
    if base not in _TEST_CALLS or first.type not in ("string", "template_string"):
        return None
    return base, node_text(data, first)[1:-1]


def js_tests(language: str, data: bytes, name: str, path: str, sha: str) -> list[SurfaceItem]:
    """Every ``it``/``test`` case of a JavaScript/TypeScript test file that references
    ``name``, titled ``describe > … > it``."""
    root = parser(language).parse(data).root_node
    word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    items: list[SurfaceItem] = []

    def visit(node: Any, chain: list[str]) -> None:
        call = _test_call(node, data)
        if call is not None:
            kind, title = call
            if kind == "describe":
                chain = [*chain, title]
            elif word.search(node_text(data, node)):
                items.append(SurfaceItem(
                    kind="test", name=" > ".join([*chain, title]),
                    detail=node_text(data, node).split("\n", 1)[0],
                    anchor=f"{path}:{node_line(node)}@{sha}"))
                return
        for child in node.children:
            visit(child, chain)

    visit(root, [])
    return items


# -- what a change touches -------------------------------------------------------------


def touched_values(path: str, data: bytes, lines: set[int]) -> list[tuple[str, int, int]]:
    """``(name, first line, last line)`` of the module-level values of ``path``
    (:mod:`.tsvalues`: an anonymous module export named by its file's stem, a re2c rule) that
    one of ``lines`` falls in, in file order. A value that is a named function is left to
    the functions (its name is its definition's)."""
    from portwright.evidence.surfacemodels import LANGUAGES

    language = LANGUAGES.get(path[path.rfind("."):].lower()) if "." in path else None
    if language is None or language == "python":
        return []
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    base = "cpp" if language == "re2c" else language
    root = parser(language).parse(data).root_node
    spans: list[tuple[str, int, int]] = []
    for value in tsvalues.module_values(base, root, data, stem):
        if value.value is not None and value.value.type in JS_FUNCTIONS and \
                not value.anonymous:
            continue
        spans.append((value.name, node_line(value.node), int(value.node.end_point[0]) + 1))
    if language == "re2c":
        spans += [(name, line, line) for name, _, line in
                  tsvalues.rules(data.decode("utf-8", "replace"))]
    return sorted((s for s in spans if any(s[1] <= n <= s[2] for n in lines)),
                  key=lambda s: s[1])
