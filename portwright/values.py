"""Values a person writes in ``portwright.toml`` or ``AGENTS.md`` that must be checked
before anything uses them: timeouts, byte sizes, paths inside the repository, path globs
and regular expressions.

Each is an ``Annotated`` type for pydantic models, and each check is also a plain function
for command-line options. A value that cannot work is refused where it is written, never
discovered later as a hang, a crash or a check that silently matches nothing:

- a timeout is finite and between :data:`MIN_SECONDS` and :data:`MAX_SECONDS` (``0``,
  ``1e-9``, ``inf`` and ``nan`` all used to be accepted, and a near-zero timeout froze a
  Docker exec mid-start);
- a byte size is a number with an optional ``b``/``k``/``m``/``g``/``t`` unit (Docker's
  spelling), at least a floor that lets a program start;
- a repository path is relative and stays inside the repository;
- a glob uses only ``*``, ``**`` (a whole path component) and ``?``;
- a regular expression compiles.
"""

from __future__ import annotations

import math
import posixpath
import re
from functools import partial
from typing import Annotated

from pydantic import AfterValidator, Field

MIN_SECONDS = 1.0
"""Shortest timeout of a command: below it nothing starts, and Docker can hang."""
MAX_SECONDS = 7 * 24 * 3600.0
"""Longest timeout of a command: a week."""

_SIZE = re.compile(r"(?i)^\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)\s*$")
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
MIN_MEMORY = 32 * 1024**2
"""Smallest memory limit of a sandbox (32 MiB)."""
MIN_TMPFS = 1024**2
"""Smallest ``/tmp`` of a sandbox (1 MiB)."""


def check_seconds(value: float) -> float:
    """``value`` when it is a usable timeout, else :class:`ValueError` saying why."""
    if not math.isfinite(value):
        raise ValueError(f"a timeout must be a finite number of seconds, not {value}")
    if not MIN_SECONDS <= value <= MAX_SECONDS:
        raise ValueError(f"a timeout must be between {MIN_SECONDS:g} and {MAX_SECONDS:g} "
                         f"seconds, not {value:g}")
    return value


def parse_size(text: str) -> int:
    """Bytes of ``512m``, ``2g``, ``1.5G``, ``1048576``; :class:`ValueError` otherwise."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size: write a number with an optional unit "
                         "b, k, m, g or t (e.g. 512m, 2g)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def _size_at_least(floor: int, text: str) -> str:
    if parse_size(text) < floor:
        raise ValueError(f"{text!r} is below the smallest usable size, {floor // 1024**2}m")
    return text


def check_repo_path(value: str, *, folder: bool = False) -> str:
    """``value`` when it is a relative path that stays inside the repository."""
    what = "folder" if folder else "file"
    if not value.strip():
        raise ValueError(f"an empty path; name a {what} inside the repository")
    if "\\" in value:
        raise ValueError(f"{value!r}: write paths with '/', not '\\'")
    if value.startswith(("/", "~")):
        raise ValueError(f"{value!r} is not relative: name a {what} inside the repository")
    normal = posixpath.normpath(value)
    if normal == ".." or normal.startswith("../"):
        raise ValueError(f"{value!r} leaves the repository")
    if normal == "." and not folder:
        raise ValueError(f"{value!r} names the repository itself, not a file in it")
    return value


def check_glob(value: str) -> str:
    """``value`` when it is a glob portwright can match: relative, inside the repository,
    wildcards ``*``, ``?`` and ``**`` as a whole path component only."""
    check_repo_path(value, folder=True)
    bad = sorted(set(value) & set("[]{}!"))
    if bad:
        raise ValueError(f"{value!r} uses {' '.join(bad)}: portwright globs know only *, ** "
                         "and ?; list each alternative as its own glob")
    for part in value.rstrip("/").split("/"):
        if "**" in part and part != "**":
            raise ValueError(f"{value!r}: ** must be a whole path component (src/**/*.py, "
                             "not src/**.py)")
    return value


def check_regex(value: str) -> str:
    """``value`` when it compiles as a Python regular expression."""
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from exc
    return value


Seconds = Annotated[float, Field(allow_inf_nan=False), AfterValidator(check_seconds)]
"""A command's timeout in seconds: finite, between :data:`MIN_SECONDS` and
:data:`MAX_SECONDS`."""
MemorySize = Annotated[str, AfterValidator(partial(_size_at_least, MIN_MEMORY))]
"""A memory limit in Docker's units (``512m``, ``2g``), at least :data:`MIN_MEMORY`."""
TmpfsSize = Annotated[str, AfterValidator(partial(_size_at_least, MIN_TMPFS))]
"""A tmpfs size in Docker's units, at least :data:`MIN_TMPFS`."""
RepoFile = Annotated[str, AfterValidator(check_repo_path)]
"""A file inside the repository, relative to its root."""
RepoFolder = Annotated[str, AfterValidator(partial(check_repo_path, folder=True))]
"""A folder inside the repository, relative to its root."""
RepoGlob = Annotated[str, AfterValidator(check_glob)]
"""A path glob inside the repository (``*``, ``**``, ``?``)."""
Regex = Annotated[str, AfterValidator(check_regex)]
"""A Python regular expression."""
