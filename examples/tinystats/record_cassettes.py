"""Re-record the demo's model transcripts (``demo-*.cassette.jsonl``).

The demo runs without a model endpoint: the gap-verifier's answers are played
from these cassettes. They are fixtures, written by this script: it builds the
example, starts a small OpenAI-compatible server on 127.0.0.1 whose answers
are scripted here (ask for the gap evidence, then submit a verdict that cites
what the evidence tool returned), and runs ``portwright agent verify-gap
--record`` against it, through the real openai SDK. Replace the scripted server
with a real model (``[model] base_url``) to record a real transcript instead.

    python examples/tinystats/record_cassettes.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from build import build  # noqa: E402

# symbol → cassette file
CASSETTES = {
    "movingAverage": "demo-moving-average.cassette.jsonl",
    "percentile": "demo-percentile.cassette.jsonl",
}


def _reply(calls: list[tuple[str, dict[str, Any]]], turn: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-demo-{turn}", "object": "chat.completion", "created": 0,
        "model": "demo-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": f"call_{turn}_{i}", "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)}}
                           for i, (name, args) in enumerate(calls)]}}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _verdict(symbol: str, evidence_text: str) -> dict[str, Any]:
    """What a careful verifier concludes from the evidence tool's answer."""
    hits = re.findall(r"^\s+(\S+\.py:\d+)\s", evidence_text, flags=re.M)
    commits = re.search(r"downstream history: ([0-9a-f]{7,40})", evidence_text)
    later = re.search(r"upstream changes after the pin: (.+)", evidence_text)
    if hits:
        source = [ref for ref in hits if not ref.startswith("tests/")] or hits
        evidence = [{"kind": "downstream", "ref": source[-1],
                     "detail": f"{symbol} is defined here in the port"}]
        if commits:
            evidence.append({"kind": "history", "ref": commits.group(1),
                             "detail": f"the downstream commit that brought {symbol}"})
        return {"status": "landed",
                "reasoning": f"{symbol} is already carried downstream ({source[-1]}), so the "
                             "recorded gap is stale: nothing to port.",
                "evidence": evidence}
    evidence = [{"kind": "downstream", "ref": "HEAD",
                 "detail": f"{symbol}: no match in the tree nor in its history"}]
    if later:
        evidence.append({"kind": "history", "ref": later.group(1).strip(),
                         "detail": f"upstream commits after the pin that change {symbol}"})
    return {"status": "missing",
            "reasoning": f"{symbol} appears nowhere downstream (HEAD or history); upstream "
                         "introduces it after the pin, so it arrives with the next pin advance.",
            "evidence": evidence}


class _Model(BaseHTTPRequestHandler):
    symbol = ""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        tool_answers = [m for m in body["messages"] if m["role"] == "tool"]
        if not tool_answers:
            answer = _reply([("gap_evidence", {"symbols": [self.symbol]})], 1)
        else:
            answer = _reply([("submit_result",
                              _verdict(self.symbol, tool_answers[-1]["content"]))], 2)
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        example = build(Path(scratch))
        for symbol, name in CASSETTES.items():
            _Model.symbol = symbol
            server = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
            threading.Thread(target=server.serve_forever, daemon=True).start()
            target = HERE / name
            target.unlink(missing_ok=True)
            env = {**os.environ, "PORTWRIGHT_MODEL__PROVIDER": "openai",
                   "PORTWRIGHT_MODEL__NAME": "demo-model",
                   "PORTWRIGHT_MODEL__BASE_URL": f"http://127.0.0.1:{server.server_port}/v1",
                   "OPENAI_API_KEY": "local-demo-server"}
            done = subprocess.run(
                [sys.executable, "-m", "portwright", "-C", str(example.downstream), "agent",
                 "verify-gap", "--symbol", symbol, "--record", str(target)], env=env)
            server.shutdown()
            if done.returncode != 0:
                sys.exit(f"recording {name} failed")
            print(f"wrote {target}")


if __name__ == "__main__":
    main()
