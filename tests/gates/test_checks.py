"""Each built-in check passes on a good tree and fails, precisely, on each way of being wrong."""

from __future__ import annotations

import git
import pytest

from portwright.gates.checks import (
    check_additive,
    check_anchors,
    check_no_test_weakening,
    check_reconciled,
    check_seams,
    check_spec_complete,
)
from portwright.rules import load_rules
from tests.parity.world import SPEC, World


def _anchors(world: World) -> list[str]:
    verdict = check_anchors(world.repo, world.config(), git.Repo(world.upstream.path))
    return verdict.messages if not verdict.passed else []


def test_anchors_pass_on_good_tree(world: World) -> None:
    verdict = check_anchors(world.repo, world.config(), git.Repo(world.upstream.path))
    assert verdict.passed, verdict.messages
    assert verdict.messages == ["5 reference(s) checked"]


def test_anchor_off_by_one_line(world: World) -> None:
    world.downstream.write("specs/attn-fp8.md", SPEC.format(pin=world.pin).replace(
        '`attn/fp8.py:5 "scale', '`attn/fp8.py:6 "scale'))
    assert _anchors(world) == [
        'specs/attn-fp8.md:29: anchor `attn/fp8.py:6 "scale = q.shape[-1] ** -0.5"`: the '
        "excerpt 'scale = q.shape[-1] ** -0.5' is not in the cited lines (it is at line 5 now)"]


def test_anchor_excerpt_drifted_after_upstream_moved(world: World) -> None:
    from tests.parity.world import UPSTREAM_FILES

    text = UPSTREAM_FILES["attn/fp8.py"].replace("** -0.5", "** -0.25")
    moved = world.upstream.commit("rescale", {"attn/fp8.py": text})
    world.downstream.write("upstream-sync.md", f"Pinned commit: {moved}\n")
    world.downstream.write("specs/attn-fp8.md", SPEC.format(pin=moved))
    assert _anchors(world) == [
        'specs/attn-fp8.md:29: anchor `attn/fp8.py:5 "scale = q.shape[-1] ** -0.5"`: the '
        "excerpt 'scale = q.shape[-1] ** -0.5' is not in the cited lines"]


def test_anchor_to_deleted_lines(world: World) -> None:
    moved = world.upstream.commit("shrink", {"attn/fp8.py": "def fp8_attention(q, k, v):\n"
                                             "    return q\n"})
    world.downstream.write("upstream-sync.md", f"Pinned commit: {moved}\n")
    world.downstream.write("specs/attn-fp8.md", SPEC.format(pin=moved))
    messages = _anchors(world)
    assert any(m.startswith("specs/attn-fp8.md:20: anchor `attn/fp8.py:9-10`: lines 9-10 are "
                            "out of range") for m in messages), messages
    assert any(m.startswith("parity-ledger.md:5: anchor `attn/fp8.py:4-6") for m in messages)


def test_ledger_commit_must_exist_upstream(world: World) -> None:
    world.downstream.write("parity-ledger.md", world.repo.joinpath("parity-ledger.md").read_text()
                           + "| src/x.py | 0123456789abc | adaptation | | |\n")
    assert _anchors(world) == ["parity-ledger.md:6: upstream commit 0123456789abc does not "
                               "exist upstream"]


def test_spec_complete(world: World) -> None:
    rules = world.rules()
    assert check_spec_complete(world.repo, world.config(), rules).passed
    world.downstream.write("specs/attn-fp8.md", SPEC.format(pin=world.pin).replace(
        "| deferred | needs paged prefill |", "| deferred | |"))
    verdict = check_spec_complete(world.repo, world.config(), rules)
    assert verdict.messages == ["specs/attn-fp8.md:20: surface item 'prefill' is deferred "
                                "without a reason"]


# ---------------------------------------------------------------- reconciled

KV_MATRIX_ROW = "| kv-cache | KV cache | missing | - | kv/cache.py, alloc |  |"


def _port_kv(world: World, *, ledger: bool = True, row: bool = True,
             kind: str = "port") -> None:
    files = {"src/kv.py": "def alloc(n):\n    return [0] * n\n"}
    if ledger:
        upstream = "`kv/cache.py:4-5 \"def alloc(n):\"`" if kind == "port" else kind
        files["parity-ledger.md"] = (world.repo / "parity-ledger.md").read_text() + (
            f"| src/kv.py | {upstream} | {kind} | | |\n")
    if row:
        matrix = (world.repo / "docs/parity/models.md").read_text()
        files["docs/parity/models.md"] = matrix.replace(
            KV_MATRIX_ROW, KV_MATRIX_ROW.replace("missing", "in-progress"))
    world.downstream.commit("port kv cache", files)


def _reconciled(world: World) -> list[str]:
    return check_reconciled(world.repo, world.config(), base="HEAD~1").messages


def test_reconciled_passes_on_good_change(world: World) -> None:
    _port_kv(world)
    assert _reconciled(world) == []


