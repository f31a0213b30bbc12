"""Record a run against an OpenAI-compatible server once, replay it anywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from portwright.agents.budget import RunBudget
from portwright.agents.llm import CompletionRequest, Message
from portwright.agents.loop import SUBMIT
from portwright.agents.offline import CassetteMismatch, RecordingClient, ReplayModel
from portwright.agents.openai_client import OpenAIClient
from portwright.agents.roles import gap_verifier
from portwright.agents.transcript import Transcript, read_transcript
from portwright.config import ModelBudget
from portwright.errors import ModelError
from tests.agents.helpers import chat_body

PATH = "/v1/chat/completions"
VERDICT = {"status": "missing", "reasoning": "only upstream defines it",
           "evidence": [{"kind": "upstream", "ref": "src/attn.py:1-2", "detail": "def"}]}


def serve_gap_run(server: HTTPServer) -> None:
    for body in (chat_body(calls=[("search", {"pattern": "rope_scaling", "repo": "upstream"})]),
                 chat_body(calls=[("git_history", {"term": "rope_scaling"})]),
                 chat_body(calls=[(SUBMIT, VERDICT)], cached_tokens=80)):
        server.expect_ordered_request(PATH).respond_with_json(body)


def run_gap(client: Any, pair: dict[str, Any], transcript: Path,
            symbols: list[str] | None = None) -> Any:
    context = gap_verifier.sample()
    if symbols:
        context = context.model_copy(update={"symbols": symbols})
    return gap_verifier.ROLE.run(context, client=client, workspace=pair["workspace"],
                                 budget=RunBudget(ModelBudget()).for_role("gap_verifier"),
                                 transcript=Transcript(transcript))


def test_record_then_replay_gives_the_same_transcript(httpserver: HTTPServer,
                                                      pair: dict[str, Any],
                                                      tmp_path: Path) -> None:
    serve_gap_run(httpserver)
    cassette = tmp_path / "gap.cassette.jsonl"
    real = OpenAIClient(model="fake-model", base_url=httpserver.url_for("/v1"), api_key="t",
                        max_retries=0, timeout=5)
    recorded = run_gap(RecordingClient(real, cassette), pair, tmp_path / "recorded.jsonl")
    assert recorded.ok
    assert len(cassette.read_text().splitlines()) == 3
    httpserver.clear()  # nothing answers any more: replay must not need the server

    replay = ReplayModel(cassette)
    replayed = run_gap(replay, pair, tmp_path / "replayed.jsonl")
    assert replayed.ok
    assert replay.exhausted
    assert replayed.unwrap() == recorded.unwrap()
    first = read_transcript(tmp_path / "recorded.jsonl")
    second = read_transcript(tmp_path / "replayed.jsonl")
    assert first == second
    assert [e["cached_tokens"] for e in second if e["event"] == "usage"] == [0, 0, 80]
    assert len(httpserver.log) == 0


def test_replay_fails_loudly_when_the_run_asks_something_else(httpserver: HTTPServer,
                                                              pair: dict[str, Any],
                                                              tmp_path: Path) -> None:
    serve_gap_run(httpserver)
    cassette = tmp_path / "gap.jsonl"
    real = OpenAIClient(model="fake-model", base_url=httpserver.url_for("/v1"), api_key="t",
                        max_retries=0, timeout=5)
    run_gap(RecordingClient(real, cassette), pair, tmp_path / "a.jsonl")
    with pytest.raises(CassetteMismatch, match=r"gap.jsonl:1: call 1 differs .*message 1 "
                                               r"\(user\) changed"):
        run_gap(ReplayModel(cassette), pair, tmp_path / "b.jsonl", symbols=["other_symbol"])
    replay = ReplayModel(cassette)
    run_gap(replay, pair, tmp_path / "c.jsonl")
    with pytest.raises(CassetteMismatch, match="holds only 3"):
        replay.complete(CompletionRequest(messages=[Message(role="user", content="more")]))


def test_recorded_errors_replay_as_errors(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_request(PATH).respond_with_json({"error": {"message": "no"}}, status=400)
    cassette = tmp_path / "err.jsonl"
    real = OpenAIClient(model="fake-model", base_url=httpserver.url_for("/v1"), api_key="t",
                        max_retries=0, timeout=5)
    request = CompletionRequest(messages=[Message(role="user", content="hi")])
    with pytest.raises(ModelError, match="HTTP 400"):
        RecordingClient(real, cassette).complete(request)
    entry = json.loads(cassette.read_text())
    assert "HTTP 400" in entry["error"]
    with pytest.raises(ModelError, match=r"replayed model error: .*HTTP 400"):
        ReplayModel(cassette).complete(request)


def test_a_broken_cassette_names_its_line(tmp_path: Path) -> None:
    cassette = tmp_path / "bad.jsonl"
    cassette.write_text('{"request_digest": "x", "completion": {}}\n{oops\n')
    with pytest.raises(CassetteMismatch, match=r"bad\.jsonl:2: not JSON"):
        ReplayModel(cassette)
    with pytest.raises(CassetteMismatch, match="no such cassette"):
        ReplayModel(tmp_path / "missing.jsonl")


def test_a_mismatch_says_which_request_and_where_its_text_differs(tmp_path: Path) -> None:
    from portwright.agents.llm import Completion, Usage

    recorded = CompletionRequest(messages=[
        Message(role="system", content="You port code."),
        Message(role="user", content="Port the row moving-average of the matrix.")])
    completion = Completion(message=Message(role="assistant", content="ok"), model="m",
                            usage=Usage())
    cassette = tmp_path / "tape.jsonl"
    cassette.write_text(json.dumps({
        "request_digest": recorded.digest(),
        "request": recorded.model_dump(mode="json", by_alias=True),
        "completion": completion.model_dump(mode="json")}) + "\n")
    replay = ReplayModel(cassette)
    asked = CompletionRequest(messages=[
        Message(role="system", content="You port code."),
        Message(role="user", content="Port the row percentile of the matrix.")])
    with pytest.raises(CassetteMismatch) as caught:
        replay.complete(asked)
    assert caught.value.call == 1
    assert caught.value.path == cassette
    assert caught.value.difference.startswith("message 1 (user) changed: at character 13, ")
    assert "recorded …'t the row moving-average of the matrix.'" in caught.value.difference
    assert "now …'t the row percentile" in caught.value.difference
    assert replay.mismatch is caught.value  # kept: the caller learns the run stopped matching
    with pytest.raises(CassetteMismatch):
        replay.complete(asked)
    assert replay.mismatch is caught.value  # the first one
