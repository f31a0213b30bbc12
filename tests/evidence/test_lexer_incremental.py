"""Lexing a text against an earlier version of it gives exactly the tokens of a full lex."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from portwright.evidence import lexer
from portwright.evidence.lexer import _Base, _scan

_PIECES = [
    "x = a / b / c;", "re = /ab+c/g;", "if (x) /y/.test(s)", "return /[/]/;", "a++ / 2",
    "/* open", "close */", "// line comment", "s = 'it''s'", 's = "q\\"x"', "`tpl", "${x}`",
    "''' doc", "end '''", '"""', "# py comment", "x = \\", "y", "def f(a, b=1):", "    pass",
    "const o = {a: 1};", "#!/usr/bin/env node", "", "   ", "0x1f + .5e3", "'unterminated",
]


@st.composite
def _versions(draw: st.DrawFn) -> tuple[str, str]:
    lines = draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=30))
    old = "\n".join(lines) + draw(st.sampled_from(["", "\n"]))
    new_lines = list(lines)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(new_lines)))
        action = draw(st.sampled_from(["insert", "delete", "replace", "chars"]))
        piece = draw(st.sampled_from(_PIECES))
        if action == "insert" or not new_lines:
            new_lines.insert(at, piece)
        elif action == "delete":
            del new_lines[min(at, len(new_lines) - 1)]
        elif action == "replace":
            new_lines[min(at, len(new_lines) - 1)] = piece
        else:
            index = min(at, len(new_lines) - 1)
            cut = draw(st.integers(0, len(new_lines[index])))
            new_lines[index] = new_lines[index][:cut] + draw(st.sampled_from(
                ["/", "*/", "/*", "'", '"', "`", "\\", "#", "'''", "x"])) + new_lines[index][cut:]
    return old, "\n".join(new_lines) + draw(st.sampled_from(["", "\n"]))


@settings(max_examples=400, deadline=None)
@given(_versions(), st.sampled_from([("c", True), ("c", False), ("python", False)]))
def test_lexing_against_an_earlier_version_equals_a_full_lex(
        versions: tuple[str, str], mode: tuple[lexer.Family, bool]) -> None:
    old, new = versions
    family, regex = mode
    old_tokens = _scan(old, family, regex, None)
    assert _scan(new, family, regex, _Base(old, old_tokens, new)) == _scan(new, family, regex, None)


def test_a_small_edit_reuses_the_earlier_tokens() -> None:
    old = "".join(f"const v{i} = '{i}'; // note\n" for i in range(2000))
    new = old.replace("const v1000 = '1000';", "const v1000 = '1000' + extra;\nlet w = 1;")
    lexer._lex.cache_clear()
    lexer._recent.clear()
    full_old = lexer.lex(old, "c", regex_literals=True)
    base = _Base.nearest(new, "c", True)
    assert base is not None
    assert base.first_changed_line == 1001
    assert base.shift == 1
    assert lexer.lex(new, "c", regex_literals=True) == list(_scan(new, "c", True, None))
    assert len(full_old) == 2000 * 7
