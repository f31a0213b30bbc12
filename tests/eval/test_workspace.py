"""The workspace of a task: the upstream at the pin, the downstream at the parent plus the
harness commit, the port commit never in it, and a rerun that changes nothing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from portwright.errors import RepositoryError, RevisionError, UsageError
from portwright.eval import harness
from portwright.eval.harness import SUITE_ID
from portwright.eval.repos import REPOS_ENV, repos_root, resolve
from portwright.eval.tasks import PortTask, load_suite
from portwright.eval.workspace import commit_files, prepare
from portwright.gates.testids import from_output
from portwright.parity.matrix import load_rows
from portwright.parity.pin import read_pin
from portwright.project import Project
from portwright.rules import Phase
from tests.eval.conftest import Pair, build_pair, task_toml


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=check)


def load(tmp_path: Path, text: str) -> PortTask:
    path = tmp_path / "tasks" / "calc.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return load_suite(path).tasks[0]


def test_the_harness_commit_and_the_pin(pair: Pair, tmp_path: Path) -> None:
    task = load(tmp_path, task_toml(pair))
    ws = prepare(task, pair.repos, tmp_path / "work")

    assert (ws.pin, ws.parent, ws.row) == (pair.pin, pair.parent, "sub")
    assert git(ws.upstream, "rev-parse", "HEAD").stdout.strip() == pair.pin
    assert git(ws.downstream, "rev-parse", "main", "main^").stdout.split() == [
        ws.harness, pair.parent]
    assert git(ws.downstream, "symbolic-ref", "HEAD").stdout.strip() == "refs/heads/main"
    assert git(ws.downstream, "status", "--porcelain").stdout == ""
    changed = git(ws.downstream, "diff", "--name-only", pair.parent, ws.harness).stdout.split()
    assert sorted(changed) == ["AGENTS.md", "docs/parity/matrix.md", "parity-ledger.md",
                               "porting-inventory.md", "portwright.toml", "upstream-sync.md"]

    project = Project.load(ws.downstream, at="HEAD")
    assert project.upstream() == ws.upstream  # named ../upstream, relative to the downstream
    assert project.upstream() == ws.upstream
    assert project.config.upstream.path_map == {"src/": "", "test/": "tests/"}
    assert project.config.sandbox.backend.value == "docker"
    assert project.config.approvals.advance == "never"
    gates = {g.name: g.spec for g in project.rules().gates()}
    assert gates["tests"].run == "python3 -m pytest -q -rA -p no:cacheprovider"
    assert Phase.RED in gates["tests"].phases
    assert {g.check.value for g in gates.values() if g.check} == {
        "anchors", "spec-complete", "no-test-weakening", "reconciled"}
    rows = load_rows(ws.downstream, project.config)
    assert [(r.id, r.title, r.status) for r in rows] == [("sub", "Port sub", "missing")]
    # the name the change defines first (the cycle ports it), then the paths (README: docs)
    assert rows[0].upstream == ["sub", "src/calc.js", "test/calc.test.js"]
    assert read_pin(ws.downstream, project.config) == pair.pin


def test_the_port_commit_is_never_in_the_workspace(pair: Pair, tmp_path: Path) -> None:
    task = load(tmp_path, task_toml(pair))
    ws = prepare(task, pair.repos, tmp_path / "work")
    assert git(pair.downstream.path, "cat-file", "-e", pair.port, check=False).returncode == 0
    assert git(ws.downstream, "cat-file", "-e", pair.port, check=False).returncode != 0
    ported = git(pair.downstream.path, "rev-parse", f"{pair.port}:tests/test_sub.py").stdout
    assert git(ws.downstream, "cat-file", "-e", ported.strip(), check=False).returncode != 0
    assert git(ws.downstream, "remote").stdout == ""
    assert not (ws.downstream / ".git" / "objects" / "info" / "alternates").exists()
    assert not (ws.downstream / ".git" / "FETCH_HEAD").exists()
    assert not (ws.downstream / "tests" / "test_sub.py").exists()


def test_commit_files_writes_and_removes_paths_without_the_work_tree(
        pair: Pair, tmp_path: Path) -> None:
    ws = prepare(load(tmp_path, task_toml(pair)), pair.repos, tmp_path / "work")
    head = git(ws.downstream, "rev-parse", "HEAD").stdout.strip()
    listed = git(ws.downstream, "ls-tree", "-r", "--name-only", head).stdout.split()
    gone = listed[0]
    made = commit_files(ws.downstream, head, {"new/file.txt": b"x\n", gone: None}, "m\n")
    after = git(ws.downstream, "ls-tree", "-r", "--name-only", made).stdout.split()
    assert sorted(after) == sorted([*(p for p in listed if p != gone), "new/file.txt"])
    assert git(ws.downstream, "show", f"{made}:new/file.txt").stdout == "x\n"
    assert git(ws.downstream, "rev-parse", "HEAD").stdout.strip() == head
    assert (ws.downstream / gone).exists()  # the work tree is not touched


def test_a_rerun_changes_nothing(pair: Pair, tmp_path: Path) -> None:
    task = load(tmp_path, task_toml(pair))
    first = prepare(task, pair.repos, tmp_path / "work")
    refs = git(first.downstream, "show-ref").stdout
    objects = git(first.downstream, "count-objects", "-v").stdout
    mtime = (first.downstream / "AGENTS.md").stat().st_mtime_ns
    second = prepare(task, pair.repos, tmp_path / "work")
    assert second == first
    assert git(first.downstream, "show-ref").stdout == refs
    assert git(first.downstream, "count-objects", "-v").stdout == objects
    assert (first.downstream / "AGENTS.md").stat().st_mtime_ns == mtime
    # the same task elsewhere gives the same harness commit but for the upstream's path
    (first.downstream / "calc.py").write_text("broken\n")
    git(first.downstream, "commit", "-qam", "work on top")
    third = prepare(task, pair.repos, tmp_path / "work")
    assert third.harness == first.harness
    assert (first.downstream / "calc.py").read_text() == "broken\n"  # resumed work kept


def test_a_half_made_clone_is_made_again(pair: Pair, tmp_path: Path) -> None:
    task = load(tmp_path, task_toml(pair))
    partial = tmp_path / "work" / "upstream" / "calc-js.partial"
    partial.mkdir(parents=True)
    (partial / "junk").write_text("x")
    ws = prepare(task, pair.repos, tmp_path / "work")
    assert not partial.exists()
    assert ws.upstream == (tmp_path / "work" / "upstream" / "calc-js").resolve()
    assert ws.downstream == (tmp_path / "work" / "downstream" / "calc-py").resolve()
    assert git(ws.upstream, "rev-parse", "HEAD").stdout.strip() == pair.pin


def test_existing_records_are_kept_and_the_harness_appended(tmp_path: Path) -> None:
    pair = build_pair(tmp_path / "repos")
    down = pair.downstream
    down.git("checkout", "-q", "-b", "records", pair.parent)
    agents = ("# calc rules\n\nKeep upstream names.\n\n```toml portwright\n[[gate]]\n"
              'name = "tests"\nrun = "make test"\nphases = ["full"]\n```\n\nMore prose.\n')
    ledger = ("# Ledger\n\n| change | upstream | kind | cost | notes |\n"
              "| --- | --- | --- | --- | --- |\n| calc.py | from-scratch | from-scratch | | |\n")
    parent = down.commit("records", {
        "AGENTS.md": agents, "parity-ledger.md": ledger,
        "upstream-sync.md": "# Sync\n\nPinned commit: `" + "0" * 40 + "`\n",
        "docs/parity/matrix.md": "# Matrix\n\n| id | title | status |\n| --- | --- | --- |\n"
                                 "| add | Add | ported |\n"})
    port = down.commit("port", {"tests/test_sub.py": "x\n"})
    task = load(tmp_path, task_toml(pair, down=(
        f'[downstream]\nrepo = "acme/calc-py"\nparent = "{parent}"\nport = "{port}"')))
    ws = prepare(task, pair.repos, tmp_path / "work")

    rules = (ws.downstream / "AGENTS.md").read_text()
    assert "Keep upstream names." in rules
    assert "More prose." in rules
    assert "make test" not in rules
    assert rules.count("```toml portwright") == 1
    assert rules.index("Keep upstream names.") < rules.index("```toml portwright") < \
        rules.index("More prose.")  # the harness's gates where the downstream had its own
    assert (ws.downstream / "parity-ledger.md").read_text() == ledger
    assert (ws.downstream / "upstream-sync.md").read_text() == (
        f"# Sync\n\nPinned commit: `{pair.pin}`\n")
    project = Project.load(ws.downstream, at="HEAD")
    assert [(r.id, r.status) for r in load_rows(ws.downstream, project.config)] == [
        ("add", "ported"), ("sub", "missing")]


@pytest.mark.parametrize("report", ["exit", "tap"])
def test_a_runner_without_test_ids_gets_one_id_for_its_suite(pair: Pair, tmp_path: Path,
                                                              report: str) -> None:
    """The red gate needs failing ids from the output, which the gates read from pytest
    and GoogleTest lines only: the tests gate of an ``exit`` or ``tap`` task prints the
    suite's own line from its exit status, so its red can be observed."""
    env = ('[environment]\ntest = "sh ./check {tests}"\n'
           f'report = "{report}"\nsuite = "sh ./check all && echo \'# done\' # a comment"')
    task = load(tmp_path, task_toml(pair, env=env))
    ws = prepare(task, pair.repos, tmp_path / "work")
    gate = {g.name: g.spec for g in Project.load(ws.downstream, at="HEAD").rules().gates()}
    command = gate["tests"].run
    assert command is not None
    assert Phase.RED in gate["tests"].phases

    for status, word, ids in ((3, "FAILED", ([], [SUITE_ID])), (0, "OK", ([SUITE_ID], []))):
        (tmp_path / "check").write_text(f"echo checked $1\nexit {status}\n")
        done = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True,
                              text=True, check=False)
        assert done.returncode == (1 if status else 0), done.stderr
        assert f"] {SUITE_ID}" in done.stdout.splitlines()[-1]
        assert word in done.stdout.splitlines()[-1]
        assert from_output(done.stdout) == ids
    if_pytest = load(tmp_path, task_toml(pair))
    assert harness.test_gate_command(if_pytest) == "python3 -m pytest -q -rA -p no:cacheprovider"


