"""Surface enumeration against hand-written expected item lists (recall must be 100 %)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from portwright.errors import UsageError
from portwright.evidence.surface import SurfaceReport, enumerate_surface
from tests.evidence.conftest import grammar_or_skip

DATA = Path(__file__).parent / "data" / "surface"

# (kind, name, line) — written by reading the sources, not by running the enumerator.
PYTHON_EXPECTED = {
    ("function", "layer_norm", 19),
    ("parameter", "x", 19),
    ("parameter", "weight", 19),
    ("parameter", "bias", 19),
    ("parameter", "eps", 19),
    ("global", "DEFAULT_EPS", 19),       # the module constant eps defaults to
    ("parameter", "mode", 19),
    ("parameter", "dtype", 20),
    ("parameter", "inplace", 20),
    ("parameter", "config", 20),
    ("dtype", "float32", 20),            # the default dtype
    ("branch", "mode", 22),              # mode must be affine or plain
    ("raise", "ValueError", 23),         # unknown mode
    ("branch", "inplace,x", 24),         # float16 upcast unless inplace
    ("dtype", "float16", 24),
    ("dtype", ".astype()", 25),          # the cast
    ("dtype", "float32", 25),
    ("assert", "x.ndim >= 1", 26),
    ("helper", "_check_shape", 27),
    ("env", "STATS_STRICT", 28),
    ("branch", "eps", 28),
    ("raise", "ValueError", 29),         # eps must be positive
    ("config", "config.norm_eps", 30),
    ("branch", "mode", 34),              # affine mode
    ("branch", "weight", 35),
    ("raise", "TypeError", 36),          # affine mode needs a weight
    ("branch", "bias", 37),
    ("branch", "not bias", 37),          # the else arm
    ("branch", "dtype", 38),
    ("branch", "not dtype", 38),
    ("dtype", "bfloat16", 38),
    ("helper", "_promote", 38),
    ("test", "tests/test_norm.py::test_layer_norm_modes", 9),
    ("parametrize", "tests/test_norm.py::test_layer_norm_modes[mode]", 7),
    ("parametrize", "tests/test_norm.py::test_layer_norm_modes[dtype]", 8),
    ("test", "tests/test_norm.py::test_unknown_mode_raises", 14),
    ("test", "tests/test_norm.py::TestLayerNorm::test_eps_is_used", 20),
}

JS_EXPECTED = {
    ("function", "computeScaleFactor", 7),
    ("parameter", "width", 7),
    ("parameter", "height", 7),
    ("parameter", "mode", 7),
    ("parameter", "minScale", 7),
    ("parameter", "round", 7),
    ("parameter", "...extra", 7),
    ("helper", "checkFinite", 8),
    ("branch", "width", 9),          # width <= 0 throws
    ("throw", "RangeError", 10),
    ("branch", "mode", 13),          # switch (mode)
    ("branch", "mode", 14),          # case "fit"
    ("branch", "mode", 17),          # case "fill"
    ("branch", "mode", 20),          # default
    ("throw", "Error", 21),          # unknown mode
    ("branch", "minScale", 23),
    ("branch", "not minScale", 23),  # the else arm
    ("branch", "round", 24),
    ("branch", "not round", 24),
    ("test", "computeScaleFactor > fits by default", 4),
    ("test", "computeScaleFactor > rejects a zero width", 7),
    ("test", "computeScaleFactor > modes > fill", 11),
}

CPP_SOURCE = """#include <stdexcept>
namespace img {
double Scaler::scale(int width, int height, const char* mode = "fit") const {
  if (width <= 0) throw std::invalid_argument("width must be positive");
  return mode[0] == 'f' ? 1.0 : width / static_cast<double>(height);
}
}
"""
CPP_TEST = """#include <gtest/gtest.h>
TEST(Scaler, RejectsZeroWidth) {
  EXPECT_THROW(img::Scaler().scale(0, 1), std::invalid_argument);
}
TEST(Other, Unrelated) { EXPECT_EQ(1, 1); }
"""


@pytest.fixture
def upstream(make_repo: Any) -> Any:
    repo = make_repo("upstream")
    repo.commit("surface samples", {
        "stats/norm.py": (DATA / "norm.py.txt").read_text(),
        "tests/test_norm.py": (DATA / "test_norm.py.txt").read_text(),
        "src/scale.js": (DATA / "scale.js.txt").read_text(),
        "test/scale.test.js": (DATA / "scale.test.js.txt").read_text(),
        "src/scaler.cpp": CPP_SOURCE,
        "tests/scaler_test.cpp": CPP_TEST,
    })
    return repo


def _found(report: SurfaceReport) -> set[tuple[str, str, int]]:
    out = set()
    for item in report.items:
        path_line, sha = item.anchor.rsplit("@", 1)
        assert sha == report.rev
        out.add((item.kind, item.name, int(path_line.rsplit(":", 1)[1])))
    return out


def test_python_surface_recall(upstream: Any) -> None:
    report = enumerate_surface(upstream.path, "layer_norm", "HEAD")
    assert report.language == "python"
    assert report.definition == f"stats/norm.py:19@{upstream.head()}"
    missing = PYTHON_EXPECTED - _found(report)
    assert not missing, f"recall {1 - len(missing) / len(PYTHON_EXPECTED):.0%}: {missing}"
    assert _found(report) == PYTHON_EXPECTED  # and nothing invented
    params = {i.name: i.detail for i in report.of_kind("parameter")}
    assert params["mode"] == "default='affine'"
    assert params["x"] == "required"
    assert params["inplace"] == "keyword-only; default=False; annotation=bool"
    (modes,) = [i for i in report.of_kind("parametrize") if i.name.endswith("[mode]")]
    assert modes.detail == "2 cases: ['affine', 'plain']"
    assert "test_other" not in str(report.items)
    assert "test_unrelated" not in str(report.items)


def test_js_surface_recall(upstream: Any) -> None:
    grammar_or_skip("javascript")
    report = enumerate_surface(upstream.path, "computeScaleFactor", "HEAD")
    assert report.language == "javascript"
    missing = JS_EXPECTED - _found(report)
    assert not missing, f"recall {1 - len(missing) / len(JS_EXPECTED):.0%}: {missing}"
    assert _found(report) == JS_EXPECTED
    params = {i.name: i.detail for i in report.of_kind("parameter")}
    assert params == {"width": "required", "height": "default=width",
                      "mode": 'option; default="fit"', "minScale": "option; default=0.1",
                      "round": "option", "...extra": "variadic"}


def test_cpp_surface(upstream: Any) -> None:
    grammar_or_skip("cpp")
    report = enumerate_surface(upstream.path, "Scaler::scale", "HEAD")
    assert report.language == "cpp"
    assert _found(report) == {
        ("function", "Scaler.scale", 3),
        ("parameter", "width", 3), ("parameter", "height", 3), ("parameter", "mode", 3),
        ("branch", "width", 4), ("throw", "std::invalid_argument", 4),
        ("branch", "mode", 5), ("branch", "not mode", 5),
        ("test", "Scaler.RejectsZeroWidth", 2),
    }
    params = {i.name: i.detail for i in report.of_kind("parameter")}
    assert params["mode"] == 'default="fit"; type=char'


def test_surface_at_an_older_revision_and_by_path(upstream: Any) -> None:
    first = upstream.head()
    upstream.commit("drop the strict mode", {"stats/norm.py": (DATA / "norm.py.txt").read_text()
                                             .replace('os.environ.get("STATS_STRICT") == "1"',
                                                      "False")})
    now = enumerate_surface(upstream.path, "stats/norm.py:layer_norm", "HEAD")
    before = enumerate_surface(upstream.path, "layer_norm", first)
    assert not now.of_kind("env")
    assert [i.name for i in before.of_kind("env")] == ["STATS_STRICT"]
    assert before.rev == first


def test_unknown_symbol_is_a_clear_error(upstream: Any) -> None:
    with pytest.raises(UsageError, match="no definition of 'nope'") as info:
        enumerate_surface(upstream.path, "nope", "HEAD")
    assert info.value.fix is not None
    assert "--at" in info.value.fix
