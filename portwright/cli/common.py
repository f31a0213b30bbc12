"""Shared CLI plumbing: consoles, the selected repo, JSON output."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from rich.console import Console

if TYPE_CHECKING:
    from portwright.config import PortwrightConfig

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


@dataclass
class _State:
    repo: Path = field(default_factory=lambda: Path().resolve())


STATE = _State()


def repo_path() -> Path:
    return STATE.repo


def config() -> PortwrightConfig:
    from portwright.config import load_config

    return load_config(STATE.repo)


def emit_json(payload: Any) -> None:
    """Print ``payload`` (pydantic models welcome) as JSON on stdout."""
    print(json.dumps(_plain(payload), indent=2, sort_keys=False, default=str))


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
