"""A small upstream/downstream pair on disk, real git repos, for parity and gate tests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from portwright.config import PortwrightConfig, load_config
from portwright.rules import Rules, load_rules
from tests.conftest import GitRepo

UPSTREAM_FILES = {
    "attn/fp8.py": (
        '"""FP8 attention."""\n'
        "\n"
        "\n"
        "def fp8_attention(q, k, v):\n"
        "    scale = q.shape[-1] ** -0.5\n"
        "    return softmax(q @ k.T * scale) @ v\n"
        "\n"
        "\n"
        "def prefill(q, k, v):\n"
        "    return fp8_attention(q, k, v)\n"
    ),
    "kv/cache.py": 'KV_DTYPE = "fp8_e4m3"\n\n\ndef alloc(n):\n    return [0] * n\n',
    "requirements.txt": "numpy==1.26.4\ntorch==2.4.0\n",
}

AGENTS = """# Rules

Port carefully.

```toml portwright
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

[[gate]]
name = "weakening"
check = "no-test-weakening"
phases = ["full"]

[spec]
questions = ["linear_output_dtype", "kv_cache_dtype", "intermediate_dtype", "gemm_layout"]
sections = ["Surface", "Slice", "Anchors", "Dependency anchors", "Adaptations"]
```
"""

MATRIX = """# Models

Rows of the port.

| ID | Title | Status | Spec | Upstream | Notes |
| --- | --- | --- | --- | --- | --- |
| attn-fp8 | FP8 attention | partial | [spec](specs/attn-fp8.md) | attn/fp8.py | decode only |
| kv-cache | KV cache | missing | - | kv/cache.py, alloc |  |
"""

SPEC = """---
row: attn-fp8
pin: {pin}
slice: decode path only
answers:
  linear_output_dtype: bf16
  kv_cache_dtype: fp8_e4m3
  intermediate_dtype: fp32
  gemm_layout: merged
dependencies:
  torch: 2.4.0
---
# FP8 attention

## Surface

| item | kind | status | reason | anchor |
| --- | --- | --- | --- | --- |
| decode | mode | ported | | `attn/fp8.py:4-6 "def fp8_attention(q, k, v):"` |
| prefill | mode | deferred | needs paged prefill | `attn/fp8.py:9-10` |
| rocm | backend | not_applicable | no ROCm in the port | |

## Slice

Decode only, bf16 activations.

## Anchors

- `attn/fp8.py:5 "scale = q.shape[-1] ** -0.5"`

## Dependency anchors

- `requirements.txt:2 "torch==2.4.0"`

## Adaptations

- none beyond naming.
"""

LEDGER = """# Parity ledger

| change | upstream | kind | cost | notes |
| --- | --- | --- | --- | --- |
| src/attn.py | `attn/fp8.py:4-6 "def fp8_attention"` | port | | |
"""

INVENTORY = """# From-scratch inventory

| item | path | searched | notes |
| --- | --- | --- | --- |
"""


@dataclass
class World:
    upstream: GitRepo
    downstream: GitRepo
    pin: str

    @property
    def repo(self) -> Path:
        return self.downstream.path

    def config(self) -> PortwrightConfig:
        return load_config(self.repo, environ={})

    def rules(self) -> Rules:
        return load_rules(self.repo)


def make_world(make_repo: Callable[[str], GitRepo]) -> World:
    upstream = make_repo("upstream")
    pin = upstream.commit("upstream initial", UPSTREAM_FILES)
    down = make_repo("downstream")
    down.commit("port skeleton", {
        "portwright.toml": '[upstream]\nsource = "../upstream"\n',
        "AGENTS.md": AGENTS,
        "upstream-sync.md": f"# Upstream sync\n\nPinned commit: `{pin}`\n",
        "docs/parity/models.md": MATRIX,
        "parity-ledger.md": LEDGER,
        "porting-inventory.md": INVENTORY,
        "specs/attn-fp8.md": SPEC.format(pin=pin),
        "src/attn.py": "def attention(q, k, v):\n    return q\n",
        "tests/test_attn.py": (
            "import pytest\n\n\n"
            "def test_attention():\n"
            "    assert attention(1, 2, 3) == 1\n"
            "    assert 2 == pytest.approx(2.0, rel=1e-6)\n"
        ),
        ".gitignore": ".portwright/\nbuild/\n__pycache__/\n",
    })
    return World(upstream=upstream, downstream=down, pin=pin)
