"""The labelled real ports: the labels are well formed (always), and the engines meet their
bar on them (only where the clones are present: ``PORTWRIGHT_REAL_REPOS``)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
VERDICTS = {"not_applicable", "landed", "partial", "missing"}
KINDS = {"parameter", "branch", "guard", "error", "dtype", "layout", "config", "helper", "test",
         "fixture"}


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_gap_labels_are_facts_with_reasons() -> None:
    pairs = [json.loads(p.read_text()) for p in sorted((BENCH / "labels" / "gap").glob("*.json"))]
    commits = [c for pair in pairs for c in pair["commits"]]
    assert len(pairs) >= 2
    assert len(commits) >= 150
    for pair in pairs:
        assert re.fullmatch(r"[0-9a-f]{40}", pair["downstream"]["sha"])
        shas = [c["sha"] for c in pair["commits"]]
        assert len(set(shas)) == len(shas)
    for commit in commits:
        assert re.fullmatch(r"[0-9a-f]{40}", commit["sha"])
        assert commit["verdict"] in VERDICTS
        assert commit["reason"].strip()
        assert all(re.fullmatch(r"(up|down):[^:]+(:\d+)?", a) for a in commit["anchors"])


def test_surface_labels_anchor_every_item() -> None:
    surfaces = [json.loads(p.read_text())
                for p in sorted((BENCH / "labels" / "surface").glob("*.json"))]
    assert len(surfaces) >= 6
    for surface in surfaces:
        assert surface["items"]
        for item in surface["items"]:
            assert item["kind"] in KINDS
            assert re.fullmatch(r"[^:]+(:\d+(-\d+)?)?", item["anchor"])
            assert isinstance(item["must"], bool)


@pytest.fixture(scope="module")
def scorer() -> ModuleType:
    module = _load("score_evidence")
    if module.real_repos.root() is None:
        pytest.skip("the real clones are not here (set PORTWRIGHT_REAL_REPOS)")
    return module


def test_gap_on_the_labelled_ports(scorer: ModuleType, tmp_path: Path) -> None:
    total = scorer.score_gap(tmp_path)["total"]
    if total is None:
        pytest.skip("none of the labelled pairs is cloned")
    assert total["unsafe"] == 0, total["unsafe_commits"]
    assert total["accuracy"] >= 0.85
    assert total["confident_right"] >= 0.9
    assert total["uncertain_share"] <= 0.15


def test_surface_on_the_labelled_symbols(scorer: ModuleType) -> None:
    total = scorer.score_surface()["total"]
    if total is None:
        pytest.skip("none of the labelled symbols' repositories is cloned")
    assert total["must_recall"] == 1.0
    assert total["recall"] >= 0.8
    assert total["precision"] >= 0.8
