"""An :class:`~portwright.agents.llm.LLMClient` over the openai SDK (Chat Completions).

Chat Completions is the common ground of OpenAI, vLLM, llama.cpp and Ollama servers:
tool calling and JSON-schema structured outputs go through it. The SDK does the
retries (429, 5xx, connection errors) with backoff; what still fails after them is a
:class:`~portwright.errors.ModelError`.

While ``PORTWRIGHT_REFUSE_REAL_MODELS`` is set (the test suite sets it) the client
refuses any base URL that is not a loopback address, the default OpenAI URL included.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
from collections.abc import Mapping
from typing import Any, Self, cast
from urllib.parse import urlsplit

import openai

from portwright.agents.llm import Completion, CompletionRequest, Message, ToolCall, Usage
from portwright.config import ModelConfig
from portwright.errors import ConfigError, ModelError

logger = logging.getLogger(__name__)

REFUSE_ENV = "PORTWRIGHT_REFUSE_REAL_MODELS"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_KEY = "not-needed"


class RealModelRefused(ModelError):
    """A request to a real (non-loopback) model endpoint while they are refused."""


def is_loopback(url: str) -> bool:
    """True when ``url`` points at this machine (127.0.0.0/8, ::1, localhost)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
    ) -> None:
        self.model = model
        self.base_url = base_url or DEFAULT_BASE_URL
        guard_endpoint(self.base_url)
        self.temperature = temperature
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
                   max_retries=config.max_retries, temperature=config.temperature)

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
            response = self._client.chat.completions.create(**kwargs)
        except openai.APITimeoutError as exc:
            raise ModelError(f"model request to {self.base_url} timed out after its retries"
                             ) from exc
        except openai.APIStatusError as exc:
            raise ModelError(
                f"model endpoint {self.base_url} answered HTTP {exc.status_code} after its "
                f"retries: {_short(exc.message)}"
            ) from exc
        except openai.APIConnectionError as exc:
            raise ModelError(f"cannot reach the model endpoint {self.base_url}: {exc}") from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"model call failed: {exc}") from exc
        return _completion(cast(dict[str, Any], response.model_dump(warnings=False)), self.model)


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _completion(data: dict[str, Any], model: str) -> Completion:
    """Our :class:`Completion` from a Chat Completions response body."""
    choices = data.get("choices") or []
    if not choices:
        raise ModelError("the model endpoint answered without any choice")
    choice = choices[0]
    raw = choice.get("message") or {}
    calls = []
    for i, raw_call in enumerate(raw.get("tool_calls") or []):
        function = raw_call.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):  # some servers send an object, not JSON text
            arguments = "" if arguments is None else json.dumps(arguments)
        calls.append(ToolCall(id=str(raw_call.get("id") or f"call_{i}"),
                              name=str(function.get("name") or ""), arguments=arguments))
    message = Message(role="assistant", content=raw.get("content"), tool_calls=calls)
    return Completion(message=message, usage=usage_from(data.get("usage")),
                      model=str(data.get("model") or model),
                      finish_reason=choice.get("finish_reason"))


def usage_from(raw: Any) -> Usage:
    """Usage from a response's ``usage`` object (servers that omit parts count as 0)."""
    if not isinstance(raw, dict):
        return Usage()
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    return Usage(
        prompt_tokens=int(raw.get("prompt_tokens") or 0),
        completion_tokens=int(raw.get("completion_tokens") or 0),
        cached_tokens=int(prompt_details.get("cached_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
    )
