"""Secure by default: what ``portwright init`` writes fails a forged green.

The forger's implementation makes the tests "pass" from inside: it leaves before the test
runner can report its failure (``os._exit(0)`` once the runner has loaded it) and prints
the summary of a passing run. The tests gate sees exit 0; the integrity gates ``init``
writes see the forgery in the change and fail the phase.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import GitRepo, docker_engine_running
from tests.foundation.test_cli import portwright

FORGED = '''import os
import sys


def add(a, b):
    return a - b


if "pytest" in sys.modules:
    print("1 passed in 0.01s")
    sys.stdout.flush()
    os._exit(0)
'''


@pytest.mark.docker
def test_init_writes_integrity_gates_that_fail_a_forged_green(make_repo: type[GitRepo]
                                                              ) -> None:
    if not docker_engine_running():
        pytest.skip("no Docker engine answers")
    upstream = make_repo("upstream")
    upstream.commit("add", {"calc.py": "def add(a, b):\n    return a + b\n",
                            "tests/test_calc.py": "from calc import add\n\n\n"
                                                  "def test_add():\n    assert add(2, 3) == 5\n"})
    down = make_repo("down")
    assert portwright(down.path, "init", "--upstream", "../upstream").returncode == 0
    down.commit("adopt portwright", {"tests/test_calc.py": "from calc import add\n\n\n"
                                     "def test_add():\n    assert add(2, 3) == 5\n"})
    names = [g["name"] for g in json.loads(portwright(down.path, "rules", "check", "--json")
                                           .stdout)["gates"]]
    assert {"tamper", "protected-paths"} <= set(names), names
    adopted = json.loads(portwright(down.path, "gates", "run", "--phase", "full", "--only",
                                    "protected-paths", "--json").stdout)
    assert adopted["passed"], adopted  # the commit that adopts portwright adds its config
    down.commit("port add (forged)", {"calc.py": FORGED})

    done = portwright(down.path, "gates", "run", "--phase", "full", "--json")
    report = json.loads(done.stdout)
    assert "results" in report, (report, done.stderr)
    verdicts = {r["name"]: r["passed"] for r in report["results"]}
    assert verdicts["tests"] is True  # the forgery works on the tests gate alone
    assert verdicts["tamper"] is False, report["results"]
    assert done.returncode == 1


def _initialised(make_repo: type[GitRepo]) -> GitRepo:
    """A downstream where ``portwright init`` just ran (not committed)."""
    upstream = make_repo("upstream")
    upstream.commit("first", {"calc.py": "x = 1\n"})
    down = make_repo("down")
    assert portwright(down.path, "init", "--upstream", "../upstream").returncode == 0
    return down


def test_a_change_of_the_config_after_adoption_fails_protected_paths(
        make_repo: type[GitRepo]) -> None:
    down = _initialised(make_repo)
    down.commit("adopt portwright")
    config = (down.path / "portwright.toml").read_text()
    down.commit("widen", {"portwright.toml": config + "\n# more\n"})
    done = portwright(down.path, "gates", "run", "--phase", "full", "--only", "protected-paths",
                      "--json")
    report = json.loads(done.stdout)
    assert not report["passed"], report
    assert "portwright.toml" in report["results"][0]["messages"][0]


def test_doctor_warns_about_a_full_phase_without_the_integrity_gates(
        make_repo: type[GitRepo]) -> None:
    down = _initialised(make_repo)
    rules = (down.path / "AGENTS.md").read_text()
    assert 'options = { fail = true }' in rules
    down.commit("adopt portwright", {"AGENTS.md": rules.replace(
        'options = { fail = true }', 'options = { fail = false }')})

    def rules_check() -> dict[str, str]:
        report = json.loads(portwright(down.path, "doctor", "--json").stdout)
        return next(c for c in report["checks"] if c["name"] == "rules")

    advisory = rules_check()
    assert advisory["status"] == "warn", advisory
    assert "fail = true" in advisory["detail"]
    text = (down.path / "AGENTS.md").read_text()
    start = text.index('[[gate]]\nname = "tamper"')
    down.commit("drop the integrity gates", {"AGENTS.md": text[:start] + text[
        text.index('[[gate]]\nname = "reconciled"'):]})
    missing = rules_check()
    assert missing["status"] == "warn", missing
    assert "tamper" in missing["detail"]
    assert "protected-paths" in missing["detail"]
    assert "portwright init" in missing["fix"]
