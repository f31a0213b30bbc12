from __future__ import annotations

import hashlib
import json
import subprocess
import sys

from portwright.project import Project
from tests.parity.world import World


def pw(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(world.repo), *args],
                          capture_output=True, text=True, check=False)


def test_gates_run_spec_phase_passes_and_records(world: World) -> None:
    done = pw(world, "gates", "run", "--phase", "spec", "--run-id", "ci-1", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert [(r["name"], r["passed"]) for r in report["results"]] == [("anchors", True),
                                                                     ("spec-complete", True)]
    run_dir = Project.load(world.repo).run_dir("ci-1")
    assert report["evidence"] == str(run_dir / "evidence")
    evidence = sorted((run_dir / "evidence").glob("*.json"))
    assert [p.name for p in evidence] == ["0001-anchors.json", "0002-spec-complete.json"]
    manifest = json.loads((run_dir / "run.json").read_text())
    agents = (world.repo / "AGENTS.md").read_bytes()
    assert manifest["rules"] == {"AGENTS.md": hashlib.sha256(agents).hexdigest()}
    assert manifest["commit"] == world.downstream.head()
    assert manifest["command"] == "gates run --phase spec"
    assert manifest["config"]["upstream"]["source"]


def test_gates_run_fails_with_exit_1(world: World) -> None:
    world.downstream.commit("stale", {"src/extra.py": "X = 1\n"})
    done = pw(world, "gates", "run", "--phase", "reconcile")
    assert done.returncode == 1
    assert "src/extra.py:1: introduced by the change but no ledger entry covers it" in done.stderr


def test_gates_run_bad_phase_exits_2(world: World) -> None:
    done = pw(world, "gates", "run", "--phase", "nightly", "--only", "anchors")
    assert done.returncode == 2
    assert "unknown phase 'nightly'" in done.stderr
