"""Choosing the client from config, wall-time budgets, and run_command over LocalSandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from portwright.agents.budget import RunBudget, cost_usd
from portwright.agents.llm import Message, Usage
from portwright.agents.loop import Status, run_agent
from portwright.agents.models import build_client, describe
from portwright.agents.offline import RecordingClient, ReplayModel, ScriptedModel, call
from portwright.agents.openai_client import OpenAIClient
from portwright.agents.tools import Toolbox, Workspace
from portwright.config import ModelBudget, ModelConfig, Price, SandboxConfig
from portwright.errors import BudgetExhausted, ConfigError, UsageError
from portwright.sandboxes.local import LocalSandbox


def test_build_client_follows_the_config(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    cassette.write_text("")
    local = ModelConfig(base_url="http://127.0.0.1:9/v1", name="m")
    assert isinstance(build_client(local, tmp_path, environ={}), OpenAIClient)
    recording = build_client(local, tmp_path, record=tmp_path / "r.jsonl", environ={})
    assert isinstance(recording, RecordingClient)
    assert isinstance(build_client(local, tmp_path, replay=cassette), ReplayModel)
    replay = ModelConfig(provider="replay", cassette="c.jsonl")
    assert isinstance(build_client(replay, tmp_path), ReplayModel)
    with pytest.raises(ConfigError, match=r"\[model\.cassette\] provider is replay"):
        build_client(ModelConfig(provider="replay"), tmp_path)
    with pytest.raises(UsageError, match="exclude each other"):
        build_client(local, tmp_path, record=cassette, replay=cassette)
    with pytest.raises(UsageError, match="--record needs a real model"):
        build_client(replay, tmp_path, record=tmp_path / "x.jsonl")


def test_describe_never_shows_the_key(tmp_path: Path) -> None:
    endpoint = describe(ModelConfig(api_key_env="MY_KEY"), tmp_path,
                        environ={"MY_KEY": "sk-secret"})
    assert endpoint.api_key_set is True
    assert "sk-secret" not in endpoint.model_dump_json()
    assert endpoint.base_url == "https://api.openai.com/v1"


def test_cost_uses_the_cached_price() -> None:
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=500_000, cached_tokens=400_000)
    assert cost_usd(usage, Price(prompt=2, completion=8, cached=0.5)) == pytest.approx(
        0.6 * 2 + 0.4 * 0.5 + 0.5 * 8)
    assert cost_usd(usage, Price(prompt=2, completion=8)) == pytest.approx(2 + 4)
    assert cost_usd(usage, None) == 0


def test_cost_budget_is_enforced() -> None:
    budget = RunBudget(ModelBudget(cost_usd=0.001), prices={"scripted": Price(
        prompt=100, completion=100)}).for_role("r")
    budget.charge("scripted", Usage(prompt_tokens=20))
    with pytest.raises(BudgetExhausted, match=r"run cost_usd used 0\.002 of 0\.001"):
        budget.check()


def test_wall_time_budget_ends_a_slow_turn(pair: dict[str, Any], tmp_path: Path) -> None:
    root = pair["downstream"].path
    with LocalSandbox(root, log_dir=tmp_path / "logs", config=SandboxConfig()) as sandbox:
        workspace = Workspace(worktree=root, sandbox=sandbox, command_timeout=5)
        counter = iter(range(100))
        model = ScriptedModel(lambda r: call("run_command", {
            "command": f"sleep 0.3; echo {next(counter)}"}))
        budget = RunBudget(ModelBudget(wall_seconds=0.5, tokens=0, calls=0, cost_usd=0))
        outcome = run_agent(role="r", client=model, messages=[Message(role="user", content="go")],
                            toolbox=Toolbox(workspace, ["run_command"]),
                            result_model=Usage, budget=budget.for_role("r"), max_steps=20)
    assert outcome.status is Status.BUDGET_EXHAUSTED
    assert "wall_seconds" in outcome.reason
    assert outcome.steps == 3


def test_run_command_through_the_local_sandbox(pair: dict[str, Any], tmp_path: Path) -> None:
    root = pair["downstream"].path
    with LocalSandbox(root, log_dir=tmp_path / "logs") as sandbox:
        tools = Toolbox(Workspace(worktree=root, sandbox=sandbox, command_timeout=2),
                        ["run_command"])
        out = tools.call("run_command", json.dumps({"command": "pwd; grep -c a notes.txt"}))
        # it runs in the worktree, whose path the agent reads as "."
        assert out.splitlines()[:3] == ["exit code 0", "--- stdout", "."]
        assert out.splitlines()[3] == "3"  # alpha, beta, gamma
        slow = tools.call("run_command", json.dumps({"command": "sleep 30", "timeout": 60}))
        assert slow.startswith("exit code")
        assert "killed after 2s timeout" in slow