def test_change_without_ledger_entry(world: World) -> None:
    _port_kv(world, ledger=False)
    assert _reconciled(world) == ["src/kv.py:1: introduced by the change but no ledger entry "
                                  "covers it (add a row to parity-ledger.md)"]


def test_affected_row_left_stale(world: World) -> None:
    _port_kv(world, row=False)
    assert _reconciled(world) == [
        "docs/parity/models.md:8: row 'kv-cache' is affected (ledger entry parity-ledger.md:6 "
        "ports kv/cache.py) but was not updated (status still 'missing')"]


def test_from_scratch_entry_must_be_in_inventory(world: World) -> None:
    _port_kv(world, kind="from-scratch", row=False)
    assert _reconciled(world) == ["parity-ledger.md:6: src/kv.py is from scratch but not in "
                                  "the inventory (porting-inventory.md)"]
    inventory = (world.repo / "porting-inventory.md").read_text()
    world.downstream.commit("inventory", {
        "porting-inventory.md": inventory + "| kv alloc | src/kv.py | kv/, attn/ | |\n"})
    assert check_reconciled(world.repo, world.config(), base="HEAD~2").passed


def test_from_scratch_entry_without_searched_paths(world: World) -> None:
    _port_kv(world, kind="from-scratch", row=False)
    inventory = (world.repo / "porting-inventory.md").read_text()
    world.downstream.commit("inventory", {
        "porting-inventory.md": inventory + "| kv alloc | src/kv.py |  | |\n"})
    messages = check_reconciled(world.repo, world.config(), base="HEAD~2").messages
    assert messages[0] == ("porting-inventory.md:5: 'kv alloc' lists no searched upstream "
                           "paths; name the upstream files or folders searched for a source")


# ----------------------------------------------------------- no-test-weakening

TESTS = ["tests/**", "**/test_*.py", "**/*_test.*"]


def _weaken(world: World, files: dict[str, str]) -> list[str]:
    world.downstream.commit("edit tests", files)
    return check_no_test_weakening(world.repo, base="HEAD~1", tests=TESTS).messages


BASE_TEST = (
    "import pytest\n\n\n"
    "def test_attention():\n"
    "    assert attention(1, 2, 3) == 1\n"
    "    assert 2 == pytest.approx(2.0, rel=1e-6)\n"
)


def test_adding_a_test_is_fine(world: World) -> None:
    assert _weaken(world, {"tests/test_attn.py": BASE_TEST + "\n\ndef test_more():\n"
                           "    assert attention(0, 0, 0) == 0\n"}) == []


def test_deleted_assertion(world: World) -> None:
    text = BASE_TEST.replace("    assert attention(1, 2, 3) == 1\n", "")
    assert _weaken(world, {"tests/test_attn.py": text}) == [
        "tests/test_attn.py:5: removes an assertion (line 5 before the change): "
        "`assert attention(1, 2, 3) == 1`"]


def test_new_skip(world: World) -> None:
    text = BASE_TEST.replace("def test_attention", "@pytest.mark.skip(reason='flaky')\n"
                             "def test_attention")
    assert _weaken(world, {"tests/test_attn.py": text}) == [
        "tests/test_attn.py:4: adds a skip/xfail: `@pytest.mark.skip(reason='flaky')`"]


def test_loosened_tolerance(world: World) -> None:
    text = BASE_TEST.replace("rel=1e-6", "rel=1e-2")
    assert _weaken(world, {"tests/test_attn.py": text}) == [
        "tests/test_attn.py:6: loosens a tolerance: rel 1e-06 -> 0.01"]


CPP = """#include <gtest/gtest.h>

TEST(Gemm, Small) {
  EXPECT_NEAR(gemm(1, 2), 2.0, 1e-5);
  EXPECT_EQ(size(), 4);
}
"""


def test_cpp_weakening(world: World) -> None:
    world.downstream.commit("cpp test", {"tests/gemm_test.cc": CPP})
    weakened = CPP.replace("1e-5", "1e-3").replace("  EXPECT_EQ(size(), 4);\n",
                                                   "  GTEST_SKIP();\n")
    assert _weaken(world, {"tests/gemm_test.cc": weakened}) == [
        "tests/gemm_test.cc:4: loosens a tolerance: near 1e-05 -> 0.001",
        "tests/gemm_test.cc:5: adds a skip/xfail: `GTEST_SKIP();`",
        "tests/gemm_test.cc:5: removes an assertion (line 5 before the change): "
        "`EXPECT_EQ(size(), 4);`"]


def test_deleted_test_file(world: World) -> None:
    world.downstream.git("rm", "-q", "tests/test_attn.py")
    world.downstream.commit("drop")
    messages = check_no_test_weakening(world.repo, base="HEAD~1", tests=TESTS).messages
    assert "tests/test_attn.py:1: test file deleted" in messages


# ------------------------------------------------------------------ seams, additive

