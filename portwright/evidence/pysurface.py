"""The surface of a Python function or class, from its syntax tree (used by :mod:`.surface`).

A class covers every method it defines. In each function body:

- ``parameter`` — each parameter, with its default (or ``required``) and annotation;
- ``branch`` — every arm: ``if`` (its whole condition, each reason of ``and``/``or`` listed),
  each ``elif``, the ``else`` (anchored at the ``else:`` line), both arms of ``x if c else
  y``, each ``case``, and ``while`` conditions — whatever the condition names;
- ``guard`` — an ``if`` without ``else`` whose body only returns, raises or skips;
- ``raise``, ``assert`` — error paths;
- ``dtype`` — dtype names (``torch.bfloat16``, ``"int8"``), casts (``.to()``, ``.float()``,
  ``.astype()``), and ``dtype=`` / ``precise=`` / quantization (``bits=``, ``group_size=``)
  arguments;
- ``layout`` — memory-format and shape operations (``.contiguous()``, ``transpose``,
  ``reshape``, ``view``, ``permute``, ``expand_dims``, ``.T``, …);
- ``env`` (``os.environ``), ``config`` (``config.x``, ``args.x``, ``getattr(cfg, "x")``),
  ``context`` (reads of a context object: ``cache.offset``, ``state.x``), ``global`` (a
  module-level name or flag the body reads);
- ``helper`` — a function or class of the same module it calls, a method of its own class,
  or a method of a context object (``cache.update_and_fetch``).

Public API: ``python_surface(text, parts, anchor) -> (definition anchor, items, users) | None``
where ``users`` are the same-module names that call the symbol (their tests test it too).
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Callable, Iterator
from itertools import pairwise

from portwright.evidence.surfacemodels import ItemKind, SurfaceItem

logger = logging.getLogger(__name__)

DTYPE_RE = re.compile(r"\A(?:b?float(?:8\w*|16|32|64)?|bfloat16|half|double|u?int(?:4|8|16|32|64)"
                      r"|bool_?|complex(?:64|128)|fp(?:4|8|16|32)\w*|e[45]m[23]\w*|q[48]_\w+)\Z")
CONFIG_NAMES = frozenset({"config", "cfg", "conf", "settings", "options", "opts", "hparams",
                          "args", "params", "model_args", "model_config", "hf_config"})
_CONFIG_WORDS = frozenset({"config", "cfg", "conf", "settings", "options", "opts", "hparams",
                           "args", "params", "kwargs"})
_PLAIN_METHODS = frozenset({"get", "items", "keys", "values", "append", "extend", "pop",
                            "copy", "update", "split", "join", "strip", "replace", "format",
                            "startswith", "endswith", "lower", "upper", "encode", "decode",
                            "add", "remove", "insert", "index", "count", "sort"})
CONTEXT_NAMES = frozenset({"cache", "kv_cache", "past_key_value", "past_key_values", "state",
                           "ctx", "context", "attn_metadata", "forward_batch", "metadata",
                           "batch", "env"})
_CASTS = frozenset({"to", "float", "half", "double", "bfloat16", "astype", "type", "long",
                    "int", "bool", "view_as_real", "view_as_complex"})
_DTYPE_ARGS = frozenset({"dtype", "precise", "bits", "group_size", "out_dtype", "accum_dtype",
                         "compute_dtype"})
_LAYOUT = frozenset({"contiguous", "transpose", "permute", "reshape", "view", "swapaxes",
                     "moveaxis", "expand_dims", "squeeze", "unsqueeze", "flatten", "unflatten",
                     "as_strided", "broadcast_to", "movedim", "t", "mT", "T"})
_GUARD_BODY = (ast.Return, ast.Continue, ast.Break, ast.Pass)


def _is_guard(body: list[ast.stmt]) -> bool:
    """A body that only turns back early: ``continue``, ``break``, or ``return`` of nothing,
    ``None`` or ``False`` (returning a value is a mode; raising is an error path)."""
    for statement in body:
        if not isinstance(statement, _GUARD_BODY):
            return False
        if isinstance(statement, ast.Return) and statement.value is not None and not (
                isinstance(statement.value, ast.Constant) and statement.value.value in
                (None, False)):
            return False
    return True

Anchor = Callable[[int], str]
_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_Function = ast.FunctionDef | ast.AsyncFunctionDef


def _find(tree: ast.Module, parts: list[str]) -> _Definition | None:
    scope: list[ast.stmt] = tree.body
    found: _Definition | None = None
    for part in parts:
        found = next((n for n in scope if isinstance(n, _Definition) and n.name == part), None)
        if found is None:
            if len(parts) == 1:
                return next((n for n in ast.walk(tree)
                             if isinstance(n, _Definition) and n.name == parts[-1]), None)
            return None
        scope = found.body
    return found


def definitions(text: str, name: str) -> list[str]:
    """Dotted paths of every definition named ``name`` in ``text`` (``Attention``,
    ``Model.forward``)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    out: list[str] = []

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, _Definition):
                dotted = f"{prefix}{node.name}"
                if node.name == name:
                    out.append(dotted)
                if isinstance(node, ast.ClassDef):
                    walk(node.body, dotted + ".")

    walk(tree.body, "")
    return out


