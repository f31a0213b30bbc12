"""The import contract of ``portwright/``: no module imports itself back through others,
and each room imports only the rooms below it (dependencies point inward, as
``docs/architecture.md`` draws them).

The graph is read from the source with :mod:`ast`: every ``import`` counts, at the top of
a module, inside a function (a deferred import still ties the two modules together) and
under ``TYPE_CHECKING``. ``from package import submodule`` counts as an import of the
submodule only, as Python resolves it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import portwright

PACKAGE = Path(portwright.__file__).resolve().parent

FOUNDATION = frozenset({"portwright", "errors", "values", "globs", "safefs", "environment",
                        "config_errors", "config", "config_pr", "pathkinds", "protected",
                        "redact"})
"""Plain models and helpers every room may use; they import only one another."""

LAYERS: dict[str, frozenset[str]] = {
    "prompts": FOUNDATION,
    "vcs": FOUNDATION,
    "runs": FOUNDATION,
    "sandboxes": FOUNDATION | {"vcs"},
    "rules": FOUNDATION | {"vcs"},
    "project": FOUNDATION | {"vcs", "rules", "runs"},
    "evidence": FOUNDATION | {"vcs", "project"},
    "parity": FOUNDATION | {"vcs", "project", "evidence"},
    "gates": FOUNDATION | {"vcs", "rules", "runs", "sandboxes", "project", "evidence", "parity"},
    "agents": FOUNDATION | {"vcs", "rules", "sandboxes", "evidence", "gates", "prompts"},
    "workflows": FOUNDATION | {"vcs", "rules", "runs", "sandboxes", "project", "evidence",
                               "parity", "gates", "agents"},
    "eval": FOUNDATION | {"vcs", "rules", "runs", "sandboxes", "project", "evidence",
                          "parity", "gates", "agents", "prompts", "workflows"},
}
"""Room → the rooms it may import (besides itself). ``cli``, ``dist``, ``web`` and the
commands ``doctor`` and ``scaffold`` are entry points: they may import any room, and no
room imports them."""
ENTRY_POINTS = frozenset({"cli", "dist", "web", "doctor", "scaffold", "__main__"})


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["portwright", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
              known: dict[str, Path]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            here = module.split(".") if is_package else module.split(".")[:-1]
            here = here[:len(here) - (node.level - 1)]
            base = ".".join([*here, *([base] if base else [])])
        names = []
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            names.append(sub if sub in known else base)
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            yield name


def import_graph() -> dict[str, set[str]]:
    """Module → the portwright modules it imports, wherever in it the import is."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                edges.update(_imported(node, module, path.name == "__init__.py", known))
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "portwright"


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_rooms_import_inward() -> None:
    wrong: list[str] = []
    for module, targets in sorted(import_graph().items()):
        source = room(module)
        for target in sorted(targets):
            into = room(target)
            if into == source or source in ENTRY_POINTS:
                continue
            allowed = FOUNDATION if source in FOUNDATION else LAYERS.get(source)
            if allowed is None:
                wrong.append(f"{module}: room {source!r} is not in the contract")
            elif into not in allowed:
                wrong.append(f"{module} imports {target}: {source} may not import {into}")
    assert wrong == []


def test_every_room_is_in_the_contract() -> None:
    rooms = {room(m) for m in modules()}
    assert rooms <= FOUNDATION | set(LAYERS) | ENTRY_POINTS


def test_the_checker_sees_a_cycle_and_a_deferred_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    known = {"portwright.x": Path("x.py"), "portwright.y": Path("y.py"),
             "portwright.pkg": Path("pkg/__init__.py"), "portwright.pkg.sub": Path("sub.py")}
    tree = ast.parse("def f():\n    from portwright.y import thing\n"
                     "from portwright.pkg import sub\n")
    found = {name for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
             for name in _imported(node, "portwright.x", False, known)}
    assert found == {"portwright.y", "portwright.pkg.sub"}
