"""Roles: prompt templates, golden renders, context ceilings, result checks, fresh review."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from portwright.agents.budget import RunBudget
from portwright.agents.llm import CompletionRequest, Message
from portwright.agents.loop import SUBMIT, Status
from portwright.agents.offline import ScriptedModel, call
from portwright.agents.prompting import (
    ContextTooLarge,
    Excerpt,
    PromptError,
    build_messages,
    cite,
    render_blocks,
    template_names,
)
from portwright.agents.results import Finding, GapVerdict, ReviewVerdict, Severity
from portwright.agents.roles import (
    ROLES,
    ContextLeak,
    check_fresh,
    enumerator,
    gap_verifier,
    implementer,
    reviewer,
)
from portwright.agents.transcript import Transcript
from portwright.config import ModelBudget
from portwright.eval import loop
from portwright.rules import load_rules
from tests.agents.regenerate_golden import GOLDEN, TRANSCRIPT, rendered, scripted_transcript


def role_budget(role: str) -> Any:
    return RunBudget(ModelBudget()).for_role(role)


def test_every_template_belongs_to_a_role_and_renders() -> None:
    roles = [*ROLES.values(), loop.ROLE]  # the four roles of the cycle, eval's loop agent
    assert template_names() == sorted(r.template for r in roles)
    for role in roles:
        assert role.sample is not None
        messages = role.messages(role.sample())
        assert [m.role for m in messages] == ["system", "user"]
        assert all(m.content and "{{" not in m.content for m in messages)


def test_rendered_prompts_match_the_golden_files() -> None:
    files = rendered()
    assert sorted(files) == sorted(p.name for p in GOLDEN.glob("*.txt"))
    for name, text in files.items():
        assert text == (GOLDEN / name).read_text(encoding="utf-8"), (
            f"{name} changed: run `python -m tests.agents.regenerate_golden` and review the diff")


def test_transcript_matches_the_golden_file() -> None:
    assert scripted_transcript() == (GOLDEN / TRANSCRIPT).read_text(encoding="utf-8"), (
        "the transcript changed: run `python -m tests.agents.regenerate_golden` and review")


def test_templates_are_strict_about_missing_keys() -> None:
    values = gap_verifier.sample().template_values()
    del values["pin"]
    with pytest.raises(PromptError, match="'pin' is undefined"):
        render_blocks("gap_verifier.j2", {**values, "excerpts": [], "omitted": []})
    with pytest.raises(PromptError, match=r"no prompt template nope\.j2"):
        render_blocks("nope.j2", {})


def test_messages_are_static_first_for_prefix_caching() -> None:
    a = reviewer.sample()
    b = a.model_copy(update={"evidence": "green: other run", "excerpts": []})
    first, second = reviewer.ROLE.messages(a), reviewer.ROLE.messages(b)
    assert first[0] == second[0]                     # the static system message is identical
    assert first[1] != second[1]
    assert "Follow upstream semantics exactly." in (first[0].content or "")
    assert "green: other run" not in (second[0].content or "")
    assert "green: other run" in (second[1].content or "")


def test_context_is_cut_to_the_ceiling(make_repo: Any) -> None:
    upstream = make_repo("up")
    sha = upstream.commit("big", {"big.py": "".join(f"x{i} = {i}\n" for i in range(400))})
    excerpt = cite(upstream.path, sha, "big.py", 10, 12, why="the three lines")
    assert excerpt.ref == f"upstream big.py:10-12@{sha[:12]}"
    assert excerpt.text == "    10\tx9 = 9\n    11\tx10 = 10\n    12\tx11 = 11"
    huge = cite(upstream.path, sha, "big.py", 1, 400)
    context = gap_verifier.sample().model_copy(update={"excerpts": [excerpt, huge]})
    messages = gap_verifier.ROLE.messages(context, ceiling=1200)
    task = messages[1].content or ""
    assert "x10 = 10" in task
    assert "x399 = 399" not in task
    assert f"Left out for the context ceiling (read them with the tools if you need them): " \
           f"upstream big.py:1-400@{sha[:12]}" in task
    with pytest.raises(ContextTooLarge, match="ceiling of 100"):
        gap_verifier.ROLE.messages(context, ceiling=100)


def test_agents_are_told_the_downstream_rules(pair: dict[str, Any]) -> None:
    downstream = pair["downstream"]
    downstream.commit("nested rules", {"lib/AGENTS.md": "# lib\n\nNo exceptions in lib/.\n"})
    rules = load_rules(downstream.path)
    context = reviewer.sample().model_copy(
        update={"rules_prose": rules.prose_for(["lib/attn.cpp"])})
    system = reviewer.ROLE.messages(context)[0].content or ""
    assert "Keep the port faithful." in system
    assert "No exceptions in lib/." in system


def verdict(status: str = "missing", **extra: Any) -> dict[str, Any]:
    return {"status": status, "reasoning": "upstream defines it; the port does not",
            "evidence": [{"kind": "upstream", "ref": "src/attn.py:1-2",
                          "detail": "def rope_scaling"}], **extra}


def test_gap_verifier_runs_to_a_checked_verdict(pair: dict[str, Any]) -> None:
    model = ScriptedModel.from_replies([
        call("search", {"pattern": "rope_scaling", "repo": "upstream"}),
        call(SUBMIT, verdict("landed")),                  # refused: no downstream evidence
        call(SUBMIT, verdict("partial")),                 # refused by the model: no parts
        call(SUBMIT, verdict("missing")),
    ])
    outcome = gap_verifier.ROLE.run(gap_verifier.sample(), client=model,
                                    workspace=pair["workspace"],
                                    budget=role_budget("gap_verifier"))
    assert outcome.status is Status.DONE
    assert outcome.unwrap().status == "missing"
    assert outcome.invalid_replies == 2
    answers = [m.content for m in outcome.messages if m.role == "tool"]
    assert answers[0].splitlines()[0] == "src/attn.py:1:def rope_scaling(x):"  # type: ignore[union-attr]
    assert "needs downstream evidence" in (answers[1] or "")
    assert "must list missing_parts" in (answers[2] or "")
    sent = model.requests[0]
    assert [t.name for t in sent.tools] == [*gap_verifier.ROLE.tools, SUBMIT]


def landed(*evidence: tuple[str, str]) -> GapVerdict:
    return GapVerdict.model_validate({
        "status": "landed", "reasoning": "the port carries it",
        "evidence": [{"kind": kind, "ref": ref, "detail": "seen"} for kind, ref in evidence]})


def test_gap_verifier_refs_are_re_established_by_the_framework(pair: dict[str, Any]) -> None:
    downstream = pair["downstream"]
    ported = downstream.commit("port rope scaling", {
        "lib/rope.cpp": "// ported from src/attn.py\ndouble rope_scaling(double x) {\n"
                        "    return 2 * x;\n}\n"})
    downstream.commit("unrelated", {"notes.txt": "delta\n"})
    unrelated = downstream.head()
    check = gap_verifier.ROLE.check
    assert check is not None
    context = gap_verifier.sample()  # symbols: rope_scaling
    workspace = pair["workspace"]

    assert check(context, landed(("downstream", "lib/rope.cpp:2")), workspace) == []
    assert check(context, landed(("downstream", "lib/rope.cpp:1-3")), workspace) == []
    assert check(context, landed(("history", ported[:12])), workspace) == []
    assert check(context, landed(("history", f"{unrelated[:12]}, {ported}")), workspace) == []

    def problems(*evidence: tuple[str, str]) -> str:
        return "\n".join(check(context, landed(*evidence), workspace))

    assert "needs downstream evidence" in problems(("downstream", "7"))
    assert "not path:line" in problems(("downstream", "7"))
    assert "do not name the symbol" in problems(("downstream", "lib/rope.cpp:3"))
    assert "the file has 4 lines" in problems(("downstream", "lib/rope.cpp:9"))
    assert "no such file" in problems(("downstream", "lib/gone.cpp:1"))
    assert "leaves the worktree" in problems(("downstream", "../upstream/src/attn.py:1"))
    assert "no commit there (downstream or upstream)" in problems(("history", unrelated))
    upstream_change = pair["upstream"].git("log", "--format=%H", "-1", "--", "src/attn.py")
    assert "needs downstream evidence" in problems(("history", upstream_change))
    assert "names no commit sha" in problems(("history", "last week"))
    assert check(context, GapVerdict.model_validate(verdict("missing")), workspace) == []


def test_enumerator_must_classify_every_candidate(pair: dict[str, Any]) -> None:
    context = enumerator.sample()
    items = [{"item": c, "classification": "ported"} for c in context.candidates]
    model = ScriptedModel.from_replies([
        call(SUBMIT, {"slice": "linear", "items": items[:-1]}),
        call(SUBMIT, {"slice": "linear", "items": [*items[:-1], {
            "item": items[-1]["item"], "classification": "deferred"}]}),
        call(SUBMIT, {"slice": "linear", "items": [*items, {"item": "made up",
                                                            "classification": "ported"}]}),
        call(SUBMIT, {"slice": "linear", "items": [*items[:-1], {
            "item": items[-1]["item"], "classification": "deferred",
            "reason": "needs the test fixtures ported first"}]}),
    ])
    outcome = enumerator.ROLE.run(context, client=model, workspace=pair["workspace"],
                                  budget=role_budget("enumerator"))
    assert outcome.ok
    answers = [m.content or "" for m in outcome.messages if m.role == "tool"]
    assert "candidate not classified: test: tests/test_attn.py::test_rope" in answers[0]
    assert "needs a reason" in answers[1]
    assert "not a candidate: made up" in answers[2]
    assert outcome.unwrap().items[-1].classification == "deferred"


def report(mode: str, files: list[str]) -> dict[str, Any]:
    return {"mode": mode, "summary": "ported rope scaling", "files": files}


def test_implementer_modes_are_confined(pair: dict[str, Any]) -> None:
    root = pair["downstream"].path
    model = ScriptedModel.from_replies([
        call("write_file", {"path": "lib/rope.cpp", "content": "// impl\n"}),
        call("write_file", {"path": "tests/test_rope.py", "content": "def test_x(): assert 0\n"}),
        call(SUBMIT, report("tests_only", ["tests/test_rope.py"])),
    ])
    outcome = implementer.ROLE.run(implementer.sample("tests_only"), client=model,
                                   workspace=pair["workspace"],
                                   budget=role_budget("implementer"))
    assert outcome.ok
    answers = [m.content or "" for m in outcome.messages if m.role == "tool"]
    assert "may not be written in this step" in answers[0]
    assert not (root / "lib/rope.cpp").exists()
    assert (root / "tests/test_rope.py").exists()

    model = ScriptedModel.from_replies([
        call("edit_file", {"path": "tests/test_rope.py", "search": "assert 0",
                           "replace": "assert 1"}),
        call("write_file", {"path": "lib/rope.cpp", "content": "// impl\n"}),
        call(SUBMIT, report("tests_only", ["lib/rope.cpp"])),
        call(SUBMIT, report("implementation_only", ["lib/rope.cpp"])),
    ])
    outcome = implementer.ROLE.run(implementer.sample("implementation_only"), client=model,
                                   workspace=pair["workspace"],
                                   budget=role_budget("implementer"))
    assert outcome.ok
    answers = [m.content or "" for m in outcome.messages if m.role == "tool"]
    assert "the ported tests are fixed now" in answers[0]
    assert "this turn is implementation_only" in answers[2]
    assert (root / "tests/test_rope.py").read_text() == "def test_x(): assert 0\n"
    assert (root / "lib/rope.cpp").read_text() == "// impl\n"


def test_reviewer_starts_from_a_fresh_context(pair: dict[str, Any]) -> None:
    downstream = pair["downstream"]
    secret_reasoning = "I will quietly skip the dynamic mode because it is hard to port"
    impl_model = ScriptedModel.from_replies([
        call("read_file", {"path": "lib/attn.cpp"}, content=secret_reasoning),
        call("edit_file", {"path": "lib/attn.cpp", "search": "int other() { return 0; }",
                           "replace": "int other() { return 0; }\n"
                                      "double rope_scaling(double x) { return x * 2; }"}),
        call(SUBMIT, report("implementation_only", ["lib/attn.cpp"])),
    ])
    impl = implementer.ROLE.run(implementer.sample(), client=impl_model,
                                workspace=pair["workspace"], budget=role_budget("implementer"))
    assert impl.ok
    # the framework builds the reviewer's context from git, the spec, evidence and rules
    diff = subprocess.run(["git", "diff"], cwd=downstream.path, capture_output=True,
                          text=True, check=True).stdout
    context = reviewer.ReviewerContext(
        rules_prose=load_rules(downstream.path).prose_for(["lib/attn.cpp"]),
        row="| rope scaling | in-progress | specs/rope.md |", spec="## Slice\nlinear",
        diff=diff, evidence="green: tests passed")
    seen: list[CompletionRequest] = []

    def review_script(request: CompletionRequest) -> Message:
        seen.append(request)
        return call(SUBMIT, {"decision": "changes_requested", "summary": "dynamic mode missing",
                             "findings": [{"path": "lib/attn.cpp", "line": 2,
                                           "severity": "major", "message": "port dynamic"}]})

    review = reviewer.ROLE.run(context, client=ScriptedModel(review_script),
                               workspace=pair["workspace"], budget=role_budget("reviewer"),
                               forbidden=impl.messages)
    assert review.ok
    assert review.unwrap().decision == "changes_requested"
    implementer_texts = [m.content for m in impl.messages
                         if m.role in ("assistant", "tool") and m.content]
    implementer_texts += [c.arguments for m in impl.messages for c in m.tool_calls]
    for request in seen:
        for message in request.messages:
            for text in implementer_texts:
                assert text not in (message.content or "")
    assert "rope_scaling(double x)" in (seen[0].messages[1].content or "")

    # the check can fail: smuggling the implementer's words into the evidence is caught
    leaked = context.model_copy(update={"evidence": f"notes: {secret_reasoning}"})
    with pytest.raises(ContextLeak, match="quotes an assistant message of another role"):
        reviewer.ROLE.run(leaked, client=ScriptedModel(review_script),
                          workspace=pair["workspace"], budget=role_budget("reviewer"),
                          forbidden=impl.messages)
    assert len(seen) == 1


def test_check_fresh_tells_shared_context_from_a_leak() -> None:
    spec = "## Slice\nport linear rope scaling with its default factor of 1.0"
    theirs = [
        Message(role="system", content=f"You are the implementer.\n{spec}"),
        Message(role="assistant", content=spec),                      # quotes its own spec
        Message(role="assistant", content="done"),                    # too short to tell
        Message(role="tool", content="exit code 1\n--- stdout\nFAILED tests/test_rope.py"
                                     "::test_linear - assert 2 == 4"),
        Message(role="assistant", content="The dynamic mode is hard; I left it out quietly."),
    ]
    mine = [Message(role="system", content=f"You are the reviewer.\n{spec}"),
            Message(role="user", content="evidence: FAILED tests/test_rope.py::test_linear "
                                         "- assert 2 == 4\ndone")]
    check_fresh(mine, theirs, role="reviewer")  # spec, tool observations, short words: fine
    with pytest.raises(ContextLeak, match="quotes an assistant message"):
        check_fresh([*mine, Message(role="user", content="note: The dynamic mode is hard; "
                                                         "I left it out quietly.")],
                    theirs, role="reviewer")
    with pytest.raises(ContextLeak, match="holds an assistant message"):
        check_fresh([*mine, theirs[2]], theirs, role="reviewer")


def test_review_findings_must_be_on_changed_files(pair: dict[str, Any]) -> None:
    model = ScriptedModel.from_replies([
        call(SUBMIT, {"decision": "changes_requested", "summary": "s", "findings": [
            {"path": "notes.txt", "line": 1, "severity": "blocker", "message": "m"}]}),
        call(SUBMIT, {"decision": "approve", "summary": "looks faithful", "findings": [
            {"path": "lib/attn.cpp", "line": 2, "severity": "nit", "message": "naming"}]}),
    ])
    transcript = Transcript()
    outcome = reviewer.ROLE.run(reviewer.sample(), client=model, workspace=pair["workspace"],
                                budget=role_budget("reviewer"), transcript=transcript)
    assert outcome.ok
    assert outcome.invalid_replies == 1
    invalid = [e for e in transcript.events if e["event"] == "invalid"]
    assert "notes.txt, which the diff does not change" in invalid[0]["detail"]


def test_build_messages_puts_excerpts_in_the_task() -> None:
    excerpt = Excerpt(ref="upstream a.py:1-1@x", text="     1\tx = 1", why="why")
    system, task = build_messages("gap_verifier.j2", gap_verifier.sample().template_values(),
                                  ceiling=10_000, excerpts=[excerpt])
    assert "upstream a.py:1-1@x (why):\n     1\tx = 1" in (task.content or "")
    assert "x = 1" not in (system.content or "")


def test_cite_around_merges_overlapping_hits(make_repo: Any) -> None:
    from portwright.agents.prompting import cite_around

    upstream = make_repo("up2")
    sha = upstream.commit("f", {"a.py": "".join(f"l{i}\n" for i in range(1, 101)),
                                "b.py": "b\n"})
    excerpts = cite_around(upstream.path, sha, [("a.py", 80), ("a.py", 15),
                                                           ("b.py", 1), ("a.py", 10)],
                           before=2, after=5)
    assert [e.ref.split("@")[0] for e in excerpts] == [
        "upstream a.py:8-20", "upstream a.py:78-85", "upstream b.py:1-1"]


def test_reviewer_context_from_the_change_in_git(pair: dict[str, Any]) -> None:
    downstream = pair["downstream"]
    base = downstream.head()
    downstream.commit("lib rules", {"lib/AGENTS.md": "# lib\n\nNo exceptions in lib/.\n",
                                    "docs/AGENTS.md": "# docs\n\nShort sentences.\n"})
    base = downstream.head()
    root = downstream.path
    (root / "lib/attn.cpp").write_text("int other() { return 1; }\n")
    (root / "lib/rope.cpp").write_text("double rope(double x) { return 2 * x; }\n")
    index_before = (root / ".git/index").read_bytes()
    context = reviewer.context_from_change(root, base, rules=load_rules(root), row="| r |",
                                           spec="## Slice\nrope", evidence="green",
                                           tests=["tests/**"])
    assert "-int other() { return 0; }\n+int other() { return 1; }" in context.diff
    assert "+++ b/lib/rope.cpp\n@@ -0,0 +1 @@\n+double rope(double x)" in context.diff
    assert "No exceptions in lib/." in context.rules_prose
    assert "Short sentences." not in context.rules_prose
    assert (root / ".git/index").read_bytes() == index_before
    assert reviewer.ROLE.check is not None
    verdict = ReviewVerdict(decision="changes_requested", summary="s", findings=[
        Finding(path="lib/rope.cpp", line=1, severity=Severity.MAJOR, message="m")])
    assert reviewer.ROLE.check(context, verdict, pair["workspace"]) == []


def test_reviewer_is_given_the_tamper_flags_of_the_change(pair: dict[str, Any]) -> None:
    downstream = pair["downstream"]
    base = downstream.head()
    root = downstream.path
    downstream.commit("tests", {"tests/test_rope.py": "import pytest\nimport os\nos._exit(0)\n"})
    (root / "lib/attn.cpp").write_text("#include <cstdlib>\n"
                                       "int other() { std::quick_exit(0); return 0; }\n")
    (root / "lib/report.py").write_text('print("test_rope PASSED")\n')   # untracked
    (root / ".gitattributes").write_text("lib/** -diff\n")   # hides lib/ from a plain diff
    (root / "lib/weights.bin").write_bytes(b"\0os._exit(0)\n" * 1000)  # data: never read
    context = reviewer.context_from_change(root, base, rules=load_rules(root), row="| r |",
                                           spec="## Slice\nrope", evidence="green",
                                           tests=["tests/**"])
    assert [f.render() for f in context.tamper_flags] == [
        "lib/attn.cpp:2: hard-exit: int other() { std::quick_exit(0); return 0; }",
        'lib/report.py:1: forged-report: print("test_rope PASSED")']
    only, paths = reviewer.change_since(root, base, text=True,
                                        paths=["lib/attn.cpp", "lib/report.py"])
    assert paths == ["lib/attn.cpp", "lib/report.py"]
    assert "weights.bin" not in only
    task = reviewer.ROLE.messages(context)[1].content or ""
    assert ("Tamper flags the framework raised on the change (outside the tests):\n"
            "- lib/attn.cpp:2: hard-exit: int other() { std::quick_exit(0); return 0; }\n"
            '- lib/report.py:1: forged-report: print("test_rope PASSED")\n') in task
    system = reviewer.ROLE.messages(context)[0].content or ""
    assert "tamper flag" in system


def test_reviewer_gets_a_generated_file_as_a_line_not_its_diff(pair: dict[str, Any]) -> None:
    """A file a tool wrote (a re2c scanner, a parser table) is summarised, as code review
    sites collapse them: its diff can be larger than the reviewer's whole context. Whether a
    file is generated is read from its version at the base, which the change cannot alter;
    the tamper scan still reads all of it."""
    downstream = pair["downstream"]
    header = "/* Generated by re2c 1.3 */\n"
    downstream.commit("scanner", {
        "src/scanners.c": header + "".join(f"int s{i} = {i};\n" for i in range(400)),
        "src/scanners.re": "blocktag = 'div' | 'p';\n",
        "lib/plain.c": "int plain = 0;\n"})
    base = downstream.head()
    root = downstream.path
    (root / "src/scanners.c").write_text(
        header + "".join(f"int s{i} = {i + 1};\n" for i in range(400)) + "exit(0);\n")
    (root / "src/scanners.re").write_text("blocktag = 'div' | 'p' | 'meta';\n")
    (root / "lib/plain.c").write_text("/* Generated by nothing: a header added now */\n"
                                      "int plain = 1;\n")
    context = reviewer.context_from_change(root, base, rules=load_rules(root), row="| r |",
                                           spec="## Slice\nmeta", evidence="green",
                                           tests=["tests/**"])
    assert "+++ b/src/scanners.re" in context.diff
    assert "+++ b/lib/plain.c" in context.diff  # generated only by its new header: shown
    assert "scanners.c" not in context.diff
    assert [g.render() for g in context.generated] == [
        "src/scanners.c: +401 -400 lines (its first lines at the base: "
        "/* Generated by re2c 1.3 */)"]
    assert [f.render() for f in context.tamper_flags] == ["src/scanners.c:402: hard-exit: exit(0);"]
    task = reviewer.ROLE.messages(context)[1].content or ""
    assert "- src/scanners.c: +401 -400 lines" in task
    verdict = ReviewVerdict(decision="changes_requested", summary="s", findings=[
        Finding(path="src/scanners.c", line=2, severity=Severity.MAJOR, message="m")])
    assert reviewer.ROLE.check is not None
    assert reviewer.ROLE.check(context, verdict, pair["workspace"]) == []


def test_reviewer_sees_no_flags_as_none() -> None:
    task = reviewer.ROLE.messages(reviewer.sample())[1].content or ""
    assert "Tamper flags the framework raised on the change (outside the tests):\n- none\n" in (
        task)
