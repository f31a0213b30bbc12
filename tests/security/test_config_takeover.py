"""Configuration cannot be taken over from inside the sandbox.

Attack: a command (code under test) rewrites the working ``portwright.toml`` and
``AGENTS.md`` — switching the next run to the ``local`` backend (no isolation, the
evidence key readable), naming a host folder as the upstream, and replacing the gates —
and plants links where run state used to live. The next ``gates run`` must obey the
committed config and rules, in the sandbox, and the host must not follow the links. Run
as a gate, the command writes only the clean export it was given, never the checkout.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from portwright.project import Project
from tests.conftest import docker_engine_running
from tests.parity.world import World

pytestmark = pytest.mark.docker

EVIL = (
    "sed -i 's#^backend = .*#backend = \"local\"#' portwright.toml; "
    "sed -i 's#^source = .*#source = \"/var/run\"#' portwright.toml; "
    "printf '\\n```toml portwright\\n[[gate]]\\nname = \"evil\"\\nrun = \"true\"\\n"
    "phases = [\"full\"]\\n```\\n' > AGENTS.md; "
    "mkdir -p .portwright/runs/attack-2/logs .portwright/runs/attack-2/evidence; "
    "for n in 0001 0002 0003; do "
    "ln -sf ../../../../.git/config .portwright/runs/attack-2/logs/$n-probe.log; "
    "ln -sf ../../../../.git/config .portwright/runs/attack-2/evidence/$n-probe.json; done; "
    "ln -sf ../.git/config .portwright/run.json; "
    "echo probed"
)


def _gates(world: World, run_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(world.repo), "gates",
                           "run", "--phase", "full", "--only", "probe", "--run-id", run_id,
                           "--json"], capture_output=True, text=True, check=False, timeout=300)


def test_rewritten_config_and_rules_are_not_obeyed(world: World) -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")
    config = (world.repo / "portwright.toml").read_text()
    config += '\n[sandbox]\nbackend = "docker"\nmemory = "512m"\n'
    rules = (world.repo / "AGENTS.md").read_text().replace("[spec]", (
        f'[[gate]]\nname = "probe"\nrun = """{EVIL}"""\nphases = ["full"]\n\n[spec]'))
    world.downstream.commit("probe gate", {"portwright.toml": config, "AGENTS.md": rules,
                                          ".gitignore": ".portwright/\n"})
    git_config = (world.repo / ".git" / "config").read_bytes()

    first = _gates(world, "attack-1")
    assert first.returncode == 0, first.stdout + first.stderr
    # the gate judged a clean export: what its command wrote never reached the checkout
    assert "backend = \"local\"" not in (world.repo / "portwright.toml").read_text()
    # a checkout rewritten all the same (a command run there by other means)
    subprocess.run(["sh", "-c", EVIL], cwd=world.repo, check=True, capture_output=True)
    assert "backend = \"local\"" in (world.repo / "portwright.toml").read_text()

    second = _gates(world, "attack-2")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "differ from HEAD" in second.stderr  # the user is told
    report = json.loads(second.stdout)
    assert [r["name"] for r in report["results"]] == ["probe"]  # committed gates, not "evil"
    assert report["results"][0]["record"]["sandbox"] == "docker"  # not "local"
    manifest = json.loads((Project.load(world.repo, at="HEAD").run_dir("attack-2") / "run.json")
                          .read_text())
    assert manifest["config"]["sandbox"]["backend"] == "docker"
    assert manifest["config"]["upstream"]["source"] != "/var/run"
    assert (world.repo / ".git" / "config").read_bytes() == git_config
    assert not Path(report["evidence"]).is_relative_to(world.repo)
