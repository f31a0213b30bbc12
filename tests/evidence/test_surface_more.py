"""Surface enumeration: TypeScript, methods, and a clear error without a grammar."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest

from portwright.errors import UsageError
from portwright.evidence import treesitter
from portwright.evidence.surface import enumerate_surface
from tests.evidence.conftest import grammar_or_skip

TS = """export class Resizer {
  resize(width: number, height?: number, mode: "fit" | "fill" = "fit"): number {
    if (mode === "fill") {
      throw new RangeError("fill is not supported");
    }
    return height ?? width;
  }
}
"""
PY = """class Norm:
    def __init__(self, dim, eps=1e-6):
        self.dim = dim

    def forward(self, x, *, mode="rms"):
        if mode == "rms":
            return x
        if self.training:
            return -x
        raise NotImplementedError(mode)
"""


@pytest.fixture
def upstream(make_repo: Any) -> Any:
    repo = make_repo("upstream")
    test = 'it("resizes", () => new Resizer().resize(1));\n'
    unit = ("import unittest\nfrom pkg.norm import Norm\n\n"
            "class NormTests(unittest.TestCase):\n"
            "    def test_forward(self):\n        Norm(2).forward(1)\n")
    repo.commit("samples", {"src/resize.ts": TS, "pkg/norm.py": PY, "test/resize.test.ts": test,
                            "tests/test_unit.py": unit})
    return repo


def test_typescript_method(upstream: Any) -> None:
    grammar_or_skip("typescript")
    report = enumerate_surface(upstream.path, "Resizer.resize", "HEAD")
    assert report.language == "typescript"
    params = {i.name: i.detail for i in report.of_kind("parameter")}
    assert params == {"width": "required; annotation=number",
                      "height": "optional; annotation=number",
                      "mode": 'default="fit"; annotation="fit" | "fill"'}
    assert [(i.name, i.anchor.split("@")[0]) for i in report.of_kind("throw")] == [
        ("RangeError", "src/resize.ts:4")]
    assert [i.detail for i in report.of_kind("branch")] == [
        'mode === "fill"', "height ?? width"]  # an error path, and a default
    assert [i.name for i in report.of_kind("test")] == ["resizes"]


def test_python_method_and_class(upstream: Any) -> None:
    forward = enumerate_surface(upstream.path, "Norm.forward", "HEAD")
    assert {(i.kind, i.name) for i in forward.items} >= {
        ("parameter", "x"), ("parameter", "mode"), ("branch", "mode"),
        ("branch", "self.training"), ("raise", "NotImplementedError")}
    assert "self" not in {i.name for i in forward.of_kind("parameter")}
    assert [i.name for i in forward.of_kind("test")] == [
        "tests/test_unit.py::NormTests::test_forward"]
    cls = enumerate_surface(upstream.path, "Norm", "HEAD")  # a class: all its methods
    assert {i.name: i.detail for i in cls.of_kind("parameter")} == {
        "__init__: dim": "required", "__init__: eps": "default=1e-06",
        "forward: x": "required", "forward: mode": "keyword-only; default='rms'"}
    assert {i.detail for i in cls.of_kind("branch")} >= {"mode == 'rms'", "self.training"}
    assert not cls.of_kind("guard")  # returning a value is a mode, not a guard


def test_missing_grammar_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = importlib.import_module

    def no_grammar(name: str, package: str | None = None) -> ModuleType:
        if name == "tree_sitter_javascript":
            raise ImportError(name)
        return real_import(name, package)

    import tree_sitter_language_pack

    def offline(language: str) -> Any:
        raise RuntimeError("Download error: no network")

    monkeypatch.setattr(importlib, "import_module", no_grammar)
    monkeypatch.setattr(tree_sitter_language_pack, "get_parser", offline)
    treesitter.parser.cache_clear()
    try:
        with pytest.raises(UsageError, match="no tree-sitter grammar for javascript") as info:
            treesitter.parser("javascript")
        assert info.value.fix is not None
        assert "pip install tree-sitter-javascript" in info.value.fix
    finally:
        treesitter.parser.cache_clear()


def test_arrow_function(make_repo: Any) -> None:
    grammar_or_skip("javascript")
    repo = make_repo("arrows")
    repo.commit("arrow", {"lib/window.mjs": (
        "export const slidingWindow = (xs, size = 3, { step = 1 } = {}) => {\n"
        "  if (size < 1) throw new RangeError('size must be at least 1');\n"
        "  return xs.length > size ? xs.slice(0, size) : xs;\n"
        "};\n")})
    report = enumerate_surface(repo.path, "slidingWindow", "HEAD")
    assert report.definition.startswith("lib/window.mjs:1@")
    assert {i.name: i.detail for i in report.of_kind("parameter")} == {
        "xs": "required", "size": "default=3", "step": "option; default=1"}
    assert [i.name for i in report.of_kind("throw")] == ["RangeError"]
    assert [i.detail for i in report.of_kind("branch")] == [
        "size < 1", "xs.length > size", "else: not (xs.length > size)"]
