"""AGENTS.md: prose for the agents, a gates block for the framework; errors give file:line."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from portwright.errors import RulesError
from portwright.rules import BuiltinCheck, Phase, load_rules
from tests.conftest import GitRepo

ROOT = """\
# Rules

Port faithfully. Cite anchors.

```toml portwright
additive = ["src/models/**"]

[[gate]]
name = "unit"
run = "python3 -m pytest -q"
phases = ["focused", "full", "pin"]
timeout = 120
junit = "build/junit.xml"

[[gate]]
name = "anchors"
check = "anchors"
phases = ["spec", "pin"]

[spec]
questions = ["linear_output_dtype", "kv_cache_dtype"]
```

More prose after the block.
"""

NESTED = """\
# Kernels

Kernels must route through the dispatch table.

```toml portwright
[[gate]]
name = "unit"
run = "make -C kernels test"
phases = ["full"]
paths = ["kernels/**/*.cpp"]
```
"""


def test_parses_prose_gates_and_digest(make_repo: type[GitRepo]) -> None:
    repo = make_repo("down")
    repo.write("AGENTS.md", ROOT)
    rules = load_rules(repo.path)
    (only,) = rules.files
    assert only.sha256 == hashlib.sha256(ROOT.encode()).hexdigest()
    assert only.block_line == 5
    assert "Port faithfully" in only.prose
    assert "More prose after" in only.prose
    assert "[[gate]]" not in only.prose
    unit, anchors = rules.gates()
    assert unit.spec.run == "python3 -m pytest -q"
    assert unit.spec.phases == [Phase.FOCUSED, Phase.FULL, Phase.PIN]
    assert unit.spec.junit == "build/junit.xml"
    assert anchors.spec.check is BuiltinCheck.ANCHORS
    assert rules.additive == ["src/models/**"]
    assert rules.spec.questions == ["linear_output_dtype", "kv_cache_dtype"]
    assert [g.name for g in rules.gates_for(Phase.SPEC)] == ["anchors"]


def test_nested_rules_apply_to_their_subtree(make_repo: type[GitRepo]) -> None:
    repo = make_repo("down")
    repo.write("AGENTS.md", ROOT)
    repo.write("kernels/AGENTS.md", NESTED)
    rules = load_rules(repo.path)
    assert [f.path for f in rules.files] == ["AGENTS.md", "kernels/AGENTS.md"]
    assert [f.path for f in rules.for_path("kernels/gemm.cpp")] == ["AGENTS.md",
                                                                    "kernels/AGENTS.md"]
    assert [f.path for f in rules.for_path("src/a.py")] == ["AGENTS.md"]
    assert "dispatch table" not in rules.prose_for(["src/a.py"])
    assert "dispatch table" in rules.prose_for(["kernels/gemm.cpp"])
    full_for_python = [g.name for g in rules.gates_for(Phase.FULL, ["src/a.py"])]
    assert full_for_python == ["unit"]
    full_for_kernel = [g.name for g in rules.gates_for(Phase.FULL, ["kernels/x/gemm.cpp"])]
    assert full_for_kernel == ["unit", "kernels:unit"]
    assert rules.gates_for(Phase.FULL, ["kernels/README.md"])[-1].name == "unit"


def test_file_without_block_has_no_gates(make_repo: type[GitRepo]) -> None:
    repo = make_repo("down")
    repo.write("AGENTS.md", "# Rules\n\n```toml\n[not] = 'gates'\n```\n")
    rules = load_rules(repo.path)
    assert rules.gates() == []


def expect_error(repo: GitRepo, text: str) -> RulesError:
    repo.write("AGENTS.md", text)
    with pytest.raises(RulesError) as info:
        load_rules(repo.path)
    rendered = str(info.value)
    assert "AGENTS.md" in rendered
    assert "fix:" in rendered
    return info.value


def test_missing_root_file(make_repo: type[GitRepo]) -> None:
    repo = make_repo("down")
    with pytest.raises(RulesError) as info:
        load_rules(repo.path)
    assert "portwright init" in (info.value.fix or "")


def test_toml_syntax_error_points_at_file_line(make_repo: type[GitRepo]) -> None:
    error = expect_error(make_repo("down"),
                         "# R\n\n```toml portwright\n[[gate]]\nname = unit\n```\n")
    assert error.line == 5
    assert "not valid TOML" in error.message


def test_unknown_phase_lists_valid_phases(make_repo: type[GitRepo]) -> None:
    error = expect_error(make_repo("down"), (
        "# R\n\n```toml portwright\n[[gate]]\nname = \"a\"\nrun = \"true\"\nphases = [\"full\"]\n"
        "\n[[gate]]\nname = \"b\"\ncheck = \"anchors\"\nphases = [\"spec\", \"pinn\"]\n```\n"))
    assert error.line == 12
    assert error.key == "gate.1.phases.1"
    assert "found 'pinn'" in error.message
    assert "spec, red, focused, full, reconcile, pin" in (error.fix or "")


def test_unknown_builtin_check(make_repo: type[GitRepo]) -> None:
    error = expect_error(make_repo("down"), (
        "# R\n\n```toml portwright\n[[gate]]\nname = \"a\"\ncheck = \"anchor\"\n"
        "phases = [\"spec\"]\n```\n"))
    assert error.line == 6
    assert "no-test-weakening" in (error.fix or "")


def test_top_level_key_after_a_gate_explains_the_toml_trap(make_repo: type[GitRepo]) -> None:
    error = expect_error(make_repo("down"), (
        "# R\n\n```toml portwright\n[[gate]]\nname = \"a\"\nrun = \"true\"\nphases = [\"full\"]\n"
        "additive = [\"src/**\"]\n```\n"))
    assert error.line == 8
    assert "move `additive` above the first [[gate]]" in (error.fix or "")


def test_gate_needs_run_or_check(make_repo: type[GitRepo]) -> None:
    error = expect_error(make_repo("down"), (
        "# R\n\n```toml portwright\n[[gate]]\nname = \"a\"\nphases = [\"full\"]\n```\n"))
    assert error.line == 4
    assert "exactly one of `run`" in error.message


def test_missing_phases(make_repo: type[GitRepo]) -> None:
    error = expect_error(make_repo("down"), (
        "# R\n\n```toml portwright\n[[gate]]\nname = \"a\"\nrun = \"true\"\n```\n"))
    assert error.line == 4
    assert error.key == "gate.0.phases"
    assert "add `phases = ...`" in (error.fix or "")


def test_unknown_key_in_gate(make_repo: type[GitRepo]) -> None:
    error = expect_error(make_repo("down"), (
        "# R\n\n```toml portwright\n[[gate]]\nname = \"a\"\nrun = \"true\"\n"
        "phases = [\"full\"]\ncommand = \"x\"\n```\n"))
    assert error.line == 8
    assert "unknown key 'command'" in error.message


def test_duplicate_gate_name(make_repo: type[GitRepo]) -> None:
    error = expect_error(make_repo("down"), (
        "# R\n\n```toml portwright\n[[gate]]\nname = \"a\"\nrun = \"true\"\nphases = [\"full\"]\n"
        "[[gate]]\nname = \"a\"\nrun = \"false\"\nphases = [\"pin\"]\n```\n"))
    assert error.line == 8
    assert "declared twice" in error.message


def test_two_blocks_are_refused(make_repo: type[GitRepo]) -> None:
    error = expect_error(make_repo("down"), (
        "# R\n\n```toml portwright\n```\n\ntext\n\n```toml portwright\n```\n"))
    assert error.line == 8


def test_block_must_be_toml(make_repo: type[GitRepo]) -> None:
    error = expect_error(make_repo("down"), "# R\n\n```yaml portwright\ngate: []\n```\n")
    assert error.line == 3
    assert "```toml portwright" in (error.fix or "")


def test_runtime_probe_needs_value_group(make_repo: type[GitRepo]) -> None:
    error = expect_error(make_repo("down"), (
        "# R\n\n```toml portwright\n[[runtime]]\nname = \"kv\"\npattern = \"kv=(\\\\w+)\"\n```\n"))
    assert "(?P<value>" in (error.fix or "") or "value" in error.message


def test_not_utf8(make_repo: type[GitRepo]) -> None:
    repo = make_repo("down")
    (repo.path / "AGENTS.md").write_bytes(b"# R\n\xff\xfe\n")
    with pytest.raises(RulesError) as info:
        load_rules(repo.path)
    assert "UTF-8" in str(info.value)


def test_rules_outside_git_are_found_too(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text(ROOT, encoding="utf-8")
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "AGENTS.md").write_text(NESTED, encoding="utf-8")
    assert [f.path for f in load_rules(tmp_path).files] == ["AGENTS.md", "kernels/AGENTS.md"]
