"""Task files: a valid suite loads with its defaults merged; every bad input is a
UsageError naming the file, the line and the fix."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from portwright.errors import UsageError
from portwright.eval.tasks import load_suite
from tests.eval.conftest import Pair, portwright, task_toml


@dataclass(frozen=True)
class Bad:
    """One bad suite: its files (``{task}`` is a valid task file for the pair)."""

    id: str
    files: dict[str, str]
    where: str
    """``file:line`` (relative to the suite) the message must start with."""
    says: tuple[str, ...]
    fix: str
    extra: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.id


def _swap(old: str, new: str) -> str:
    return f"@@{old}@@{new}"


CASES = [
    Bad("toml-syntax", {"calc.toml": 'id = "calc/sub\n'}, "calc.toml:1",
        ("not valid TOML",), "TOML syntax"),
    Bad("not-utf8", {"calc.toml": "title = \"caf\udce9\"\n"}, "calc.toml:1", ("UTF-8",),
        "save the file as UTF-8"),
    Bad("unknown-key", {"calc.toml": _swap('title = "Port sub"',
                                           'title = "Port sub"\ncolour = "red"')},
        "calc.toml:3", ("unknown key 'colour'",), "valid keys here: downstream"),
    Bad("unknown-key-in-table", {"calc.toml": _swap("[environment]",
                                                    '[environment]\nreprot = "tap"')},
        "calc.toml:15", ("unknown key 'reprot'",), "valid keys here: env, image, path_map"),
    Bad("wrong-type", {"calc.toml": _swap("re:^commits = .*$", 'commits = "abc"')},
        "calc.toml:5", ("upstream.commits", "valid list"), "set `commits`"),
    Bad("empty-commits", {"calc.toml": _swap("re:^commits = .*$", "commits = []")},
        "calc.toml:5", ("upstream.commits", "at least 1"), "set `commits`"),
    Bad("empty-hidden-tests", {"calc.toml": _swap('tests = ["tests/test_sub.py::test_sub"]',
                                                  "tests = []")},
        "calc.toml:12", ("hidden.tests", "at least 1"), "set `tests`"),
    Bad("bad-report", {"calc.toml": _swap("[environment]", '[environment]\nreport = "junit"')},
        "calc.toml:15", ("environment.report", "'pytest'", "'exit'"), "set `report`"),
    Bad("exit-without-placeholder", {"calc.toml": _swap(
        "re:^test = .*$", 'test = "./run-tests"\nreport = "exit"')},
        "calc.toml:14", ("{tests}",), "set `environment`"),
    Bad("exit-without-suite", {"calc.toml": _swap(
        "re:^test = .*$", 'test = "./run-tests {tests}"\nreport = "exit"')},
        "calc.toml:14", ("needs `suite`", "tests gate"), "set `environment`"),
    Bad("suite-with-placeholder", {"calc.toml": _swap(
        "re:^test = .*$", 'test = "pytest {tests}"\nsuite = "pytest {tests}"')},
        "calc.toml:14", ("takes no {tests}",), "set `environment`"),
    Bad("missing-table", {"calc.toml": "@@cut:down"}, "calc.toml",
        ("required key is missing (downstream)",), "add the [downstream] table with "
                                                   "`repo = ...`, `parent = ...`, `port = ...`"),
    Bad("bad-repo-name", {"calc.toml": _swap('repo = "acme/calc-js"', 'repo = "calc-js"')},
        "calc.toml:4", ("owner/name",), "set `repo`"),
    Bad("hidden-path-leaves", {"calc.toml": _swap('paths = ["tests/test_sub.py"]',
                                                  'paths = ["../secret"]')},
        "calc.toml:11", ("inside the repository",), "set `paths`"),
    Bad("test-id-option", {"calc.toml": _swap('tests = ["tests/test_sub.py::test_sub"]',
                                              'tests = ["--collect-only"]')},
        "calc.toml:12", ("read it as an option",), "set `tests`"),
    Bad("empty-title", {"calc.toml": _swap('title = "Port sub"', 'title = ""')},
        "calc.toml:2", ("one non-empty line",), "set `title`"),
    Bad("duplicate-id", {"a.toml": "{task}", "b/calc.toml": "{task}"}, "b/calc.toml:1",
        ("used twice",), "own id (the other is in"),
    Bad("suite-sets-id", {"suite.toml": 'id = "x"\n', "calc.toml": "{task}"}, "suite.toml:1",
        ("not a suite-wide default",), "belong in each task file"),
    Bad("suite-default-wrong", {"suite.toml": '[environment]\nimage = "img"\nreport = "junit"\n',
                                "calc.toml": "{task}"},
        "suite.toml:3", ("environment.report",), "set `report`"),
    Bad("empty-folder", {"notes.txt": "nothing\n"}, "", ("no task files",), "one TOML file"),
]


def _text(pair: Pair, spec: str) -> str:
    text = task_toml(pair)
    if spec == "{task}":
        return text
    if spec == "@@cut:down":
        return task_toml(pair, down="")
    if spec.startswith("@@"):
        old, new = spec[2:].split("@@", 1)
        if old.startswith("re:"):
            return re.sub(old[3:], new, text, count=1, flags=re.M)
        assert old in text, old
        return text.replace(old, new, 1)
    return spec


def write_suite(folder: Path, pair: Pair, files: dict[str, str]) -> Path:
    for rel, spec in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _text(pair, spec)
        path.write_bytes(data.encode("utf-8", "surrogateescape"))
    return folder


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_task_files_name_file_line_and_fix(case: Bad, pair: Pair, tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite", pair, case.files)
    with pytest.raises(UsageError) as caught:
        load_suite(suite)
    error = caught.value
    where = f"{error.file}:{error.line}" if error.line else str(error.file)
    assert where.startswith(str(suite / case.where) if case.where else str(suite)), \
        error.render()
    for text in case.says:
        assert text in error.render(), error.render()
    assert "more error" not in error.message
    assert error.fix is not None
    assert case.fix in error.fix, error.render()


def test_a_suite_merges_its_defaults_nearest_first(pair: Pair, tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    (suite / "calc").mkdir(parents=True)
    (suite / "suite.toml").write_text('languages = "js -> py"\n[environment]\n'
                                      'image = "outer"\nreport = "tap"\n')
    (suite / "calc" / "suite.toml").write_text('[environment]\nimage = "inner"\n')
    text = task_toml(pair)
    (suite / "calc" / "sub.toml").write_text(text)
    (suite / "calc" / "other.toml").write_text(text.replace('"calc/sub"', '"calc/other"')
                                               .replace("[environment]",
                                                        '[environment]\nimage = "own"'))
    loaded = load_suite(suite)
    assert [t.id for t in loaded.tasks] == ["calc/other", "calc/sub"]
    other, sub = loaded.tasks
    assert (sub.environment.image, sub.environment.report, sub.languages) == (
        "inner", "tap", "js -> py")
    assert other.environment.image == "own"
    assert sub.upstream.commits == [pair.change]
    assert sub.slug == "calc--sub"
    assert sub.file == suite / "calc" / "sub.toml"
    single = load_suite(suite / "calc" / "sub.toml")
    assert [t.id for t in single.tasks] == ["calc/sub"]
    assert single.tasks[0].environment.image == "inner"  # the suite.toml beside it
    assert single.tasks[0].digest != sub.digest  # the outer defaults are not merged


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_task_files_through_the_command(case: Bad, pair: Pair, tmp_path: Path) -> None:
    """Exit 2, the file:line and the fix, no traceback; with --json a JSON error object."""
    suite = write_suite(tmp_path / "suite", pair, case.files)
    where = str(suite / case.where) if case.where else str(suite)
    for extra in ((), ("--json",)):
        done = portwright("eval", "validate", str(suite), "--repos", str(pair.repos),
                          "--out", str(tmp_path / "out"), *extra)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        if extra:
            error = json.loads(done.stdout)["error"]
            assert f"{error['file']}:{error['line']}".startswith(where) if error["line"] \
                else error["file"] == where
            assert case.fix in error["fix"]
        else:
            flat = " ".join(done.stderr.split())
            assert where in flat, done.stderr
            assert "fix: " in flat, done.stderr
            assert " ".join(case.fix.split()) in flat, done.stderr
    assert not (tmp_path / "out").exists()


def test_missing_repositories_through_the_command(pair: Pair, tmp_path: Path) -> None:
    done = portwright("eval", "validate", str(tmp_path / "nowhere"), "--json")
    assert done.returncode == 2
    assert "no such suite" in json.loads(done.stdout)["error"]["message"]
    done = portwright("eval", "validate", str(tmp_path), "--jobs", "0")
    assert done.returncode == 2
    assert "--jobs" in done.stderr
    assert "Traceback" not in done.stderr
    task = tmp_path / "calc.toml"
    task.write_text(task_toml(pair))
    done = portwright("eval", "validate", str(task), env={"PORTWRIGHT_EVAL_REPOS": ""})
    assert done.returncode == 2
    assert "--repos" in done.stderr
    assert "PORTWRIGHT_EVAL_REPOS" in done.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    done = portwright("eval", "validate", str(task), "--repos", str(empty), "--out",
                      str(tmp_path / "out"))
    assert done.returncode == 2
    flat = " ".join(done.stderr.split())
    assert f"{task}:4" in flat
    assert f"git clone https://github.com/acme/calc-js {empty}/acme/calc-js" in flat
    task.write_text(task_toml(pair).replace(pair.parent, "e" * 40))
    done = portwright("eval", "validate", str(task), "--repos", str(pair.repos), "--out",
                      str(tmp_path / "out"), "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert (error["file"], error["line"], error["key"]) == (str(task), 8, "downstream.parent")
    assert "may need a fetch" in error["fix"]