def test_repositories_and_revisions_that_are_not_there(pair: Pair, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        repos_root(None, {})
    assert caught.value.key == "--repos"
    assert REPOS_ENV in (caught.value.fix or "")
    assert repos_root(None, {REPOS_ENV: str(pair.repos)}) == pair.repos.resolve()

    task = load(tmp_path, task_toml(pair))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RepositoryError) as missing:
        resolve(task, empty)
    assert (missing.value.file, missing.value.line) == (str(task.file), 4)
    assert missing.value.fix == f"git clone https://github.com/acme/calc-js {empty}/acme/calc-js"

    absent = load(tmp_path, task_toml(pair).replace(pair.port, "f" * 40))
    with pytest.raises(RevisionError) as unknown:
        resolve(absent, pair.repos)
    assert (unknown.value.file, unknown.value.line, unknown.value.key) == (
        str(absent.file), 9, "downstream.port")
    assert "may need a fetch" in (unknown.value.fix or "")

    backwards = load(tmp_path, task_toml(pair).replace(f'port = "{pair.port}"',
                                                       f'port = "{pair.parent}^"'))
    with pytest.raises(UsageError, match="does not descend from the parent"):
        resolve(backwards, pair.repos)


def test_a_task_moved_to_another_upstream_clone_gets_a_new_clone(tmp_path: Path) -> None:
    pair = build_pair(tmp_path / "repos")
    task = load(tmp_path, task_toml(pair))
    first = prepare(task, pair.repos, tmp_path / "work")
    shutil.copytree(pair.upstream.path, pair.repos / "mirror" / "calc-js")
    moved = load(tmp_path, task_toml(pair).replace('repo = "acme/calc-js"',
                                                   'repo = "mirror/calc-js"'))
    second = prepare(moved, pair.repos, tmp_path / "work")
    assert second.upstream == first.upstream
    source = git(second.upstream, "config", "portwright.source").stdout.strip()
    assert source == str((pair.repos / "mirror" / "calc-js").resolve())
    assert git(second.upstream, "remote").stdout == ""
    assert git(second.upstream, "rev-parse", "HEAD").stdout.strip() == pair.pin


