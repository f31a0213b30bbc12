"""Surface enumeration of what is no named function: module-level values (a table, a regular
expression, a string built by concatenation, a C table, a ``#define``), an anonymous
``module.exports``, a prototype or object-literal method, and the rules of a re2c file."""

from __future__ import annotations

from typing import Any

import pytest

from portwright.evidence.surface import enumerate_surface
from tests.evidence.conftest import grammar_or_skip

BLOCKS = """'use strict';

var reHtmlBlockOpen = [
    /./, // dummy for 0
    /^<(?:script|pre)(?:\\s|>|$)/i,
    /^<![A-Za-z]/
];

var reSetextHeadingLine = /^(?:=+|-+)[ \\t]*$/;

var DECLARATION = "<![A-Za-z]+" + "[^>]*>";

var reFence = /^`{3,}|^~{3,}/;

function parse(line) {
    var isEscaped = (line === 1);
    return reHtmlBlockOpen[2].test(line) || isEscaped;
}

exports.parse = parse;
exports.reHeading = /^#{1,6}/;
"""
RULES = """var _rules = [
  [ 'table',      require('./rules_block/table'),      [ 'paragraph', 'reference' ] ],
  [ 'html_block', require('./rules_block/html_block'), [ 'paragraph', 'reference' ] ],
  [ 'paragraph',  require('./rules_block/paragraph') ]
];

function ParserBlock() {
  var x = _rules.length;
  return x;
}
"""
OTHER_RULES = "var _rules = [ [ 'text', require('./rules_inline/text') ] ];\n"
TAGS = """'use strict';

module.exports = [
  'address',
  'menuitem',
  'nav'
];
"""
RE = """'use strict';

module.exports = function (opts) {
  var re = {};
  opts = opts || {};

  re.src_Any = 'any';

  re.src_path =
    '(?:' +
      ',(?!' + re.src_Any + '|$)|' +
      (opts['---'] ? '\\\\-(?!--)|' : '\\\\-+|') +
    ')';

  return re;
};
"""
RENDERER = """function Renderer() { this.rules = {}; }

Renderer.prototype.renderInlineAsText = function (tokens, options, env) {
  var result = '';
  for (var i = 0; i < tokens.length; i++) {
    if (tokens[i].type === 'text') {
      result += tokens[i].content;
    } else if (tokens[i].type === 'softbreak') {
      result += '\\n';
    }
  }
  return result;
};

var default_rules = {
  code_inline: function (tokens, idx) {
    return tokens[idx].content;
  },
  fence(tokens, idx) { return ''; }
};

module.exports = Renderer;
"""
SCANNERS = """#include "scanners.h"

#define MAX_TAG 32

static const char *const block_tags[] = {"address", "nav", "ul"};

bufsize_t _scan_at(bufsize_t (*scanner)(const unsigned char *), cmark_chunk *c,
                   bufsize_t offset) {
  bufsize_t res;
  unsigned char *ptr = (unsigned char *)c->data;
  res = scanner(ptr + offset);
  return res;
}

/*!re2c
  re2c:define:YYCTYPE  = "unsigned char";

  tagname = [A-Za-z][A-Za-z0-9-]*;

  blocktagname = 'address'|'article'|'nav'|'ul';

  attributename = [a-zA-Z_:][a-zA-Z0-9:._-]*;
*/
"""


@pytest.fixture
def upstream(make_repo: Any) -> Any:
    repo = make_repo("upstream")
    repo.commit("samples", {
        "lib/blocks.js": BLOCKS, "lib/parser_block.js": RULES,
        "lib/parser_inline.js": OTHER_RULES, "lib/common/html_blocks.js": TAGS,
        "lib/re.js": RE, "lib/renderer.js": RENDERER, "src/scanners.re": SCANNERS,
        "src/tags.c": SCANNERS.split("bufsize_t _scan_at")[0],
        "test/regression.txt": "a declaration: <!doctype html>\n",
    })
    return repo


