"""A model endpoint that misbehaves (:mod:`tests.faults.endpoint`): HTTP 200 with a body that
is not JSON, an HTML page, JSON cut off, JSON without ``choices``, a 503, a reset
connection. ``model check``, ``agent verify-gap`` and ``doctor`` name the endpoint, what
it answered and the fix (a run on such an endpoint: :mod:`tests.faults.test_model_faults`)."""

from __future__ import annotations

from collections.abc import Callable

from tests.bad_input.harness import Case
from tests.bad_input.world import World
from tests.faults.endpoint import FAULTS, model_section, shared

SAYS: dict[str, tuple[str, ...]] = {
    "text": ("not json", "[model] base_url"),
    "html": ("text/html", "[model] base_url"),
    "truncated": ("cut off", "[model] base_url"),
    "no-choices": ("no choices", "[model] base_url"),
    "http-503": ("503", "max_retries"),
    "reset": ("reset", "[model] base_url"),
}
"""What each fault's message must hold besides the endpoint: what went wrong, and the key
its fix names."""


def _model(fault: str) -> Callable[[World], None]:
    return lambda w: w.config(model_section(shared().base_url(fault)))


VERIFY = ("agent", "verify-gap", "--symbol", "fp8_attention")

CASES = [
    *(Case(f"model-check-{fault}", ("model", "check"), _model(fault), expect=1,
           says=(f"/{fault}/v1", *SAYS[fault])) for fault in FAULTS),
    *(Case(f"model-verify-gap-{fault}", VERIFY, _model(fault), expect=1,
           says=(f"/{fault}/v1", *SAYS[fault])) for fault in ("html", "truncated", "reset")),
    *(Case(f"model-doctor-{fault}", ("doctor",), _model(fault), expect=1,
           says=(f"/{fault}/v1", *SAYS[fault])) for fault in ("html",)),
]