def test_the_harness_commit_is_the_same_wherever_the_output_is(pair: Pair,
                                                                tmp_path: Path) -> None:
    """The upstream is named relative to the downstream (../../upstream/<name>): replayed
    model transcripts, which quote the harness sha, play in any output folder."""
    task = load(tmp_path, task_toml(pair))
    here = prepare(task, pair.repos, tmp_path / "here")
    there = prepare(task, pair.repos, tmp_path / "elsewhere" / "deeper")
    assert here.harness == there.harness
    config = git(here.downstream, "show", f"{here.harness}:portwright.toml").stdout
    assert f'source = "../../upstream/{here.upstream.name}"' in config
    assert str(tmp_path) not in config


def _fetches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The ``git fetch`` commands the workspace runs from now on (real git runs them)."""
    from portwright.vcs import plumbing

    seen: list[tuple[str, ...]] = []
    real = plumbing.git

    def counted(repo: Path, *args: str, **kwargs: object) -> bytes:
        if "fetch" in args:
            seen.append(args)
        return real(repo, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(plumbing, "git", counted)
    return seen


def test_a_seeded_workspace_copies_the_parents_history_fetched_once(
        pair: Pair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a seeds folder, the parent's history and the upstream's up to the last commit
    are fetched once, each into a repository of its own there; every workspace of them
    copies their packs (the index and the connectivity check of a fetch are not redone)
    and is the same as a fetched one."""
    task = load(tmp_path, task_toml(pair))
    seeds = tmp_path / "seeds"
    fetched = prepare(task, pair.repos, tmp_path / "fetched")
    fetches = _fetches(monkeypatch)
    first = prepare(task, pair.repos, tmp_path / "first", seeds=seeds)
    assert [f[-1] for f in fetches] == [pair.change, pair.parent]
    second = prepare(task, pair.repos, tmp_path / "second", seeds=seeds)
    assert len(fetches) == 2  # the seeds' packs copied, nothing fetched
    assert first.harness == second.harness == fetched.harness
    for ws in (first, second):
        assert git(ws.downstream, "rev-parse", "main", "main^").stdout.split() == [
            ws.harness, pair.parent]
        assert git(ws.downstream, "status", "--porcelain").stdout == ""
        assert git(ws.downstream, "cat-file", "-e", pair.port, check=False).returncode != 0
        assert git(ws.downstream, "remote").stdout == ""
        assert not (ws.downstream / ".git" / "objects" / "info" / "alternates").exists()
        assert git(ws.downstream, "fsck", "--no-dangling").returncode == 0
        packs = sorted((ws.downstream / ".git" / "objects" / "pack").iterdir())
        assert packs
        assert all(p.stat().st_nlink == 1 for p in packs)  # copies, not links
        assert git(ws.upstream, "rev-parse", "HEAD").stdout.strip() == pair.pin
        assert git(ws.upstream, "fsck", "--no-dangling").returncode == 0
        assert all(p.stat().st_nlink == 1
                   for p in (ws.upstream / ".git" / "objects" / "pack").iterdir())
    assert sorted(p.name for p in seeds.iterdir()) == sorted(
        [f"{pair.parent}.git", f"{pair.change}.git"])