def _items(report: Any) -> list[tuple[str, str, str, str]]:
    return [(i.kind, i.name, i.detail, i.anchor.split("@")[0]) for i in report.items
            if i.kind not in ("test", "fixture")]


def test_a_table_of_regular_expressions_is_a_definition_with_its_entries(upstream: Any) -> None:
    grammar_or_skip("javascript")
    report = enumerate_surface(upstream.path, "reHtmlBlockOpen", "HEAD")
    assert report.definition.split("@")[0] == "lib/blocks.js:3"
    assert _items(report)[1:] == [
        ("entry", "reHtmlBlockOpen[0] = /./", "/./", "lib/blocks.js:4"),
        ("entry", "reHtmlBlockOpen[1] = /^<(?:script|pre)(?:\\s|>|$)/i",
         "/^<(?:script|pre)(?:\\s|>|$)/i", "lib/blocks.js:5"),
        ("entry", "reHtmlBlockOpen[2] = /^<![A-Za-z]/", "/^<![A-Za-z]/", "lib/blocks.js:6"),
    ]
    assert report.items[0].kind == "value"
    # a reader of the table is its user: no more than the value is asked for
    assert report.items[0].name == "reHtmlBlockOpen"


def test_a_regular_expression_a_concatenation_and_an_export_are_definitions(
        upstream: Any) -> None:
    grammar_or_skip("javascript")
    setext = enumerate_surface(upstream.path, "reSetextHeadingLine", "HEAD")
    assert _items(setext) == [("value", "reSetextHeadingLine",
                               "reSetextHeadingLine = /^(?:=+|-+)[ \\t]*$/", "lib/blocks.js:9")]
    declaration = enumerate_surface(upstream.path, "DECLARATION", "HEAD")
    assert _items(declaration)[1:] == [
        ("entry", 'DECLARATION part 0 = "<![A-Za-z]+"', '"<![A-Za-z]+"', "lib/blocks.js:11"),
        ("entry", 'DECLARATION part 1 = "[^>]*>"', '"[^>]*>"', "lib/blocks.js:11")]
    assert [i.detail for i in declaration.of_kind("fixture")] == [
        "data file naming DECLARATION"]
    fence = enumerate_surface(upstream.path, "reFence", "HEAD")
    assert [(i.name, i.detail) for i in fence.of_kind("entry")] == [
        ("reFence alternative 0 = ^`{3,}", "^`{3,}"),
        ("reFence alternative 1 = ^~{3,}", "^~{3,}")]
    exported = enumerate_surface(upstream.path, "reHeading", "HEAD")
    assert _items(exported) == [("value", "reHeading", "exports.reHeading = /^#{1,6}/",
                                 "lib/blocks.js:21")]


def test_a_local_variable_is_no_definition(upstream: Any) -> None:
    grammar_or_skip("javascript")
    with pytest.raises(Exception, match="no definition of 'isEscaped'"):
        enumerate_surface(upstream.path, "isEscaped", "HEAD")
    with pytest.raises(Exception, match="no definition of 'ptr'"):
        enumerate_surface(upstream.path, "ptr", "HEAD")


def test_a_table_defined_in_two_files_is_named_with_its_file(upstream: Any) -> None:
    grammar_or_skip("javascript")
    with pytest.raises(Exception, match="defined in 2 places"):
        enumerate_surface(upstream.path, "_rules", "HEAD")
    report = enumerate_surface(upstream.path, "lib/parser_block.js::_rules", "HEAD")
    # a row of a table is named by its first cell
    assert [(i.name, i.anchor.split("@")[0]) for i in report.of_kind("entry")] == [
        ("_rules[0] 'table'", "lib/parser_block.js:2"),
        ("_rules[1] 'html_block'", "lib/parser_block.js:3"),
        ("_rules[2] 'paragraph'", "lib/parser_block.js:4")]
    assert report.of_kind("entry")[1].detail.startswith("[ 'html_block',")


