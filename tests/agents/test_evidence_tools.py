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


def test_enumerator_context_from_the_surface_engine(pair: dict[str, Any]) -> None:
    from portwright.agents.budget import RunBudget
    from portwright.agents.loop import SUBMIT
    from portwright.agents.offline import ScriptedModel, call
    from portwright.agents.roles.enumerator import ROLE, context_from_surface
    from portwright.config import ModelBudget
    from portwright.evidence.surface import enumerate_surface

    upstream = pair["upstream"].path
    report = enumerate_surface(upstream, "rope_scaling", pair["pin"])
    context = context_from_surface(report, upstream, rules_prose="rules")
    assert context.pin == pair["pin"]
    assert "parameter: x" in context.candidates
    assert any(c.startswith("test: ") for c in context.candidates)
    assert {e.ref.split("@")[0].split(":")[0] for e in context.excerpts} == {
        "upstream src/attn.py", "upstream tests/test_attn.py"}
    items = [{"item": c, "classification": "ported"} for c in context.candidates]
    outcome = ROLE.run(context, client=ScriptedModel.from_replies([
        call(SUBMIT, {"slice": "all of it", "items": items})]), workspace=pair["workspace"],
        budget=RunBudget(ModelBudget()).for_role("enumerator"))
    assert outcome.ok
    assert [i.item for i in outcome.unwrap().items] == context.candidates


def test_gap_context_from_row_evidence(pair: dict[str, Any]) -> None:
    from portwright.agents.roles.gap_verifier import ROLE, context_from_evidence
    from portwright.evidence.gap import row_evidence

    upstream, downstream = pair["upstream"].path, pair["downstream"].path
    config = PortwrightConfig(upstream=UpstreamConfig(source=str(upstream)))
    found = row_evidence(upstream, downstream, ["rope_scaling"], pair["pin"], config)
    context = context_from_evidence(found, upstream, rules_prose="rules",
                                    upstream_name="pyserve", row="| rope | missing |")
    assert context.symbols == ["rope_scaling"]
    assert "downstream at HEAD: none" in context.evidence
    task = ROLE.messages(context)[1].content or ""
    assert f"upstream src/attn.py:1-6@{pair['pin'][:12]}" in task
    assert "| rope | missing |" in task
