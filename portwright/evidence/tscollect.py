"""The items of a JavaScript, TypeScript or C++ function (used by :mod:`.treesitter`).

Parameters (defaults, destructured options, C++ declarators), every branch arm (``if``, its
``else``, the statements after an ``if`` that can leave, ternaries, ``switch`` cases and
``default``, ``while`` conditions, ``??``/``||`` defaults), guard returns as their own kind,
throws, reads of module-level values (at the read and where the module sets them), and
helpers (module functions, methods of a context parameter such as ``state``).

Public API: ``Collector``, ``ModuleFacts``, ``parameters_node(language, function)``,
``module_functions(language, root, data)``.
"""

from __future__ import annotations

import re
from typing import Any

from portwright.evidence.surfacemodels import ItemKind, SurfaceItem
from portwright.evidence.tsnodes import module_functions, node_line, node_text, walk
from portwright.evidence.tsvalues import detail


class Collector:
    """The items of one function, gathered node by node."""

    def __init__(self, data: bytes, path: str, sha: str) -> None:
        self.data = data
        self.path = path
        self.sha = sha
        self.items: list[SurfaceItem] = []
        self.params: list[str] = []

    def add(self, kind: ItemKind, name: str, detail: str, node: Any) -> None:
        self._put(kind, name, detail, node_line(node))

    def _put(self, kind: ItemKind, name: str, detail: str, line: int) -> None:
        """One item per kind, name and line (a label the enumerator classifies once)."""
        anchor = f"{self.path}:{line}@{self.sha}"
        if any(i.kind == kind and i.name == name and i.anchor == anchor for i in self.items):
            return
        self.items.append(SurfaceItem(kind=kind, name=name, detail=" ".join(detail.split()),
                                      anchor=anchor))

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
        return node_text(self.data, node)

    def _param(self, name: str, detail: str, node: Any) -> None:
        self.params.append(name.lstrip("."))
        self.add("parameter", name, detail, node)

    def _ts_parameter(self, node: Any, kind: str) -> None:
        pattern, value = node.child_by_field_name("pattern"), node.child_by_field_name("value")
        annotation = node.child_by_field_name("type")
        if pattern is not None and pattern.type in ("object_pattern", "array_pattern"):
            self.parameter(pattern)
            return
        parts = [f"default={node_text(self.data, value)}" if value is not None else
                 "optional" if kind == "optional_parameter" else "required"]
        if annotation is not None:
            parts.append(f"annotation={node_text(self.data, annotation).lstrip(': ')}")
        name = node_text(self.data, pattern) if pattern is not None else node_text(self.data, node)
        self._param(name, "; ".join(parts), node)

    def _cpp_parameter(self, node: Any, kind: str) -> None:
        declarator = node.child_by_field_name("declarator")
        names = [n for n in walk(declarator) if n.type == "identifier"] if declarator else []
        name = node_text(self.data, names[-1]) if names else node_text(self.data, node)
        type_node = node.child_by_field_name("type")
        parts = [f"type={node_text(self.data, type_node)}"] if type_node is not None else []
        default = node.child_by_field_name("default_value")
        if default is not None:
            parts.insert(0, f"default={node_text(self.data, default)}")
        elif kind == "variadic_parameter_declaration":
            parts.insert(0, "variadic")
        else:
            parts.insert(0, "required")
        self._param(name, "; ".join(parts), node)

    def body(self, function: Any, own_name: str, module: ModuleFacts) -> None:
        for node in walk(function):
            kind = node.type
            if kind == "throw_statement":
                self.add("throw", self._thrown(node), node_text(self.data, node), node)
            elif kind == "if_statement":
                self._if(node)
            elif kind in ("ternary_expression", "conditional_expression"):
                self._ternary(node)
            elif kind in ("while_statement", "do_statement"):
                condition = node.child_by_field_name("condition")
                if condition is not None:
                    text = self._t(condition).strip("()")
                    self.add("branch", self._used(text), text, node)
            elif kind == "switch_statement":
                value = node.child_by_field_name("value") or node.child_by_field_name("condition")
                text = self._t(value) if value is not None else ""
                self.add("branch", self._used(text), f"switch {text}", node)
            elif kind in ("switch_case", "case_statement", "switch_default"):
                value = node.child_by_field_name("value")
                label = f"case {self._t(value)}" if value is not None else "default"
                self.add("branch", self._switch_subject(node), label, node)
            elif kind == "call_expression":
                self._call(node, own_name, module)
            elif kind == "binary_expression" and _operator(node, self.data) in ("??", "||") \
                    and not _in_condition(node):
                self.add("branch", self._t(node), self._t(node), node)  # a default
            elif kind in ("identifier", "member_expression"):
                self._global(node, module)

    def built(self, body: Any) -> None:
        """The properties of the object the function builds and returns (``var re = {};
        re.src_path = …; return re``): one ``entry`` each, where it is set."""
        statements = [n for n in body.named_children if n.type != "comment"]
        returned = {self._t(n.named_children[0]) for n in statements
                    if n.type == "return_statement" and n.named_children and
                    n.named_children[0].type == "identifier"}
        for node in statements:
            inner = node.named_children[0] if node.type == "expression_statement" and \
                node.named_children else None
            left = inner.child_by_field_name("left") if inner is not None and \
                inner.type == "assignment_expression" else None
            target = left.child_by_field_name("object") if left is not None and \
                left.type == "member_expression" else None
            if target is not None and target.type == "identifier" and \
                    self._t(target) in returned:
                self.add("entry", self._t(left), detail(self._t(inner)), inner)

    def _used(self, text: str) -> str:
        used = [p for p in self.params if re.search(rf"\b{re.escape(p)}\b", text)]
        return ",".join(used) or text[:60]

    def _if(self, node: Any) -> None:
        condition = node.child_by_field_name("condition")
        if condition is None:
            return
        text = self._t(condition).strip("()")
        consequence = node.child_by_field_name("consequence")
        alternative = node.child_by_field_name("alternative")
        if alternative is None and consequence is not None and _exits(consequence):
            self.add("guard", self._used(text), f"{text}: {self._t(consequence)}", node)
        else:
            self.add("branch", self._used(text), text, node)
        if alternative is not None:
            chained = [c for c in alternative.named_children if c.type == "if_statement"]
            if not chained:  # a plain else (an else-if is an arm of its own)
                self.add("branch", f"not {self._used(text)}", f"else: not ({text})",
                         alternative)
        elif consequence is not None and not _exits(consequence) and _leaves(consequence):
            after = node.next_named_sibling  # the implicit else: what runs when it did not leave
            while after is not None and after.type == "comment":
                after = after.next_named_sibling
            if after is not None:
                self.add("branch", f"after {self._used(text)}", f"otherwise: not ({text})",
                         after)

    def _ternary(self, node: Any) -> None:
        condition = node.child_by_field_name("condition")
        text = self._t(condition) if condition is not None else ""
        self.add("branch", self._used(text), text, node)
        alternative = node.child_by_field_name("alternative")
        if alternative is not None:
            self.add("branch", f"not {self._used(text)}", f"else: not ({text})", alternative)

    def _call(self, node: Any, own_name: str, module: ModuleFacts) -> None:
        callee = node.child_by_field_name("function")
        name = node_text(self.data, callee) if callee is not None else ""
        if name in module.functions and name != own_name:
            self.add("helper", name, node_text(self.data, node), node)
            return
        base, _, method = name.partition(".")
        if method and "." not in method and base in self.params and base in _CONTEXTS and \
                method not in _PLAIN:
            self.add("helper", name, node_text(self.data, node).split("\n", 1)[0], node)

    def _global(self, node: Any, module: ModuleFacts) -> None:
        """A read of a module-level value (``encode.defaultChars``, a constant): at the read,
        and at the module line that sets it."""
        parent = node.parent
        if parent is not None and parent.type == "member_expression" and \
                parent.child_by_field_name("property") is node:
            return
        text = self._t(node)
        if parent is not None and parent.type == "member_expression" and \
                node.type == "identifier":
            return  # the whole member expression is looked at instead
        line = module.values.get(text)
        if line is None or text in self.params:
            return
        self.add("global", text, f"module-level {text} (set at line {line})", node)
        self._put("global", text, "its module-level value", line)

    def _switch_subject(self, case: Any) -> str:
        parent = case.parent
        while parent is not None and parent.type not in ("switch_statement",):
            parent = parent.parent
        subject = parent.child_by_field_name("value") or parent.child_by_field_name(
            "condition") if parent is not None else None
        text = self._t(subject) if subject is not None else ""
        return ",".join(p for p in self.params if re.search(rf"\b{re.escape(p)}\b", text)) or "-"

    def _thrown(self, node: Any) -> str:
        for child in walk(node):
            if child.type == "new_expression":
                ctor = child.child_by_field_name("constructor")
                return node_text(self.data, ctor) if ctor is not None else "new"
            if child.type == "call_expression":
                callee = child.child_by_field_name("function")
                return node_text(self.data, callee) if callee is not None else "call"
        value = list(node.named_children)
        return node_text(self.data, value[0]) if value else "re-throw"