def _signature(node: _Definition) -> str:
    if isinstance(node, ast.ClassDef):
        return f"class {node.name}"
    return f"def {node.name}({ast.unparse(node.args)})"


class _Module:
    """What a module defines at its top: functions, classes and global names."""

    def __init__(self, tree: ast.Module, lines: list[str]) -> None:
        self.lines = lines
        self.functions = {n.name for n in tree.body if isinstance(n, _Function)}
        self.classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        self.globals: dict[str, int] = {}
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign) else []
            for target in targets:
                if isinstance(target, ast.Name):
                    self.globals.setdefault(target.id, node.lineno)
        self.modules = {(alias.asname or alias.name).split(".")[0] for node in tree.body
                        if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names}
        """Names bound by imports (``np``, ``torch``): a condition's modules are no reason."""
        self.imported = {alias.asname or alias.name for node in tree.body
                         if isinstance(node, ast.ImportFrom) and node.level > 0
                         for alias in node.names}
        """Names imported from the same package (``from .base import kernel``)."""
        self.tree = tree

    def callers_of(self, name: str) -> set[str]:
        """Same-module functions and classes whose body names ``name``, transitively."""
        found: set[str] = set()
        frontier = {name}
        while frontier:
            fresh: set[str] = set()
            for node in self.tree.body:
                if not isinstance(node, _Definition) or node.name in found | {name}:
                    continue
                used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                used |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
                if used & frontier:
                    fresh.add(node.name)
            found |= fresh
            frontier = fresh
        return found


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


def _reasons(test: ast.expr) -> str:
    if isinstance(test, ast.BoolOp):
        joiner = " and " if isinstance(test.op, ast.And) else " or "
        return joiner.join(ast.unparse(v) for v in test.values)
    return ast.unparse(test)


def _is_config(name: str) -> bool:
    """A name that holds configuration: ``config``, ``args``, ``scaling_config``, …"""
    lowered = name.lower()
    return lowered in CONFIG_NAMES or any(w in _CONFIG_WORDS for w in lowered.split("_"))


def _exits_somewhere(body: list[ast.stmt]) -> bool:
    """True when the block can end its function or loop normally (an error is no arm)."""
    return any(isinstance(n, ast.Return | ast.Continue | ast.Break)
               for statement in body for n in ast.walk(statement))


def _const(node: ast.expr) -> str:
    return str(node.value) if isinstance(node, ast.Constant) else ast.unparse(node)


