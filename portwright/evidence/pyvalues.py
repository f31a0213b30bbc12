"""Python module constants as definitions of a surface (used by :mod:`.surface`).

A module-level assignment to a name (``BLOCK_TAGS = [...]``, ``RE_FENCE =
re.compile(r"...")``, ``LIMIT: int = 10``) is a definition, as in the JavaScript and C
analysers (:mod:`.tsvalues`); assignments inside a function or a class are not. Its items:
the value (kind ``value``) and its entries (kind ``entry``, each anchored on its own line):
the elements of a list, tuple or set (``X[2]``), the keys of a dict (``X['key']``), the
operands of a string concatenation (``X part 1``), and the top-level alternatives of the
pattern of a ``re.compile`` (``X alternative 0``); a short one is named with its text too
(``X[2] = "nav"``).

Public API: ``value_definitions(text, name) -> list[str]``,
``value_surface(text, name, anchor) -> tuple[str, list[SurfaceItem], set[str]] | None``,
``touched_values(text, lines) -> list[tuple[str, int, int]]``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from portwright.evidence.surfacemodels import SurfaceItem
from portwright.evidence.tsvalues import alternatives, detail, entry_name

Anchor = Callable[[int], str]


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _assignments(tree: ast.Module) -> Iterator[tuple[str, ast.stmt, ast.expr]]:
    """``(name, statement, value)`` of every module-level assignment to a name; not module
    plumbing: dunder names (``__all__``), aliases (``X = Y``, ``X = mod.Y``)."""
    for node in tree.body:
        pairs: list[tuple[ast.expr, ast.expr]] = []
        if isinstance(node, ast.Assign):
            pairs = [(target, node.value) for target in node.targets]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs = [(node.target, node.value)]
        for target, value in pairs:
            if isinstance(target, ast.Name) and not target.id.startswith("__") and \
                    not isinstance(value, ast.Name | ast.Attribute):
                yield target.id, node, value


def value_definitions(text: str, name: str) -> list[str]:
    """``[name]`` when the module assigns ``name`` at its top level, else ``[]``."""
    tree = _parse(text)
    if tree is None:
        return []
    return [name] if any(found == name for found, _, _ in _assignments(tree)) else []


def _operands(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _operands(node.left) + _operands(node.right)
    return [node]


def _entries(name: str, value: ast.expr, text: str) -> list[tuple[str, str, int]]:
    def source(node: ast.AST) -> str:
        return detail(ast.get_source_segment(text, node) or ast.unparse(node))

    if isinstance(value, ast.List | ast.Tuple | ast.Set):
        return [(entry_name(f"{name}[{i}]", source(e)), source(e), e.lineno)
                for i, e in enumerate(value.elts)]
    if isinstance(value, ast.Dict):
        return [(f"{name}[{source(k)}]", source(v), k.lineno)
                for k, v in zip(value.keys, value.values, strict=True) if k is not None]
    parts = _operands(value)
    if len(parts) > 1:
        return [(entry_name(f"{name} part {i}", source(p)), source(p), p.lineno)
                for i, p in enumerate(parts)]
    if isinstance(value, ast.Call) and ast.unparse(value.func).endswith("compile") and \
            value.args and isinstance(value.args[0], ast.Constant) and \
            isinstance(value.args[0].value, str):
        return [(entry_name(f"{name} alternative {i}", detail(alt)), detail(alt), value.lineno)
                for i, (_, alt) in enumerate(alternatives(value.args[0].value))]
    return []


def value_surface(text: str, name: str, anchor: Anchor
                  ) -> tuple[str, list[SurfaceItem], set[str]] | None:
    """The items of the module constant ``name`` and the module functions that read it,
    or None when the module does not assign it."""
    tree = _parse(text)
    if tree is None:
        return None
    found = next(((s, v) for n, s, v in _assignments(tree) if n == name), None)
    if found is None:
        return None
    statement, value = found
    items = [SurfaceItem(kind="value", name=name,
                         detail=detail(ast.get_source_segment(text, statement) or name),
                         anchor=anchor(statement.lineno))]
    items += [SurfaceItem(kind="entry", name=entry, detail=shown, anchor=anchor(line))
              for entry, shown, line in _entries(name, value, text)]
    readers = {node.name for node in tree.body
               if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
               and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))}
    return anchor(statement.lineno), items, readers


def touched_values(text: str, lines: set[int]) -> list[tuple[str, int, int]]:
    """``(name, first line, last line)`` of the module constants one of ``lines`` falls in."""
    tree = _parse(text)
    if tree is None:
        return []
    return [(name, statement.lineno, statement.end_lineno or statement.lineno)
            for name, statement, _ in _assignments(tree)
            if any(statement.lineno <= n <= (statement.end_lineno or statement.lineno)
                   for n in lines)]