def test_a_seed_that_holds_the_port_is_not_used(
        pair: Pair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A seed is only the parent's history: one that holds the port commit (made or changed
    by anything else) is left aside, and the parent fetched from the clone as without
    seeds."""
    task = load(tmp_path, task_toml(pair))
    seeds = tmp_path / "seeds"
    seed = seeds / f"{pair.parent}.git"
    seed.mkdir(parents=True)
    git(seed, "init", "-q", "--bare")
    git(seed, "fetch", "-q", str(pair.downstream.path), f"{pair.port}:refs/heads/port")
    fetches = _fetches(monkeypatch)
    ws = prepare(task, pair.repos, tmp_path / "work", seeds=seeds)
    assert [f[-1] for f in fetches] == [pair.change, pair.parent]  # the parent from the clone
    assert git(ws.downstream, "cat-file", "-e", pair.port, check=False).returncode != 0
    assert git(ws.downstream, "rev-parse", "main^").stdout.strip() == pair.parent
    assert git(ws.downstream, "fsck", "--no-dangling").returncode == 0


def test_a_seed_that_is_a_link_is_not_used(
        pair: Pair, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = load(tmp_path, task_toml(pair))
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    (seeds / f"{pair.parent}.git").symlink_to(pair.downstream.path / ".git")
    fetches = _fetches(monkeypatch)
    ws = prepare(task, pair.repos, tmp_path / "work", seeds=seeds)
    assert [f[-1] for f in fetches] == [pair.change, pair.parent]  # the parent from the clone
    assert git(ws.downstream, "cat-file", "-e", pair.port, check=False).returncode != 0
    assert git(ws.downstream, "rev-parse", "main^").stdout.strip() == pair.parent
