"""A generated upstream range for ``portwright sync``: two commits with nothing to port
(docs, CI), one the port already carries, two it lacks, one the scan cannot decide (the
gap verifier confirms it missing); a downstream whose matrix has a
row for each behaviour; a scripted porter that answers each row's run and confirms
upstream commits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portwright.agents.llm import CompletionRequest, Message
from portwright.agents.loop import SUBMIT
from portwright.agents.offline import ScriptedModel, call
from tests.conftest import GitRepo
from tests.workflows.conftest import UPSTREAM_CACHE
from tests.workflows.porter import Plan, porter

CACHE = UPSTREAM_CACHE

CACHE_TEST = '''import pytest


def test_alloc():
    from kv.cache import alloc

    assert alloc(3) == [0, 0, 0]


def test_alloc_negative():
    from kv.cache import alloc

    with pytest.raises(ValueError):
        alloc(-1)
'''

EVICT = '''"""Eviction."""


def evict_oldest(slots, keep):
    """Drop the oldest slots so that ``keep`` remain."""
    if keep < 0:
        raise ValueError("keep must be >= 0")
    return slots[len(slots) - keep:] if keep else []
'''

EVICT_TEST = '''import pytest


def test_evict_oldest():
    from kv.evict import evict_oldest

    assert evict_oldest([1, 2, 3], 2) == [2, 3]


def test_evict_oldest_negative():
    from kv.evict import evict_oldest

    with pytest.raises(ValueError):
        evict_oldest([1], -1)
'''

UTIL = '''"""Helpers."""


def clamp_slots(n, limit):
    """``n`` clamped to ``[0, limit]``."""
    return max(0, min(n, limit))
'''

UTIL_TEST = '''from kv.util import clamp_slots


def test_clamp_slots():
    assert clamp_slots(9, 4) == 4
    assert clamp_slots(-1, 4) == 0
'''

GATES = '''# Rules

Port kv faithfully; keep the upstream error messages.

```toml portwright
[[gate]]
name = "tests"
run = "python3 -m pytest -q -rA -p no:cacheprovider tests"
phases = ["red", "focused", "full", "pin"]
timeout = 120

[[gate]]
name = "red-green"
check = "red-green"
phases = ["full"]
options = {{ tests = ["tests/**"] }}

[[gate]]
name = "anchors"
check = "anchors"
phases = ["spec", "pin"]

[[gate]]
name = "spec-complete"
check = "spec-complete"
phases = ["spec"]

[[gate]]
name = "reconciled"
check = "reconciled"
phases = ["reconcile"]
{extra}
[spec]
questions = ["fill_dtype"]
```
'''

MATRIX = '''# Kernels

| ID | Title | Status | Priority | Spec | Upstream | Notes |
| --- | --- | --- | --- | --- | --- | --- |
| kv-util | Slot helpers | ported | 3 | - | kv/util.py, clamp_slots | |
| kv-cache | KV cache | missing | 2 | - | kv/cache.py, alloc | |
| kv-evict | Eviction | missing | 1 | - | kv/evict.py, evict_oldest | |
'''

TUNED = UTIL.replace("min(n, limit)", "min(n, limit - 1)")

TUNED_TEST = UTIL_TEST.replace("== 4", "== 3")

ANSWERS = {"fill_dtype": "whatever the caller passes (Python object)"}


@dataclass
class SyncWorld:
    upstream: GitRepo
    downstream: GitRepo
    pin: str
    """The recorded pin (upstream's first commit)."""
    head: str
    """Upstream's last commit: the sync's target."""
    shas: dict[str, str]
    """Upstream commit of each change: docs, cache, util, evict, tune, ci."""
    confirmed: list[str] = field(default_factory=list)
    """Upstream commits the gap verifier was asked to confirm."""

    @property
    def repo(self) -> Path:
        return self.downstream.path

    def plans(self) -> dict[str, Plan]:
        return {
            "kv-cache": Plan(
                gap={"status": "missing", "reasoning": "alloc exists upstream only",
                     "evidence": [{"kind": "upstream", "ref": "kv/cache.py:4-8",
                                   "detail": "def alloc(n, fill=0)"}]},
                answers=ANSWERS, tests={"tests/test_cache.py": CACHE_TEST},
                implementation={"kv/cache.py": CACHE}),
            "kv-evict": Plan(
                gap={"status": "missing", "reasoning": "evict_oldest exists upstream only",
                     "evidence": [{"kind": "upstream", "ref": "kv/evict.py:4-8",
                                   "detail": "def evict_oldest(slots, keep)"}]},
                answers=ANSWERS, tests={"tests/test_evict.py": EVICT_TEST},
                implementation={"kv/evict.py": EVICT}),
            "kv-util": Plan(
                gap={"status": "missing", "reasoning": "upstream clamps below the limit now",
                     "evidence": [{"kind": "upstream", "ref": "kv/util.py:4-6",
                                   "detail": "def clamp_slots(n, limit)"}]},
                answers=ANSWERS, tests={"tests/test_util.py": TUNED_TEST},
                implementation={"kv/util.py": TUNED}),
        }

    def model(self) -> ScriptedModel:
        return router(self.plans(), self.confirmed)


def router(plans: dict[str, Plan], confirmed: list[str]) -> ScriptedModel:
    """The porter of each row's plan, chosen by the row the request names; a request to
    confirm an upstream commit is answered ``missing`` with the framework's evidence."""
    models = {row: porter(plan) for row, plan in plans.items()}

    def script(request: CompletionRequest) -> Message | str:
        task = "\n".join(m.content or "" for m in request.messages if m.role == "user")
        if "Upstream commit:" in task:
            sha = task.split("Upstream commit:", 1)[1].split()[0]
            confirmed.append(sha)
            return call(SUBMIT, {"status": "missing", "reasoning": "nothing downstream "
                                 "carries it", "evidence": [{"kind": "upstream", "ref": sha,
                                                             "detail": "the commit"}]})
        row = next((r for r in models if f"`{r}`" in task or f" {r}" in task
                    or f"{r}\n" in task), None)
        assert row is not None, task[:600]
        return models[row].complete(request).message

    return ScriptedModel(script, model="router")


def build_sync_world(make_repo: Callable[[str], GitRepo], *, backend: str = "docker",
                     extra_gates: str = "", bounds: str = "",
                     approvals: str = 'spec = "never"\nadvance = "never"\npr = "never"\n'
                     ) -> SyncWorld:
    up = make_repo("upstream")
    pin = up.commit("start the kv package", {"kv/__init__.py": "",
                                            "README.md": "# kv\n"})
    shas = {
        "docs": up.commit("docs: describe the cache", {
            "README.md": "# kv\n\nA key-value cache for inference servers.\n"}),
        "cache": up.commit("add alloc", {"kv/cache.py": CACHE,
                                         "tests/test_cache.py": CACHE_TEST}),
        "util": up.commit("add clamp_slots", {"kv/util.py": UTIL,
                                              "tests/test_util.py": UTIL_TEST}),
        "evict": up.commit("add evict_oldest", {"kv/evict.py": EVICT,
                                                "tests/test_evict.py": EVICT_TEST}),
        "tune": up.commit("clamp below the limit", {"kv/util.py": TUNED}),
        "ci": up.commit("ci: run the tests", {
            ".github/workflows/ci.yml": "on: push\njobs: {}\n"}),
    }
    down = make_repo("downstream")
    down.commit("port scaffold", {
        "portwright.toml": (f'[upstream]\nsource = "../upstream"\n\n[sandbox]\n'
                            f'backend = "{backend}"\nmemory = "512m"\n\n'
                            f"[approvals]\n{approvals}"
                            + (f"\n[bounds]\n{bounds}" if bounds else "")),
        "AGENTS.md": GATES.format(extra=extra_gates),
        "upstream-sync.md": f"# Upstream sync\n\nPinned commit: `{pin}`\n",
        "docs/parity/kernels.md": MATRIX,
        "parity-ledger.md": "# Ledger\n\n| change | upstream | kind | cost | notes |\n"
                            "| --- | --- | --- | --- | --- |\n",
        "porting-inventory.md": "# Inventory\n\n| item | path | searched | notes |\n"
                                "| --- | --- | --- | --- |\n",
        "kv/__init__.py": "",
        "tests/test_smoke.py": "def test_smoke():\n    assert True\n",
        ".gitignore": "__pycache__/\n.pytest_cache/\n",
    })
    down.commit("port clamp_slots", {"kv/util.py": UTIL, "tests/test_util.py": UTIL_TEST})
    return SyncWorld(up, down, pin, shas["ci"], shas)


def json_lines(text: str) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in text.splitlines() if line.startswith('{"')]
