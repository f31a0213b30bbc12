"""Module-level values as definitions of a surface (used by :mod:`.treesitter`).

A change often touches no function: a regular expression, a table of rules, a list of
names. These are definitions too:

- JavaScript / TypeScript: ``var|let|const X = …`` at the top of a module (exported or
  not), ``exports.X = …`` and ``module.exports.X = …``, and an anonymous
  ``module.exports = …`` / ``export default …`` value, which has no name of its own: it is
  named by its module (the file's stem, ``html_blocks`` for ``lib/common/html_blocks.js``)
  and its item says so;
- C / C++: ``#define X …`` and initialised declarations at file scope
  (``static const char *tags[] = {…}``);
- re2c rule files (``.re``): the named definitions of a ``/*!re2c … */`` block
  (``blocktagname = 'address'|'article'|…;``).

Assignments inside a function body are never module values.

The items of a value: the value itself (kind ``value``, its whole text in the detail) and
its *entries* (kind ``entry``), what a change to the value adds, removes or reorders: the
elements of an array or of an initialiser list (``X[4]``), the properties of an object
(``X.key``), the operands of a string concatenation (``X part 2``) and the top-level
alternatives of a regular expression or of a re2c rule (``X alternative 3``); a short one
is named with its text too (``X[4] = /^<![A-Za-z]/``), since a spec lists the names. Each
has the anchor of its own line.

Public API: ``Value``, ``find_value(language, root, data, want, stem)``,
``value_names(language, root, data, stem)``, ``value_items(value, data, path, sha)``,
``module_values(...)``, ``entries(name, value, data)``, ``alternatives(pattern)``,
``rules(text)``, ``rule_items(text, want, path, sha)``, ``detail(text)``, ``entry_name``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from portwright.evidence.surfacemodels import SurfaceItem
from portwright.evidence.tsnodes import node_line, node_text

MAX_DETAIL = 400
"""Characters of source text kept in an item's detail."""
_EXPORTS = re.compile(r"\A(?:module\.)?exports\.([A-Za-z_$][\w$]*)\Z")
_ANONYMOUS = ("module.exports",)


@dataclass(frozen=True)
class Value:
    """A module-level value: its name, the node that defines it (its anchor) and the node
    of its value (None for a ``#define``)."""

    name: str
    node: Any
    value: Any | None
    anonymous: bool = False
    """Named by its module's file (an anonymous ``module.exports`` / default export)."""


def reexports(node: Any, data: bytes) -> bool:
    """A value that only names others (``module.exports = { mean, sub }``, ``exports.parse =
    parse``, ``exports.x = require('./x')``): module plumbing, no value of its own."""
    if node.type in ("identifier", "member_expression"):
        return True
    if node.type == "call_expression":
        callee = node.child_by_field_name("function")
        return callee is not None and node_text(data, callee) == "require"
    if node.type != "object":
        return False
    for child in node.named_children:
        value = child.child_by_field_name("value") if child.type == "pair" else child
        if child.type != "comment" and (value is None or value.type not in (
                "shorthand_property_identifier", "identifier", "member_expression")):
            return False
    return True


def _js_statement(node: Any, data: bytes, stem: str | None) -> list[Value]:
    target = node
    if node.type == "export_statement":
        default = any(c.type == "default" for c in node.children)
        inner = [c for c in node.named_children if c.type != "comment"]
        if default and inner and stem and inner[0].type not in ("function_declaration",
                                                                "class_declaration"):
            return [Value(stem, node, inner[0], anonymous=True)]
        target = inner[0] if inner else node
    if target.type in ("lexical_declaration", "variable_declaration"):
        out = []
        for declarator in target.named_children:
            name = declarator.child_by_field_name("name")
            if name is not None and name.type == "identifier":
                out.append(Value(node_text(data, name), declarator,
                                 declarator.child_by_field_name("value")))
        return out
    if target.type != "expression_statement" or not target.named_children:
        return []
    inner = target.named_children[0]
    if inner.type != "assignment_expression":
        return []
    left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
    if left is None or right is None:
        return []
    text = node_text(data, left)
    if reexports(right, data):
        return []
    exported = _EXPORTS.match(text)
    if exported:
        return [Value(exported.group(1), inner, right)]
    if text in _ANONYMOUS and stem and right.child_by_field_name("name") is None:
        return [Value(stem, inner, right, anonymous=True)]
    return []


