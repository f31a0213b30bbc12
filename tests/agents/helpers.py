"""Helpers of the agents tests: fake Chat Completions bodies, a subprocess sandbox."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from portwright.sandboxes.base import ExecResult


def chat_body(
    *,
    content: str | None = None,
    calls: Sequence[tuple[str, Any]] = (),
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    cached_tokens: int = 0,
    reasoning_tokens: int = 0,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A Chat Completions response body as an OpenAI-compatible server sends it."""
    tool_calls = [
        {"id": f"call_{i}", "type": "function",
         "function": {"name": name,
                      "arguments": args if isinstance(args, str) else json.dumps(args)}}
        for i, (name, args) in enumerate(calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens,
                  "prompt_tokens_details": {"cached_tokens": cached_tokens},
                  "completion_tokens_details": {"reasoning_tokens": reasoning_tokens}},
    }


class SubprocessSandbox:
    """A test double of the Sandbox protocol: a real subprocess, no isolation."""

    name = "subprocess"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None

    def exec(self, argv: Sequence[str], *, timeout: float | None = None,
             env: Mapping[str, str] | None = None, cwd: Path | None = None) -> ExecResult:
        started = time.monotonic()
        try:
            done = subprocess.run(list(argv), cwd=cwd, env=dict(env) if env else None,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return ExecResult(argv=list(argv), exit_code=-9, timed_out=True,
                              duration=time.monotonic() - started)
        return ExecResult(argv=list(argv), exit_code=done.returncode,
                          duration=time.monotonic() - started,
                          stdout_head=done.stdout, stderr_head=done.stderr,
                          stdout_bytes=len(done.stdout), stderr_bytes=len(done.stderr))




def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (outside .git) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}
