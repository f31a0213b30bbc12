"""Choosing the model a run talks to, from ``[model]`` and the record/replay options;
the one tiny request that checks an endpoint answers (:func:`ping`)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from portwright.agents.llm import CompletionRequest, LLMClient, Message, Usage
from portwright.agents.offline import RecordingClient, ReplayModel
from portwright.agents.openai_client import DEFAULT_BASE_URL, REFUSE_ENV, OpenAIClient
from portwright.config import CONFIG_FILE, ModelConfig
from portwright.errors import ConfigError, UsageError

logger = logging.getLogger(__name__)


class Endpoint(BaseModel):
    """What ``[model]`` points at, without calling it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    provider: str
    """``openai`` or ``replay``."""
    model: str
    """Model name."""
    base_url: str | None
    """Server URL (None for replay)."""
    api_key_env: str | None
    """Variable that holds the key (None for replay)."""
    api_key_set: bool
    """Whether that variable is set (never its value)."""
    cassette: str | None = None
    """For replay: the cassette file."""
    refused: bool = False
    """Real model requests are refused here (``PORTWRIGHT_REFUSE_REAL_MODELS``)."""


def describe(config: ModelConfig, repo: Path, environ: Mapping[str, str] | None = None
             ) -> Endpoint:
    """The configured endpoint, for ``portwright model check``."""
    env = os.environ if environ is None else environ
    if config.provider == "replay":
        cassette = str(repo / config.cassette) if config.cassette else None
        return Endpoint(provider="replay", model=config.name, base_url=None, api_key_env=None,
                        api_key_set=False, cassette=cassette)
    return Endpoint(provider=config.provider, model=config.name,
                    base_url=config.base_url or DEFAULT_BASE_URL,
                    api_key_env=config.api_key_env,
                    api_key_set=bool(env.get(config.api_key_env)),
                    refused=bool(env.get(REFUSE_ENV)))


PING = CompletionRequest(messages=[Message(role="user",
                                           content="Reply with the single word: ok")])
"""The one tiny request ``portwright model check`` and ``portwright doctor`` send."""


class Reply(BaseModel):
    """What the endpoint answered :data:`PING`."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    reply: str | None
    """The reply's text."""
    model: str
    """The model the server says answered."""
    seconds: float
    """How long the request took."""
    usage: Usage
    """Tokens it used."""


def ping(client: LLMClient) -> Reply:
    """Send :data:`PING`; a :class:`~portwright.errors.ModelError` names what went wrong."""
    started = time.monotonic()
    done = client.complete(PING)
    return Reply(reply=done.message.content, model=done.model,
                 seconds=round(time.monotonic() - started, 3), usage=done.usage)


def build_client(
    config: ModelConfig,
    repo: Path,
    *,
    record: Path | None = None,
    replay: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> LLMClient:
    """The model of a run: the configured endpoint, or a cassette; recorded if asked."""
    if record is not None and replay is not None:
        raise UsageError("--record and --replay exclude each other",
                         fix="record once against a real model, then replay that cassette")
    client: LLMClient
    if replay is not None:
        client = ReplayModel(replay)
    elif config.provider == "replay":
        if not config.cassette:
            raise ConfigError("provider is replay but no cassette is set",
                              file=repo / CONFIG_FILE, key="model.cassette",
                              fix="set [model] cassette to a file written with --record")
        client = ReplayModel(repo / config.cassette)
    else:
        client = OpenAIClient.from_config(config, environ)
    if record is not None:
        if isinstance(client, ReplayModel):
            raise UsageError("--record needs a real model, not a replayed one",
                             fix="set [model] provider = \"openai\" to record")
        client = RecordingClient(client, record)
    return client
