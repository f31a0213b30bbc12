"""The gap scan on the bundled tinystats example gives the answers its README promises."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from portwright.config import load_config
from portwright.evidence.gap import Verdict, scan_range, upstream_repo
from portwright.project import Project

BUILD = Path(__file__).resolve().parents[2] / "examples" / "tinystats" / "build.py"


def test_tinystats_gap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("tinystats_build", BUILD)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    example = module.build(tmp_path / "example")
    config = load_config(example.downstream)
    upstream = upstream_repo(Project(example.downstream, config))
    report = scan_range(upstream, example.downstream, example.pin, "HEAD", config)
    verdicts = {c.subject.split(" ")[1] if c.subject.startswith("Add") else "README": c.verdict
                for c in report.commits}
    assert verdicts == {"movingAverage": Verdict.MISSING, "percentile": Verdict.LANDED,
                        "README": Verdict.NOT_APPLICABLE}
    percentile = next(c for c in report.commits if "percentile" in c.subject)
    assert all(e.where == "head" for e in percentile.evidence)
    moving = next(c for c in report.commits if "movingAverage" in c.subject)
    assert {e.where for e in moving.evidence} == {"absent"}  # AGENTS.md mentions it: a record
