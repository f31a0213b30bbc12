"""Against a real OpenAI-compatible server on this machine (opt-in, slow).

Start one (llama.cpp's server, vLLM, Ollama) on a loopback address and run::

    PORTWRIGHT_TEST_MODEL_URL=http://127.0.0.1:8765/v1 PORTWRIGHT_TEST_MODEL_NAME=smollm2 \
        pytest tests/agents/test_real_server.py

A model too small to port anything still exercises the framework's side: its bad
output (prose instead of tool calls, invalid JSON) must end in a defined status with
every call counted and the transcript complete.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from portwright.agents.budget import RunBudget
from portwright.agents.llm import CompletionRequest, Message
from portwright.agents.loop import Status
from portwright.agents.openai_client import OpenAIClient
from portwright.agents.roles import gap_verifier
from portwright.agents.transcript import Transcript, read_transcript
from portwright.config import ModelBudget

URL = os.environ.get("PORTWRIGHT_TEST_MODEL_URL", "")
NAME = os.environ.get("PORTWRIGHT_TEST_MODEL_NAME", "local")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not URL, reason="set PORTWRIGHT_TEST_MODEL_URL to a loopback "
                                       "OpenAI-compatible server to run"),
]


@pytest.fixture
def client() -> Iterator[OpenAIClient]:
    with OpenAIClient(model=NAME, base_url=URL, timeout=300, max_retries=1) as model:
        yield model


def test_a_plain_request_counts_usage(client: OpenAIClient) -> None:
    done = client.complete(CompletionRequest(messages=[
        Message(role="user", content="Reply with the single word: ok")]))
    assert done.message.content or done.message.tool_calls
    assert done.usage.prompt_tokens > 0
    assert done.usage.completion_tokens > 0


def test_gap_verifier_ends_in_a_defined_status(client: OpenAIClient, pair: dict[str, Any],
                                               tmp_path: Path) -> None:
    context = gap_verifier.sample().model_copy(update={"pin": pair["pin"], "excerpts": []})
    path = tmp_path / "transcript.jsonl"
    budget = RunBudget(ModelBudget(calls=4, tokens=0, cost_usd=0, wall_seconds=0))
    outcome = gap_verifier.ROLE.run(context, client=client, workspace=pair["workspace"],
                                    budget=budget.for_role("gap_verifier"),
                                    transcript=Transcript(path), max_steps=4)
    assert outcome.status in set(Status)
    assert outcome.status is not Status.MODEL_ERROR, outcome.reason
    assert 1 <= outcome.spent.calls <= 4
    assert outcome.spent.usage.prompt_tokens > 0
    events = read_transcript(path)
    assert events[-1]["event"] == "end"
    assert events[-1]["status"] == str(outcome.status)
    assert sum(e["event"] == "usage" for e in events) == outcome.spent.calls
