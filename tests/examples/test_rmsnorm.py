"""The bundled C++ example, rmsnorm (Python reference) → rmsnorm-cpp (C++17 port):
reproducible repositories, portwright's own commands on them, and — with a Docker
engine — the gates of the pin phase and a real red → green cycle of the missing row."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from portwright.rules import load_rules
from tests.conftest import docker_engine_running

ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("rmsnorm_example_build",
                                               ROOT / "examples" / "rmsnorm" / "build.py")
assert _SPEC is not None
assert _SPEC.loader is not None
example_build = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = example_build  # dataclasses look their module up there
_SPEC.loader.exec_module(example_build)
Example = example_build.Example

FUSED_TESTS = ["RmsNorm.FusedResidual", "RmsNorm.FusedResidualShapeMismatch"]
PORTED_TESTS = ["RmsNorm.CustomEps", "RmsNorm.DefaultEps", "RmsNorm.EpsMustBePositive",
                "RmsNorm.WeightShapeMismatch", "RmsNorm.ZerosInput"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def portwright(repo: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def ok(repo: Path, *args: str) -> str:
    """portwright's output for a command that must exit 0."""
    done = portwright(repo, *args)
    assert done.returncode == 0, f"portwright {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def gates(repo: Path, phase: str, run_id: str) -> dict[str, Any]:
    """``gates run --json`` of one phase: the results by gate name, and whether all passed."""
    done = portwright(repo, "gates", "run", "--phase", phase, "--run-id", run_id, "--json")
    report = json.loads(done.stdout)
    assert done.returncode == (0 if report["passed"] else 1), done.stderr
    return {"passed": report["passed"], **{r["name"]: r for r in report["results"]}}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One build for the tests that only read it."""
    return example_build.build(tmp_path_factory.mktemp("rmsnorm"))


def test_build_is_reproducible(tmp_path: Path) -> None:
    first, second = example_build.build(tmp_path / "a"), example_build.build(tmp_path / "b")
    assert (first.pin, first.fused, first.readme) == (second.pin, second.fused, second.readme)
    for repo in ("upstream", "downstream"):
        assert git(getattr(first, repo), "rev-parse", "HEAD") == \
            git(getattr(second, repo), "rev-parse", "HEAD")


def test_build_refuses_to_overwrite(tmp_path: Path) -> None:
    example_build.build(tmp_path)
    with pytest.raises(FileExistsError):
        example_build.build(tmp_path)


def test_pin_is_the_commit_before_the_fused_mode(example: Any) -> None:
    after = git(example.upstream, "rev-list", "--reverse", f"{example.pin}..HEAD").split()
    assert after == [example.fused, example.readme]
    assert example.pin in (example.downstream / "upstream-sync.md").read_text()
    assert f"pin: {example.pin}" in (example.downstream / "specs" / "rmsnorm.md").read_text()
    assert "residual" not in git(example.upstream, "show", f"{example.pin}:rmsnorm/norm.py")
    assert "residual: Sequence[float] | None = None" in \
        git(example.upstream, "show", "HEAD:rmsnorm/norm.py")


def test_upstream_reference_passes_its_tests_and_matches_its_vectors(example: Any) -> None:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                          cwd=example.upstream, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 passed" in done.stdout
    done = subprocess.run([sys.executable, "tools/gen_vectors.py", "--check"],
                          cwd=example.upstream, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_rules_rows_anchors_and_ledger(example: Any) -> None:
    rules = ok(example.downstream, "rules", "check")
    for gate in ("build", "focused", "unit", "parity", "anchors", "spec-complete",
                 "reconciled", "no-test-weakening", "red-green"):
        assert gate in rules
    rows = json.loads(ok(example.downstream, "rows", "--json"))
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert {r["id"]: r["status"] for r in rows} == {"rmsnorm": "ported",
                                                    "rmsnorm-fused-residual": "missing"}
    assert "anchors: ok" in ok(example.downstream, "anchors", "check")
    assert "ledger: ok" in ok(example.downstream, "ledger", "check")


def test_gap_finds_the_fused_mode_missing_and_the_readme_not_applicable(example: Any) -> None:
    report = json.loads(ok(example.downstream, "gap", "--json"))
    verdicts = {c["sha"]: c["verdict"] for c in report["commits"]}
    assert verdicts == {example.fused: "missing", example.readme: "not_applicable"}
    fused = next(c for c in report["commits"] if c["sha"] == example.fused)
    assert {"test_fused_residual", "test_fused_residual_shape_mismatch"} <= set(fused["tests"])


def test_surface_lists_the_residual_mode_and_the_eps_error(example: Any) -> None:
    head = git(example.upstream, "rev-parse", "HEAD")
    report = json.loads(ok(example.downstream, "surface", "rms_norm", "--at", head, "--json"))
    items = {(i["kind"], i["name"], i["detail"]) for i in report["items"]}
    assert ("parameter", "residual", "default=None; annotation=Sequence[float] | None") in items
    assert ("branch", "residual", "residual is not None") in items
    assert ("branch", "eps", "eps <= 0") in items
    assert ("raise", "ValueError", "raise ValueError('rms_norm: eps must be positive')") in items
    tests = {i["name"] for i in report["items"] if i["kind"] == "test"}
    assert "tests/test_norm.py::test_fused_residual" in tests


def test_the_port_keeps_tests_and_implementation_apart(example: Any) -> None:
    head = git(example.downstream, "rev-parse", "HEAD")
    tests, implementation = example_build.port_files(example)
    assert sorted(tests) == ["tests/test_rmsnorm.cpp"]
    assert sorted(implementation) == ["include/rmsnorm.hpp", "src/rmsnorm.cpp"]
    assert "check::when_declared<Row, Row, float, Row>" in tests["tests/test_rmsnorm.cpp"]
    assert "NormedResidual rms_norm(" in implementation["include/rmsnorm.hpp"]
    assert git(example.downstream, "rev-parse", "HEAD") == head  # the example is untouched
    # the harness the implementer may not touch: what red-green and no-test-weakening read
    harness = ["tests/**", "tools/focused.py", "CMakeLists.txt"]
    frozen = {g.name: g.spec.options.get("tests") for g in load_rules(example.downstream).gates()
              if g.spec.options.get("tests") is not None}
    assert frozen == {"no-test-weakening": harness, "red-green": harness, "tamper": harness}


def test_spec_and_reconcile_gates_pass(example: Any) -> None:
    spec = gates(example.downstream, "spec", "spec-check")
    assert spec["passed"], spec
    root = git(example.downstream, "rev-list", "--max-parents=0", "HEAD")
    done = portwright(example.downstream, "gates", "run", "--phase", "reconcile", "--base", root)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.docker
@pytest.mark.slow
def test_pin_gates_and_a_red_green_cycle_in_docker(tmp_path: Path) -> None:
    if not docker_engine_running():
        pytest.skip("needs a running Docker engine (make engine)")
    example = example_build.build(tmp_path)
    repo = example.downstream
    doctor = ok(repo, "doctor")
    assert "image portwright/base:bookworm present" in doctor

    pin = gates(repo, "pin", "pin-check")
    assert pin["passed"], pin
    assert sorted(pin["unit"]["record"]["tests_passed"]) == \
        sorted(f"{t}::{t}" for t in PORTED_TESTS)  # CTest's JUnit: classname::name
    assert pin["parity"]["record"]["sandbox"] == "docker"

    # the row's upstream tests, ported to C++ on a branch: they compile, and fail
    git(repo, "checkout", "-q", "-b", example_build.PORT_BRANCH)
    tests_only = example_build.apply_patch(repo, example_build.PORT_PATCHES[0])
    red = gates(repo, "red", "fused")
    assert red["passed"], red
    assert red["focused"]["record"]["tests_failed"] == FUSED_TESTS
    assert red["focused"]["record"]["commit"] == tests_only
    assert [m for m in red["focused"]["messages"] if m.startswith("fails as required")] == \
        [f"fails as required: {t}" for t in FUSED_TESTS]

    # the implementation: the same cases pass, and nothing else runs as focused
    implementation = example_build.apply_patch(repo, example_build.PORT_PATCHES[1])
    green = gates(repo, "focused", "fused")
    assert green["passed"], green
    assert green["focused"]["record"]["tests_passed"] == FUSED_TESTS
    assert green["focused"]["record"]["commit"] == implementation

    full = gates(repo, "full", "fused")
    assert full["passed"], full
    assert {"build", "unit", "parity", "no-test-weakening", "red-green"} <= set(full)

    # a red run on the implemented tree proves nothing, and says so
    again = gates(repo, "red", "red-after-green")
    assert not again["passed"]
    assert "a red gate needs tests that fail" in " ".join(again["focused"]["messages"])

    report = json.loads(ok(repo, "gap", "--json"))
    assert {c["sha"]: c["verdict"] for c in report["commits"]}[example.fused] == "landed"

    # the test harness is frozen with the tests: an edit of the focused-case picker between
    # red and green is caught, even when the green run still passes
    focused_py = repo / "tools" / "focused.py"
    focused_py.write_text(focused_py.read_text() + "\n# tuned after red\n")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qam", "tune")
    assert gates(repo, "focused", "fused")["passed"]
    tampered = gates(repo, "full", "fused")
    assert not tampered["passed"]
    assert any(m.startswith("tools/focused.py:1: test file changed between red")
               for m in tampered["red-green"]["messages"]), tampered["red-green"]
