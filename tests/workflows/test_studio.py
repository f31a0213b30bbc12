"""The graph as ``langgraph dev`` / Studio load it: by the path in ``langgraph.json``, a
factory called with the run's config, invoked with the cycle's documented input only."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pytest_httpserver import HTTPServer

from portwright.project import Project
from portwright.runs.models import EvidenceKind
from portwright.workflows.cycle import build_cycle
from portwright.workflows.state import Node
from tests.conftest import GitRepo, docker_engine_running
from tests.workflows.test_cli import world

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def factory() -> Iterator[Callable[[dict[str, Any]], AbstractContextManager[Any]]]:
    """``langgraph.json``'s graph, loaded as LangGraph's server loads it: the file by its
    path, as a module of its own name."""
    spec = json.loads((ROOT / "langgraph.json").read_text())["graphs"]["port_cycle"]
    path, _, variable = spec.rpartition(":")
    name = "langgraph_json_port_cycle"
    found = importlib.util.spec_from_file_location(name, ROOT / path)
    assert found is not None
    assert found.loader is not None
    module: ModuleType = importlib.util.module_from_spec(found)
    sys.modules[name] = module
    try:
        found.loader.exec_module(module)
        yield getattr(module, variable)
    finally:
        sys.modules.pop(name, None)


def test_the_factory_draws_the_graph_and_opens_nothing(
        factory: Callable[[dict[str, Any]], AbstractContextManager[Any]],
        make_repo: Callable[[str], GitRepo], monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo("downstream")
    repo.commit("empty", {"README.md": "x\n"})
    monkeypatch.setenv("PORTWRIGHT_REPO", str(repo.path))
    with factory({"configurable": {"thread_id": "drawn"}}) as graph:
        drawn = graph.get_graph()
        assert {n.value for n in Node} <= set(drawn.nodes)
        assert "approve_advance" in drawn.draw_mermaid()
        assert graph.get_context_jsonschema() is None  # nothing for Studio to fill in
        assert "row" in graph.get_input_jsonschema()["properties"]
    assert not (repo.path / ".git" / "worktrees").exists()  # no run was opened


def test_a_graph_without_a_run_context_blocks_and_says_why() -> None:
    out = build_cycle().compile().invoke({"row": "kv-cache"})
    assert out["status"] == "blocked"
    assert "without a run context" in out["reason"]


def test_langgraph_dev_runs_a_row_and_resumes_an_approval(
        factory: Callable[[dict[str, Any]], AbstractContextManager[Any]],
        make_repo: Callable[[str], GitRepo], httpserver: HTTPServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")
    w = world(make_repo, httpserver, approvals='spec = "never"\nadvance = "always"\n'
                                               'pr = "never"\n')
    monkeypatch.setenv("PORTWRIGHT_REPO", str(w.repo))
    monkeypatch.setenv("PORTER_KEY", "not-a-secret")
    saver = InMemorySaver()  # the server's checkpointer
    config = {"configurable": {"thread_id": "studio-1"}}
    with factory(config) as graph:
        parked = graph.copy(update={"checkpointer": saver}).invoke({"row": "kv-cache"}, config)
    assert "__interrupt__" in parked, parked.get("reason")
    assert parked["__interrupt__"][0].value["action_requests"][0]["name"] == "approve_advance"
    with factory(config) as graph:  # Studio answers: the factory is called again
        done = graph.copy(update={"checkpointer": saver}).invoke(
            Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert done["status"] == "done", done["reason"]
    assert done["run_id"] == "studio-1"
    store = Project.load(w.repo).store("studio-1")
    assert store.records(EvidenceKind.RED)[-1].tests_failed  # observed by portwright
    assert store.records(EvidenceKind.GREEN)[-1].passed
    assert store.manifest() is not None
    assert store.manifest().command == "run kv-cache"  # type: ignore[union-attr]
