"""The upstream names a task's row lists: what the change defines, else what it changes."""

from __future__ import annotations

from pathlib import Path

from portwright.eval.harness import change_names
from portwright.evidence.signals import touched_definitions
from tests.conftest import GitRepo

JS = """function mean(xs) {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

function sub(a, b) {
  if (a < b) {
    return -(b - a);
  }
  return a - b;
}

module.exports = { mean, sub };
"""


def test_names_defined_on_the_lines_come_first_and_keywords_never() -> None:
    assert touched_definitions("src/calc.js", JS, {5, 6, 7, 8, 9, 10}) == ["sub"]
    # no definition on the lines: the one each line belongs to
    assert touched_definitions("src/calc.js", JS, {2, 9}) == ["mean", "sub"]
    assert touched_definitions("src/calc.js", JS, {6}) == ["sub"]  # not `if`
    assert touched_definitions("README.md", "# calc\n", {1}) == []


def test_change_names_reads_the_source_files_of_the_commits(tmp_path: Path) -> None:
    up = GitRepo(tmp_path / "up")
    up.commit("mean", {"src/calc.js": JS.split("function sub")[0]})
    added = up.commit("sub", {"src/calc.js": JS, "test/calc.test.js": "function t() {}\n",
                              "README.md": "sub\n"})
    changed = up.commit("sub: negatives", {"src/calc.js": JS.replace("-(b - a)", "a - b")})
    assert change_names(up.path, [added]) == ["sub"]
    assert change_names(up.path, [changed]) == ["sub"]
    assert change_names(up.path, [added, changed]) == ["sub"]
