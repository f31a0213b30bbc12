"""Protected paths: files that steer portwright or the test runner, which neither an agent
nor a sandboxed command may change.

A run reads its configuration (``portwright.toml``), its rules (``AGENTS.md``) and the test
runner's configuration from the commit it started at. Changing them mid-run would let the
code under test choose its own isolation, its own gates, or rewrite test outcomes (a root
``conftest.py`` hook, a ``sitecustomize.py``, a ``.pth`` file that runs at start-up, a
``.pytest.ini`` that loads a plugin, package metadata at any depth whose entry points
pytest loads as plugins, an ``.npmrc`` that sets ``node-options``, a ``CTestCustom.cmake``
CTest reads from the build folder). So the agent tools refuse such writes, and the
``protected-paths`` gate fails a change that touches them.

A module at the root of the tree is found before the installed ones when the tests run
with the root on the import path (``python -m pytest``, ``PYTHONPATH=.``): a root
``pytest.py`` would be the test runner, a root ``argparse.py`` would run inside it. So a
root module (``NAME.py``, ``NAME/__init__.py``, a compiled ``NAME.*.so`` or ``NAME.pyc``)
named after a module of the standard library or of the test runner
(:data:`RUNNER_MODULES`, any ``pytest_*`` plugin) is protected whole too
(:func:`shadows_runner`).

Some files are protected only in part: ``pyproject.toml`` may gain a dependency, but not a
different ``[tool.pytest.ini_options]``; ``setup.cfg`` may change its metadata, but not its
``[tool:pytest]`` section. :func:`protected_change` compares the protected part of the old
and new bytes.
"""

from __future__ import annotations

import configparser
import importlib.machinery
import sys
import tomllib
from typing import Any

from portwright.globs import match_any

WHOLE_FILES: tuple[str, ...] = (
    "portwright.toml",
    "**/AGENTS.md",
    "**/conftest.py",
    "**/pytest.ini",
    "**/.pytest.ini",
    "**/pytest.toml",
    "**/.pytest.toml",
    "**/tox.ini",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/*.pth",
    "**/*.dist-info/**",
    "**/*.egg-info/**",
    "**/.npmrc",
    "**/CTestCustom.cmake",
    "**/CMakeUserPresets.json",
    ".gitmodules",
)
"""Files protected whole (globs relative to the worktree root)."""

SECTION_FILES: dict[str, str] = {
    "pyproject.toml": "the [tool.pytest] section of pyproject.toml",
    "setup.cfg": "the [tool:pytest] section of setup.cfg",
}
"""Files of which one section is protected, by name at any depth (pytest takes the first
configuration file above the paths it is given as its own: ``tests/pyproject.toml`` steers
``pytest tests``), with how the part is named."""


RUNNER_MODULES: frozenset[str] = frozenset({
    "pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli",
    "attr", "attrs", "colorama", "pygments", "xdist", "execnet", "coverage", "hypothesis",
    "nose", "nose2", "conftest", "sitecustomize", "usercustomize",
})
"""Modules of the test runner and of what it loads at start-up (besides the standard
library, :data:`sys.stdlib_module_names`, and any ``pytest_*`` plugin)."""

_MODULE_SUFFIXES = tuple(importlib.machinery.all_suffixes())


def shadows_runner(path: str) -> bool:
    """Whether ``path`` is a module at the root of the tree (``NAME.py``,
    ``NAME/__init__.py``, ``NAME.so``, …) that ``import NAME`` would find instead of a
    module of the standard library or of the test runner."""
    parts = path.lstrip("/").split("/")
    if len(parts) == 1:
        name, file = parts[0].partition(".")[0], parts[0]
    elif len(parts) == 2 and parts[1].startswith("__init__."):
        name, file = parts[0], parts[1]
    else:
        return False
    if not file.endswith(_MODULE_SUFFIXES) or not name.isidentifier():
        return False
    return (name in sys.stdlib_module_names or name in RUNNER_MODULES
            or name.startswith("pytest_"))


def is_protected(path: str) -> bool:
    """Whether ``path`` (posix, relative to the worktree) is protected whole."""
    return match_any(path.lstrip("/"), WHOLE_FILES) or shadows_runner(path)


def protected_change(path: str, before: bytes | None, after: bytes | None) -> str | None:
    """Why changing ``path`` from ``before`` to ``after`` (None: absent) is refused, or None
    when the change leaves every protected part as it was."""
    path = path.lstrip("/")
    if is_protected(path):
        if before == after:
            return None
        return (f"{path} is a protected path (it steers portwright or the test runner); "
                "it is read from the commit the run started at and may not change")
    part = SECTION_FILES.get(path.rsplit("/", 1)[-1])
    if part is None:
        return None
    reader = _pytest_section_toml if path.endswith(".toml") else _pytest_section_cfg
    if reader(before) == reader(after):
        return None
    return f"{part} is protected (test-runner configuration) and may not change"


def _pytest_section_toml(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        parsed = tomllib.loads(data.decode("utf-8", errors="replace"))
    except tomllib.TOMLDecodeError:
        return ("unparseable", data)  # any edit of an unparseable file counts as a change
    tool = parsed.get("tool")
    return tool.get("pytest") if isinstance(tool, dict) else None


def _pytest_section_cfg(data: bytes | None) -> Any:
    if data is None:
        return None
    parser = configparser.RawConfigParser()
    try:
        parser.read_string(data.decode("utf-8", errors="replace"))
    except configparser.Error:
        return ("unparseable", data)
    if not parser.has_section("tool:pytest"):
        return None
    return sorted(parser.items("tool:pytest"))
