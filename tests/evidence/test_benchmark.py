"""The history index benchmark still runs and agrees with git log -S (small size)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "history_index.py"


def test_benchmark_small(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("history_index_bench", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "result.json"
    results = module.run(300, 20, out, extra=10)
    assert (results["commits_built"], results["commits"]) == (300, 310)
    assert results["identical_answers"] is True
    assert json.loads(out.read_text())["searches"] == 20