class _Visitor(ast.NodeVisitor):
    def __init__(self, function: _Function, module: _Module, anchor: Anchor,
                 methods: set[str], prefix: str) -> None:
        self.function = function
        self.module = module
        self.anchor = anchor
        self.methods = methods
        self.prefix = prefix
        self.items: list[SurfaceItem] = []
        self.params: set[str] = set()
        self.locals: set[str] = {n.id for n in ast.walk(function)
                                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self._seen: set[tuple[str, str, int]] = set()
        self._in_test: dict[int, bool] = {}
        self._callees = {id(n.func): True for n in ast.walk(function) if isinstance(n, ast.Call)}
        for node in ast.walk(function):
            if isinstance(node, ast.If | ast.While | ast.IfExp | ast.Assert):
                for part in ast.walk(node.test):
                    self._in_test[id(part)] = True

    def add(self, kind: ItemKind, name: str, detail: str, line: int) -> None:
        if (kind, name, line) not in self._seen:  # one item per kind, name and line
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
            self.add("parameter", f"{self.prefix}{star}{arg.arg}", "; ".join(parts), arg.lineno)
            if default is not None:
                self.visit(default)
        self._fall_throughs(self.function)
        for statement in self.function.body:
            self.visit(statement)
        return self.items

    def _fall_throughs(self, root: ast.AST) -> None:
        """After an ``if`` (not a guard, no ``else``) whose body can leave the block, the next
        statement is the implicit ``else`` arm."""
        for node in ast.walk(root):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if not isinstance(block, list):
                    continue
                for here, after in pairwise(block):
                    if isinstance(here, ast.If) and not here.orelse and \
                            not _is_guard(here.body) and _exits_somewhere(here.body):
                        self.add("branch", f"after {self._names(here.test)}",
                                 f"otherwise: not ({_reasons(here.test)})", after.lineno)

    # -- branches --------------------------------------------------------------------

    def _names(self, test: ast.expr) -> str:
        """What a condition depends on: the names it reads (modules aside), ``self.x``
        attributes included; the condition itself when it reads none."""
        found: set[str] = set()
        for node in ast.walk(test):
            if isinstance(node, ast.Name) and node.id not in self.module.modules:
                found.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == "self":
                found.add(f"self.{node.attr}")
        found.discard("self")
        return ",".join(sorted(found)) or ast.unparse(test)

    def _else_line(self, node: ast.If | ast.For | ast.While | ast.Try) -> int:
        """The line of the ``else:`` of ``node`` (searched upwards from its first
        statement)."""
        first = node.orelse[0].lineno
        for number in range(first, node.lineno, -1):
            text = self.module.lines[number - 1].strip() if number <= len(self.module.lines) \
                else ""
            if text.startswith("else"):
                return number
        return first

    def visit_If(self, node: ast.If) -> None:
        reasons = _reasons(node.test)
        guard = not node.orelse and _is_guard(node.body)
        if guard:
            exits = ast.unparse(node.body[0]).split("\n", 1)[0]
            self.add("guard", self._names(node.test), f"{reasons}: {exits}", node.lineno)
        else:
            self.add("branch", self._names(node.test), reasons, node.lineno)
        self.visit(node.test)
        for statement in node.body:
            self.visit(statement)
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If) and \
                self.module.lines[node.orelse[0].lineno - 1].lstrip().startswith("elif"):
            self.visit(node.orelse[0])  # an elif: its own arm
        elif node.orelse:
            self.add("branch", f"not {self._names(node.test)}", f"else: not ({reasons})",
                     self._else_line(node))
            for statement in node.orelse:
                self.visit(statement)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        reasons = _reasons(node.test)
        self.add("branch", self._names(node.test), reasons, node.lineno)
        self.add("branch", f"not {self._names(node.test)}", f"else: not ({reasons})",
                 node.orelse.lineno)
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        """``a or b`` outside a condition: ``b`` is a default when ``a`` is empty."""
        if isinstance(node.op, ast.Or) and not self._in_test.get(id(node)):
            self.add("branch", self._names(node), f"{ast.unparse(node.values[-1])} when "
                     f"{ast.unparse(node.values[0])} is empty", node.lineno)
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self.add("branch", self._names(node.test), f"while {_reasons(node.test)}",
                 node.lineno)
        self.generic_visit(node)

    def visit_Match(self, node: ast.Match) -> None:
        for case in node.cases:
            self.add("branch", self._names(node.subject),
                     f"case {ast.unparse(case.pattern)}", case.pattern.lineno)
        self.generic_visit(node)

    # -- errors ----------------------------------------------------------------------

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        target = exc.func if isinstance(exc, ast.Call) else exc
        name = ast.unparse(target) if target is not None else "re-raise"
        self.add("raise", name, ast.unparse(node), node.lineno)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self.add("assert", ast.unparse(node.test), ast.unparse(node), node.lineno)
        self.generic_visit(node)

    # -- reads -----------------------------------------------------------------------

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if DTYPE_RE.match(node.attr):
            self.add("dtype", node.attr, ast.unparse(node), node.lineno)
        elif node.attr in ("T", "mT"):
            self.add("layout", node.attr, ast.unparse(node), node.lineno)
        base = node.value
        called = self._callees.get(id(node), False)
        if isinstance(base, ast.Name) and isinstance(node.ctx, ast.Load) and not called:
            if _is_config(base.id):
                self.add("config", f"{base.id}.{node.attr}", ast.unparse(node), node.lineno)
            elif base.id in CONTEXT_NAMES:
                self.add("context", f"{base.id}.{node.attr}", ast.unparse(node), node.lineno)
        elif isinstance(base, ast.Attribute) and base.attr in CONFIG_NAMES:
            self.add("config", f"{base.attr}.{node.attr}", ast.unparse(node), node.lineno)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if isinstance(node.ctx, ast.Load) and name in self.module.globals and \
                name not in self.locals and name not in self.params:
            line = self.module.globals[name]
            self.add("global", name, f"module-level {name} (defined at line {line})",
                     node.lineno)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and DTYPE_RE.match(node.value):
            self.add("dtype", node.value, repr(node.value), node.lineno)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if ast.unparse(node.value) == "os.environ":
            self.add("env", _const(node.slice), ast.unparse(node), node.lineno)
        elif isinstance(node.value, ast.Name) and _is_config(node.value.id) and \
                isinstance(node.ctx, ast.Load):
            self.add("config", f"{node.value.id}[{_const(node.slice)}]", ast.unparse(node),
                     node.lineno)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = ast.unparse(node.func)
        self._env_or_config(node, func)
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if func.rsplit(".", 1)[-1] in ("finfo", "iinfo"):
            self.add("dtype", func.rsplit(".", 1)[-1], ast.unparse(node), node.lineno)
        elif method in _CASTS and (node.args or node.keywords or method != "to"):
            self.add("dtype", f".{method}()", ast.unparse(node), node.lineno)
        elif method in _LAYOUT or func.rsplit(".", 1)[-1] in _LAYOUT - {"t", "T", "mT"}:
            self.add("layout", func.rsplit(".", 1)[-1], ast.unparse(node), node.lineno)
        for keyword in node.keywords:
            if keyword.arg in _DTYPE_ARGS:
                self.add("dtype", f"{keyword.arg}={ast.unparse(keyword.value)}",
                         ast.unparse(node), node.lineno)
        name = func.removeprefix("self.")
        own = self.function.name
        if name != own and (name in self.module.functions or name in self.module.classes or
                            name in self.module.imported or
                            (func.startswith("self.") and name in self.methods)):
            self.add("helper", name, ast.unparse(node), node.lineno)
        elif method and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.value.id in self.params \
                and node.func.value.id in CONTEXT_NAMES and \
                method not in _LAYOUT | _CASTS | _PLAIN_METHODS:
            self.add("helper", func, ast.unparse(node), node.lineno)
        self.generic_visit(node)

    def _env_or_config(self, node: ast.Call, func: str) -> None:
        first = node.args[0] if node.args else None
        if func in ("os.environ.get", "os.getenv", "environ.get", "getenv") and first:
            self.add("env", _const(first), ast.unparse(node), node.lineno)
        elif func == "getattr" and len(node.args) >= 2 and \
                ast.unparse(node.args[0]).split(".")[-1] in CONFIG_NAMES:
            self.add("config", f"{ast.unparse(node.args[0]).split('.')[-1]}."
                     f"{_const(node.args[1])}", ast.unparse(node), node.lineno)
        elif isinstance(node.func, ast.Attribute) and node.func.attr == "get" and first and \
                isinstance(node.func.value, ast.Name) and _is_config(node.func.value.id):
            default = f", default {ast.unparse(node.args[1])}" if len(node.args) > 1 else ""
            self.add("config", f"{node.func.value.id}[{_const(first)}]{default}",
                     ast.unparse(node), node.lineno)


def python_surface(text: str, parts: list[str], anchor: Anchor
                   ) -> tuple[str, list[SurfaceItem], set[str]] | None:
    """The definition's anchor, its items and its same-module users (see the module
    docstring), or None when ``parts`` names nothing in ``text``."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        logger.warning("cannot parse: %s", exc)
        return None
    node = _find(tree, parts)
    if node is None:
        return None
    module = _Module(tree, text.splitlines())
    if isinstance(node, ast.ClassDef):
        functions = [n for n in node.body if isinstance(n, _Function)]
        methods = {n.name for n in functions}
    else:
        functions, methods = [node], set()
    items = [SurfaceItem(kind="function", name=".".join(parts), detail=_signature(node),
                         anchor=anchor(node.lineno))]
    for function in functions:
        prefix = f"{function.name}: " if isinstance(node, ast.ClassDef) else ""
        items += _Visitor(function, module, anchor, methods, prefix).run()
    return anchor(node.lineno), items, module.callers_of(node.name)
