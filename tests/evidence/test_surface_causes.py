"""What surface enumeration missed on real model layers and parser rules, each on a small
upstream built here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from portwright.agents.evidence import candidate_labels
from portwright.agents.results import SurfaceClassification
from portwright.agents.roles import enumerator
from portwright.cli import app
from portwright.errors import UsageError
from portwright.evidence.surface import SurfaceReport, enumerate_surface
from portwright.web import runpage
from tests.evidence.conftest import grammar_or_skip

LAYER = '''import os
import torch

USE_FAST_PATH = os.environ.get("USE_FAST_PATH", "1") == "1"


def _fused_kernel(x, scale):
    return x * scale


class Attention:
    def __init__(self, config):
        self.heads = config.num_heads
        self.scale = getattr(config, "scale", None) or config.head_dim ** -0.5

    def forward(self, x, context, cache=None):
        orig_dtype = x.dtype
        x = x.float()
        if cache is not None and cache.slot == -1:
            return x
        slot = cache.slot if cache is not None else 0
        if slot == -1:
            x = x.transpose(1, 2).contiguous()
        elif context.is_prefill:
            x = _fused_kernel(x, self.scale)
        else:
            x = torch.zeros_like(x, dtype=torch.long)
        if USE_FAST_PATH:
            x = self._project(x)
        return x.to(orig_dtype)

    def _project(self, x):
        return x
'''
RULE = '''export default function fence(state, startLine, endLine, silent) {
  if (state.sCount[startLine] - state.blkIndent >= 4) { return false }
  const marker = state.src.charCodeAt(state.bMarks[startLine])
  if (marker !== 0x7E && marker !== 0x60) { return false }
  if (silent) { return true }
  state.line = startLine + 1
  return true
}
'''


@pytest.fixture
def upstream(make_repo: Any) -> Any:
    repo = make_repo("models")
    repo.commit("layers and rules", {
        "models/llama.py": LAYER,
        "models/mistral.py": LAYER.replace("_fused_kernel", "_kernel"),
        "lib/rules/fence.mjs": RULE,
        "tests/test_llama.py": "from models import llama\n\n\ndef test_attention():\n"
                               "    llama.Attention(None)\n",
        "test/fixtures/fence.txt": "Fenced code\n.\n```\ncode\n```\n",
        "test/fixtures/lists.txt": "- a list\n",
    })
    return repo


def _items(report: SurfaceReport) -> set[tuple[str, str, int]]:
    return {(i.kind, i.name, int(i.anchor.split("@")[0].rsplit(":", 1)[1]))
            for i in report.items}


def _arms(report: SurfaceReport) -> set[tuple[str, str, int]]:
    """``(kind, condition, line)`` of the branches and guards."""
    return {(i.kind, i.detail, int(i.anchor.split("@")[0].rsplit(":", 1)[1]))
            for i in report.items if i.kind in ("branch", "guard")}


def test_an_ambiguous_name_lists_the_candidates(upstream: Any) -> None:
    with pytest.raises(UsageError, match="defined in 2 places") as info:
        enumerate_surface(upstream.path, "Attention", "HEAD")
    assert "models/llama.py::Attention" in info.value.message
    assert "models/mistral.py::Attention" in info.value.message
    result = CliRunner().invoke(app, ["-C", str(upstream.path), "surface", "Attention"])
    assert result.exit_code != 0


def test_a_bundle_that_copies_the_source_makes_no_name_ambiguous(make_repo: Any) -> None:
    """markdown-it keeps its rollup bundle, dist/markdown-it.js, in git: each rule is
    defined there too, and the source's definition is the one a port follows."""
    repo = make_repo("bundled")
    repo.commit("rule and bundle", {"lib/rules/fence.mjs": RULE,
                                    "dist/markdown-it.js": "// bundle\n" + RULE,
                                    "benchmark/fence.mjs": RULE})
    report = enumerate_surface(repo.path, "fence", "HEAD")
    assert report.definition.startswith("lib/rules/fence.mjs:")
    assert all(not i.anchor.startswith(("dist/", "benchmark/")) for i in report.items)
    repo.commit("two sources", {"lib/rules/fence2.mjs": RULE})
    with pytest.raises(UsageError, match="defined in 2 places") as info:
        enumerate_surface(repo.path, "fence", "HEAD")  # two sources: still ambiguous
    assert "dist/" not in info.value.message


