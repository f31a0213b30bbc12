"""`make demo`: the whole port cycle on the rmsnorm → rmsnorm-cpp example, end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import docker_engine_running

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.docker
@pytest.mark.slow
def test_demo_runs_the_cycle_end_to_end(tmp_path: Path) -> None:
    if not docker_engine_running():
        pytest.skip("needs a running Docker engine (make engine)")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "demo.py"), "--keep",
                           str(tmp_path / "demo")], capture_output=True, text=True,
                          timeout=900)
    out = done.stdout
    assert done.returncode == 0, out[-4000:] + done.stderr[-4000:]
    assert "UNEXPECTED" not in out
    assert "red observed: the ported tests fail without the implementation" in out
    assert "ok   gate focused/focused" in out  # green observed
    for gate in ("full/build", "full/unit", "full/parity", "full/red-green",
                 "full/no-test-weakening", "reconcile/reconciled"):
        assert f"ok   gate {gate}" in out
    assert "reviewer: done" in out
    assert "run demo: done" in out
    assert "## Review (review-1)" in out  # the report, printed at the end
    assert "| 3 | red | focused | red | 1 | no |" in out
    assert "demo complete" in out