def test_an_anonymous_module_export_is_named_by_its_file(upstream: Any) -> None:
    grammar_or_skip("javascript")
    tags = enumerate_surface(upstream.path, "html_blocks", "HEAD")
    first = tags.items[0]
    assert (first.kind, first.name, first.anchor.split("@")[0]) == (
        "value", "html_blocks", "lib/common/html_blocks.js:3")
    assert "anonymous module export of lib/common/html_blocks.js" in first.detail
    assert [(i.name, i.detail) for i in tags.of_kind("entry")] == [
        ("html_blocks[0] = 'address'", "'address'"),
        ("html_blocks[1] = 'menuitem'", "'menuitem'"), ("html_blocks[2] = 'nav'", "'nav'")]

    re_ = enumerate_surface(upstream.path, "lib/re.js::re", "HEAD")
    assert (re_.items[0].kind, re_.items[0].name) == ("function", "re")
    assert "anonymous module export of lib/re.js, named re after its file" in \
        re_.items[0].detail
    assert [(i.name, i.anchor.split("@")[0]) for i in re_.of_kind("parameter")] == [
        ("opts", "lib/re.js:3")]
    # the properties of the object it builds and returns, where each is set
    assert [(i.name, i.anchor.split("@")[0]) for i in re_.of_kind("entry")] == [
        ("re.src_Any", "lib/re.js:7"), ("re.src_path", "lib/re.js:9")]
    assert any(i.detail == "opts['---']" for i in re_.of_kind("branch"))
    assert enumerate_surface(upstream.path, "re", "HEAD").definition == re_.definition


def test_prototype_and_object_literal_methods_are_definitions(upstream: Any) -> None:
    grammar_or_skip("javascript")
    report = enumerate_surface(upstream.path, "renderInlineAsText", "HEAD")
    assert report.items[0].name == "Renderer.renderInlineAsText"
    assert report.definition.split("@")[0] == "lib/renderer.js:3"
    assert [i.name for i in report.of_kind("parameter")] == ["tokens", "options", "env"]
    assert [i.detail for i in report.of_kind("branch")][-2:] == [
        "tokens[i].type === 'text'", "tokens[i].type === 'softbreak'"]
    assert enumerate_surface(upstream.path, "Renderer.renderInlineAsText",
                             "HEAD").definition == report.definition
    code = enumerate_surface(upstream.path, "code_inline", "HEAD")
    assert code.items[0].name == "default_rules.code_inline"
    assert code.definition.split("@")[0] == "lib/renderer.js:16"
    fence = enumerate_surface(upstream.path, "default_rules.fence", "HEAD")
    assert fence.definition.split("@")[0] == "lib/renderer.js:19"


def test_c_tables_and_defines_and_re2c_rules(upstream: Any) -> None:
    grammar_or_skip("cpp")
    rule = enumerate_surface(upstream.path, "blocktagname", "HEAD")
    assert rule.language == "re2c"
    assert _items(rule) == [
        ("value", "blocktagname", "blocktagname = 'address'|'article'|'nav'|'ul';",
         "src/scanners.re:20"),
        *[("entry", f"blocktagname alternative {i} = {tag}", tag, "src/scanners.re:20")
          for i, tag in enumerate(["'address'", "'article'", "'nav'", "'ul'"])]]
    assert enumerate_surface(upstream.path, "tagname", "HEAD").definition.split("@")[0] == \
        "src/scanners.re:18"
    # the C of a re2c file is C: its functions are definitions too
    assert enumerate_surface(upstream.path, "src/scanners.re::_scan_at", "HEAD").items[0] \
        .kind == "function"
    table = enumerate_surface(upstream.path, "src/tags.c::block_tags", "HEAD")
    assert [(i.name, i.detail) for i in table.of_kind("entry")] == [
        ('block_tags[0] = "address"', '"address"'), ('block_tags[1] = "nav"', '"nav"'),
        ('block_tags[2] = "ul"', '"ul"')]
    define = enumerate_surface(upstream.path, "src/tags.c::MAX_TAG", "HEAD")
    assert _items(define) == [("value", "MAX_TAG", "#define MAX_TAG 32",
                               "src/tags.c:3")]


