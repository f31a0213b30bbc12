"""A small real port for the cycle: an upstream Python module with tests, a downstream
that lacks it, gates that run pytest in the sandbox."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import GitRepo
from tests.workflows.porter import Plan

UPSTREAM_CACHE = '''"""A KV cache."""


def alloc(n, fill=0):
    """Allocate ``n`` slots filled with ``fill``."""
    if n < 0:
        raise ValueError("n must be >= 0")
    return [fill] * n
'''

UPSTREAM_TEST = '''import pytest

from kv.cache import alloc


def test_alloc():
    assert alloc(3) == [0, 0, 0]


def test_alloc_fill():
    assert alloc(2, fill=7) == [7, 7]


def test_alloc_negative():
    with pytest.raises(ValueError):
        alloc(-1)
'''

DOWNSTREAM_TEST = '''import pytest


def test_alloc():
    from kv.cache import alloc

    assert alloc(3) == [0, 0, 0]


def test_alloc_fill():
    from kv.cache import alloc

    assert alloc(2, fill=7) == [7, 7]


def test_alloc_negative():
    from kv.cache import alloc

    with pytest.raises(ValueError):
        alloc(-1)
'''
DOWNSTREAM_CACHE = UPSTREAM_CACHE

AGENTS = '''# Rules

Port kv faithfully; keep the upstream error messages.

```toml portwright
[[gate]]
name = "focused"
run = "python3 -m pytest -q -rA -p no:cacheprovider tests/test_cache.py"
phases = ["red", "focused"]
timeout = 120

[[gate]]
name = "unit"
run = "python3 -m pytest -q -rA -p no:cacheprovider tests"
phases = ["full"]
timeout = 120

[[gate]]
name = "red-green"
check = "red-green"
phases = ["full"]
options = {{ tests = ["tests/**"] }}

[[gate]]
name = "protected"
check = "protected-paths"
phases = ["full"]

[[gate]]
name = "anchors"
check = "anchors"
phases = ["spec"]

[[gate]]
name = "spec-complete"
check = "spec-complete"
phases = ["spec"]

[[gate]]
name = "reconciled"
check = "reconciled"
phases = ["reconcile"]

[spec]
questions = ["fill_dtype"]
```
'''

MATRIX = '''# Kernels

| ID | Title | Status | Spec | Upstream | Notes |
| --- | --- | --- | --- | --- | --- |
| kv-cache | KV cache | missing | - | kv/cache.py, alloc | |
'''


@dataclass
class CycleWorld:
    upstream: GitRepo
    downstream: GitRepo
    pin: str

    @property
    def repo(self) -> Path:
        return self.downstream.path

    def plan(self) -> Plan:
        return Plan(
            gap={"status": "missing", "reasoning": "alloc exists upstream only",
                 "evidence": [{"kind": "upstream", "ref": "kv/cache.py:4-8",
                               "detail": "def alloc(n, fill=0)"}]},
            answers={"fill_dtype": "whatever the caller passes (Python object)"},
            tests={"tests/test_cache.py": DOWNSTREAM_TEST},
            implementation={"kv/__init__.py": "", "kv/cache.py": DOWNSTREAM_CACHE})


def build_world(make_repo: Callable[[str], GitRepo], backend: str = "docker",
                approvals: str = 'spec = "never"\nadvance = "never"\npr = "never"\n'
                ) -> CycleWorld:
    up = make_repo("upstream")
    up.commit("kv cache", {"kv/__init__.py": "", "kv/cache.py": UPSTREAM_CACHE,
                           "tests/test_cache.py": UPSTREAM_TEST})
    pin = up.head()
    down = make_repo("downstream")
    down.commit("port scaffold", {
        "portwright.toml": (f'[upstream]\nsource = "../upstream"\n\n[sandbox]\n'
                            f'backend = "{backend}"\nmemory = "512m"\n\n'
                            f"[approvals]\n{approvals}"),
        "AGENTS.md": AGENTS.format(),
        "upstream-sync.md": f"# Upstream sync\n\nPinned commit: `{pin}`\n",
        "docs/parity/kernels.md": MATRIX,
        "parity-ledger.md": "# Ledger\n\n| change | upstream | kind | cost | notes |\n"
                            "| --- | --- | --- | --- | --- |\n",
        "porting-inventory.md": "# Inventory\n\n| item | path | searched | notes |\n"
                                "| --- | --- | --- | --- |\n",
        "tests/test_smoke.py": "def test_smoke():\n    assert True\n",
        ".gitignore": "__pycache__/\n.pytest_cache/\n",
    })
    return CycleWorld(up, down, pin)


@pytest.fixture
def cycle_world(make_repo: Callable[[str], GitRepo]) -> CycleWorld:
    return build_world(make_repo)
