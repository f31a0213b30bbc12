"""The causes of wrong gap verdicts on real ports, each on a small pair built here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from portwright.config import PortwrightConfig, UpstreamConfig
from portwright.evidence import upstream as upstream_room
from portwright.evidence.gap import CommitGap, Verdict, scan_range

ROOT = Path(__file__).resolve().parents[2]

REGEX = 'var reTag = "[<][?].*?[?][>]";\nfunction isTag(s) { return new RegExp(reTag).test(s); }\n'
LINKS = "% links\n\nhttp://example.com/a\n\nhttp://example.com/b\n"


@pytest.fixture
def pair(make_repo: Any) -> Any:
    up = make_repo("up")
    up.commit("initial", {"lib/tag.js": REGEX, "test/fixtures/links.txt": LINKS,
                          "package.json": "{}\n"})
    down = make_repo("down")
    down.commit("port", {
        "tagport/tag.py": 'RE_TAG = "[<][?].*?[?][>]"\n\n\ndef is_tag(s):\n'
                          '    return re.match(RE_TAG, s)\n',
        "test/fixtures/links.txt": LINKS,
        "README.md": "Planned: `matchAtStart`, see `it('finds a match at the start')`.\n"})

    class Pair:
        pass

    out = Pair()
    out.up, out.down, out.base = up, down, up.head()  # type: ignore[attr-defined]
    out.config = PortwrightConfig(upstream=UpstreamConfig(  # type: ignore[attr-defined]
        source="../up", path_map={"lib/": "tagport/"}))
    return out


def _scan(pair: Any, cache: Path | None = None) -> list[CommitGap]:
    return scan_range(pair.up.path, pair.down.path, pair.base, "HEAD", pair.config,
                      cache_dir=cache).commits


def test_upstream_tooling_is_not_applicable(pair: Any) -> None:
    pair.up.commit("tooling", {".eslintrc.yml": "root: true\n", "package.json": '{"a": 1}\n',
                               "benchmark/bench.js": "run(matchEverything)\n",
                               "support/demo/index.css": "a { color: #ff0000 }\n",
                               ".github/workflows/ci.yml": "on: push\n"})
    (gap,) = _scan(pair)
    assert gap.verdict is Verdict.NOT_APPLICABLE, gap.reason
    assert set(gap.kinds) == {"tooling", "build", "bench", "ci"}


def test_comment_and_format_changes_are_not_applicable(pair: Any) -> None:
    pair.up.commit("lint", {"lib/tag.js": "// tags\n" + REGEX.replace(";\n", "\n")})
    (gap,) = _scan(pair)
    assert gap.verdict is Verdict.NOT_APPLICABLE, gap.reason
    assert "no behaviour" in gap.reason
    assert gap.files[0].no_behaviour


def test_type_only_names_are_not_signals(pair: Any) -> None:
    pair.up.commit("types", {"lib/options.ts": (
        "export interface MatchAtStartOptions { fuzzyLinkMode: boolean }\n"
        "export type LinkMatcherKind = 'full' | 'fuzzy'\n")})
    (gap,) = _scan(pair)
    assert gap.added == []


def test_matches_count_only_in_the_ports_own_code(pair: Any) -> None:
    pair.up.commit("matchAtStart", {
        "lib/match_at_start.js": "export function matchAtStart(text) { return null }\n",
        "test/test.js": "it('finds a match at the start', () => { matchAtStart('x') })\n"})
    pair.down.commit("docs and a copied test", {
        "docs/match_at_start.md": "# matchAtStart\n",
        "test/test.js": "it('finds a match at the start', () => { matchAtStart('x') })\n"})
    (gap,) = _scan(pair)
    assert gap.verdict is Verdict.MISSING, gap.reason
    assert not any(e.carried for e in gap.evidence)
    kinds = {e.kind: e for e in gap.evidence}
    assert kinds["file"].where == "absent"  # the docs file with that stem is no port
    assert kinds["test"].where == "absent"  # a copied JavaScript test is no port either


def test_the_replaced_text_still_downstream_is_strong(pair: Any) -> None:
    pair.up.commit("allow EOL", {"lib/tag.js": REGEX.replace(".*?", "[\\\\s\\\\S]*?")})
    (gap,) = _scan(pair)
    assert gap.verdict is Verdict.MISSING, gap.reason
    (literal,) = [e for e in gap.evidence if e.kind == "literal"]
    assert (literal.strength, literal.path, literal.line) == ("strong", "tagport/tag.py", 1)
    assert gap.confidence >= 0.9


def test_fixture_lines_carried_or_not(pair: Any) -> None:
    added = pair.up.commit("more links", {
        "test/fixtures/links.txt": LINKS + "\nhttp://example.com/c;d\n"})
    removed = pair.up.commit("fewer links", {
        "test/fixtures/links.txt": LINKS.replace("http://example.com/b\n", "")
        + "\nhttp://example.com/c;d\n"})
    pair.down.commit("port the new link", {
        "test/fixtures/links.txt": LINKS + "\nhttp://example.com/c;d\n"})
    gaps = {g.sha: g for g in _scan(pair)}
    assert gaps[added].verdict is Verdict.LANDED, gaps[added].reason
    assert gaps[removed].verdict is Verdict.MISSING, gaps[removed].reason


def test_a_change_and_its_revert_are_not_applicable(pair: Any) -> None:
    change = pair.up.commit("allow more", {"lib/tag.js": REGEX.replace(".*?", ".+?")})
    pair.up.git("revert", "--no-edit", "HEAD")
    gaps = _scan(pair)
    assert [g.verdict for g in gaps] == [Verdict.NOT_APPLICABLE] * 2
    assert gaps[0].sha == change
    assert "reverted" in gaps[0].reason
    assert gaps[1].related == [change]


def test_a_signal_replaced_later_takes_the_later_verdict(pair: Any) -> None:
    first = pair.up.commit("allow 2-4 dots",
                           {"lib/tag.js": REGEX + 'var dots = "\\\\.{2,4}[a-z%/]|";\n'})
    pair.up.commit("allow any dots", {"lib/tag.js": REGEX + 'var dots = "\\\\.{2,}[a-z%/&]|";\n'})
    pair.down.commit("port dots", {"tagport/dots.py": 'DOTS = "\\\\.{2,}[a-z%/&]|"\n'})
    gaps = _scan(pair)
    assert [g.verdict for g in gaps] == [Verdict.LANDED, Verdict.LANDED], gaps[0].reason
    assert gaps[0].sha == first
    assert "superseded" in gaps[0].reason
    assert gaps[0].evidence[0].superseded_by == gaps[1].sha


def test_warm_rerun_reads_the_cache(pair: Any, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    pair.up.commit("allow EOL", {"lib/tag.js": REGEX.replace(".*?", "[\\\\s\\\\S]*?")})
    cold = _scan(pair, tmp_path / "cache")

    def no_stream(*_args: object) -> None:
        raise AssertionError("a warm run must not read the upstream history again")

    monkeypatch.setattr(upstream_room, "_stream", no_stream)
    assert _scan(pair, tmp_path / "cache") == cold
    pair.down.commit("allow EOL too", {"tagport/tag.py": 'RE_TAG = "[<][?][\\s\\S]*?[?][>]"\n'})
    (after,) = _scan(pair, tmp_path / "cache")  # a new downstream HEAD is judged again
    assert after.verdict is Verdict.LANDED, after.reason


def test_spellings_on_one_line_are_found_in_their_order_in_every_process(
        make_repo: Any, tmp_path: Path) -> None:
    """Two spellings of one name on a line (``parseLinkDestination`` and its port's
    ``parse_link_destination``, markdown-it-py's helpers/__init__.py) are listed in the
    order the line has them, whatever the process's hash seed: the gap verifier's evidence
    is the same in a recording and in its replay."""
    repo = make_repo("helpers")
    repo.commit("helpers", {"helpers/__init__.py": (
        "from .dest import parseLinkDestination, parse_link_destination  # noqa\n")})
    script = ("import sys\nfrom pathlib import Path\n"
              "from portwright.evidence.lookup import TreeView\n"
              "found = TreeView(Path(sys.argv[1])).find_name('parseLinkDestination')\n"
              "print(' '.join(f'{h.path}:{h.line}:{h.text}' for h in found))\n")
    seen = {subprocess.run([sys.executable, "-c", script, str(repo.path)], check=True,
                           capture_output=True, text=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed),
                                "PYTHONPATH": str(ROOT)}).stdout.strip()
            for seed in range(8)}
    assert seen == {"helpers/__init__.py:1:parseLinkDestination "
                    "helpers/__init__.py:1:parse_link_destination"}
