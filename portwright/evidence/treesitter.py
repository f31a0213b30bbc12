"""JavaScript, TypeScript and C++ surfaces with tree-sitter (used by :mod:`.surface`).

Public API:

- ``parser(language: str) -> Any`` — a tree-sitter parser, or a UsageError naming the
  package to install
- ``surface(language, data: bytes, parts: list[str], path: str, sha: str)
  -> tuple[str, list[SurfaceItem]] | None`` — the definition's anchor and its items
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
from portwright.evidence.surface import ItemKind, SurfaceItem

logger = logging.getLogger(__name__)

_GRAMMARS = {
    "javascript": ("tree_sitter_javascript", "language", "tree-sitter-javascript"),
    "typescript": ("tree_sitter_typescript", "language_typescript", "tree-sitter-typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx", "tree-sitter-typescript"),
    "cpp": ("tree_sitter_cpp", "language", "tree-sitter-cpp"),
}
_JS_FUNCTIONS = {"function_declaration", "generator_function_declaration", "method_definition",
                 "function_expression", "arrow_function", "function", "function_signature"}
_BRANCHES = {"if_statement": "condition", "switch_statement": "value",
             "ternary_expression": "condition", "conditional_expression": "condition"}
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


def _text(data: bytes, node: Any) -> str:
    return data[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _walk(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _line(node: Any) -> int:
    return int(node.start_point[0]) + 1


# -- finding the definition ------------------------------------------------------------


def _js_name(node: Any, data: bytes) -> str | None:
    name = node.child_by_field_name("name")
    if name is not None:
        return _text(data, name)
    parent = node.parent
    if parent is not None and parent.type == "variable_declarator":
        target = parent.child_by_field_name("name")
        return _text(data, target) if target is not None else None
    return None


def _cpp_name(node: Any, data: bytes) -> tuple[str | None, str | None]:
    declarator = node.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return None, None
    inner = declarator.child_by_field_name("declarator")
    if inner is None:
        return None, None
    if inner.type == "qualified_identifier":
        scope = inner.child_by_field_name("scope")
        name = inner.child_by_field_name("name")
        return (_text(data, name) if name is not None else None,
                _text(data, scope) if scope is not None else None)
    return _text(data, inner), None


def _enclosing_class(node: Any, data: bytes) -> str | None:
    parent = node.parent
    while parent is not None:
        if parent.type in ("class_declaration", "class", "class_specifier", "struct_specifier",
                           "abstract_class_declaration"):
            name = parent.child_by_field_name("name")
            return _text(data, name) if name is not None else None
        parent = parent.parent
    return None


def _find(language: str, root: Any, data: bytes, parts: list[str]) -> Any | None:
    want, owner = parts[-1], parts[-2] if len(parts) > 1 else None
    for node in _walk(root):
        if language == "cpp":
            if node.type != "function_definition":
                continue
            name, scope = _cpp_name(node, data)
            scope = scope or _enclosing_class(node, data)
        else:
            if node.type not in _JS_FUNCTIONS:
                continue
            name, scope = _js_name(node, data), _enclosing_class(node, data)
        if name == want and (owner is None or scope == owner):
            return node
    return None


# -- items -----------------------------------------------------------------------------


class _Collector:
    def __init__(self, data: bytes, path: str, sha: str) -> None:
        self.data = data
        self.path = path
        self.sha = sha
        self.items: list[SurfaceItem] = []
        self.params: list[str] = []

    def add(self, kind: ItemKind, name: str, detail: str, node: Any) -> None:
        self.items.append(SurfaceItem(kind=kind, name=name, detail=" ".join(detail.split()),
                                      anchor=f"{self.path}:{_line(node)}@{self.sha}"))

    def parameter(self, node: Any) -> None:
        kind = node.type
        text = self._t
        if kind == "identifier":
            self._param(text(node), "required", node)
        elif kind == "shorthand_property_identifier_pattern":
            self._param(text(node), "option", node)
        elif kind in ("assignment_pattern", "object_assignment_pattern"):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            option = "option; " if kind == "object_assignment_pattern" else ""
            if left.type in ("object_pattern", "array_pattern"):
                self.parameter(left)  # destructured options: each option is a parameter
            else:
                self._param(text(left), f"{option}default={text(right)}", node)
        elif kind == "rest_pattern":
            self._param(text(node), "variadic", node)
        elif kind in ("object_pattern", "array_pattern"):
            for child in node.named_children:
                self.parameter(child)
        elif kind == "pair_pattern":
            self.parameter(node.child_by_field_name("value"))
        elif kind in ("required_parameter", "optional_parameter"):
            self._ts_parameter(node, kind)
        elif kind in ("parameter_declaration", "optional_parameter_declaration",
                      "variadic_parameter_declaration"):
            self._cpp_parameter(node, kind)

    def _t(self, node: Any) -> str:
        return _text(self.data, node)

    def _param(self, name: str, detail: str, node: Any) -> None:
        self.params.append(name.lstrip("."))
        self.add("parameter", name, detail, node)

    def _ts_parameter(self, node: Any, kind: str) -> None:
        pattern, value = node.child_by_field_name("pattern"), node.child_by_field_name("value")
        annotation = node.child_by_field_name("type")
        if pattern is not None and pattern.type in ("object_pattern", "array_pattern"):
            self.parameter(pattern)
            return
        parts = [f"default={_text(self.data, value)}" if value is not None else
                 "optional" if kind == "optional_parameter" else "required"]
        if annotation is not None:
            parts.append(f"annotation={_text(self.data, annotation).lstrip(': ')}")
        name = _text(self.data, pattern) if pattern is not None else _text(self.data, node)
        self._param(name, "; ".join(parts), node)

    def _cpp_parameter(self, node: Any, kind: str) -> None:
        declarator = node.child_by_field_name("declarator")
        names = [n for n in _walk(declarator) if n.type == "identifier"] if declarator else []
        name = _text(self.data, names[-1]) if names else _text(self.data, node)
        type_node = node.child_by_field_name("type")
        parts = [f"type={_text(self.data, type_node)}"] if type_node is not None else []
        default = node.child_by_field_name("default_value")
        if default is not None:
            parts.insert(0, f"default={_text(self.data, default)}")
        elif kind == "variadic_parameter_declaration":
            parts.insert(0, "variadic")
        else:
            parts.insert(0, "required")
        self._param(name, "; ".join(parts), node)

    def body(self, function: Any, own_name: str, module_functions: set[str]) -> None:
        for node in _walk(function):
            if node.type == "throw_statement":
                self.add("throw", self._thrown(node), _text(self.data, node), node)
            elif node.type in _BRANCHES:
                condition = node.child_by_field_name(_BRANCHES[node.type]) or \
                    node.child_by_field_name("condition")
                if condition is None:
                    continue
                text = _text(self.data, condition)
                used = [p for p in self.params if re.search(rf"\b{re.escape(p)}\b", text)]
                self.add("branch", ",".join(used) or "-", text.strip("()"), node)
            elif node.type in ("switch_case", "case_statement"):
                value = node.child_by_field_name("value")
                if value is not None:
                    self.add("branch", self._switch_subject(node), f"case {self._t(value)}", node)
            elif node.type == "call_expression":
                callee = node.child_by_field_name("function")
                name = _text(self.data, callee) if callee is not None else ""
                if name in module_functions and name != own_name:
                    self.add("helper", name, _text(self.data, node), node)

    def _switch_subject(self, case: Any) -> str:
        parent = case.parent
        while parent is not None and parent.type not in ("switch_statement",):
            parent = parent.parent
        subject = parent.child_by_field_name("value") or parent.child_by_field_name(
            "condition") if parent is not None else None
        text = self._t(subject) if subject is not None else ""
        return ",".join(p for p in self.params if re.search(rf"\b{re.escape(p)}\b", text)) or "-"

    def _thrown(self, node: Any) -> str:
        for child in _walk(node):
            if child.type == "new_expression":
                ctor = child.child_by_field_name("constructor")
                return _text(self.data, ctor) if ctor is not None else "new"
            if child.type == "call_expression":
                callee = child.child_by_field_name("function")
                return _text(self.data, callee) if callee is not None else "call"
        value = list(node.named_children)
        return _text(self.data, value[0]) if value else "re-throw"


def _module_functions(language: str, root: Any, data: bytes) -> set[str]:
    out: set[str] = set()
    for node in _walk(root):
        if language == "cpp" and node.type == "function_definition":
            name, _ = _cpp_name(node, data)
            if name:
                out.add(name)
        elif node.type in _JS_FUNCTIONS:
            name = _js_name(node, data)
            if name:
                out.add(name)
    return out


def _parameters_node(language: str, function: Any) -> Any | None:
    if language != "cpp":
        return function.child_by_field_name("parameters") or \
            function.child_by_field_name("parameter")
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    return declarator.child_by_field_name("parameters") if declarator is not None else None


def surface(language: str, data: bytes, parts: list[str], path: str,
            sha: str) -> tuple[str, list[SurfaceItem]] | None:
    """The surface items of the function ``parts`` names in ``data``, or None if absent."""
    root = parser(language).parse(data).root_node
    function = _find(language, root, data, parts)
    if function is None:
        return None
    collector = _Collector(data, path, sha)
    head = _text(data, function).split("{", 1)[0]
    collector.add("function", ".".join(parts), head, function)
    params = _parameters_node(language, function)
    if params is not None:
        for child in [params] if params.type == "identifier" else params.named_children:
            collector.parameter(child)
    body = function.child_by_field_name("body")
    if body is not None:
        collector.body(body, parts[-1], _module_functions(language, root, data))
    return f"{path}:{_line(function)}@{sha}", collector.items


# -- tests -----------------------------------------------------------------------------


def _test_call(node: Any, data: bytes) -> tuple[str, str] | None:
    """``(kind, title)`` of ``it("…", …)`` / ``test.each(…)("…")`` / ``describe("…")``."""
    if node.type != "call_expression":
        return None
    callee = node.child_by_field_name("function")
    arguments = node.child_by_field_name("arguments")
    if callee is None or arguments is None or not arguments.named_children:
        return None
    base = _text(data, callee).split(".", 1)[0].split("(", 1)[0]
    first = arguments.named_children[0]
    if base not in _TEST_CALLS or first.type not in ("string", "template_string"):
        return None
    return base, _text(data, first)[1:-1]


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
            elif word.search(_text(data, node)):
                items.append(SurfaceItem(
                    kind="test", name=" > ".join([*chain, title]),
                    detail=_text(data, node).split("\n", 1)[0],
                    anchor=f"{path}:{_line(node)}@{sha}"))
                return
        for child in node.children:
            visit(child, chain)

    visit(root, [])
    return items
