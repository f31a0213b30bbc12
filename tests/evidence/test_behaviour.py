"""Changes with no behaviour: comments, formatting, module syntax, renamed locals."""

from __future__ import annotations

import pytest

from portwright.evidence.behaviour import change_kind, exported
from portwright.evidence.lexer import lex, string_value

OLD_JS = """'use strict';

var encode = require('mdurl/encode');
var entities = require('entities');

// Scale a value.
function scale(value, factor) {
  var i, result = [];
  for (i = 0; i < value.length; i++) {
    result.push(entities.decodeHTML(value[i]) * factor);
  }
  return result.join("|" + ',');
}

module.exports = scale;
"""


@pytest.mark.parametrize(("new", "why"), [
    (OLD_JS.replace("// Scale a value.", "/* Scale a value, in place. */"),
     "comments, formatting or module syntax"),
    (OLD_JS.replace(";\n", "\n"), "comments, formatting or module syntax"),
    (OLD_JS.replace("  return", "\n\n      return"), "comments, formatting or module syntax"),
    ("import encode from 'mdurl/encode.js'\nimport { decodeHTML } from 'entities'\n\n"
     "function scale (value, factor) {\n  const result = []\n"
     "  for (let i = 0; i < value.length; i++) {\n"
     "    result.push(decodeHTML(value[i]) * factor)\n  }\n"
     "  return result.join('|,')\n}\n\nexport default scale\n",
     "comments, formatting or module syntax"),
    (OLD_JS.replace("factor", "by"), "renamed local names"),
])
def test_no_behaviour(new: str, why: str) -> None:
    assert change_kind("lib/scale.js", OLD_JS, new) == why


@pytest.mark.parametrize("new", [
    OLD_JS.replace("* factor", "* factor + 1"),
    OLD_JS.replace("i < value.length", "i <= value.length"),
    OLD_JS.replace("'|'", "'/'").replace('"|"', '"/"'),
    OLD_JS.replace("function scale(value, factor)", "function resize(value, factor)")
    .replace("module.exports = scale", "module.exports = resize"),
    OLD_JS + "module.exports.extra = scale;\n",  # a new export is API
])
def test_behaviour(new: str) -> None:
    assert change_kind("lib/scale.js", OLD_JS, new) is None


def test_python_docstrings_and_comments() -> None:
    old = 'def mean(xs):\n    """Mean."""\n    # sum first\n    return sum(xs) / len(xs)\n'
    new = ('def mean(xs):\n    """The arithmetic mean of xs."""\n'
           '    return sum(xs) / len(xs)  # no check for empty input\n')
    assert change_kind("stats.py", old, new) == "comments, formatting or module syntax"
    assert change_kind("stats.py", old, old.replace("len(xs)", "max(len(xs), 1)")) is None


def test_empty_files_and_shebangs() -> None:
    assert change_kind("rollup", None, "") == "empty file"
    cli = "#!/usr/bin/env node\nvar x = 1;\nconsole.log(x);\n"
    assert change_kind("bin/tool", cli, cli.replace("env node", "env -S node -r esm")) == \
        "comments, formatting or module syntax"


def test_exports_and_literals() -> None:
    assert exported("a.js", "export { default as Node } from './node.js'\nexport const k = 1\n") \
        == {"Node", "k"}
    assert exported("a.js", "module.exports.Parser = require('./blocks');\n") == {"Parser"}
    js = lex("x = '\\\\d' + \"it's\" + /a\\/b/g;", "c", regex_literals=True)
    assert [string_value(t) for t in js if t.kind in ("string", "regex")] == \
        ["\\d", "it's", "a\\/b"]
    py = lex("x = r'\\d' + '\\\\d'", "python")
    assert [string_value(t) for t in py if t.kind == "string"] == ["\\d", "\\d"]
