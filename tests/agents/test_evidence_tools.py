"""The gap-evidence and surface-candidate tools over the real evidence engines."""

from __future__ import annotations

import json
from typing import Any

import pytest

from portwright.agents.evidence import gap_source, surface_source
from portwright.agents.tools import EvidenceSources, Toolbox
from portwright.config import PortwrightConfig, UpstreamConfig
from portwright.errors import ToolError


@pytest.fixture
def tools(pair: dict[str, Any]) -> Toolbox:
    upstream, downstream = pair["upstream"].path, pair["downstream"].path
    config = PortwrightConfig(upstream=UpstreamConfig(source=str(upstream)))
    workspace = pair["workspace"]
    workspace.evidence = EvidenceSources(
        gap=gap_source(upstream, downstream, pair["pin"], config),
        surface=surface_source(upstream, pair["pin"], config))
    return Toolbox(workspace, ["gap_evidence", "surface_candidates"])


def test_gap_evidence_reports_upstream_and_downstream(tools: Toolbox,
                                                      pair: dict[str, Any]) -> None:
    out = tools.call("gap_evidence", json.dumps({"symbols": ["rope_scaling", "other"]}))
    lines = out.splitlines()
    assert lines[0].startswith(f"upstream pin {pair['pin'][:12]}")
    rope = lines[lines.index("symbol rope_scaling"):lines.index("symbol other")]
    assert "  upstream at the pin: 3" in rope
    assert "    src/attn.py:1  rope_scaling" in rope
    assert "  downstream at HEAD: none" in rope
    other = lines[lines.index("symbol other"):]
    assert any(line.startswith("    lib/attn.cpp:1") for line in other)


def test_surface_candidates_list_the_items(tools: Toolbox, pair: dict[str, Any]) -> None:
    out = tools.call("surface_candidates", json.dumps({"symbol": "rope_scaling"}))
    assert out.splitlines()[0].startswith("rope_scaling (python) defined at src/attn.py:1")
    assert "- parameter: x" in out
    assert "test_rope" in out
    with pytest.raises(ToolError, match=r"surface enumeration failed: .*no definition"):
        tools.call("surface_candidates", json.dumps({"symbol": "does_not_exist"}))