SEAM_RULES = """
[[seam]]
name = "attention-backend"
pattern = "def \\\\w*attention\\\\("
through = "backend\\\\.dispatch"
paths = ["src/**"]
exceptions = ["src/legacy.py"]
"""


def _with_rules(world: World, extra: str) -> None:
    text = (world.repo / "AGENTS.md").read_text().replace("[spec]", extra + "\n[spec]")
    text = text.replace("```toml portwright\n",
                        '```toml portwright\nadditive = ["src/models/**"]\n')
    world.downstream.commit("rules", {"AGENTS.md": text})


def test_seams(world: World) -> None:
    _with_rules(world, SEAM_RULES)
    rules = load_rules(world.repo)
    assert check_seams(world.repo, world.config(), rules).messages == [
        "src/attn.py:1: implements 'attention-backend' (`def attention(`) without routing "
        "through it (expected /backend\\.dispatch/ in the file)"]
    world.downstream.commit("route", {
        "src/attn.py": "def attention(q, k, v):\n    return backend.dispatch(q, k, v)\n",
        "src/legacy.py": "def old_attention(q):\n    return q\n"})
    assert check_seams(world.repo, world.config(), rules).messages == [
        "src/legacy.py:1: bypasses seam 'attention-backend' as an exception, but no divergence "
        "entry in the ledger tracks it"]
    ledger = (world.repo / "parity-ledger.md").read_text()
    world.downstream.commit("track", {"parity-ledger.md": ledger + (
        "| src/legacy.py | `attn/fp8.py:9` | divergence | one extra copy per call | |\n")})
    assert check_seams(world.repo, world.config(), rules).passed


def test_additive(world: World) -> None:
    _with_rules(world, SEAM_RULES)
    rules = load_rules(world.repo)
    world.downstream.commit("model a", {"src/models/a.py": "A = 1\n"})
    assert check_additive(world.repo, rules, base="HEAD~1").passed
    world.downstream.commit("model b", {"src/models/b.py": "B = 1\n",
                                        "src/models/a.py": "A = 2\n"})
    assert check_additive(world.repo, rules, base="HEAD~1").messages == [
        "src/models/a.py:1: the change edits an existing file under additive paths "
        "(src/models/**); add new files instead"]


@pytest.mark.parametrize("bad_base", ["no-such-rev"])
def test_bad_base_is_a_clear_failure(world: World, bad_base: str) -> None:
    verdict = check_additive(world.repo, world.rules(), base=bad_base)
    assert verdict.passed  # no additive paths declared: nothing to check
    _with_rules(world, SEAM_RULES)
    verdict = check_additive(world.repo, load_rules(world.repo), base=bad_base)
    assert not verdict.passed
    assert "no-such-rev" in verdict.messages[0]


def test_row_whose_spec_changed_must_be_updated(world: World) -> None:
    spec = (world.repo / "specs/attn-fp8.md").read_text()
    world.downstream.commit("spec: prefill ported", {
        "specs/attn-fp8.md": spec.replace("| prefill | mode | deferred | needs paged prefill |",
                                          "| prefill | mode | ported | |")})
    assert _reconciled(world) == [
        "docs/parity/models.md:7: row 'attn-fp8' is affected (its spec specs/attn-fp8.md "
        "changed) but was not updated (status still 'partial')"]
    matrix = (world.repo / "docs/parity/models.md").read_text()
    world.downstream.commit("row", {"docs/parity/models.md": matrix.replace(
        "| partial | [spec]", "| ported | [spec]")})
    assert check_reconciled(world.repo, world.config(), base="HEAD~2").passed


def test_renamed_test_file_is_still_checked(world: World) -> None:
    text = BASE_TEST.replace("    assert attention(1, 2, 3) == 1\n", "")
    world.downstream.git("mv", "tests/test_attn.py", "tests/test_attention.py")
    world.downstream.commit("rename and edit", {"tests/test_attention.py": text})
    assert check_no_test_weakening(world.repo, base="HEAD~1", tests=TESTS).messages == [
        "tests/test_attention.py:5: removes an assertion (line 5 before the change): "
        "`assert attention(1, 2, 3) == 1`"]


def test_new_test_file_with_a_skip(world: World) -> None:
    assert _weaken(world, {"tests/test_new.py": "import pytest\n\n\n"
                           "@pytest.mark.xfail\ndef test_x():\n    assert 1\n"}) == [
        "tests/test_new.py:4: adds a skip/xfail: `@pytest.mark.xfail`"]


def test_row_linking_a_missing_spec(world: World) -> None:
    matrix = (world.repo / "docs/parity/models.md").read_text()
    world.downstream.write("docs/parity/models.md", matrix.replace(
        "| missing | - |", "| missing | [spec](specs/kv.md) |"))
    assert check_spec_complete(world.repo, world.config(), world.rules()).messages == [
        "docs/parity/models.md:8: row 'kv-cache' links spec specs/kv.md, which does not exist"]
