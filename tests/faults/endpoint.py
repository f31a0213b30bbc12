"""A model endpoint that misbehaves: the fake OpenAI-compatible server (pytest-httpserver)
answering each fault's path in its own wrong way, and a listener that resets every
connection it accepts. ``base_url(fault)`` is the ``[model] base_url`` that reaches a fault;
:meth:`FaultyEndpoint.heal` makes a fault's path answer properly (the endpoint fixed)."""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import re
import socket
import struct
import threading
from collections.abc import Callable

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

FAULTS: dict[str, tuple[int, str, str]] = {
    "text": (200, "text/plain", "upstream connect error or disconnect/reset before headers"),
    "html": (200, "text/html", "<!DOCTYPE html><html><head><title>Sign in</title></head>"
                               "<body><h1>Sign in to continue</h1></body></html>"),
    "truncated": (200, "application/json",
                  '{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"ind'),
    "no-choices": (200, "application/json",
                   json.dumps({"id": "chatcmpl-1", "object": "chat.completion",
                               "model": "fake-model", "usage": {"prompt_tokens": 3}})),
    "http-503": (503, "text/html", "<html><body><h1>503 Service Unavailable</h1>"
                                   "No server is available to handle this request."
                                   "</body></html>"),
    "reset": (0, "", ""),
}
"""Each fault: the status, content type and body the endpoint answers (``reset``: none, the
connection is reset)."""

Handler = Callable[[Request], Response]


class FaultyEndpoint:
    """The misbehaving endpoint on ``127.0.0.1``, serving from threads; a context manager."""

    def __init__(self) -> None:
        self.server = HTTPServer(host="127.0.0.1", port=0)
        self.healed: dict[str, Handler] = {}
        """Faults fixed: their path answers with this handler instead."""
        self.requests: list[str] = []
        """The fault path of every request, in order (``reset`` included)."""
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._thread = threading.Thread(target=self._reset_all, daemon=True)

    def __enter__(self) -> FaultyEndpoint:
        self.server.expect_request(re.compile(r"^/[^/]+/v1/.*")).respond_with_handler(
            self._answer)
        self.server.start()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.clear()
        if self.server.is_running():
            self.server.stop()
        with contextlib.suppress(OSError):  # wakes the accept() of the listener's thread
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(timeout=5)

    def base_url(self, fault: str) -> str:
        if fault not in FAULTS:
            raise KeyError(fault)
        if fault == "reset":
            return f"http://127.0.0.1:{self._listener.getsockname()[1]}/reset/v1"
        return self.server.url_for(f"/{fault}/v1")

    def heal(self, fault: str, handler: Handler) -> None:
        """From now on ``fault``'s path answers with ``handler``."""
        self.healed[fault] = handler

    def _answer(self, request: Request) -> Response:
        fault = request.path.split("/")[1]
        self.requests.append(fault)
        if fault in self.healed:
            return self.healed[fault](request)
        status, kind, body = FAULTS[fault]
        return Response(body, status=status, content_type=kind)

    def _reset_all(self) -> None:
        """Accept each connection, read the request, and close it with RST (linger 0)."""
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # the listener was closed
                return
            with conn:
                self.requests.append("reset")
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@functools.cache
def shared() -> FaultyEndpoint:
    """One endpoint for this test process (the bad-input cases point their config at it),
    stopped when the process exits."""
    endpoint = FaultyEndpoint().__enter__()
    atexit.register(endpoint.__exit__)
    return endpoint


def model_section(base_url: str, *, retries: int = 0) -> str:
    """The ``[model]`` section that talks to ``base_url``."""
    return (f'\n[model]\nname = "fake-model"\nbase_url = "{base_url}"\n'
            f"max_retries = {retries}\ntimeout = 10\n")
