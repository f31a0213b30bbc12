"""Protected paths: what the tools and the protected-paths gate refuse to let change."""

from __future__ import annotations

import pytest

from portwright.protected import is_protected, protected_change


@pytest.mark.parametrize("path", [
    "portwright.toml", "AGENTS.md", "src/AGENTS.md", "conftest.py", "tests/conftest.py",
    "pytest.ini", "tox.ini", "sitecustomize.py", "lib/usercustomize.py", "site/evil.pth",
    ".gitmodules", ".pytest.ini", "tests/.pytest.ini", "pytest.toml", ".pytest.toml",
    # root modules found before the test runner's or the standard library's
    "pytest.py", "pytest/__init__.py", "_pytest/__init__.py", "pluggy.py", "py.py",
    "pytest_forger.py", "argparse.py", "json/__init__.py", "unittest/__init__.py",
    "pytest.cpython-311-x86_64-linux-gnu.so", "pytest.abi3.so", "pytest.pyc",
    # package metadata whose entry points a test runner loads (pytest11), at any depth
    "evil-1.0.dist-info/entry_points.txt", "src/evil-1.0.dist-info/METADATA",
    "lib/deep/evil.egg-info/entry_points.txt", "evil.egg-info/PKG-INFO",
    # what npm, CTest and CMake read from the tree on their own
    ".npmrc", "packages/a/.npmrc", "build/CTestCustom.cmake", "CTestCustom.cmake",
    "CMakeUserPresets.json", "sub/CMakeUserPresets.json",
])
def test_whole_files_are_protected(path: str) -> None:
    assert is_protected(path)
    assert protected_change(path, b"a", b"b") is not None
    assert protected_change(path, None, b"b") is not None
    assert protected_change(path, b"a", None) is not None
    assert protected_change(path, b"same", b"same") is None


@pytest.mark.parametrize("path", [
    "src/mod.py", "tests/test_mod.py", "README.md", "setup.py",
    # not found before an installed module: not at the root, not a package's __init__,
    # not a module, or a name nothing else has
    "src/pytest.py", "lib/json/__init__.py", "pytest/__main__.py", "json/decoder.py",
    "test/spec_tests.py", "types.pyi", "argparse.txt", "calc.py", "calc/__init__.py",
])
def test_ordinary_files_are_not(path: str) -> None:
    assert not is_protected(path)
    assert protected_change(path, b"a", b"b") is None


def test_pyproject_pytest_section_only() -> None:
    before = b'[project]\nname = "x"\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    deps = before.replace(b'name = "x"', b'name = "x"\ndependencies = ["numpy"]')
    assert protected_change("pyproject.toml", before, deps) is None
    hooked = before.replace(b'"-q"', b'"-q -p evil"')
    assert "pytest" in (protected_change("pyproject.toml", before, hooked) or "")
    added = b'[project]\nname = "x"\n'
    assert protected_change("pyproject.toml", added, added + b"[tool.pytest.ini_options]\n"
                            b'addopts = "-p evil"\n') is not None
    # below the root too: pytest takes the first of them above the paths it is given
    assert "pytest" in (protected_change("sub/pyproject.toml", before, hooked) or "")
    assert protected_change("tests/unit/pyproject.toml", None, hooked) is not None
    assert protected_change("sub/pyproject.toml", before, deps) is None


def test_setup_cfg_pytest_section_only() -> None:
    before = b"[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n"
    assert protected_change("setup.cfg", before, before.replace(b"name = x", b"name = y")) is None
    assert protected_change("setup.cfg", before, before.replace(b"-q", b"-p evil")) is not None
    assert protected_change("tests/setup.cfg", None, before.replace(b"-q", b"-p evil")
                            ) is not None
    assert protected_change("tests/setup.cfg", before, before.replace(b"name = x", b"name = y")
                            ) is None
