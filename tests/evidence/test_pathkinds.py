"""Path kinds: each ecosystem's tooling is not applicable by default; overrides merge."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.config import parse_config
from portwright.pathkinds import CARRIED, classify, default_path_kinds


@pytest.mark.parametrize(("path", "kind"), [
    ("lib/re.js", "source"),
    ("index.mjs", "source"),
    ("src/mdurl/_parse.py", "source"),
    ("kernels/rms_norm.cu", "source"),
    ("src/lib.rs", "source"),
    ("test/fixtures/links.txt", "tests"),
    ("test/spec.txt", "tests"),
    ("tests/test_layer.py", "tests"),
    ("src/clamp.test.ts", "tests"),
    ("conftest.py", "tests"),
    ("test/package.json", "build"),
    ("package.json", "build"),
    ("CMakeLists.txt", "build"),
    ("setup.py", "build"),
    ("Cargo.toml", "build"),
    ("build.rs", "build"),
    ("rollup.config.mjs", "build"),
    ("dist/commonmark.js", "dist"),
    ("vendor/x.min.js", "dist"),
    (".github/workflows/ci.yml", "ci"),
    (".travis.yml", "ci"),
    ("tox.ini", "ci"),
    (".eslintrc.yml", "tooling"),
    (".editorconfig", "tooling"),
    ("src/.clang-format", "tooling"),
    ("support/build_demo.mjs", "tooling"),
    ("rustfmt.toml", "tooling"),
    ("benchmark/profile.mjs", "bench"),
    ("demo/index.js", "demo"),
    ("support2/demo_template/index.css", "demo"),
    ("src/types.d.ts", "types"),
    ("README.md", "docs"),
    ("changelog.txt", "docs"),
    ("LICENSE", "docs"),
    ("data/vocab.json", "config"),
])
def test_default_kinds(path: str, kind: str) -> None:
    assert classify(path, default_path_kinds()) == kind


def test_only_source_and_tests_are_carried() -> None:
    assert {"source", "tests"} == CARRIED
    assert not set(default_path_kinds()) & CARRIED - {"tests"}


def test_a_partial_table_keeps_the_defaults(tmp_path: Path) -> None:
    toml = (b'[upstream]\nsource = "../up"\n'
            b'[upstream.path_kinds]\ntests = ["spec/**"]\nsource = ["support/**"]\n')
    kinds = parse_config(toml, tmp_path / "portwright.toml").upstream.path_kinds
    assert list(kinds)[:2] == ["tests", "source"]  # the user's kinds first
    assert classify("spec/a.js", kinds) == "tests"
    assert classify("test/a.js", kinds) == "source"  # the tests defaults were replaced
    assert classify("support/build.mjs", kinds) == "source"  # claimed before tooling
    assert classify(".github/workflows/ci.yml", kinds) == "ci"  # other defaults kept
    assert classify("README.md", kinds) == "docs"
