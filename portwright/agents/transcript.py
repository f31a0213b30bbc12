"""The JSONL transcript of an agent turn, written into the run's evidence folder.

One JSON object a line, each with an ``event``:

- ``start``: role, model, tool names, step limit;
- ``message``: one message added to the conversation (system, user, assistant, tool);
- ``usage``: one model call's tokens and cost (failed calls too);
- ``invalid``: a reply the loop could not use, and what it answered;
- ``end``: the outcome (status, reason, totals, result).

Times are kept in ``t`` (seconds since the turn began) so that two transcripts of the
same turn compare equal once ``t`` is dropped. Every event is redacted
(:mod:`portwright.redact`) before it is kept or written.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from portwright.redact import redact_data

TRANSCRIPT_NAME = "transcript.jsonl"


class Transcript:
    """Appends events to a JSONL file (or only keeps them in memory when ``path`` is None)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.events: list[dict[str, Any]] = []
        self._start = time.monotonic()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, event: str, **fields: Any) -> None:
        record = redact_data({"event": event, **fields,
                              "t": round(time.monotonic() - self._start, 3)})
        self.events.append(record)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record, sort_keys=True, default=str) + "\n")


def read_transcript(path: Path, *, drop_times: bool = True) -> list[dict[str, Any]]:
    """Events of a transcript file, without ``t`` unless asked."""
    events = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            event = json.loads(line)
            if drop_times:
                event.pop("t", None)
                if event.get("event") == "end":
                    event.get("spent", {}).pop("wall_seconds", None)
            events.append(event)
    return events
