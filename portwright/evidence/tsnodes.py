"""Small helpers over tree-sitter nodes, shared by :mod:`.treesitter` and :mod:`.tscollect`.

Public API: ``JS_FUNCTIONS``, ``node_text``, ``walk``, ``node_line``, ``js_name``, ``js_owner``,
``cpp_name``, ``enclosing_class``, ``module_functions``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

JS_FUNCTIONS = {"function_declaration", "generator_function_declaration", "method_definition",
                "function_expression", "arrow_function", "function", "function_signature"}


def node_text(data: bytes, node: Any) -> str:
    return data[node.start_byte:node.end_byte].decode("utf-8", "replace")


def walk(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def node_line(node: Any) -> int:
    return int(node.start_point[0]) + 1


def js_name(node: Any, data: bytes) -> str | None:
    """A function's name: its own, the variable it is assigned to, the property it is
    assigned to (``Renderer.prototype.render = function …``: ``render``) or the key it is
    the value of in an object literal (``{ render: function … }``)."""
    name = node.child_by_field_name("name")
    if name is not None:
        return node_text(data, name)
    parent = node.parent
    if parent is not None and parent.type == "variable_declarator":
        target = parent.child_by_field_name("name")
        return node_text(data, target) if target is not None else None
    if parent is not None and parent.type == "assignment_expression" and \
            parent.child_by_field_name("right") == node:
        left = parent.child_by_field_name("left")
        if left is not None and left.type == "member_expression" and \
                node_text(data, left) != "module.exports":
            prop = left.child_by_field_name("property")
            return node_text(data, prop) if prop is not None else None
    if parent is not None and parent.type == "pair" and parent.child_by_field_name("value") == node:
        key = parent.child_by_field_name("key")
        return node_text(data, key).strip("'\"") if key is not None else None
    return None


def js_owner(node: Any, data: bytes) -> str | None:
    """What a function that is no class member belongs to: ``Renderer`` for
    ``Renderer.prototype.render = function``, ``rules`` for ``rules.fence = function`` and
    for a method of the object literal ``var rules = {…}``."""
    parent = node.parent
    if parent is not None and parent.type == "assignment_expression":
        left = parent.child_by_field_name("left")
        target = left.child_by_field_name("object") if left is not None and \
            left.type == "member_expression" else None
        if target is None:
            return None
        text = node_text(data, target)
        if text in ("module", "exports", "module.exports"):
            return None  # an export (`module.exports = function name`), not a member
        return text.removesuffix(".prototype") or None
    holder = parent.parent if parent is not None and parent.type == "pair" else parent
    if holder is None or holder.type != "object":
        return None
    above = holder.parent
    if above is not None and above.type == "variable_declarator":
        name = above.child_by_field_name("name")
        return node_text(data, name) if name is not None else None
    return None


def cpp_name(node: Any, data: bytes) -> tuple[str | None, str | None]:
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
        return (node_text(data, name) if name is not None else None,
                node_text(data, scope) if scope is not None else None)
    return node_text(data, inner), None


def enclosing_class(node: Any, data: bytes) -> str | None:
    parent = node.parent
    while parent is not None:
        if parent.type in ("class_declaration", "class", "class_specifier", "struct_specifier",
                           "abstract_class_declaration"):
            name = parent.child_by_field_name("name")
            return node_text(data, name) if name is not None else None
        parent = parent.parent
    return None



def module_functions(language: str, root: Any, data: bytes) -> set[str]:
    out: set[str] = set()
    for node in walk(root):
        if language == "cpp" and node.type == "function_definition":
            name, _ = cpp_name(node, data)
            if name:
                out.add(name)
        elif node.type in JS_FUNCTIONS:
            name = js_name(node, data)
            if name:
                out.add(name)
    return out