def _cpp_statement(node: Any, data: bytes) -> list[Value]:
    if node.type in ("preproc_def", "preproc_function_def"):
        name = node.child_by_field_name("name")
        return [Value(node_text(data, name), node, node.child_by_field_name("value"))] \
            if name is not None else []
    if node.type != "declaration":
        return []
    out = []
    for declarator in node.named_children:
        if declarator.type != "init_declarator":
            continue
        inner = declarator.child_by_field_name("declarator")
        while inner is not None and inner.type != "identifier":
            inner = inner.child_by_field_name("declarator")
        if inner is not None:
            out.append(Value(node_text(data, inner), node,
                             declarator.child_by_field_name("value")))
    return out


def module_values(language: str, root: Any, data: bytes, stem: str | None) -> list[Value]:
    """Every module-level value of a parsed file (see the module docstring)."""
    out: list[Value] = []
    for node in root.children:
        if language == "cpp":
            out += _cpp_statement(node, data)
        else:
            out += _js_statement(node, data, stem)
    return out


def find_value(language: str, root: Any, data: bytes, want: str,
               stem: str | None) -> Value | None:
    """The module-level value named ``want`` (an anonymous export by its ``stem``)."""
    return next((v for v in module_values(language, root, data, stem) if v.name == want),
                None)


def value_names(language: str, root: Any, data: bytes, stem: str | None) -> list[str]:
    return [v.name for v in module_values(language, root, data, stem)]


def detail(text: str) -> str:
    collapsed = " ".join(text.split())
    return collapsed if len(collapsed) <= MAX_DETAIL else collapsed[:MAX_DETAIL] + " …"


SHORT_ENTRY = 60
"""An entry this short (one line) is named with its text: ``html_blocks[44] = 'meta'``."""


def entry_name(base: str, text: str) -> str:
    """``base = text`` for a short entry, so a spec's table says which entry it is; else
    ``base``."""
    return f"{base} = {text}" if len(text) <= SHORT_ENTRY and "\n" not in text else base


def alternatives(pattern: str) -> list[tuple[int, str]]:
    """The top-level ``|`` alternatives of a regular expression or re2c rule, with their
    offsets (outside groups, classes, quotes and escapes)."""
    out: list[tuple[int, str]] = []
    depth, start, index = 0, 0, 0
    quote: str | None = None
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if quote:
            quote = None if char == quote else quote
        elif in_class:
            in_class = char != "]"
        elif char in "'\"":
            quote = char
        elif char == "[":
            in_class = True
        elif char in "({":
            depth += 1
        elif char in ")}":
            depth -= 1
        elif char == "|" and depth == 0:
            out.append((start, pattern[start:index]))
            start = index + 1
        index += 1
    out.append((start, pattern[start:]))
    return out if len(out) > 1 else []


def _operands(node: Any, data: bytes) -> list[Any]:
    if node.type == "binary_expression":
        operator = node.child_by_field_name("operator")
        if operator is not None and node_text(data, operator) == "+":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            return _operands(left, data) + _operands(right, data)
    if node.type == "parenthesized_expression" and node.named_children:
        inner = node.named_children[0]
        if inner.type == "binary_expression":
            return _operands(inner, data)
    return [node]


def _property_key(node: Any, data: bytes) -> str:
    key = node.child_by_field_name("key") or node.child_by_field_name("name")
    text = node_text(data, key if key is not None else node)
    return text.strip("'\"")


