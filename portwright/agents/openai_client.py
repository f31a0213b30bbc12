"""An :class:`~portwright.agents.llm.LLMClient` over the openai SDK (Chat Completions).

Chat Completions is the common ground of OpenAI, vLLM, llama.cpp and Ollama servers:
tool calling and JSON-schema structured outputs go through it. The SDK does the
retries (429, 5xx, connection errors) with backoff; what still fails after them is a
:class:`~portwright.errors.ModelError`. So is an answer that is no chat completion: the
body is read here, not by the SDK, so a page that is not JSON (a sign-in page, a proxy's
error page), JSON cut off, or JSON without ``choices`` is named with the endpoint, what it
said and the fix, never a traceback. Every message names the endpoint.

While ``PORTWRIGHT_REFUSE_REAL_MODELS`` is set (the test suite sets it) the client
refuses any base URL that is not a loopback address, the default OpenAI URL included.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any, Self, cast
from urllib.parse import urlsplit

import openai

from portwright.agents.llm import Completion, CompletionRequest, Message, ToolCall, Usage
from portwright.config import ModelConfig
from portwright.config import is_loopback as is_loopback_host
from portwright.errors import ConfigError, ModelError

logger = logging.getLogger(__name__)

REFUSE_ENV = "PORTWRIGHT_REFUSE_REAL_MODELS"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_KEY = "not-needed"


class RealModelRefused(ModelError):
    """A request to a real (non-loopback) model endpoint while they are refused."""


def is_loopback(url: str) -> bool:
    """True when ``url`` points at this machine (127.0.0.0/8, ::1, localhost)."""
    return is_loopback_host(urlsplit(url).hostname or "")


def guard_endpoint(base_url: str, environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`RealModelRefused` when real model requests are refused and ``base_url``
    is not loopback."""
    env = os.environ if environ is None else environ
    if env.get(REFUSE_ENV) and not is_loopback(base_url):
        raise RealModelRefused(
            f"refusing a real model request to {base_url}: {REFUSE_ENV} is set "
            "(tests and offline runs use a scripted, replayed or local model)"
        )


class OpenAIClient:
    """Chat Completions on any OpenAI-compatible server."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 3,
        temperature: float | None = None,
        api_key_env: str = "OPENAI_API_KEY",
    ) -> None:
        self.model = model
        self.base_url = base_url or DEFAULT_BASE_URL
        guard_endpoint(self.base_url)
        self.temperature = temperature
        self.timeout = timeout
        self.max_retries = max_retries
        self.api_key_env = api_key_env
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or LOCAL_KEY,
            timeout=timeout,
            max_retries=max_retries,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def from_config(
        cls, config: ModelConfig, environ: Mapping[str, str] | None = None
    ) -> OpenAIClient:
        """Build the client ``[model]`` describes; the key comes from ``api_key_env``."""
        env = os.environ if environ is None else environ
        base_url = config.base_url or DEFAULT_BASE_URL
        guard_endpoint(base_url, env)
        key = env.get(config.api_key_env)
        if not key and not is_loopback(base_url):
            raise ConfigError(
                f"the API key variable {config.api_key_env} is not set",
                key="model.api_key_env",
                fix=f"export {config.api_key_env}=... (or set [model] api_key_env to the "
                    "variable that holds the key)",
            )
        return cls(model=config.name, base_url=base_url, api_key=key, timeout=config.timeout,
                   max_retries=config.max_retries, temperature=config.temperature,
                   api_key_env=config.api_key_env)

    def close(self) -> None:
        self._client.close()

    def complete(self, request: CompletionRequest) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_openai() for m in request.messages],
        }
        if request.tools:
            kwargs["tools"] = [t.to_openai() for t in request.tools]
        if request.response_format is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.response_format.name,
                                "schema": request.response_format.schema_},
            }
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        try:
            raw = self._client.chat.completions.with_raw_response.create(**kwargs)
        except openai.APITimeoutError as exc:
            raise ModelError(
                f"model request to {self.base_url} timed out after {self.timeout:g} s "
                f"({self._tries()})",
                fix=f"raise [model] timeout, or check that the server at {self.base_url} is "
                    "up and not overloaded") from exc
        except openai.APIStatusError as exc:
            raise ModelError(
                f"model endpoint {self.base_url} answered HTTP {exc.status_code} "
                f"({self._tries()}): {_error_said(exc.response.text)}",
                fix=self._status_fix(exc.status_code)) from exc
        except openai.APIConnectionError as exc:
            raise ModelError(
                f"cannot reach the model endpoint {self.base_url} ({self._tries()}): "
                f"{_cause(exc)}",
                fix=f"start the model server at {self.base_url}, or point [model] base_url "
                    "at one that answers (`portwright model check` sends it one request)"
            ) from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"model call to {self.base_url} failed: {exc}",
                             fix=_not_an_api(self.base_url)) from exc
        response = raw.http_response
        data = _body(self.base_url, response.status_code,
                     response.headers.get("content-type", ""), response.text)
        return _completion(data, self.model, self.base_url)

    def _tries(self) -> str:
        return "not retried" if self.max_retries == 0 else f"after {self.max_retries} retries"

    def _status_fix(self, status: int) -> str:
        """What to change when the endpoint answered ``status``."""
        if status in (401, 403):
            return (f"set {self.api_key_env} to a key {self.base_url} accepts, or point "
                    "[model] api_key_env at the variable that holds one")
        if status == 404:
            return (f"check [model] base_url ({self.base_url}; usually it ends in /v1) and "
                    f"[model] name ({self.model}): the server has no such path or model")
        if status in (408, 429):
            return ("the server is busy or the key's quota is spent: wait and try again, or "
                    "raise [model] max_retries")
        if status < 500:
            return (f"the server refused the request: check that [model] name ({self.model}) "
                    "is a model it serves, with tool calling")
        return (f"the server at {self.base_url} failed: see its log and try again "
                "(`portwright model check` sends it one request); [model] max_retries "
                "retries a failing call")


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _said(text: str) -> str:
    """What a body says, for a message: one line, capped, quoted (or ``an empty body``)."""
    line = " ".join(text.split())
    return repr(_short(line, 200)) if line else "an empty body"


def _error_said(text: str) -> str:
    """What an error answer says: its ``error.message`` when it is OpenAI's error JSON."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return _said(text)
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return _said(message) if isinstance(message, str) and message else _said(text)


