"""Name normalisation, code tokens and patch parsing."""

from __future__ import annotations

from typing import Any

import pytest

from portwright.evidence import names, tokens
from portwright.evidence.patch import classify, commit_patch


@pytest.mark.parametrize(("name", "words"), [
    ("computeScaleFactor", ["compute", "scale", "factor"]),
    ("compute_scale_factor", ["compute", "scale", "factor"]),
    ("ComputeScaleFactor", ["compute", "scale", "factor"]),
    ("COMPUTE_SCALE_FACTOR", ["compute", "scale", "factor"]),
    ("compute-scale-factor", ["compute", "scale", "factor"]),
    ("parseHTTPHeader2", ["parse", "http", "header", "2"]),
    ("__init__", ["init"]),
    ("fp8E4M3", ["fp", "8", "e", "4", "m", "3"]),
])
def test_split_words(name: str, words: list[str]) -> None:
    assert names.split_words(name) == words


def test_canonical_and_variants() -> None:
    assert names.canonical("loadModelWeights") == names.canonical("load_model_weights")
    assert names.canonical("loadModel") != names.canonical("loadModels")
    assert names.variants("loadModel") == ["loadModel", "load_model", "LoadModel",
                                           "LOAD_MODEL", "load-model"]
    assert names.variants("") == [""]


def test_paths() -> None:
    assert names.strip_extension("src/load-model.test.ts") == "src/load-model"
    assert names.strip_extension("Makefile") == "Makefile"
    assert names.canonical_path("lib/LoadModel.js") == "load_model"
    assert names.canonical_path("src/load_model.py") == "load_model"
    path_map = {"src/": "lib/", "src/kernels/": "csrc/"}
    assert names.map_path("src/kernels/attn.py", path_map) == "csrc/attn.py"
    assert names.map_path("src/a.py", path_map) == "lib/a.py"
    assert names.map_path("docs/a.md", path_map) is None


def test_tokens() -> None:
    line = 'if (x) throw new RangeError("low must not exceed high"); it("clamps", f)'
    assert "RangeError" in tokens.identifiers(line)
    assert tokens.string_literals(line) == ["low must not exceed high", "clamps"]
    assert tokens.test_blocks(line) == ["clamps"]
    assert tokens.test_blocks("def test_clamp(x):") == ["test_clamp"]
    assert tokens.test_blocks("TEST(Scaler, Zero) {") == ["Scaler.Zero"]
    assert tokens.test_blocks("class TestScaler:") == ["TestScaler"]
    assert not tokens.distinctive("self")
    assert not tokens.distinctive("abc")
    assert tokens.distinctive("scale_factor")


def test_commit_patch_lines_renames_and_binary(make_repo: Any) -> None:
    repo = make_repo("p")
    repo.git("config", "diff.noprefix", "true")  # a user setting must not change the parse
    repo.commit("one", {"a b.py": "x = 1\ny = 2\nz = 3\n", "old.txt": "same\ncontent\nhere\n"})
    repo.git("mv", "old.txt", "new.txt")
    repo.path.joinpath("blob.bin").write_bytes(b"\x00\x01\x02")
    repo.commit("two", {"a b.py": "x = 1\ny = 20\nz = 3\nw = 4\n", "dé.py": "q = 1\n"})
    patches = {p.path: p for p in commit_patch(repo.path, "HEAD")}
    assert patches["a b.py"].added == [(2, "y = 20"), (4, "w = 4")]
    assert patches["a b.py"].removed == [(2, "y = 2")]
    assert (patches["new.txt"].status, patches["new.txt"].old_path) == ("R", "old.txt")
    assert patches["dé.py"].added == [(1, "q = 1")]
    assert patches["blob.bin"].binary
    assert patches["blob.bin"].status == "A"
    root = {p.path: p for p in commit_patch(repo.path, "HEAD~1")}
    assert root["old.txt"].status == "A"
    assert len(root["old.txt"].added) == 3


def test_classify_uses_path_kinds() -> None:
    kinds = {"tests": ["tests/**", "**/*.test.*"], "docs": ["**/*.md"]}
    assert classify("tests/fixtures/a.json", kinds) == "tests"
    assert classify("src/a.test.js", kinds) == "tests"
    assert classify("README.md", kinds) == "docs"
    assert classify("src/a.js", kinds) == "source"