def _element(name: str, index: int, node: Any, data: bytes) -> str:
    """``X[2] = 'nav'`` (:func:`entry_name`), or ``X[2] 'fence'`` for a row of a table whose
    first cell is a string (a rule's name: a reordering of the table shows by name)."""
    cells = [c for c in node.named_children if c.type != "comment"] \
        if node.type in ("array", "initializer_list") else []
    if cells and cells[0].type in ("string", "string_literal"):
        return f"{name}[{index}] {node_text(data, cells[0])}"
    return entry_name(f"{name}[{index}]", detail(node_text(data, node)))


def entries(name: str, value: Any, data: bytes) -> list[tuple[str, str, int]]:
    """``(name, detail, line)`` of each entry of a value node (see the module docstring)."""
    kind = value.type
    children = [c for c in value.named_children if c.type != "comment"]
    if kind in ("array", "initializer_list"):
        return [(_element(name, i, c, data), detail(node_text(data, c)), node_line(c))
                for i, c in enumerate(children)]
    if kind == "object":
        return [(f"{name}.{_property_key(c, data)}", detail(node_text(data, c)), node_line(c))
                for c in children]
    parts = _operands(value, data)
    if len(parts) > 1:
        return [(entry_name(f"{name} part {i}", detail(node_text(data, p))),
                 detail(node_text(data, p)), node_line(p)) for i, p in enumerate(parts)]
    if kind == "regex":
        pattern = value.child_by_field_name("pattern")
        text = node_text(data, pattern) if pattern is not None else ""
        return [(entry_name(f"{name} alternative {i}", detail(alt)), detail(alt),
                 node_line(value))
                for i, (_, alt) in enumerate(alternatives(text))]
    return []


def value_items(value: Value, data: bytes, path: str, sha: str) -> list[SurfaceItem]:
    """The value's item and its entries' (see the module docstring)."""
    shown = detail(node_text(data, value.node))
    if value.anonymous:
        shown = (f"the anonymous module export of {path}, named {value.name} after its "
                 f"file: {shown}")
    items = [SurfaceItem(kind="value", name=value.name, detail=shown,
                         anchor=f"{path}:{node_line(value.node)}@{sha}")]
    if value.value is not None:
        items += [SurfaceItem(kind="entry", name=entry, detail=entry_detail,
                              anchor=f"{path}:{line}@{sha}")
                  for entry, entry_detail, line in entries(value.name, value.value, data)]
    return items


# -- re2c ------------------------------------------------------------------------------

_RE2C_BLOCK = re.compile(r"/\*!re2c(.*?)\*/", re.S)
_RULE = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(.+?);[ \t]*$", re.M)


def rules(text: str) -> list[tuple[str, str, int]]:
    """``(name, definition, line)`` of every named definition of the ``/*!re2c`` blocks."""
    out: list[tuple[str, str, int]] = []
    for block in _RE2C_BLOCK.finditer(text):
        for rule in _RULE.finditer(block.group(1)):
            offset = block.start(1) + rule.start(1)
            out.append((rule.group(1), rule.group(2), text.count("\n", 0, offset) + 1))
    return out


def rule_items(text: str, want: str, path: str, sha: str) -> list[SurfaceItem] | None:
    """The items of the re2c rule ``want``: the rule, and its alternatives."""
    found = next((r for r in rules(text) if r[0] == want), None)
    if found is None:
        return None
    name, definition, line = found
    items = [SurfaceItem(kind="value", name=name, detail=detail(f"{name} = {definition};"),
                         anchor=f"{path}:{line}@{sha}")]
    items += [SurfaceItem(kind="entry", name=entry_name(f"{name} alternative {i}", detail(alt)),
                          detail=detail(alt),
                          anchor=f"{path}:{line}@{sha}")
              for i, (_, alt) in enumerate(alternatives(definition))]
    return items
