"""Ledger, inventory and spec: readers, problems, writers that only add their own lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.config import PortwrightConfig
from portwright.errors import ParityFileError
from portwright.parity.inventory import add_item, load_inventory
from portwright.parity.ledger import LedgerKind, add_entry, load_ledger
from portwright.parity.spec import SurfaceStatus, load_spec, spec_problems
from tests.parity.world import SPEC

QUESTIONS = ["linear_output_dtype", "kv_cache_dtype", "intermediate_dtype", "gemm_layout"]
SECTIONS = ["Surface", "Slice", "Anchors", "Dependency anchors", "Adaptations"]


def _config() -> PortwrightConfig:
    return PortwrightConfig.model_validate({"upstream": {"source": "../up"}})


LEDGER = """# Ledger

Intro text.

| Change | Upstream | Kind | Cost | Notes |
|--------|----------|------|------|-------|
| src/a.cc | `a/b.py:1-3 "def f"` | port | | |
| src/c.cc | 0123abcd | adaptation | | arena |
| src/d.cc | `d.py:5` | divergence | +2% decode latency | |
| src/ring.cc | from-scratch | from-scratch | | |

Trailer.
"""


def test_ledger_entries(tmp_path: Path) -> None:
    (tmp_path / "parity-ledger.md").write_text(LEDGER)
    entries, problems = load_ledger(tmp_path, _config())
    assert problems == []
    assert [(e.change, e.kind, e.line) for e in entries] == [
        ("src/a.cc", LedgerKind.PORT, 7), ("src/c.cc", LedgerKind.ADAPTATION, 8),
        ("src/d.cc", LedgerKind.DIVERGENCE, 9), ("src/ring.cc", LedgerKind.FROM_SCRATCH, 10)]
    assert entries[0].anchor is not None
    assert entries[0].anchor.excerpt == "def f"
    assert entries[1].commit == "0123abcd"
    assert entries[2].cost == "+2% decode latency"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("| src/x.cc | `d.py:5` | divergence | | |", "has no cost"),
        ("| src/x.cc | somewhere | port | | |", "neither an anchor"),
        ("| src/x.cc | `d.py:5` | copied | | |", "unknown kind 'copied'"),
        ("|  | `d.py:5` | port | | |", "without a change"),
    ],
)
def test_ledger_problems_name_file_and_line(tmp_path: Path, row: str, message: str) -> None:
    (tmp_path / "parity-ledger.md").write_text(LEDGER.replace("\n\nTrailer", f"\n{row}\n\nT"))
    _, problems = load_ledger(tmp_path, _config(), strict=False)
    assert len(problems) == 1
    assert problems[0].startswith("parity-ledger.md:11: ")
    assert message in problems[0]
    with pytest.raises(ParityFileError) as info:
        load_ledger(tmp_path, _config())
    assert info.value.line == 11


def test_inventory_entry_without_searched_paths_is_invalid(tmp_path: Path) -> None:
    (tmp_path / "porting-inventory.md").write_text(
        "| item | path | searched | notes |\n| --- | --- | --- | --- |\n"
        "| ring | src/ring.cc | up/utils.py, up/core/ | deque upstream |\n"
        "| hash | src/hash.cc | - | |\n")
    entries, problems = load_inventory(tmp_path, _config(), strict=False)
    assert [e.item for e in entries] == ["ring"]
    assert entries[0].searched == ["up/utils.py", "up/core/"]
    assert problems == ["porting-inventory.md:4: 'hash' lists no searched upstream paths; "
                        "name the upstream files or folders searched for a source"]


def test_add_entry_and_item_only_append(tmp_path: Path) -> None:
    (tmp_path / "parity-ledger.md").write_text(LEDGER)
    entry = add_entry(tmp_path, _config(), change="src/e.cc", upstream="`e.py:1-2`",
                      kind="port")
    assert entry.line == 11
    after = (tmp_path / "parity-ledger.md").read_text()
    lines = after.splitlines()
    assert lines[:10] + lines[11:] == LEDGER.splitlines()
    assert lines[10] == "| src/e.cc | `e.py:1-2` | port |  |  |"
    with pytest.raises(ParityFileError, match="has no cost"):
        add_entry(tmp_path, _config(), change="x", upstream="e.py:1", kind="divergence")
    assert (tmp_path / "parity-ledger.md").read_text() == after
    item = add_item(tmp_path, _config(), item="ring", path="src/ring.cc",
                    searched=["up/utils.py"], notes="none fit")
    assert item.line == 5
    with pytest.raises(ParityFileError, match="searched"):
        add_item(tmp_path, _config(), item="hash", path="src/h.cc", searched=[])


def test_spec_parsed(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    path = tmp_path / "specs" / "a.md"
    path.write_text(SPEC.format(pin="0123abc"))
    spec = load_spec(tmp_path, path)
    assert (spec.row, spec.pin, spec.slice) == ("attn-fp8", "0123abc", "decode path only")
    assert spec.answers["kv_cache_dtype"] == "fp8_e4m3"
    assert spec.dependencies == {"torch": "2.4.0"}
    assert [(s.item, s.status, s.line) for s in spec.surface] == [
        ("decode", SurfaceStatus.PORTED, 19), ("prefill", SurfaceStatus.DEFERRED, 20),
        ("rocm", SurfaceStatus.NOT_APPLICABLE, 21)]
    assert [(a.path, line) for a, line in spec.anchors] == [
        ("attn/fp8.py", 19), ("attn/fp8.py", 20), ("attn/fp8.py", 29), ("requirements.txt", 33)]
    assert spec_problems(spec, questions=QUESTIONS, required_sections=SECTIONS) == []


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("| prefill | mode | deferred | needs paged prefill |", "| prefill | mode | deferred | |",
         "specs/a.md:20: surface item 'prefill' is deferred without a reason"),
        ("| rocm | backend | not_applicable |", "| rocm | backend | maybe |",
         "specs/a.md:21: surface item 'rocm' is not classified ('maybe')"),
        ("  gemm_layout: merged\n", "",
         "specs/a.md:2: the question `gemm_layout` is not answered"),
        ("Decode only, bf16 activations.\n", "",
         "specs/a.md:23: section `## Slice` is empty"),
        ("## Adaptations\n\n- none beyond naming.\n", "",
         "specs/a.md:1: section `## Adaptations` is missing"),
        ("slice: decode path only\n", "", "specs/a.md:2: front matter has no `slice`"),
    ],
    ids=["deferred-without-reason", "unclassified", "unanswered", "empty-section",
         "missing-section", "no-slice"],
)
def test_spec_problems(tmp_path: Path, old: str, new: str, message: str) -> None:
    (tmp_path / "specs").mkdir()
    path = tmp_path / "specs" / "a.md"
    text = SPEC.format(pin="0123abc")
    assert old in text
    path.write_text(text.replace(old, new))
    problems = spec_problems(load_spec(tmp_path, path), questions=QUESTIONS,
                             required_sections=SECTIONS)
    assert any(p.startswith(message) for p in problems), problems


def test_spec_bad_front_matter(tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    path.write_text("---\nrow: [unclosed\n---\n# x\n")
    with pytest.raises(ParityFileError, match="front matter is not valid YAML"):
        load_spec(tmp_path, path)


def test_set_front_matter_scalar_changes_only_the_value() -> None:
    from portwright.parity.spec import set_front_matter_scalar

    text = "---\nrow: a\npin: '0123abc'  # upstream\nslice: x\n---\n# pin: 0123abc\n"
    assert set_front_matter_scalar(text, "pin", "fedcba9") == (
        "---\nrow: a\npin: 'fedcba9'  # upstream\nslice: x\n---\n# pin: 0123abc\n")
    with pytest.raises(ParityFileError, match="no `answers:`"):
        set_front_matter_scalar(text, "answers", "x")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('- `requirements.txt:2 "torch==2.4.0"`', "- `requirements.txt:2`",
         "specs/a.md:31: dependency torch 2.4.0 is not backed by an anchor"),
        ('| decode | mode | ported | | `attn/fp8.py:4-6 "def fp8_attention(q, k, v):"` |',
         "| decode | mode | ported | | |",
         "specs/a.md:19: surface item 'decode' is ported but cites no upstream anchor"),
    ],
    ids=["dependency-unbacked", "ported-without-anchor"],
)
def test_spec_anchor_requirements(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = tmp_path / "a.md"
    text = SPEC.format(pin="0123abc")
    assert old in text
    (tmp_path / "specs").mkdir()
    path = tmp_path / "specs" / "a.md"
    path.write_text(text.replace(old, new))
    problems = spec_problems(load_spec(tmp_path, path), questions=QUESTIONS,
                             required_sections=SECTIONS)
    assert len(problems) == 1
    assert problems[0].startswith(message), problems


def test_rendered_spec_is_complete(tmp_path: Path) -> None:
    from tests.parity.golden_cases import spec as rendered

    path = tmp_path / "specs" / "b.md"
    path.parent.mkdir()
    path.write_text(rendered(tmp_path))
    spec = load_spec(tmp_path, path)
    assert spec_problems(spec, questions=["kv_cache_dtype", "gemm_layout"],
                         required_sections=SECTIONS) == []
    assert [i.item for i in spec.surface] == ["decode", "prefill", "a|b"]
