"""A known upstream (JavaScript) and downstream (Python) pair for the evidence tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from portwright.config import PortwrightConfig, UpstreamConfig
from portwright.errors import UsageError

IRIS = "sepal_length,sepal_width,species\n5.1,3.5,setosa\n4.9,3.0,setosa\n"


@dataclass
class Pair:
    up: Any
    down: Any
    config: PortwrightConfig
    base: str
    commits: dict[str, str]


@pytest.fixture
def pair(make_repo: Any) -> Pair:
    up = make_repo("up")
    base = up.commit("initial", {
        "src/stats.js": ("export function mean(xs) {\n"
                         "  return xs.reduce((a, b) => a + b) / xs.length;\n}\n"),
        "README.md": "# stats\n",
    })
    commits = {
        "renamed": up.commit("add computeScaleFactor", {"src/scale.js": (
            "export function computeScaleFactor(width, height) {\n"
            "  if (width <= 0) throw new Error(\"width must be positive\");\n"
            "  return width / height;\n}\n")}),
        "fixture": up.commit("add the iris fixture", {"tests/fixtures/iris.csv": IRIS}),
        "docs": up.commit("docs: explain usage", {"docs/usage.md": "Call `mean(xs)`.\n",
                                                   "README.md": "# stats\n\nSee docs.\n"}),
        "partial": up.commit("add clampRange with tests", {
            "src/clamp.js": ("export function clampRange(value, low, high) {\n"
                             "  if (low > high)\n"
                             "    throw new RangeError(\"low must not exceed high\");\n"
                             "  return Math.min(Math.max(value, low), high);\n}\n"),
            "tests/clamp.test.js": ("import { clampRange } from \"../src/clamp.js\";\n"
                                    "it(\"clamps into the range\", () => {\n"
                                    "  expect(clampRange(5, 0, 3)).toBe(3);\n});\n")}),
        "reverted": up.commit("add weightedMedian", {"src/median.js": (
            "export function weightedMedian(values, weights) {\n"
            "  if (!weights.length) throw new Error(\"weights must not be empty\");\n"
            "  return values[0];\n}\n")}),
        "never": up.commit("add harmonicMean", {"src/harmonic.js": (
            "export function harmonicMean(xs) {\n"
            "  return xs.length / xs.reduce((a, b) => a + 1 / b, 0);\n}\n")}),
    }
    down = make_repo("down")
    down.commit("initial port", {"lib/stats.py": "def mean(xs):\n    return sum(xs) / len(xs)\n"})
    down.commit("port compute_scale_factor", {"lib/scale.py": (
        "def compute_scale_factor(width, height):\n"
        "    if width <= 0:\n        raise ValueError(\"width must be positive\")\n"
        "    return width / height\n")})
    down.commit("copy the iris fixture", {"tests/data/iris.csv": IRIS})
    down.commit("port clamp_range", {"lib/clamp.py": (
        "def clamp_range(value, low, high):\n    if low > high:\n"
        "        raise ValueError(\"low must not exceed high\")\n"
        "    return min(max(value, low), high)\n")})
    down.commit("port weighted_median", {"lib/median.py": (
        "def weighted_median(values, weights):\n    if not weights:\n"
        "        raise ValueError(\"weights must not be empty\")\n    return values[0]\n")})
    down.commit("Revert \"port weighted_median\"", remove=["lib/median.py"])
    config = PortwrightConfig(upstream=UpstreamConfig(source="../up", path_map={"src/": "lib/"}))
    return Pair(up=up, down=down, config=config, base=base, commits=commits)


def grammar_or_skip(language: str) -> None:
    """Skip, saying which package is missing, when no tree-sitter grammar for ``language``
    can be loaded (the grammar wheels are not installed and the language pack is offline)."""
    from portwright.evidence import treesitter

    try:
        treesitter.parser(language)
    except UsageError as exc:
        pytest.skip(f"no tree-sitter grammar for {language}: {exc.fix}")
