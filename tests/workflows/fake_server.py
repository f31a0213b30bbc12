"""The scripted porter behind a local OpenAI-compatible endpoint: `portwright run` in a
subprocess talks to it through the real openai SDK."""

from __future__ import annotations

import json
from typing import Any

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from portwright.agents.llm import CompletionRequest, Message, ToolCall
from portwright.agents.offline import ScriptedModel
from tests.agents.helpers import chat_body
from tests.workflows.porter import Plan, porter

PATH = "/v1/chat/completions"


def _message(raw: dict[str, Any]) -> Message:
    calls = [ToolCall(id=c["id"], name=c["function"]["name"],
                      arguments=c["function"]["arguments"])
             for c in raw.get("tool_calls") or []]
    return Message(role=raw["role"], content=raw.get("content"), tool_calls=calls,
                   tool_call_id=raw.get("tool_call_id"))


def serve_porter(server: HTTPServer, plan: Plan) -> None:
    """Answer every chat completion on ``server`` as the porter of ``plan`` would."""
    serve_model(server, porter(plan))


def serve_model(server: HTTPServer, model: ScriptedModel) -> None:
    """Answer every chat completion on ``server`` as ``model`` would."""

    def handle(request: Request) -> Response:
        body = json.loads(request.get_data())
        asked = CompletionRequest(messages=[_message(m) for m in body["messages"]])
        reply = model.complete(asked).message
        calls = [(c.name, c.arguments) for c in reply.tool_calls]
        return Response(json.dumps(chat_body(content=reply.content, calls=calls)),
                        content_type="application/json")

    server.expect_request(PATH, method="POST").respond_with_handler(handle)


def model_config(server: HTTPServer) -> str:
    """The ``[model]`` section pointing at ``server``."""
    return (f'\n[model]\nname = "porter"\nbase_url = "{server.url_for("/v1")}"\n'
            'api_key_env = "PORTER_KEY"\nmax_retries = 0\ntimeout = 30\n')