PY_CONSTANTS = '''import re

__all__ = ["BLOCK_TAGS"]

BLOCK_TAGS = [
    "address",
    "nav",
]
NAMES = BLOCK_TAGS
RE_FENCE = re.compile(r"^`{3,}|^~{3,}")
ENTITIES: dict[str, str] = {"amp": "&", "lt": "<"}
DECLARATION = "<![A-Za-z]+" + "[^>]*>"


def is_block(tag):
    local = [tag]
    return tag in BLOCK_TAGS and bool(local)
'''


def test_python_module_constants_are_definitions(make_repo: Any) -> None:
    repo = make_repo("upstream")
    repo.commit("constants", {"pkg/common.py": PY_CONSTANTS,
                              "tests/test_common.py": "from pkg.common import is_block\n\n"
                                                      "def test_nav():\n"
                                                      "    assert is_block('nav')\n"})
    tags = enumerate_surface(repo.path, "BLOCK_TAGS", "HEAD")
    assert tags.language == "python"
    assert _items(tags) == [
        ("value", "BLOCK_TAGS", 'BLOCK_TAGS = [ "address", "nav", ]', "pkg/common.py:5"),
        ("entry", 'BLOCK_TAGS[0] = "address"', '"address"', "pkg/common.py:6"),
        ("entry", 'BLOCK_TAGS[1] = "nav"', '"nav"', "pkg/common.py:7")]
    # a test of a function that reads it is a test of it
    assert [i.name for i in tags.of_kind("test")] == ["tests/test_common.py::test_nav"]
    fence = enumerate_surface(repo.path, "RE_FENCE", "HEAD")
    assert [(i.name, i.detail) for i in fence.of_kind("entry")] == [
        ("RE_FENCE alternative 0 = ^`{3,}", "^`{3,}"),
        ("RE_FENCE alternative 1 = ^~{3,}", "^~{3,}")]
    entities = enumerate_surface(repo.path, "ENTITIES", "HEAD")
    assert [i.name for i in entities.of_kind("entry")] == ['ENTITIES["amp"]',
                                                           'ENTITIES["lt"]']
    declaration = enumerate_surface(repo.path, "DECLARATION", "HEAD")
    assert [i.detail for i in declaration.of_kind("entry")] == ['"<![A-Za-z]+"', '"[^>]*>"']
    for name in ("local", "NAMES", "__all__"):  # a local, an alias, module plumbing
        with pytest.raises(Exception, match="no definition"):
            enumerate_surface(repo.path, name, "HEAD")


def test_exports_are_no_owners_and_re_exports_no_values(make_repo: Any) -> None:
    grammar_or_skip("javascript")
    repo = make_repo("upstream")
    repo.commit("rules", {
        "lib/rules_block/fence.js": "module.exports = function fence(state) {\n"
                                    "  return state.ok;\n};\n",
        "lib/renderer.js": "var default_rules = {};\n"
                           "default_rules.fence = function (tokens) { return ''; };\n",
        "lib/helpers/index.js": "exports.fence = require('../rules_block/fence');\n"
                                "exports.other = default_rules.fence;\n",
    })
    # the exported function's own name; a member of that name does not make it ambiguous,
    # and a re-export (`exports.fence = require(…)`) is no definition
    report = enumerate_surface(repo.path, "fence", "HEAD")
    assert report.items[0].name == "fence"
    assert report.definition.split("@")[0] == "lib/rules_block/fence.js:1"
    member = enumerate_surface(repo.path, "default_rules.fence", "HEAD")
    assert member.definition.split("@")[0] == "lib/renderer.js:2"
    with pytest.raises(Exception, match="no definition of 'other'"):
        enumerate_surface(repo.path, "other", "HEAD")
