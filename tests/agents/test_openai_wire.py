"""The real openai SDK against a local fake OpenAI-compatible server (pytest-httpserver)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from pydantic import BaseModel
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from portwright.agents.budget import RunBudget
from portwright.agents.llm import CompletionRequest, Message, ResponseSchema
from portwright.agents.loop import SUBMIT, Status, run_agent
from portwright.agents.openai_client import OpenAIClient, RealModelRefused, guard_endpoint
from portwright.agents.tools import Toolbox
from portwright.agents.transcript import Transcript, read_transcript
from portwright.config import ModelBudget, ModelConfig, Price
from portwright.errors import BudgetExhausted, ConfigError, ModelError
from tests.agents.helpers import chat_body

PATH = "/v1/chat/completions"


class Answer(BaseModel):
    value: str
    lines: int


def client_for(server: HTTPServer, **kwargs: Any) -> OpenAIClient:
    options: dict[str, Any] = {"timeout": 5.0, "max_retries": 0, **kwargs}
    return OpenAIClient(model="fake-model", base_url=server.url_for("/v1"), api_key="test",
                        **options)


def budget(**limits: Any) -> RunBudget:
    return RunBudget(ModelBudget(**limits), prices={"fake-model": Price(
        prompt=2.0, completion=8.0, cached=0.5)})


def sent_bodies(server: HTTPServer) -> list[dict[str, Any]]:
    return [json.loads(req.get_data()) for req, _ in server.log]


def test_tool_calling_loop_reaches_a_structured_result(httpserver: HTTPServer,
                                                       pair: dict[str, Any], tmp_path: Any
                                                       ) -> None:
    httpserver.expect_ordered_request(PATH, method="POST").respond_with_json(
        chat_body(calls=[("read_file", {"path": "notes.txt"})], cached_tokens=60,
                  reasoning_tokens=5))
    httpserver.expect_ordered_request(PATH, method="POST").respond_with_json(
        chat_body(calls=[(SUBMIT, {"value": "beta", "lines": 3})], prompt_tokens=150,
                  cached_tokens=100))
    run_budget = budget()
    transcript = Transcript(tmp_path / "t.jsonl")
    outcome = run_agent(
        role="tester", client=client_for(httpserver),
        messages=[Message(role="system", content="find the second line"),
                  Message(role="user", content="notes.txt")],
        toolbox=Toolbox(pair["workspace"], ["read_file"]), result_model=Answer,
        budget=run_budget.for_role("tester"), transcript=transcript)

    assert outcome.status is Status.DONE
    assert outcome.unwrap() == Answer(value="beta", lines=3)
    first, second = sent_bodies(httpserver)
    assert first["model"] == "fake-model"
    assert [t["function"]["name"] for t in first["tools"]] == ["read_file", SUBMIT]
    assert first["tools"][0]["function"]["parameters"]["required"] == ["path"]
    tool_answer = second["messages"][-1]
    assert tool_answer["role"] == "tool"
    assert tool_answer["tool_call_id"] == "call_0"
    assert "     2\tbeta" in tool_answer["content"]
    # usage: every field counted, cost from the price table (cached tokens at their price)
    spent = run_budget.report()["run"]
    assert spent.calls == 2
    assert spent.usage.prompt_tokens == 250
    assert spent.usage.cached_tokens == 160
    assert spent.usage.reasoning_tokens == 5
    assert spent.usage.completion_tokens == 40
    expected = ((250 - 160) * 2.0 + 160 * 0.5 + 40 * 8.0) / 1e6
    assert spent.cost_usd == pytest.approx(expected)
    events = read_transcript(tmp_path / "t.jsonl")
    assert [e["event"] for e in events][:4] == ["start", "message", "message", "usage"]
    assert events[-1]["event"] == "end"
    assert events[-1]["result"] == {"value": "beta",
                                                                     "lines": 3}


def test_retries_on_the_wire_429_then_500_then_success(httpserver: HTTPServer) -> None:
    fast = {"retry-after-ms": "10"}
    httpserver.expect_ordered_request(PATH).respond_with_json(
        {"error": {"message": "slow down"}}, status=429, headers=fast)
    httpserver.expect_ordered_request(PATH).respond_with_json(
        {"error": {"message": "boom"}}, status=500, headers=fast)
    httpserver.expect_ordered_request(PATH).respond_with_json(chat_body(content="hello"))
    client = client_for(httpserver, max_retries=2)
    completion = client.complete(CompletionRequest(messages=[Message(role="user",
                                                                     content="hi")]))
    assert completion.message.content == "hello"
    assert len(httpserver.log) == 3
    httpserver.check_assertions()


def test_retries_exhausted_is_a_model_error(httpserver: HTTPServer) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        {"error": {"message": "down"}}, status=503, headers={"retry-after-ms": "5"})
    client = client_for(httpserver, max_retries=1)
    with pytest.raises(ModelError, match="HTTP 503"):
        client.complete(CompletionRequest(messages=[Message(role="user", content="hi")]))
    assert len(httpserver.log) == 2


def test_timeout_is_a_model_error_and_a_counted_failed_call(httpserver: HTTPServer,
                                                             pair: dict[str, Any]) -> None:
    def slow(request: Request) -> Response:
        time.sleep(1.0)
        return Response(json.dumps(chat_body(content="late")), content_type="application/json")

    httpserver.expect_request(PATH).respond_with_handler(slow)
    client = client_for(httpserver, timeout=0.2)
    run_budget = budget()
    outcome = run_agent(role="tester", client=client,
                        messages=[Message(role="user", content="hi")],
                        toolbox=Toolbox(pair["workspace"], []), result_model=Answer,
                        budget=run_budget.for_role("tester"))
    assert outcome.status is Status.MODEL_ERROR
    assert "timed out" in outcome.reason
    assert run_budget.report()["run"].calls == 1
    assert run_budget.report()["run"].failed_calls == 1
    with pytest.raises(ModelError, match="timed out"):
        outcome.unwrap()
    deadline = time.monotonic() + 3
    while not httpserver.log and time.monotonic() < deadline:  # let the slow handler finish
        time.sleep(0.05)


def test_malformed_tool_arguments_are_answered_and_recovered_from(
        httpserver: HTTPServer, pair: dict[str, Any]) -> None:
    for body in (
        chat_body(calls=[("read_file", '{"path": "notes.txt"')]),       # invalid JSON
        chat_body(calls=[("read_file", {"file": "notes.txt"})]),        # off schema
        chat_body(calls=[("delete_everything", {})]),                   # unknown tool
        chat_body(calls=[("read_file", {"path": "notes.txt"})]),
        chat_body(calls=[(SUBMIT, {"value": "alpha", "lines": 3})]),
    ):
        httpserver.expect_ordered_request(PATH).respond_with_json(body)
    run_budget = budget()
    outcome = run_agent(role="tester", client=client_for(httpserver),
                        messages=[Message(role="user", content="read notes.txt")],
                        toolbox=Toolbox(pair["workspace"], ["read_file"]), result_model=Answer,
                        budget=run_budget.for_role("tester"))
    assert outcome.status is Status.DONE
    assert outcome.invalid_replies == 3
    assert run_budget.report()["run"].invalid_replies == 3
    bodies = sent_bodies(httpserver)
    answers = [b["messages"][-1]["content"] for b in bodies[1:4]]
    assert "not valid JSON" in answers[0]
    assert "path: Field required" in answers[1]
    assert "file: Extra inputs" in answers[1]
    assert "unknown tool 'delete_everything'" in answers[2]


def test_budget_exhausted_mid_loop(httpserver: HTTPServer, pair: dict[str, Any]) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        chat_body(calls=[("search", {"pattern": "alpha"})], prompt_tokens=400,
                  completion_tokens=100))
    run_budget = budget(tokens=1200, calls=0, cost_usd=0, wall_seconds=0)
    outcome = run_agent(role="tester", client=client_for(httpserver),
                        messages=[Message(role="user", content="loop forever")],
                        toolbox=Toolbox(pair["workspace"], ["search"]), result_model=Answer,
                        budget=run_budget.for_role("tester"), max_steps=50, repeat_limit=99)
    assert outcome.status is Status.BUDGET_EXHAUSTED
    assert "budget exhausted: run tokens used 1500 of 1200" in outcome.reason
    assert len(httpserver.log) == 3
    with pytest.raises(BudgetExhausted):
        outcome.unwrap()


def test_role_budget_counts_alongside_the_run(httpserver: HTTPServer,
                                              pair: dict[str, Any]) -> None:
    httpserver.expect_request(PATH).respond_with_json(chat_body(content="not json"))
    run_budget = RunBudget(ModelBudget(), role_budgets={"tester": ModelBudget(calls=2)})
    outcome = run_agent(role="tester", client=client_for(httpserver),
                        messages=[Message(role="user", content="?")],
                        toolbox=Toolbox(pair["workspace"], []), result_model=Answer,
                        budget=run_budget.for_role("tester"))
    assert outcome.status is Status.BUDGET_EXHAUSTED
    assert "role tester calls used 2 of 2" in outcome.reason
    assert outcome.invalid_replies == 2
    assert run_budget.report()["run"].calls == 2


def test_structured_output_through_response_format(httpserver: HTTPServer) -> None:
    httpserver.expect_request(PATH).respond_with_json(
        chat_body(content=json.dumps({"value": "x", "lines": 1})))
    client = client_for(httpserver)
    schema = ResponseSchema(name="Answer", schema=Answer.model_json_schema())
    completion = client.complete(CompletionRequest(
        messages=[Message(role="user", content="answer")], response_format=schema))
    sent = sent_bodies(httpserver)[0]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["name"] == "Answer"
    assert Answer.model_validate_json(completion.message.content or "") == Answer(value="x",
                                                                                 lines=1)


def test_real_model_requests_are_refused_in_tests() -> None:
    with pytest.raises(RealModelRefused, match=r"api\.openai\.com"):
        OpenAIClient(model="gpt-4.1")
    with pytest.raises(RealModelRefused, match=r"models\.example\.com"):
        OpenAIClient.from_config(ModelConfig(base_url="https://models.example.com/v1"),
                                 environ={"PORTWRIGHT_REFUSE_REAL_MODELS": "1",
                                          "OPENAI_API_KEY": "sk-x"})
    guard_endpoint("http://127.0.0.1:8000/v1")
    guard_endpoint("http://localhost:11434/v1")
    guard_endpoint("https://api.openai.com/v1", environ={})


def test_missing_key_names_the_variable() -> None:
    config = ModelConfig(base_url="https://models.example.com/v1", api_key_env="MY_KEY")
    with pytest.raises(ConfigError, match="MY_KEY is not set"):
        OpenAIClient.from_config(config, environ={})
    local = OpenAIClient.from_config(ModelConfig(base_url="http://127.0.0.1:9/v1"), environ={})
    assert local.model == "gpt-4.1"


def test_ask_structured_retries_an_unusable_answer(httpserver: HTTPServer) -> None:
    from portwright.agents.loop import ask_structured

    httpserver.expect_ordered_request(PATH).respond_with_json(
        chat_body(content='{"value": "x"}'))
    httpserver.expect_ordered_request(PATH).respond_with_json(
        chat_body(content='{"value": "x", "lines": 2}'))
    run_budget = budget()
    outcome = ask_structured(role="tester", client=client_for(httpserver),
                             messages=[Message(role="user", content="answer")],
                             result_model=Answer, budget=run_budget.for_role("tester"))
    assert outcome.unwrap() == Answer(value="x", lines=2)
    assert outcome.invalid_replies == 1
    first, second = sent_bodies(httpserver)
    assert first["response_format"]["json_schema"]["name"] == "Answer"
    assert "tools" not in first
    assert "lines: Field required" in second["messages"][-1]["content"]
    assert run_budget.report()["run"].calls == 2


def test_tool_arguments_sent_as_an_object_are_accepted(httpserver: HTTPServer) -> None:
    body = chat_body(calls=[("read_file", {"path": "notes.txt"})])
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = {
        "path": "notes.txt"}
    body["choices"][0]["message"]["tool_calls"][0].pop("id")
    httpserver.expect_request(PATH).respond_with_json(body)
    completion = client_for(httpserver).complete(
        CompletionRequest(messages=[Message(role="user", content="read")]))
    (only,) = completion.message.tool_calls
    assert only.id == "call_0"
    assert json.loads(only.arguments) == {"path": "notes.txt"}
