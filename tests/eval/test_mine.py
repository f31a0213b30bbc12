"""`portwright eval mine` on small real upstream / port pairs built in tmp_path."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from portwright.cli.eval_mine import register
from portwright.eval.mine import Candidate, mine, task_toml


@pytest.fixture
def pair(make_repo: Any) -> dict[str, Any]:
    """An upstream `acme/widget` (JavaScript, two tags) and its Python port."""
    up = make_repo("up")
    up.git("remote", "add", "origin", "https://github.com/acme/widget.git")
    up.commit("init", {"lib/parse.js": "function parse() {}\n",
                       "lib/render.js": "function render() {}\n",
                       "test/parse.test.js": "it('parses a plain line', () => {})\n"})
    up.git("tag", "1.0.0")
    fix = up.commit("Fix tab handling in lists, closes #42",
                    {"lib/parse.js": "function parse() { tabs() }\n",
                     "test/parse.test.js": "it('parses a plain line', () => {})\n"
                                           "it('keeps tabs inside list items', () => {})\n"})
    render = up.commit("Render soft breaks", {"lib/render.js": "function render() { br }\n"})
    up.git("tag", "1.1.0")
    emoji = up.commit("Emoji shortcuts", {"lib/emoji.js": "function emoji() {}\n",
                                          "test/emoji_names.test.js": "it('x y z w', 1)\n"})
    down = make_repo("down")
    base = down.commit("init", {"widget/parse.py": "def parse(): pass\n",
                                "widget/render.py": "def render(): pass\n",
                                "tests/test_parse.py": "def test_plain(): pass\n"})
    by_sha = down.commit(f"Port the tab fix\n\nports {fix[:10]}",
                         {"widget/parse.py": "def parse(): tabs()\n",
                          "tests/test_parse.py": "def test_tabs(): pass\n"})
    by_issue = down.commit("Soft breaks (acme/widget#42)",
                           {"tests/fixtures/breaks.md": "a\nb\n"})
    no_tests = down.commit(f"Docs for {render[:9]}", {"README.md": "soft breaks\n"})
    by_version = down.commit("Sync with widget 1.1.0",
                             {"widget/render.py": "def render(): br\n",
                              "tests/test_render.py": "def test_br(): pass\n"})
    by_test = down.commit("Emoji", {"widget/emoji.py": "x = 1\n",
                                    "tests/test_emoji_names.py": "def test_names(): pass\n"})
    by_title = down.commit("Cover lists",
                           {"tests/test_lists.py": "# keeps tabs inside list items\n"})
    by_subject = down.commit("Render soft breaks (#7)", {"tests/fixtures/soft.md": "a\n"})
    nowhere = down.commit("Bump deadbeefcafe1234 in the lock", {"tests/test_lock.py": "x\n"})
    return {"up": up.path, "down": down.path, "fix": fix, "render": render, "emoji": emoji,
            "base": base, "by_sha": by_sha, "by_issue": by_issue, "no_tests": no_tests,
            "by_version": by_version, "by_test": by_test, "by_title": by_title,
            "by_subject": by_subject, "nowhere": nowhere}


def _by_port(found: list[Candidate]) -> dict[str, Candidate]:
    return {cand.port: cand for cand in found}


def test_references_become_candidates(pair: dict[str, Any]) -> None:
    found = _by_port(mine(pair["up"], pair["down"]))
    sha = found[pair["by_sha"]]
    assert sha.kinds == ["sha", "test"]  # and the upstream test file stem "parse"
    assert sha.upstream == [pair["fix"]]
    assert sha.parent == pair["base"]
    assert sha.tests == ["tests/test_parse.py"]
    issue = found[pair["by_issue"]]
    assert [c.kind for c in issue.clues] == ["issue"]
    assert issue.upstream == [pair["fix"]]  # the upstream commit that closes #42
    version = found[pair["by_version"]]
    assert "version" in version.kinds
    assert version.upstream == [pair["render"]]  # 1.0.0..1.1.0, touching render
    assert found[pair["by_test"]].kinds == ["test"]
    title = found[pair["by_title"]]
    assert [c.text for c in title.clues] == ["keeps tabs inside list items"]
    subject = found[pair["by_subject"]]
    assert (subject.kinds, subject.upstream) == (["subject"], [pair["render"]])


def test_no_test_change_and_unresolved_hex_are_skipped(pair: dict[str, Any]) -> None:
    found = _by_port(mine(pair["up"], pair["down"]))
    assert pair["no_tests"] not in found  # references the upstream, changes no test
    assert pair["nowhere"] not in found  # a hex word that resolves in no upstream commit
    newest_first = ("by_subject", "by_title", "by_test", "by_version", "by_issue", "by_sha")
    assert list(found) == [pair[k] for k in newest_first]
    assert len(mine(pair["up"], pair["down"], limit=2)) == 2


def test_path_map_ties_version_commits(pair: dict[str, Any]) -> None:
    cand = _by_port(mine(pair["up"], pair["down"], path_map={"lib/": "widget/"})
                    )[pair["by_version"]]
    assert cand.upstream == [pair["render"]]


def test_candidate_task_file(pair: dict[str, Any]) -> None:
    cand = _by_port(mine(pair["up"], pair["down"]))[pair["by_sha"]]
    text = task_toml(cand, upstream="acme/widget", downstream="acme/widget-py",
                     languages="javascript -> python")
    assert "# confirm: sha:" in text
    task = tomllib.loads(text)
    assert task["upstream"]["commits"] == [pair["fix"]]
    assert task["downstream"] == {"repo": "acme/widget-py",
                                  "url": "https://github.com/acme/widget-py",
                                  "parent": pair["base"], "port": pair["by_sha"]}
    assert task["hidden"]["tests"] == ["tests/test_parse.py"]
    assert task["id"].startswith(f"widget-py/{pair['by_sha'][:8]}-port-the-tab-fix")


def _cli() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command("other")
    def other() -> None:  # two commands, so `mine` stays a named subcommand
        """Nothing."""

    return app


def test_cli_writes_candidates_and_json(pair: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "cands"
    done = CliRunner().invoke(_cli(), ["mine", "--upstream", str(pair["up"]), "--downstream",
                                       str(pair["down"]), "--out", str(out), "--json"])
    assert done.exit_code == 0, done.output
    payload = json.loads(done.stdout)
    assert payload["upstream"] == "acme/widget"
    assert len(payload["candidates"]) == 6
    assert len(list(out.rglob("*.toml"))) == 6
    table = CliRunner().invoke(_cli(), ["mine", "--upstream", str(pair["up"]), "--downstream",
                                        str(pair["down"]), "--limit", "1"])
    assert table.exit_code == 0, table.output
    assert "1 candidate(s)" in table.stdout


def test_cli_bad_path_map(pair: dict[str, Any]) -> None:
    from portwright.errors import UsageError

    done = CliRunner().invoke(_cli(), ["mine", "--upstream", str(pair["up"]), "--downstream",
                                       str(pair["down"]), "--path-map", "lib"])
    assert isinstance(done.exception, UsageError)
    assert "--path-map" in str(done.exception)
