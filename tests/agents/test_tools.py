"""Tools and their confinement: the worktree read-write, upstream read-only at the pin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from portwright.agents.tools import InvalidToolCall, Toolbox, Workspace
from portwright.errors import ConfinementError, ToolError
from tests.agents.helpers import tree_snapshot

ALL = ["read_file", "show_upstream", "list_dir", "search", "git_history", "write_file",
       "edit_file", "run_command"]


def box(pair: dict[str, Any], names: list[str] | None = None) -> Toolbox:
    return Toolbox(pair["workspace"], names or ALL)


def call(toolbox: Toolbox, name: str, **args: Any) -> str:
    return toolbox.call(name, json.dumps(args))


def test_read_file_with_line_numbers_and_ranges(pair: dict[str, Any]) -> None:
    tools = box(pair)
    assert call(tools, "read_file", path="notes.txt") == (
        "notes.txt\n     1\talpha\n     2\tbeta\n     3\tgamma")
    assert call(tools, "read_file", path="notes.txt", start_line=2, end_line=2) == (
        "notes.txt\n     2\tbeta\n[lines 3-3 not shown]")
    with pytest.raises(ToolError, match="past the end"):
        call(tools, "read_file", path="notes.txt", start_line=9)
    with pytest.raises(ToolError, match="no such file"):
        call(tools, "read_file", path="missing.txt")


def test_upstream_is_read_at_the_pin(pair: dict[str, Any]) -> None:
    tools = box(pair)
    shown = call(tools, "show_upstream", path="src/attn.py", start_line=1, end_line=2)
    assert shown.splitlines()[0] == f"upstream src/attn.py@{pair['pin'][:12]}"
    assert "     1\tdef rope_scaling(x):" in shown
    # a file committed after the pin does not exist for the agent
    with pytest.raises(ToolError, match="not a file in upstream"):
        call(tools, "show_upstream", path="src/late.py")
    assert call(tools, "list_dir", path=".", repo="upstream") == "src/\ntests/"
    assert call(tools, "list_dir", path="src", repo="upstream") == "attn.py"
    assert call(tools, "list_dir") == "AGENTS.md\nlib/\nnotes.txt"


def test_search_and_history(pair: dict[str, Any]) -> None:
    tools = box(pair)
    found = call(tools, "search", pattern="rope_scaling", repo="upstream", path="src")
    assert found == "src/attn.py:1:def rope_scaling(x):"
    assert call(tools, "search", pattern="LATE", repo="upstream") == "no matches"
    assert call(tools, "search", pattern="beta") == "notes.txt:2:beta"
    assert call(tools, "search", pattern="(", fixed_strings=True, path="lib").startswith(
        "lib/attn.cpp:1:")
    history = call(tools, "git_history", term="rope_scaling", repo="upstream")
    assert history.endswith("upstream v1")
    assert len(history.splitlines()) == 1
    assert call(tools, "git_history", term="rope_scaling") == "no commits"
    assert "port start" in call(tools, "git_history", term="other\\(", mode="G")


def test_write_and_edit(pair: dict[str, Any]) -> None:
    tools = box(pair)
    root = pair["downstream"].path
    assert call(tools, "write_file", path="lib/new/rope.cpp", content="int a;\nint b;\n") == (
        "wrote 14 bytes to lib/new/rope.cpp")
    assert call(tools, "edit_file", path="lib/new/rope.cpp", search="int b;",
                replace="int c;") == "edited lib/new/rope.cpp at line 2"
    assert (root / "lib/new/rope.cpp").read_text() == "int a;\nint c;\n"
    before = tree_snapshot(root)
    with pytest.raises(ToolError, match="not in the file"):
        call(tools, "edit_file", path="lib/new/rope.cpp", search="int z;", replace="")
    (root / "lib/twice.txt").write_text("x\nx\n")
    before = tree_snapshot(root)
    with pytest.raises(ToolError, match="occurs 2 times"):
        call(tools, "edit_file", path="lib/twice.txt", search="x", replace="y")
    assert tree_snapshot(root) == before


def test_run_command_in_the_sandbox(pair: dict[str, Any]) -> None:
    tools = box(pair)
    out = call(tools, "run_command", command="cat notes.txt | wc -l; echo err >&2; exit 3")
    assert out.startswith("exit code 3")
    assert "--- stdout\n3" in out
    assert "--- stderr\nerr" in out
    slow = call(tools, "run_command", command="sleep 5", timeout=1)
    assert "timeout" in slow
    with pytest.raises(ToolError, match="timeout"):  # a near-zero timeout can freeze Docker
        call(tools, "run_command", command="true", timeout=1e-9)
    no_sandbox = Toolbox(Workspace(worktree=pair["downstream"].path), ["run_command"])
    with pytest.raises(ToolError, match="no sandbox"):
        call(no_sandbox, "run_command", command="true")


def test_command_output_names_worktree_files_relative_to_it(pair: dict[str, Any]) -> None:
    """A traceback or compiler message names files by their host path; the agent reads them
    relative to its worktree, so the same failure reads the same in any run folder."""
    tools = box(pair)
    root = pair["downstream"].path.resolve()
    out = call(tools, "run_command",
               command=f"echo {root}/notes.txt; echo {root}; echo {root}2/x >&2")
    assert "--- stdout\nnotes.txt\n.\n" in out
    assert f"--- stderr\n{root}2/x" in out  # another folder that shares the prefix stays


@pytest.mark.parametrize(("tool", "args"), [
    ("read_file", {"path": "../upstream/src/attn.py"}),
    ("read_file", {"path": "lib/../../upstream/src/attn.py"}),
    ("read_file", {"path": "/etc/passwd"}),
    ("read_file", {"path": "~/.bashrc"}),
    ("read_file", {"path": "escape/passwd"}),
    ("read_file", {"path": ".git/config"}),
    ("list_dir", {"path": ".."}),
    ("list_dir", {"path": "escape"}),
    ("list_dir", {"path": "../", "repo": "upstream"}),
    ("show_upstream", {"path": "../downstream/notes.txt"}),
    ("show_upstream", {"path": "/etc/passwd"}),
    ("search", {"pattern": "root", "path": "../upstream"}),
    ("search", {"pattern": "x", "repo": "upstream", "path": "/etc"}),
    ("git_history", {"term": "x", "path": "../upstream"}),
    ("write_file", {"path": "../upstream/src/attn.py", "content": "pwned"}),
    ("write_file", {"path": "../outside.txt", "content": "pwned"}),
    ("write_file", {"path": "/tmp/outside.txt", "content": "pwned"}),
    ("write_file", {"path": "escape/new.txt", "content": "pwned"}),
    ("write_file", {"path": "up/src/attn.py", "content": "pwned"}),
    ("write_file", {"path": "linkfile", "content": "pwned"}),
    ("write_file", {"path": ".git/hooks/post-commit", "content": "pwned"}),
    ("edit_file", {"path": "up/src/attn.py", "search": "x * 2", "replace": "x"}),
    ("edit_file", {"path": "../upstream/src/attn.py", "search": "x * 2", "replace": "x"}),
])
def test_every_escape_is_refused_and_nothing_changes(pair: dict[str, Any], tool: str,
                                                     args: dict[str, Any]) -> None:
    root, upstream = pair["downstream"].path, pair["upstream"].path
    outside = root.parent / "secret"
    outside.mkdir()
    (outside / "passwd").write_text("root:x:0:0\n")
    (root / "escape").symlink_to(outside)                     # a directory symlink out
    (root / "up").symlink_to(upstream)                        # a symlink into upstream
    (root / "linkfile").symlink_to(upstream / "src/attn.py")  # a file symlink into upstream
    before_down, before_up = tree_snapshot(root), tree_snapshot(upstream)
    before_outside = tree_snapshot(outside)
    with pytest.raises(ConfinementError):
        box(pair).call(tool, json.dumps(args))
    assert tree_snapshot(root) == before_down
    assert tree_snapshot(upstream) == before_up
    assert tree_snapshot(outside) == before_outside
    assert not (root.parent / "outside.txt").exists()
    assert not (root / ".git/hooks/post-commit").exists()


def test_upstream_checkout_inside_the_worktree_is_read_only(make_repo: Any) -> None:
    downstream = make_repo("down")
    downstream.commit("init", {"third_party/up/a.py": "A = 1\n", "main.cpp": "int x;\n"})
    workspace = Workspace(worktree=downstream.path, upstream=downstream.path / "third_party/up",
                          pin=downstream.head())
    tools = Toolbox(workspace, ["write_file", "read_file"])
    with pytest.raises(ConfinementError, match="read-only"):
        call(tools, "write_file", path="third_party/up/a.py", content="A = 2\n")
    assert (downstream.path / "third_party/up/a.py").read_text() == "A = 1\n"
    assert "A = 1" in call(tools, "read_file", path="third_party/up/a.py")


def test_malformed_calls_are_invalid_tool_calls(pair: dict[str, Any]) -> None:
    tools = box(pair, ["read_file"])
    with pytest.raises(InvalidToolCall, match="unknown tool"):
        tools.call("write_file", "{}")
    with pytest.raises(InvalidToolCall, match="not valid JSON"):
        tools.call("read_file", "{path:")
    with pytest.raises(InvalidToolCall, match="JSON object"):
        tools.call("read_file", "[1]")
    with pytest.raises(InvalidToolCall, match="start_line"):
        tools.call("read_file", json.dumps({"path": "a", "start_line": 0}))


def test_output_is_capped(pair: dict[str, Any]) -> None:
    pair["workspace"].output_chars = 100
    (pair["downstream"].path / "big.txt").write_text("line\n" * 500)
    out = call(box(pair), "read_file", path="big.txt")
    assert len(out) < 200
    assert "more characters cut" in out


def test_tool_schemas_come_from_the_argument_models(pair: dict[str, Any]) -> None:
    specs = {s.name: s for s in box(pair).specs()}
    edit = specs["edit_file"].parameters
    assert edit["required"] == ["path", "search", "replace"]
    assert edit["additionalProperties"] is False
    assert "must occur exactly once" in edit["properties"]["search"]["description"]


@pytest.mark.parametrize(("tool", "args"), [
    ("search", {"pattern": "--open-files-in-pager=touch {marker}"}),
    ("search", {"pattern": "--open-files-in-pager=touch {marker}", "repo": "upstream"}),
    ("git_history", {"term": "--output={marker}"}),
    ("git_history", {"term": "--output={marker}", "repo": "upstream", "mode": "G"}),
])
def test_arguments_that_look_like_options_stay_arguments(pair: dict[str, Any], tmp_path: Path,
                                                         tool: str, args: dict[str, Any]
                                                         ) -> None:
    marker = tmp_path / "marker"
    filled = {k: v.format(marker=marker) if isinstance(v, str) else v for k, v in args.items()}
    out = box(pair).call(tool, json.dumps(filled))
    assert out in ("no matches", "no commits")
    assert not marker.exists()


def test_citations_work_as_paths(pair: dict[str, Any]) -> None:
    tools = box(pair)
    pin = pair["pin"]
    assert call(tools, "show_upstream", path="src/attn.py:1-2") == (
        f"upstream src/attn.py@{pin[:12]}\n     1\tdef rope_scaling(x):\n     2\t    return x * 2"
        "\n[lines 3-6 not shown]")
    assert call(tools, "show_upstream", path=f"src/attn.py:5@{pin[:12]}").splitlines()[1] == (
        "     5\tdef other():")
    assert call(tools, "read_file", path="notes.txt:2") == (
        "notes.txt\n     2\tbeta\n[lines 3-3 not shown]")
    with pytest.raises(ConfinementError):
        call(tools, "read_file", path="../upstream/src/attn.py:1-2")


@pytest.mark.parametrize(("pattern", "extra"), [
    ("rope_scaling|other", {}), (r"return x \* 2", {}), (r"\bother\b", {}), ("(def )+r", {}),
    ("DEF", {"ignore_case": True}), ("x * 2", {"fixed_strings": True}),
    ("[[:alpha:]_]+[(]x", {}), ("[[:digit:]]$", {}),
])
def test_search_reads_a_pattern_alike_downstream_and_upstream(pair: dict[str, Any],
                                                              pattern: str,
                                                              extra: dict[str, Any]) -> None:
    tools = box(pair)
    upstream = pair["upstream"].path / "src/attn.py"
    call(tools, "write_file", path="src/attn.py", content=upstream.read_text())
    found = {side: call(tools, "search", pattern=pattern, repo=side, path="src", **extra)
             for side in ("downstream", "upstream")}
    assert found["downstream"] == found["upstream"] != "no matches"


def test_a_bad_pattern_is_a_tool_error(pair: dict[str, Any]) -> None:
    for side in ("downstream", "upstream"):
        with pytest.raises(ToolError):
            call(box(pair), "search", pattern="(", repo=side)


def test_listings_mark_links_and_do_not_follow_them(pair: dict[str, Any]) -> None:
    root = pair["downstream"].path
    (root / "up").symlink_to(pair["upstream"].path)
    assert call(box(pair), "list_dir") == "AGENTS.md\nlib/\nnotes.txt\nup@"
    with pytest.raises(ConfinementError, match="symbolic link"):
        call(box(pair), "list_dir", path="up")


def test_downstream_path_refuses_links_and_loops(pair: dict[str, Any]) -> None:
    root, workspace = pair["downstream"].path, pair["workspace"]
    (root / "key").symlink_to(root.parent / "secret")
    (root / "loop").symlink_to("loop")
    assert workspace.downstream_path("lib/../notes.txt") == root / "notes.txt"
    assert workspace.downstream_path("lib/missing.cpp") == root / "lib/missing.cpp"
    for rel in ("key", "loop", "loop/x", "../x", ".git/config"):
        with pytest.raises(ConfinementError):
            workspace.downstream_path(rel)
