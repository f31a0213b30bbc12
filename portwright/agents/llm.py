"""What the agents say to a model and what comes back: messages, tool specs, usage,
and the :class:`LLMClient` protocol every model (real, scripted, replayed) implements."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class ToolCall(_Model):
    """One tool call the model asked for, arguments as the raw text it sent."""

    id: str
    """The call id the tool's answer refers to."""
    name: str
    """Tool name (may be one that does not exist: the loop answers that)."""
    arguments: str
    """Arguments as sent: JSON text that may be invalid."""


class Message(_Model):
    """One chat message in the Chat Completions shape."""

    role: Literal["system", "user", "assistant", "tool"]
    """Who speaks."""
    content: str | None = None
    """Text (None for an assistant message that only calls tools)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls of an assistant message."""
    tool_call_id: str | None = None
    """For a tool message: the call it answers."""

    def to_openai(self) -> dict[str, Any]:
        """The dict the Chat Completions API takes."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


class ToolSpec(_Model):
    """A tool as the model sees it: a name, what it does, a JSON schema of its arguments."""

    name: str
    """Function name."""
    description: str
    """What the tool does and when to use it."""
    parameters: dict[str, Any]
    """JSON schema of the arguments object."""

    def to_openai(self) -> dict[str, Any]:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}


class ResponseSchema(_Model):
    """A structured-output request: the reply must be JSON matching ``schema``."""

    name: str
    """Schema name (letters, digits, ``_``)."""
    schema_: dict[str, Any] = Field(alias="schema")
    """JSON schema of the reply."""


class CompletionRequest(_Model):
    """Everything one model call sends; recorded in cassettes and compared on replay."""

    messages: list[Message]
    """The conversation, static parts first."""
    tools: list[ToolSpec] = Field(default_factory=list)
    """Tools the model may call."""
    response_format: ResponseSchema | None = None
    """Ask for a structured reply instead of free text."""

    def digest(self) -> str:
        """Stable digest of the request (what a cassette is keyed by)."""
        text = json.dumps(self.model_dump(mode="json", by_alias=True), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


class Usage(_Model):
    """Tokens one call (or many, summed) used."""

    prompt_tokens: int = 0
    """Prompt tokens, cached ones included."""
    completion_tokens: int = 0
    """Completion tokens, reasoning ones included."""
    cached_tokens: int = 0
    """Prompt tokens served from the provider's prefix cache."""
    reasoning_tokens: int = 0
    """Completion tokens spent on hidden reasoning."""

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


class Completion(_Model):
    """What one model call returned."""

    message: Message
    """The assistant message (text and/or tool calls)."""
    usage: Usage
    """Tokens used by this call."""
    model: str
    """Model name the server reports."""
    finish_reason: str | None = None
    """``stop``, ``tool_calls``, ``length``, …"""


@runtime_checkable
class LLMClient(Protocol):
    """A chat model: real (OpenAI-compatible server), scripted, or replayed from a cassette.

    ``complete`` raises :class:`~portwright.errors.ModelError` when the endpoint fails
    after its retries.
    """

    model: str
    """Model name used for pricing and reports."""

    def complete(self, request: CompletionRequest) -> Completion:
        """Send one request and return the model's reply."""
        ...


def estimate_tokens(text: str) -> int:
    """Rough token count (4 characters a token) for context ceilings and offline models."""
    return (len(text) + 3) // 4
