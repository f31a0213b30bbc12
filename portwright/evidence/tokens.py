"""What a piece of code names: identifiers, string literals and test-case blocks.

Language-agnostic and regex-based on purpose: it runs over diff lines, which no
parser accepts. Keywords of the common languages and very short names are not
*distinctive* and are dropped by :func:`distinctive`.

Public API:

- ``identifiers(text: str) -> list[str]``
- ``code_identifiers(text: str) -> list[str]`` — outside strings and comments
- ``string_literals(text: str) -> list[str]``
- ``test_blocks(text: str) -> list[str]`` — names of test cases a line declares
- ``distinctive(name: str) -> bool``
"""

from __future__ import annotations

import re

IDENT_RE = re.compile(r"(?<![A-Za-z0-9_$])[A-Za-z_$][A-Za-z0-9_$]*")
_STRING_RE = re.compile(r'"(?P<d>(?:[^"\\\n]|\\.)*)"'
                        r"|'(?P<s>(?:[^'\\\n]|\\.)*)'"
                        r"|`(?P<b>(?:[^`\\]|\\.)*)`")
"""A quoted string of any length, quotes paired from the left (a short string is matched too,
so its closing quote never opens a "string" that runs to the next one); the alternatives do
not overlap, so matching is linear."""
_TEST_RES = (
    re.compile(r"\bdef\s+(test_?\w*)\s*\("),
    re.compile(r"\b(?:it|test|describe)\s*\(\s*(?P<q>['\"`])(?P<name>.+?)(?P=q)"),
    re.compile(r"\bTEST(?:_F|_P)?\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)"),
    re.compile(r"\bclass\s+(Test\w+)"),
)

_KEYWORDS_TEXT = """
    False None True and as assert async await break class continue def del elif else except
    finally for from global if import in is lambda nonlocal not or pass raise return try while
    with yield self cls print len range str int float bool list dict set tuple object type
    super isinstance Exception ValueError TypeError KeyError RuntimeError args kwargs
    abstract arguments boolean byte case catch char const debugger default delete do double
    enum export extends final function goto implements instanceof interface let long native
    new null package private protected public short static switch synchronized this throw
    throws transient typeof undefined var void volatile of require module exports console log
    Error Promise Array Object String Number Boolean Math JSON Map Set async expect toBe
    toEqual describe it test auto bool char const_cast constexpr decltype delete dynamic_cast
    explicit extern friend inline mutable namespace noexcept nullptr operator override
    reinterpret_cast signed sizeof static_assert static_cast struct template typedef typename
    union unsigned using virtual std vector string size_t include define ifdef ifndef endif
    pragma uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t int64_t true false
    pytest fixture mark parametrize os sys np numpy torch
    RangeError SyntaxError ReferenceError EvalError URIError AggregateError IndexError
    AttributeError NotImplementedError LookupError ArithmeticError ZeroDivisionError
    OverflowError AssertionError StopIteration OSError IOError FileNotFoundError
    PermissionError TimeoutError ImportError ModuleNotFoundError UnicodeDecodeError
    runtime_error invalid_argument out_of_range logic_error domain_error length_error
    bad_alloc unique_ptr shared_ptr make_unique make_shared toThrow toBeCloseTo toStrictEqual
    toHaveLength toContain beforeEach afterEach beforeAll afterAll
    parseInt parseFloat isNaN isFinite decodeURI decodeURIComponent encodeURI
    encodeURIComponent fromCharCode fromCodePoint charCodeAt codePointAt toString toLowerCase
    toUpperCase hasOwnProperty indexOf lastIndexOf startsWith endsWith toFixed forEach
    isArray prototype createRequire readFileSync writeFileSync setTimeout clearTimeout
    RegExp Symbol WeakMap WeakSet Uint8Array Int32Array Float32Array ArrayBuffer
    isinstance issubclass getattr setattr hasattr staticmethod classmethod NotImplemented
    enumerate reversed sorted frozenset bytearray memoryview
    unordered_map unordered_set string_view make_pair emplace_back push_back
"""
KEYWORDS = frozenset(_KEYWORDS_TEXT.split())


def identifiers(text: str) -> list[str]:
    """Every identifier-looking token of ``text``, in order (string contents included)."""
    return IDENT_RE.findall(text)


_COMMENT_RE = re.compile(r"(?:#|//).*$|/\*.*?\*/")


def code_identifiers(text: str) -> list[str]:
    """The identifiers of ``text`` outside string literals and line comments (``#``, ``//``,
    one-line ``/* */``)."""
    code = _STRING_RE.sub(" ", text)
    return IDENT_RE.findall(_COMMENT_RE.sub(" ", code))


def string_literals(text: str) -> list[str]:
    """Contents of the quoted strings of ``text`` (three characters or more)."""
    bodies = (m.group("d") or m.group("s") or m.group("b") or "" for m in _STRING_RE.finditer(text))
    return [body for body in bodies if len(body) >= 3]


def test_blocks(text: str) -> list[str]:
    """Names of the test cases ``text`` declares: ``def test_x``, ``it("does x")``,
    ``TEST(Suite, Name)`` (as ``Suite.Name``), ``class TestX``."""
    names: list[str] = []
    for pattern in _TEST_RES:
        for match in pattern.finditer(text):
            if "name" in pattern.groupindex:
                names.append(match.group("name"))
            elif pattern.groups == 2:
                names.append(f"{match.group(1)}.{match.group(2)}")
            else:
                names.append(match.group(1))
    return names


def distinctive(name: str) -> bool:
    """A name worth searching for: not a keyword, at least four characters, not all digits."""
    return len(name) >= 4 and name not in KEYWORDS and not name.strip("_$").isdigit()