def _cause(exc: BaseException) -> str:
    """The transport's own words under the SDK's ``Connection error.`` (``[Errno 104]
    Connection reset by peer``, ``Server disconnected without sending a response.``)."""
    cause = exc.__cause__ or exc.__context__
    while cause is not None and cause.__cause__ is not None and not str(cause):
        cause = cause.__cause__
    if cause is None:
        return str(exc)
    return str(cause) or type(cause).__name__


def _not_an_api(base_url: str) -> str:
    return (f"check [model] base_url ({base_url}): it must be the root of an "
            "OpenAI-compatible API (usually ending in /v1) that answers POST "
            "…/chat/completions with JSON; a sign-in page, a proxy's error page or a web UI "
            "at that address answers something else")


def _body(base_url: str, status: int, content_type: str, text: str) -> dict[str, Any]:
    """The JSON object of a response body, or a :class:`ModelError` saying what came
    instead."""
    kind = content_type.split(";")[0].strip().lower()
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        if not text.strip():
            what = "an empty body"
        elif kind.endswith("json") and isinstance(exc, json.JSONDecodeError):
            raise ModelError(
                f"model endpoint {base_url} answered HTTP {status} with JSON that is cut off "
                f"or broken ({exc.msg}: character {exc.pos} of {len(text)}): {_said(text)}",
                fix=f"see the log of the server at {base_url} and of any proxy before it, "
                    "and try again; if it answers so each time, check [model] base_url: it "
                    "must be the root of an OpenAI-compatible API (usually ending in /v1)"
            ) from exc
        else:
            what = f"{kind or 'a body without a content type'}, not JSON"
        raise ModelError(f"model endpoint {base_url} answered HTTP {status} with {what}: "
                         f"{_said(text)}", fix=_not_an_api(base_url)) from exc
    if not isinstance(data, dict):
        raise ModelError(f"model endpoint {base_url} answered HTTP {status} with JSON that "
                         f"is no chat completion (a {type(data).__name__}): {_said(text)}",
                         fix=_not_an_api(base_url))
    return data


def _completion(data: dict[str, Any], model: str, base_url: str) -> Completion:
    """Our :class:`Completion` from a Chat Completions response body (any shape: what is
    not a chat completion is a :class:`ModelError`)."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        error = data.get("error")
        if isinstance(error, dict):
            error = error.get("message") or error
        said = f"; it says {_said(str(error))}" if error else ""
        keys = ", ".join(sorted(str(k) for k in data)[:8]) or "none"
        raise ModelError(
            f"model endpoint {base_url} answered JSON with no choices (its keys: {keys})"
            f"{said}",
            fix=f"check [model] base_url ({base_url}) and [model] name ({model}): an "
                "OpenAI-compatible server answers POST …/chat/completions with `choices` "
                "(`portwright model check` sends it one request)")
    choice = choices[0]
    raw = _mapping(choice.get("message"))
    calls = []
    raw_calls = raw.get("tool_calls")
    for i, item in enumerate(raw_calls if isinstance(raw_calls, list) else []):
        raw_call = _mapping(item)
        function = _mapping(raw_call.get("function"))
        arguments = function.get("arguments")
        if not isinstance(arguments, str):  # some servers send an object, not JSON text
            arguments = "" if arguments is None else json.dumps(arguments)
        calls.append(ToolCall(id=str(raw_call.get("id") or f"call_{i}"),
                              name=str(function.get("name") or ""), arguments=arguments))
    message = Message(role="assistant", content=_text(raw.get("content")), tool_calls=calls)
    finish = choice.get("finish_reason")
    return Completion(message=message, usage=usage_from(data.get("usage")),
                      model=str(data.get("model") or model),
                      finish_reason=None if finish is None else str(finish))


def _mapping(value: Any) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    """A message's content: text, or the text parts of a list of parts."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(str(_mapping(part).get("text") or "") for part in value)
    return json.dumps(value)


def usage_from(raw: Any) -> Usage:
    """Usage from a response's ``usage`` object (servers that omit parts count as 0)."""
    if not isinstance(raw, dict):
        return Usage()
    prompt_details = _mapping(raw.get("prompt_tokens_details"))
    completion_details = _mapping(raw.get("completion_tokens_details"))
    return Usage(
        prompt_tokens=_count(raw.get("prompt_tokens")),
        completion_tokens=_count(raw.get("completion_tokens")),
        cached_tokens=_count(prompt_details.get("cached_tokens")),
        reasoning_tokens=_count(completion_details.get("reasoning_tokens")),
    )


def _count(value: Any) -> int:
    """A token count as a server sent it; anything that is not a count is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value) if 0 <= value < 2**53 else 0
