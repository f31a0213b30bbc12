"""Repositories in states a command cannot work in (or can, and must)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.bad_input.harness import Case
from tests.bad_input.world import World

SPEC = ("gates", "run", "--phase", "spec")


def _not_git(w: World) -> None:
    shutil.rmtree(w.repo / ".git")


def _no_commits(w: World) -> None:
    shutil.rmtree(w.repo / ".git")
    subprocess.run(["git", "init", "-q", "-b", "main", str(w.repo)], check=True)


def _clone(w: World, name: str, *args: str) -> None:
    subprocess.run(["git", "clone", "-q", *args, f"file://{w.repo}", str(w.root / name)],
                   check=True, capture_output=True)


def _bare(w: World) -> None:
    _clone(w, "down.git", "--bare")


def _shallow(w: World) -> None:
    w.git("commit", "-q", "--allow-empty", "-m", "second")
    w.git("commit", "-q", "--allow-empty", "-m", "third")
    _clone(w, "shallow", "--depth", "1")


def _detached(w: World) -> None:
    w.git("commit", "-q", "--allow-empty", "-m", "second")
    w.git("checkout", "-q", "--detach", "HEAD~1")


def _linked_worktree(w: World) -> None:
    w.git("worktree", "add", "-q", str(w.root / "linked"), "-b", "linked")


def _untracked(w: World) -> None:
    w.write("specs/draft.md", "# a draft nobody committed\n")


def _dirty_config(w: World) -> None:
    w.write("portwright.toml", w.read("portwright.toml") + "\n[sandbox]\nmemory = \"banana\"\n")


def _evidence_of_the_commit(w: World, home: Path) -> str | None:
    """The gates judged the commit's clean export: no record is dirty, whatever the
    checkout holds beside the commit."""
    records = list((home / "state").glob("projects/*/runs/*/evidence/*.json"))
    if not records:
        return "no evidence recorded"
    import json

    flags = {json.loads(p.read_text()).get("dirty") for p in records}
    return None if flags == {False} else f"evidence says dirty: {flags}"


def _plain_copy(w: World) -> None:
    shutil.copytree(w.repo, w.root / "plain", ignore=shutil.ignore_patterns(".git"))


CASES = [
    Case("repo-not-git", SPEC, _not_git, says=("not a git repository",), commit=False),
    Case("repo-not-git-gap", ("gap",), _not_git, says=("not a git repository",), commit=False),
    Case("repo-not-git-trace", ("trace",), _not_git,
         says=("not a git repository", "--repo"), commit=False),
    Case("repo-plain-folder-doctor", ("doctor",), _plain_copy, cwd_repo="plain",
         says=("not a git repository",)),
    Case("repo-no-commits", SPEC, _no_commits, says=("no commits",), commit=False),
    Case("repo-no-commits-gap", ("gap",), _no_commits, says=("no commits",), commit=False),
    Case("repo-no-commits-trace", ("trace",), _no_commits, says=("no commits",), commit=False),
    Case("repo-bare", SPEC, _bare, cwd_repo="down.git", says=("bare",)),
    Case("repo-bare-rows", ("rows",), _bare, cwd_repo="down.git", says=("bare",)),
    Case("repo-shallow-gap", ("gap",), _shallow, cwd_repo="shallow",
         says=("shallow", "unshallow")),
    Case("repo-missing", ("rows",), cwd_repo="nowhere", says=("nowhere",)),
    Case("repo-is-a-file", ("rows",), lambda w: (w.root / "file").write_text("x"),
         cwd_repo="file", says=("file",)),
    Case("repo-subfolder", ("rows",), cwd_repo="downstream/src", says=("portwright.toml",)),
    Case("repo-detached-ok", SPEC, _detached, expect=0, runs_left=True, commit=False),
    Case("repo-linked-worktree-ok", SPEC, _linked_worktree, cwd_repo="linked", expect=0,
         runs_left=True),
    Case("repo-untracked-is-not-judged", SPEC, _untracked, commit=False, expect=0,
         runs_left=True, after=_evidence_of_the_commit),
    Case("repo-dirty-config-committed-wins", SPEC, _dirty_config, commit=False, expect=0,
         runs_left=True, says=("portwright.toml",)),
    Case("repo-dirty-config-read-commands", ("sandbox", "info"), _dirty_config, commit=False,
         expect=0, says=("portwright.toml",)),
    Case("repo-dirty-rules-check", ("rules", "check"),
         lambda w: w.write("AGENTS.md", "```toml portwright\n[[gate\n```\n"), commit=False,
         says=("AGENTS.md:2",)),
]


# the commands of runs: an unknown run, a run id that is a path
RUNS = [
    Case("runs-list-ok", ("runs",), expect=0),
    Case("runs-status-unknown", ("status", "nope"), says=("nope",)),
    Case("runs-status-path", ("status", "../x"), says=("../x",)),
    Case("runs-resume-unknown", ("resume", "nope"), says=("nope",)),
    Case("runs-approve-unknown", ("approve", "nope"), says=("nope",)),
    Case("runs-reject-unknown", ("reject", "nope", "-m", "no"), says=("nope",)),
    Case("runs-log-unknown", ("log", "nope"), says=("nope",)),
    Case("runs-report-unknown", ("report", "nope"), says=("nope",)),
    Case("runs-report-html-unknown", ("report", "nope", "--html"), says=("nope",)),
    Case("serve-off-loopback-without-token", ("serve", "--host", "0.0.0.0"),
         says=("--host", "--token")),
    Case("serve-short-token", ("serve", "--token", "short"), says=("--token", "16")),
    Case("serve-token-file-missing", ("serve", "--token-file", "/nonexistent/token"),
         says=("/nonexistent/token",)),
    Case("serve-token-twice", ("serve", "--token", "t" * 20, "--token-file", "t"),
         says=("--token",)),
    Case("serve-port-out-of-range", ("serve", "--port", "99999"), says=("--port", "65535")),
    Case("serve-host-not-here", ("serve", "--host", "203.0.113.9", "--token", "t" * 20),
         says=("--host", "203.0.113.9")),
    Case("runs-pr-unknown", ("pr", "nope"), says=("nope",)),
    Case("runs-run-unknown-row", ("run", "no-such-row"),
         says=("no-such-row", "docs/parity/models.md", "portwright rows")),
]
