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
from functools import lru_cache
from typing import Any

from portwright.errors import UsageError
from portwright.evidence.surfacemodels import SurfaceItem
from portwright.evidence.tscollect import Collector, ModuleFacts, parameters_node
from portwright.evidence.tsnodes import (
    JS_FUNCTIONS,
    cpp_name,
    enclosing_class,
    js_name,
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

        return tree_sitter_language_pack.get_parser(language)
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


def _find(language: str, root: Any, data: bytes, parts: list[str]) -> Any | None:
    if parts == ["default"] and language != "cpp":
        return _default_export(root, data)
    want, owner = parts[-1], parts[-2] if len(parts) > 1 else None
    for node in walk(root):
        if language == "cpp":
            if node.type != "function_definition":
                continue
            name, scope = cpp_name(node, data)
            scope = scope or enclosing_class(node, data)
        else:
            if node.type not in JS_FUNCTIONS:
                continue
            name, scope = js_name(node, data), enclosing_class(node, data)
        if name == want and (owner is None or scope == owner):
            return node
    return None


def definitions(language: str, data: bytes, parts: list[str]) -> list[str]:
    """Dotted names (``Class.method``) of the functions ``parts`` can name in ``data``."""
    root = parser(language).parse(data).root_node
    want, owner = parts[-1], parts[-2] if len(parts) > 1 else None
    out: list[str] = []
    for node in walk(root):
        if language == "cpp":
            if node.type != "function_definition":
                continue
            name, scope = cpp_name(node, data)
            scope = scope or enclosing_class(node, data)
        else:
            if node.type not in JS_FUNCTIONS:
                continue
            name, scope = js_name(node, data), enclosing_class(node, data)
        if name == want and (owner is None or scope == owner):
            out.append(f"{scope}.{name}" if scope else name)
    return list(dict.fromkeys(out))


def _users(root: Any, data: bytes, name: str, module: ModuleFacts) -> set[str]:
    """Module functions whose body calls ``name``."""
    call = re.compile(rf"(?<![\w$.]){re.escape(name)}\s*\(")
    out: set[str] = set()
    for node in walk(root):
        if node.type in JS_FUNCTIONS:
            own = js_name(node, data)
            if own and own != name and own in module.functions and \
                    call.search(node_text(data, node)):
                out.add(own)
    return out


def surface(language: str, data: bytes, parts: list[str], path: str,
            sha: str) -> tuple[str, list[SurfaceItem], set[str]] | None:
    """The surface items of the function ``parts`` names in ``data``, or None if absent."""
    root = parser(language).parse(data).root_node
    function = _find(language, root, data, parts)
    if function is None:
        return None
    module = ModuleFacts(language, root, data)
    collector = Collector(data, path, sha)
    head = node_text(data, function).split("{", 1)[0]
    own = js_name(function, data) if language != "cpp" else parts[-1]
    shown = own if parts == ["default"] and own else ".".join(parts)
    collector.add("function", shown, head, function)
    params = parameters_node(language, function)
    if params is not None:
        for child in [params] if params.type == "identifier" else params.named_children:
            collector.parameter(child)
    body = function.child_by_field_name("body")
    if body is not None:
        collector.body(body, own or parts[-1], module)
    users = _users(root, data, own or parts[-1], module) if language != "cpp" else set()
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
