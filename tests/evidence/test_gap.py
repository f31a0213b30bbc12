"""Gap scan on a known upstream/downstream pair: each verdict right, and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from portwright.config import PortwrightConfig, UpstreamConfig
from portwright.errors import ConfigError, RevisionError
from portwright.evidence.gap import (
    CommitGap,
    GapReport,
    Verdict,
    row_evidence,
    scan_range,
    upstream_repo,
)
from portwright.project import Project


@pytest.fixture
def report(pair: Any) -> GapReport:
    return scan_range(pair.up.path, pair.down.path, pair.base, "HEAD", pair.config)


def _by_sha(report: GapReport, sha: str) -> CommitGap:
    return next(c for c in report.commits if c.sha == sha)


def test_every_commit_judged_oldest_first(pair: Any, report: GapReport) -> None:
    assert [c.sha for c in report.commits] == list(pair.commits.values())
    assert report.counts() == {"not_applicable": 1, "landed": 2, "partial": 1, "missing": 2,
                               "uncertain": 0}


def test_renamed_symbol_is_landed(pair: Any, report: GapReport) -> None:
    gap = _by_sha(report, pair.commits["renamed"])
    assert gap.verdict is Verdict.LANDED, gap.reason
    assert gap.confidence >= 0.75
    assert gap.kinds == ["source"]
    assert gap.files[0].downstream_path == "lib/scale.js"
    name = next(e for e in gap.evidence if e.signal == "computeScaleFactor")
    assert (name.where, name.matched, name.path, name.line) == (
        "head", "compute_scale_factor", "lib/scale.py", 1)
    assert name.note == "normalised spelling"
    assert name.commit == pair.down.git("rev-parse", "HEAD~4")
    assert name.upstream_anchor == f"src/scale.js:1@{pair.commits['renamed'][:12]}"
    literal = next(e for e in gap.evidence if e.kind == "literal")
    assert (literal.signal, literal.path, literal.line) == (
        "width must be positive", "lib/scale.py", 3)
    assert any(e.kind == "file" and e.path == "lib/scale.py" for e in gap.evidence)


def test_fixture_copied_verbatim_is_landed(pair: Any, report: GapReport) -> None:
    gap = _by_sha(report, pair.commits["fixture"])
    assert gap.verdict is Verdict.LANDED, gap.reason
    assert gap.kinds == ["tests"]
    assert gap.fixtures == ["tests/fixtures/iris.csv"]
    (evidence,) = gap.evidence
    assert (evidence.kind, evidence.where, evidence.path) == ("fixture", "head",
                                                              "tests/data/iris.csv")
    assert evidence.commit == pair.down.git("rev-parse", "HEAD~3")  # "copy the iris fixture"
    assert "identical content" in evidence.note


def test_docs_only_is_not_applicable(pair: Any, report: GapReport) -> None:
    gap = _by_sha(report, pair.commits["docs"])
    assert gap.verdict is Verdict.NOT_APPLICABLE
    assert gap.kinds == ["docs"]
    assert gap.evidence == []
    assert "docs" in gap.reason


def test_partial_port(pair: Any, report: GapReport) -> None:
    gap = _by_sha(report, pair.commits["partial"])
    assert gap.verdict is Verdict.PARTIAL, gap.reason
    assert gap.kinds == ["source", "tests"]
    assert gap.tests == ["clamps into the range"]
    found = {e.signal for e in gap.evidence if e.where == "head"}
    absent = {e.signal for e in gap.evidence if e.where == "absent"}
    assert {"clampRange", "low must not exceed high"} <= found
    assert absent == {"clamps into the range"}
    assert "clamps into the range" in gap.reason


def test_reverted_port_is_missing_with_history(pair: Any, report: GapReport) -> None:
    gap = _by_sha(report, pair.commits["reverted"])
    assert gap.verdict is Verdict.MISSING, gap.reason
    assert "reverted" in gap.reason
    name = next(e for e in gap.evidence if e.signal == "weightedMedian")
    assert name.where == "history"
    assert name.commit == pair.down.head()  # the revert is the last change
    literal = next(e for e in gap.evidence if e.kind == "literal")
    assert literal.where == "history"


def test_never_ported_is_missing(pair: Any, report: GapReport) -> None:
    gap = _by_sha(report, pair.commits["never"])
    assert gap.verdict is Verdict.MISSING
    assert gap.added == ["harmonicMean"]
    assert {e.where for e in gap.evidence} == {"absent"}
    assert 0.6 <= gap.confidence < 0.9  # absence alone: a port may spell it otherwise
    assert "none of" in gap.reason


def test_docs_mention_is_not_a_port(pair: Any) -> None:
    pair.down.commit("plan", {"docs/plan.md": "Next: harmonicMean (upstream src/harmonic.js).\n"})
    report = scan_range(pair.up.path, pair.down.path, pair.base, "HEAD", pair.config)
    gap = _by_sha(report, pair.commits["never"])
    assert gap.verdict is Verdict.MISSING, gap.reason
    name = next(e for e in gap.evidence if e.signal == "harmonicMean")
    assert (name.where, name.path, name.carried) == ("head", "docs/plan.md", False)
    assert "only outside the port's code" in name.note


def test_report_is_json(report: GapReport) -> None:
    again = GapReport.model_validate_json(report.model_dump_json())
    assert again == report


def test_index_is_cached_under_state_dir(pair: Any, report: GapReport) -> None:
    files = list(Project(pair.down.path, pair.config).index_dir.iterdir())
    assert len(files) == 1


def test_row_evidence(pair: Any) -> None:
    pin = pair.commits["renamed"]
    evidence = row_evidence(pair.up.path, pair.down.path,
                            ["clampRange", "computeScaleFactor", "src/clamp.js"], pin, pair.config)
    clamp, scale, path = evidence.symbols
    assert clamp.upstream_at_pin == []
    assert [(loc.path, loc.line) for loc in clamp.upstream_at_head] == [
        ("src/clamp.js", 1), ("tests/clamp.test.js", 1), ("tests/clamp.test.js", 3)]
    assert clamp.upstream_changes == [pair.commits["partial"]]
    assert clamp.upstream_touches == [pair.commits["partial"]]
    assert [loc.text for loc in clamp.downstream_at_head] == ["clamp_range"]
    assert [c.delta for c in clamp.downstream_history] == [1]
    assert [(loc.path, loc.line) for loc in scale.upstream_at_pin] == [("src/scale.js", 1)]
    assert scale.upstream_changes == []
    assert path.is_path
    assert path.upstream_at_pin == []
    assert [loc.path for loc in path.upstream_at_head] == ["src/clamp.js"]
    assert [loc.path for loc in path.downstream_at_head] == ["lib/clamp.py"]


def test_row_evidence_of_symbols_qualified_by_their_file(pair: Any) -> None:
    pin = pair.commits["renamed"]
    evidence = row_evidence(pair.up.path, pair.down.path,
                            ["src/clamp.js::clampRange", "src/clamp.js::clamp"], pin,
                            pair.config)
    named, anonymous = evidence.symbols
    # by its name, as asked
    assert (named.symbol, named.is_path) == ("src/clamp.js::clampRange", False)
    assert named.upstream_changes == [pair.commits["partial"]]
    assert [loc.text for loc in named.downstream_at_head] == ["clamp_range"]
    # a name that is its file's stem (an anonymous module export): by its file
    assert (anonymous.symbol, anonymous.is_path) == ("src/clamp.js::clamp", True)
    assert [loc.path for loc in anonymous.upstream_at_head] == ["src/clamp.js"]
    assert [loc.path for loc in anonymous.downstream_at_head] == ["lib/clamp.py"]


def test_bad_revision_and_url(pair: Any, tmp_path: Path) -> None:
    with pytest.raises(RevisionError, match="nope"):
        scan_range(pair.up.path, pair.down.path, "nope", "HEAD", pair.config)
    url = PortwrightConfig(upstream=UpstreamConfig(source=f"file://{tmp_path}/gone.git"))
    with pytest.raises(ConfigError, match=r"could not clone") as info:
        upstream_repo(Project(pair.down.path, url))
    assert info.value.key == "upstream.source"
    missing = PortwrightConfig(upstream=UpstreamConfig(source="../nowhere"))
    with pytest.raises(ConfigError, match="does not exist"):
        upstream_repo(Project(pair.down.path, missing))
    assert upstream_repo(Project(pair.down.path, pair.config)) == pair.up.path.resolve()


def _small_pair(make_repo: Any) -> tuple[Any, Any, PortwrightConfig]:
    up = make_repo("up2")
    up.commit("initial", {"src/legacy.py": "def legacy_mean(xs):\n    return 0\n",
                          "src/core.py": "def keep_me():\n    return 1\n"})
    down = make_repo("down2")
    down.commit("port", {"lib/legacy.py": "def legacy_mean(xs):\n    return 0\n",
                         "lib/core.py": "def keep_me():\n    return 1\n"})
    return up, down, PortwrightConfig(upstream=UpstreamConfig(source="../up2"))


def test_removal_carried_or_not(make_repo: Any) -> None:
    up, down, config = _small_pair(make_repo)
    base = up.head()
    removal = up.commit("drop legacy_mean", remove=["src/legacy.py"])
    before = scan_range(up.path, down.path, base, "HEAD", config)
    (gap,) = before.commits
    assert gap.removed == ["legacy_mean"]
    assert gap.verdict is Verdict.MISSING, gap.reason
    (evidence,) = gap.evidence
    assert (evidence.kind, evidence.where, evidence.carried) == ("removal", "head", False)
    assert "still has it" in evidence.note
    dropped = down.commit("drop legacy_mean too", remove=["lib/legacy.py"])
    after = scan_range(up.path, down.path, base, "HEAD", config)
    (gap,) = after.commits
    assert gap.sha == removal
    assert gap.verdict is Verdict.LANDED, gap.reason
    assert (gap.evidence[0].carried, gap.evidence[0].commit) == (True, dropped)


def test_test_case_found_by_its_words(make_repo: Any) -> None:
    up, down, config = _small_pair(make_repo)
    base = up.head()
    up.commit("test keep_me", {"tests/core.test.js": (
        'it("keeps the value one", () => {\n  expect(keepMe()).toBe(1);\n});\n')})
    down.commit("test keep_me", {"tests/test_core.py": (
        "def test_keeps_the_value_one():\n    assert keep_me() == 1\n")})
    (gap,) = scan_range(up.path, down.path, base, "HEAD", config).commits
    assert gap.tests == ["keeps the value one"]
    assert gap.verdict is Verdict.LANDED, gap.reason
    test = next(e for e in gap.evidence if e.kind == "test")
    assert (test.matched, test.path, test.line) == (
        "test_keeps_the_value_one", "tests/test_core.py", 1)


def test_no_distinctive_signal_is_uncertain(make_repo: Any) -> None:
    up, down, config = _small_pair(make_repo)
    base = up.head()
    up.commit("tweak", {"src/core.py": "def keep_me():\n    return 2\n"})
    (gap,) = scan_range(up.path, down.path, base, "HEAD", config).commits
    assert (gap.verdict, gap.confidence) == (Verdict.UNCERTAIN, 0.5)
    assert "gap-verifier" in gap.reason


def test_merge_commits_are_not_applicable(make_repo: Any) -> None:
    up, down, config = _small_pair(make_repo)
    base = up.head()
    up.git("checkout", "-q", "-b", "side")
    up.commit("side work", {"src/side.py": "def side_effect_free():\n    pass\n"})
    up.git("checkout", "-q", "main")
    up.commit("main work", {"README.md": "hi\n"})
    up.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    report = scan_range(up.path, down.path, base, "HEAD", config)
    merge = report.commits[-1]
    assert merge.subject == "merge side"
    assert merge.verdict is Verdict.NOT_APPLICABLE
    assert "merge" in merge.reason
    assert {c.subject: c.verdict for c in report.commits}["side work"] is Verdict.MISSING


def test_row_evidence_touches_without_count_change(make_repo: Any) -> None:
    up, down, config = _small_pair(make_repo)
    pin = up.head()
    up.commit("use keep_me", {"src/use.py": "from core import keep_me\nkeep_me()\n"})
    touch = up.commit("call keep_me differently", {"src/use.py":
                                                   "from core import keep_me\nkeep_me(1)\n"})
    (item,) = row_evidence(up.path, down.path, ["keep_me"], pin, config).symbols
    assert len(item.upstream_changes) == 1
    assert item.upstream_touches[0] == touch
    assert len(item.upstream_touches) == 2
