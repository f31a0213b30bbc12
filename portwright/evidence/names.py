"""Name normalisation across languages, used by the gap scan and the trace.

Upstream and downstream rarely spell a name the same way: ``computeScale`` in
JavaScript is ``compute_scale`` in Python and ``ComputeScale`` in C#, and
``load-model.ts`` becomes ``load_model.py``. Every spelling is reduced to its
*words* (``["compute", "scale"]``) and to a *canonical key* (``"compute_scale"``);
two names match when their keys are equal.

Public API:

- ``split_words(name: str) -> list[str]``
- ``canonical(name: str) -> str``
- ``variants(name: str) -> list[str]`` — the spellings a port might use
- ``strip_extension(path: str) -> str``
- ``canonical_path(path: str) -> str`` — the canonical key of a path's stem
- ``map_path(path: str, path_map: Mapping[str, str]) -> str | None``
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from functools import lru_cache

_WORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z0-9])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_SEPARATORS_RE = re.compile(r"[^A-Za-z0-9]+")
_IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

#: File extensions that are stripped before comparing path stems (longest first).
EXTENSIONS = (
    ".test.tsx", ".test.ts", ".test.jsx", ".test.js", ".spec.ts", ".spec.js",
    ".d.ts", ".tsx", ".ts", ".jsx", ".js", ".mjs", ".cjs", ".py", ".pyi", ".cpp", ".cc",
    ".cxx", ".hpp", ".hh", ".hxx", ".h", ".c", ".rs", ".go", ".java", ".kt", ".cs",
    ".rb", ".swift", ".cu", ".cuh", ".metal", ".json", ".yaml", ".yml", ".toml", ".md",
    ".txt",
)


def split_words(name: str) -> list[str]:
    """The lower-case words of ``name``: ``parseHTTPHeader2`` → ``["parse", "http", "header",
    "2"]``; ``load-model`` and ``LOAD_MODEL`` → ``["load", "model"]``."""
    words: list[str] = []
    for chunk in _SEPARATORS_RE.split(name):
        words.extend(w.lower() for w in _WORD_RE.findall(chunk))
    return words


@lru_cache(maxsize=65536)
def canonical(name: str) -> str:
    """The key two spellings of one name share: its words joined by ``_``."""
    return "_".join(split_words(name))


def is_identifier(text: str) -> bool:
    """True for an ASCII identifier (letters, digits, ``_``; not starting with a digit)."""
    return _IDENTIFIER_RE.match(text) is not None


def variants(name: str) -> list[str]:
    """The spellings of ``name`` a port might use, ``name`` itself first, without duplicates:
    snake_case, camelCase, PascalCase, SCREAMING_SNAKE and kebab-case."""
    words = split_words(name)
    if not words:
        return [name]
    out = [
        name,
        "_".join(words),
        words[0] + "".join(w.capitalize() for w in words[1:]),
        "".join(w.capitalize() for w in words),
        "_".join(words).upper(),
        "-".join(words),
    ]
    return list(dict.fromkeys(out))


def strip_extension(path: str) -> str:
    """``src/load-model.test.ts`` → ``src/load-model``; paths without a known extension are
    returned unchanged."""
    lower = path.lower()
    for ext in EXTENSIONS:
        if lower.endswith(ext) and len(path) > len(ext):
            return path[: -len(ext)]
    return path


def canonical_path(path: str) -> str:
    """The canonical key of a path's file stem: ``lib/LoadModel.js`` → ``load_model``."""
    return canonical(posixpath.basename(strip_extension(path)))


def map_path(path: str, path_map: Mapping[str, str]) -> str | None:
    """Apply the longest matching upstream→downstream prefix of ``path_map`` to ``path``;
    None when no prefix matches."""
    best: tuple[str, str] | None = None
    for upstream_prefix, downstream_prefix in path_map.items():
        longer = best is None or len(upstream_prefix) > len(best[0])
        if path.startswith(upstream_prefix) and longer:
            best = (upstream_prefix, downstream_prefix)
    if best is None:
        return None
    return best[1] + path[len(best[0]):]