_CONTEXTS = frozenset({"state", "ctx", "context", "cache", "env", "options", "opts", "self",
                       "parser", "renderer", "tokens", "md"})
"""Parameters that carry a parse or run context: their methods are the surface's helpers."""
_PLAIN = frozenset({"push", "pop", "shift", "unshift", "slice", "splice", "concat", "join",
                    "split", "indexOf", "lastIndexOf", "includes", "charCodeAt", "charAt",
                    "codePointAt", "substring", "substr", "replace", "match", "test", "exec",
                    "trim", "toLowerCase", "toUpperCase", "startsWith", "endsWith", "map",
                    "filter", "forEach", "reduce", "some", "every", "find", "keys", "values",
                    "entries", "get", "set", "has", "toString", "size", "length", "at"})
"""Methods of strings, arrays and maps: calling one is not a helper of the surface."""


def _operator(node: Any, data: bytes) -> str:
    operator = node.child_by_field_name("operator")
    return node_text(data, operator) if operator is not None else ""


def _in_condition(node: Any) -> bool:
    """True inside the condition of an ``if``, a loop or a ternary."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type in ("if_statement", "while_statement", "do_statement",
                           "ternary_expression", "conditional_expression", "for_statement"):
            return bool(parent.child_by_field_name("condition") == child)
        if parent.type in ("statement_block", "expression_statement", "lexical_declaration",
                           "variable_declaration", "return_statement"):
            return False
        child, parent = parent, parent.parent
    return False


def _leaves(node: Any) -> bool:
    """True when a ``return``, ``continue`` or ``break`` lies anywhere in it (an error is no
    arm)."""
    return any(n.type in ("return_statement", "continue_statement", "break_statement")
               for n in walk(node))


def _exits(node: Any) -> bool:
    """A guard's body: only a ``continue``, ``break``, or a ``return`` of nothing, ``false``,
    ``null`` or ``undefined`` (returning a value is a mode; throwing is an error path)."""
    statements = node.named_children if node.type == "statement_block" else [node]
    statements = [n for n in statements if n.type != "comment"]
    if len(statements) != 1:
        return False
    only = statements[0]
    if only.type == "return_statement":
        values = [c for c in only.named_children if c.type != "comment"]
        return not values or values[0].type in ("false", "null", "undefined")
    return only.type in ("continue_statement", "break_statement")


class ModuleFacts:
    """A module's function names and the lines that set its module-level values."""

    def __init__(self, language: str, root: Any, data: bytes) -> None:
        self.functions = module_functions(language, root, data)
        self.values: dict[str, int] = {}
        for node in root.children:
            target = node
            if node.type == "export_statement":
                target = next(iter(node.named_children), node)
            if target.type in ("lexical_declaration", "variable_declaration"):
                for declarator in target.named_children:
                    name = declarator.child_by_field_name("name")
                    if name is not None and name.type == "identifier":
                        self.values.setdefault(node_text(data, name), node_line(declarator))
            elif target.type == "expression_statement":
                inner = target.named_children[0] if target.named_children else None
                if inner is not None and inner.type == "assignment_expression":
                    left = inner.child_by_field_name("left")
                    if left is not None and left.type == "member_expression":
                        self.values.setdefault(node_text(data, left), node_line(inner))




def parameters_node(language: str, function: Any) -> Any | None:
    if language != "cpp":
        return function.child_by_field_name("parameters") or \
            function.child_by_field_name("parameter")
    declarator = function.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    return declarator.child_by_field_name("parameters") if declarator is not None else None

