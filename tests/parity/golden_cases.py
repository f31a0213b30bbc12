"""The golden-file cases of the parity writers: each takes a scratch repo and returns text.

Regenerate the expected outputs with ``python tests/parity/regen_golden.py``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from portwright.config import PortwrightConfig
from portwright.parity.inventory import add_item
from portwright.parity.ledger import add_entry
from portwright.parity.matrix import update_row
from portwright.parity.spec import render_spec

GOLDEN = Path(__file__).parent / "golden"


def _config() -> PortwrightConfig:
    return PortwrightConfig.model_validate({"upstream": {"source": "../up"}})


def matrix(repo: Path) -> str:
    target = repo / "docs/parity/kernels.md"
    target.parent.mkdir(parents=True)
    shutil.copyfile(GOLDEN / "matrix.in.md", target)
    update_row(repo, _config(), "topk", status="in-progress", spec="specs/topk.md")
    update_row(repo, _config(), "rope", status="ported", notes="decode and prefill")
    return target.read_text()


def ledger(repo: Path) -> str:
    shutil.copyfile(GOLDEN / "ledger.in.md", repo / "parity-ledger.md")
    add_entry(repo, _config(), change="src/topk.cc",
              upstream='`sampling/topk.py:5-40@0123abcd "def top_k("`', kind="port")
    add_entry(repo, _config(), change="src/sched.cc", upstream="`sched.py:9`",
              kind="divergence", cost="+2% decode latency", notes="no | preemption")
    return (repo / "parity-ledger.md").read_text()


def inventory(repo: Path) -> str:
    add_item(repo, _config(), item="ring buffer", path="src/util/ring.h",
             searched=["vllm/utils.py", "vllm/core/"], notes="upstream uses a deque")
    add_item(repo, _config(), item="crc32", path="src/util/crc.cc", searched=["csrc/"])
    return (repo / "porting-inventory.md").read_text()


def spec(repo: Path) -> str:
    del repo
    return render_spec(
        row="attn-fp8", pin="0123456789abcdef0123456789abcdef01234567",
        slice="decode path, bf16 activations", title="FP8 attention",
        surface=[("decode", "mode", "ported", "", "`attn/fp8.py:4-6`"),
                 ("prefill", "mode", "deferred", "needs paged prefill", "`attn/fp8.py:9-10`"),
                 ("a|b", "edge", "not_applicable", "no such input", "")],
        answers={"kv_cache_dtype": "fp8_e4m3", "gemm_layout": "merged"},
        dependencies={"torch": "2.4.0"},
        anchors=['attn/fp8.py:5 "scale = q.shape[-1] ** -0.5"'],
        dependency_anchors=['requirements.txt:2 "torch==2.4.0"'],
        adaptations=["the KV cache uses the port's arena allocator"],
    )


CASES: dict[str, Callable[[Path], str]] = {
    "matrix": matrix, "ledger": ledger, "inventory": inventory, "spec": spec,
}
