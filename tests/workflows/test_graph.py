"""The graph's shape: every node of the cycle, and the file LangGraph's tools load."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from portwright.workflows.state import Node

ROOT = Path(__file__).resolve().parents[2]


def test_langgraph_json_names_a_graph_with_every_node() -> None:
    spec = json.loads((ROOT / "langgraph.json").read_text())["graphs"]["port_cycle"]
    path, _, attr = spec.partition(":")
    module = importlib.import_module(path.removeprefix("./").removesuffix(".py")
                                     .replace("/", "."))
    with getattr(module, attr)({"configurable": {"repo": str(ROOT)}}) as graph:
        drawn = graph.get_graph()
    assert {n.value for n in Node} <= set(drawn.nodes)
    mermaid = drawn.draw_mermaid()
    assert "capture_red" in mermaid
    assert "approve_advance" in mermaid
