"""Models that need no endpoint: a scripted model for tests, a cassette recorder and player.

A cassette is a JSONL file, one line per model call in order::

    {"request_digest": "...", "request": {...}, "completion": {...}}
    {"request_digest": "...", "request": {...}, "error": "..."}

:class:`RecordingClient` wraps a real client and writes one; :class:`ReplayModel` plays it
back and fails loudly (:class:`CassetteMismatch`) when the run asks something the cassette
does not hold: a different request, or more calls than were recorded.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from portwright.agents.llm import (
    Completion,
    CompletionRequest,
    LLMClient,
    Message,
    ToolCall,
    Usage,
    estimate_tokens,
)
from portwright.errors import ModelError

logger = logging.getLogger(__name__)


class CassetteMismatch(ModelError):
    """The run asked the replay model something its cassette does not hold (or the cassette
    does not read: ``line`` is then its line, ``what`` what is wrong there).

    A run's request that differs from the recorded one also carries ``path`` (the
    cassette), ``call`` (the request's number, from 1) and ``difference`` (what differs)."""

    def __init__(self, message: str, *, line: int | None = None, what: str = "",
                 path: Path | None = None, call: int | None = None,
                 difference: str = "") -> None:
        super().__init__(message)
        self.line = line
        self.what = what or message
        self.path = path
        self.call = call
        self.difference = difference or self.what


Script = Callable[[CompletionRequest], Message | str]
"""A scripted model: the next assistant message (or plain text) for a request."""


class ScriptedModel:
    """A model that is a function of the request: for unit tests and examples.

    Usage is estimated from characters, so budgets and cost work as with a real model.
    """

    def __init__(self, script: Script, *, model: str = "scripted") -> None:
        self.model = model
        self._script = script
        self.requests: list[CompletionRequest] = []

    @classmethod
    def from_replies(cls, replies: Sequence[Message | str], *, model: str = "scripted"
                     ) -> ScriptedModel:
        """A model that answers ``replies`` in order, and fails when asked once more."""
        queue = list(replies)

        def script(request: CompletionRequest) -> Message | str:
            if not queue:
                raise ModelError(f"the scripted model has no reply left ({len(replies)} "
                                 "given)")
            return queue.pop(0)

        return cls(script, model=model)

    def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        reply = self._script(request)
        message = reply if isinstance(reply, Message) else Message(role="assistant",
                                                                   content=reply)
        prompt = sum(estimate_tokens(m.model_dump_json()) for m in request.messages)
        prompt += sum(estimate_tokens(t.model_dump_json()) for t in request.tools)
        completion = estimate_tokens(message.model_dump_json())
        return Completion(message=message, model=self.model,
                          usage=Usage(prompt_tokens=prompt, completion_tokens=completion),
                          finish_reason="tool_calls" if message.tool_calls else "stop")


def call(name: str, arguments: dict[str, Any] | str, *, id: str | None = None,
         content: str | None = None) -> Message:
    """An assistant message calling one tool (``arguments`` as a dict, or raw text)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Message(role="assistant", content=content,
                   tool_calls=[ToolCall(id=id or f"call_{name}", name=name, arguments=raw)])


class RecordingClient:
    """Wraps a client and appends every exchange (errors too) to a cassette."""

    def __init__(self, inner: LLMClient, path: Path) -> None:
        self.inner = inner
        self.model = inner.model
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")

    def complete(self, request: CompletionRequest) -> Completion:
        entry: dict[str, Any] = {"request_digest": request.digest(),
                                 "request": request.model_dump(mode="json", by_alias=True)}
        try:
            completion = self.inner.complete(request)
        except ModelError as exc:
            entry["error"] = str(exc)
            self._append(entry)
            raise
        entry["completion"] = completion.model_dump(mode="json")
        self._append(entry)
        return completion

    def _append(self, entry: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, sort_keys=True) + "\n")


class ReplayModel:
    """Plays a cassette: the n-th call must be the n-th recorded request.

    With ``seek``, a call is answered by the recorded entry whose request it is (the next
    one from the current position, else the first anywhere): for runs whose steps run in
    different processes (Temporal workers), each with a fresh client. The request must
    still match a recorded one exactly.
    """

    def __init__(self, path: Path, *, model: str | None = None, seek: bool = False) -> None:
        self.path = path
        self.entries = load_cassette(path)
        recorded = next((e["completion"]["model"] for e in self.entries if "completion" in e),
                        None)
        self.model = model or recorded or "replay"
        self.position = 0
        self.seek = seek
        self.mismatch: CassetteMismatch | None = None
        """The first call the cassette did not hold, once there was one."""

    def _find(self, digest: str) -> int | None:
        order = [*range(self.position, len(self.entries)), *range(self.position)]
        return next((i for i in order if self.entries[i]["request_digest"] == digest), None)

    def complete(self, request: CompletionRequest) -> Completion:
        index = self.position
        if self.seek:
            found = self._find(request.digest())
            if found is None:
                raise self._mismatch(CassetteMismatch(
                    f"{self.path}: no recorded request matches this call; record it again "
                    "with --record", path=self.path,
                    difference="no recorded request matches this call"))
            index = found
        if index >= len(self.entries):
            what = (f"the run made call {index + 1} but the cassette holds only "
                    f"{len(self.entries)}")
            raise self._mismatch(CassetteMismatch(
                f"{self.path}: {what}; record it again with --record", path=self.path,
                call=index + 1, difference=what))
        entry = self.entries[index]
        if entry["request_digest"] != request.digest():
            what = difference(entry["request"], request)
            raise self._mismatch(CassetteMismatch(
                f"{self.path}:{index + 1}: call {index + 1} differs from the recorded request "
                f"({what}); record it again with --record", path=self.path, line=index + 1,
                call=index + 1, difference=what))
        self.position = index + 1
        if "error" in entry:
            raise ModelError(f"replayed model error: {entry['error']}")
        return Completion.model_validate(entry["completion"])

    def _mismatch(self, exc: CassetteMismatch) -> CassetteMismatch:
        """``exc``, kept as :attr:`mismatch` when it is the first."""
        if self.mismatch is None:
            self.mismatch = exc
        return exc

    @property
    def exhausted(self) -> bool:
        return self.position >= len(self.entries)


def load_cassette(path: Path) -> list[dict[str, Any]]:
    """Entries of a cassette file, checked line by line."""
    if not path.is_file():
        raise CassetteMismatch(f"{path}: no such cassette; record one with --record {path}")
    entries: list[dict[str, Any]] = []
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = data[: exc.start].count(b"\n") + 1
        what = "not UTF-8 text; a cassette is JSON lines written by --record"
        raise CassetteMismatch(f"{path}:{where}: {what}", line=where, what=what) from exc
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            what = f"not JSON ({getattr(exc, 'msg', 'nested too deep')})"
            raise CassetteMismatch(f"{path}:{number}: {what}", line=number, what=what) from exc
        if (not isinstance(entry, dict) or not isinstance(entry.get("request_digest"), str)
                or ("completion" not in entry and "error" not in entry)):
            what = "not a cassette entry (needs request_digest and completion or error)"
            raise CassetteMismatch(f"{path}:{number}: {what}", line=number, what=what)
        entries.append(entry)
    return entries


EXCERPT = 40
"""Characters of each side shown around the first difference of two texts."""


def difference(recorded: dict[str, Any], request: CompletionRequest) -> str:
    """What differs between a recorded request and one a run made: the first message that
    changed, and where its text first differs (both sides shown), or the count of
    messages, or the tools and response format."""
    asked = request.model_dump(mode="json", by_alias=True)
    old, new = recorded.get("messages", []), asked["messages"]
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            return f"message {i} ({b.get('role')}) changed{_where(a, b)}"
    if len(old) != len(new):
        return f"{len(new)} messages asked, {len(old)} recorded"
    return "tools or response format changed"


def _where(recorded: Any, asked: dict[str, Any]) -> str:
    """Where the text of two versions of a message first differs, or which keys do."""
    if not isinstance(recorded, dict):
        return ""
    before, after = recorded.get("content"), asked.get("content")
    if isinstance(before, str) and isinstance(after, str) and before != after:
        at = next((i for i, (x, y) in enumerate(zip(before, after, strict=False)) if x != y),
                  min(len(before), len(after)))
        return (f": at character {at}, recorded {_excerpt(before, at)}, now "
                f"{_excerpt(after, at)}")
    keys = sorted(k for k in set(recorded) | set(asked) if recorded.get(k) != asked.get(k))
    return f": {', '.join(keys)}" if keys else ""


def _excerpt(text: str, at: int) -> str:
    start = max(0, at - EXCERPT // 4)
    piece = text[start:at + EXCERPT]
    return (("…" if start else "") + repr(piece)
            + ("…" if at + EXCERPT < len(text) else ""))