JOIN = """module.exports = function text_join(state) {
  var curr, last, tokens = state.tokens, max = tokens.length;

  for (curr = last = 0; curr < max; curr++) {
    if (tokens[curr].type === 'text' &&
        curr + 1 < max &&
        tokens[curr + 1].type === 'text') {
      tokens[curr + 1].content = tokens[curr].content + tokens[curr + 1].content;
    } else {
      last++;
    }
  }
};
"""


def test_a_condition_over_lines_is_one_candidate_line(make_repo: Any, tmp_path: Path) -> None:
    """markdown-it's text_join tests a condition written over three lines: the enumerator
    reads its candidates one a line and must write each back exactly, so each label is
    one line, and the labels as the prompt lists them classify the surface completely."""
    grammar_or_skip("javascript")
    repo = make_repo("joined")
    repo.commit("text_join", {"lib/rules_core/text_join.js": JOIN})
    report = enumerate_surface(repo.path, "text_join", "HEAD")
    assert any("\n" in i.name for i in report.items)  # as upstream wrote it
    labels = candidate_labels(report)
    assert all("\n" not in label for label in labels)
    assert any(label.startswith("branch: tokens[curr].type === 'text' && curr + 1 < max")
               for label in labels), labels
    context = enumerator.sample().model_copy(update={"candidates": labels})
    prompt = enumerator.ROLE.messages(context)[1].content or ""
    listed = re.search(r"Candidate items \(\d+\):\n((?:- .*\n)+)", prompt)
    assert listed is not None
    read = [line[2:] for line in listed.group(1).splitlines()]
    classified = SurfaceClassification(
        items=[{"item": i, "classification": "ported"} for i in read], slice="all")
    assert read == labels
    assert classified.problems(labels) == []
    # the run page finds each classified label's anchor in the surface the run saved
    (tmp_path / "surface.json").write_text(report.model_dump_json())
    (tmp_path / "classification.json").write_text(classified.model_dump_json())
    rows, _ = runpage._surface(tmp_path)
    assert [r["item"] for r in rows] == labels
    assert all(r["anchor"].startswith("lib/rules_core/text_join.js:") for r in rows), rows


def test_a_class_covers_every_method_branch_and_read(upstream: Any) -> None:
    report = enumerate_surface(upstream.path, "models/llama.py::Attention", "HEAD")
    found = _items(report)
    assert {("parameter", "__init__: config", 12), ("parameter", "forward: x", 16),
            ("parameter", "forward: context", 16), ("parameter", "forward: cache", 16)} <= found
    assert ("config", "config.num_heads", 13) in found
    assert ("config", "config.scale", 14) in found  # read through getattr
    arms = _arms(report)
    assert ("branch", "config.head_dim ** (-0.5) when getattr(config, 'scale', None) is empty",
            14) in arms
    assert ("branch", "cache is not None and cache.slot == -1", 19) in arms  # each reason
    assert ("branch", "otherwise: not (cache is not None and cache.slot == -1)", 21) in arms
    assert {("branch", "cache is not None", 21),
            ("branch", "else: not (cache is not None)", 21)} <= arms
    assert ("branch", "slot == -1", 22) in arms                      # a local
    assert ("branch", "context.is_prefill", 24) in arms              # a context object
    assert ("context", "context.is_prefill", 24) in found
    assert ("branch", "else: not (context.is_prefill)", 26) in arms  # the else arm
    assert ("branch", "USE_FAST_PATH", 28) in arms                   # a module flag
    assert ("global", "USE_FAST_PATH", 28) in found
    assert {("dtype", ".float()", 18), ("dtype", ".to()", 30),
            ("dtype", "dtype=torch.long", 27)} <= found
    assert {("layout", "transpose", 23), ("layout", "contiguous", 23)} <= found
    assert {("helper", "_fused_kernel", 25), ("helper", "_project", 29)} <= found
    assert [i.name for i in report.of_kind("test")] == ["tests/test_llama.py::test_attention"]


def test_a_default_export_with_guards_and_fixtures(upstream: Any) -> None:
    grammar_or_skip("javascript")
    report = enumerate_surface(upstream.path, "lib/rules/fence.mjs::default", "HEAD")
    assert report.items[0].name == "fence"
    arms = _arms(report)
    assert {("guard", "state.sCount[startLine] - state.blkIndent >= 4: { return false }", 2),
            ("guard", "marker !== 0x7E && marker !== 0x60: { return false }", 4)} <= arms
    assert ("branch", "silent", 5) in arms  # silent mode returns true: a mode, not a guard
    assert [i.name for i in report.of_kind("fixture")] == ["test/fixtures/fence.txt"]
