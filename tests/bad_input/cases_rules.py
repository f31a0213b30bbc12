"""Bad input in AGENTS.md and its gates block."""

from __future__ import annotations

from tests.bad_input.harness import Case, Setup
from tests.bad_input.world import World

CHECK = ("rules", "check")
PIN = ("gates", "run", "--phase", "pin")


def gate(body: str) -> Setup:
    """The gates block: the anchors check, then one gate ``name = "g"`` with ``body``
    (its first key on line 12 of AGENTS.md)."""
    return lambda w: w.gate(f'name = "g"\n{body}')


def block(text: str) -> Setup:
    return lambda w: w.gates(text)


def _link_to_unrelated(w: World) -> None:
    w.write("NOTES.md", "# Notes\n\nNothing about gates here.\n")
    w.symlink("AGENTS.md", "NOTES.md")


def _nested(text: str | bytes) -> Setup:
    return lambda w: w.write("src/AGENTS.md", text)


def _nested_link(w: World) -> None:
    w.write("NOTES.md", "# Notes\n")
    w.symlink("src/AGENTS.md", "../NOTES.md")


def _agents_dir(w: World) -> None:
    w.remove("AGENTS.md")
    (w.repo / "AGENTS.md").mkdir()
    (w.repo / "AGENTS.md" / "README").write_text("x\n")


G = "AGENTS.md:12"
G13 = "AGENTS.md:13"
RUN = 'run = "true"\nphases = ["full"]\n'

CASES = [
    Case("rules-missing", CHECK, lambda w: w.remove("AGENTS.md"), says=("AGENTS.md",)),
    Case("rules-missing-gates-run", PIN, lambda w: w.remove("AGENTS.md"), says=("AGENTS.md",)),
    Case("rules-link-unrelated", CHECK, _link_to_unrelated, says=("AGENTS.md", "link")),
    Case("rules-link-unrelated-run", PIN, _link_to_unrelated, says=("AGENTS.md", "link")),
    Case("rules-directory", CHECK, _agents_dir, says=("AGENTS.md",)),
    Case("rules-not-utf8", CHECK, lambda w: w.write("AGENTS.md", b"# R\xff\n"),
         says=("AGENTS.md", "utf-8")),
    Case("rules-two-blocks", CHECK, lambda w: w.write("AGENTS.md", w.read("AGENTS.md") + (
        "\n```toml portwright\n[[gate]]\n```\n")), says=("AGENTS.md:",)),
    Case("rules-block-not-toml", CHECK, lambda w: w.write(
        "AGENTS.md", "# R\n\n```yaml portwright\ngate: []\n```\n"), says=("AGENTS.md:3",)),
    Case("rules-block-syntax", CHECK, gate("run = true false"), says=(G13,)),
    Case("rules-empty-block", CHECK, block(""), says=("AGENTS.md", "gate")),
    Case("rules-empty-block-pin", PIN, block(""), says=("AGENTS.md", "pin")),
    Case("rules-prose-only-pin", PIN, lambda w: w.write("AGENTS.md", "# Rules\n\nBe nice.\n"),
         says=("AGENTS.md", "pin")),
    Case("rules-no-pin-gate", PIN, block('[[gate]]\nname = "a"\ncheck = "anchors"\n'
                                          'phases = ["spec"]\n'), says=("AGENTS.md", "pin")),
    Case("rules-gate-no-name", CHECK, lambda w: w.gate(RUN), says=("AGENTS.md:11", "name")),
    Case("rules-gate-bad-name", CHECK, lambda w: w.gate('name = "Unit Tests"\n' + RUN),
         says=(G, "name")),
    Case("rules-gate-duplicate", CHECK, lambda w: w.gate('name = "anchors"\n' + RUN),
         says=("AGENTS.md:11", "anchors")),
    Case("rules-no-phases", CHECK, gate('run = "true"'), says=("AGENTS.md:11", "phases")),
    Case("rules-empty-phases", CHECK, gate('run = "true"\nphases = []'),
         says=("AGENTS.md:14", "phases")),
    Case("rules-unknown-phase", CHECK, gate('run = "true"\nphases = ["deploy"]'),
         says=("AGENTS.md:14", "phases")),
    Case("rules-run-and-check", CHECK, gate('run = "true"\ncheck = "anchors"\nphases = ["full"]'),
         says=("AGENTS.md:11", "run")),
    Case("rules-neither-run-nor-check", CHECK, gate('phases = ["full"]'),
         says=("AGENTS.md:11", "run")),
    Case("rules-run-empty", CHECK, gate('run = ""\nphases = ["pin"]'), says=(G13, "run")),
    Case("rules-run-blank", CHECK, gate('run = "   "\nphases = ["pin"]'), says=(G13, "run")),
    Case("rules-run-empty-pin", PIN, gate('run = ""\nphases = ["pin"]'), says=(G13, "run")),
    Case("rules-timeout-inf", CHECK, gate(RUN + "timeout = inf"), says=("AGENTS.md:15",
                                                                       "timeout")),
    Case("rules-timeout-nan", CHECK, gate(RUN + "timeout = nan"), says=("AGENTS.md:15",
                                                                       "timeout")),
    Case("rules-timeout-huge", CHECK, gate(RUN + "timeout = 1e300"), says=("AGENTS.md:15",
                                                                          "timeout")),
    Case("rules-timeout-zero", CHECK, gate(RUN + "timeout = 0"), says=("AGENTS.md:15", "timeout")),
    Case("rules-timeout-tiny", CHECK, gate(RUN + "timeout = 1e-9"), says=("AGENTS.md:15",
                                                                         "timeout")),
    Case("rules-timeout-negative", CHECK, gate(RUN + "timeout = -1"), says=("AGENTS.md:15",
                                                                           "timeout")),
    Case("rules-paths-empty-glob", CHECK, gate(RUN + 'paths = [""]'), says=("AGENTS.md:15",
                                                                           "paths")),
    Case("rules-paths-absolute", CHECK, gate(RUN + 'paths = ["/src/**"]'),
         says=("AGENTS.md:15", "paths")),
    Case("rules-paths-parent", CHECK, gate(RUN + 'paths = ["../src/**"]'),
         says=("AGENTS.md:15", "paths")),
    Case("rules-paths-brackets", CHECK, gate(RUN + 'paths = ["src/[ab].py"]'),
         says=("AGENTS.md:15", "paths")),
    Case("rules-paths-backslash", CHECK, gate(RUN + 'paths = ["src\\\\*.py"]'),
         says=("AGENTS.md:15", "paths")),
    Case("rules-paths-glued-stars", CHECK, gate(RUN + 'paths = ["src/**.py"]'),
         says=("AGENTS.md:15", "paths")),
    Case("rules-paths-not-list", CHECK, gate(RUN + 'paths = "src/**"'),
         says=("AGENTS.md:15", "paths")),
    Case("rules-unknown-check", CHECK, gate('check = "lint"\nphases = ["full"]'),
         says=(G13, "check")),
    Case("rules-unknown-key", CHECK, gate(RUN + 'command = "make"'),
         says=("AGENTS.md:15", "command")),
    Case("rules-junit-absolute", CHECK, gate(RUN + 'junit = "/tmp/junit.xml"'),
         says=("AGENTS.md:15", "junit")),
    Case("rules-junit-parent", CHECK, gate(RUN + 'junit = "../junit.xml"'),
         says=("AGENTS.md:15", "junit")),
    Case("rules-options-nested", CHECK, gate('check = "anchors"\nphases = ["spec"]\n'
                                             "options = {a = {b = 1}}"),
         says=("AGENTS.md:15", "options")),
    Case("rules-top-key-after-gate", CHECK, gate(RUN + 'additive = ["x/**"]'),
         says=("AGENTS.md:15", "additive")),
    Case("rules-runtime-bad-regex", CHECK, block(
        '[[gate]]\nname = "a"\ncheck = "anchors"\nphases = ["spec"]\n\n'
        '[[runtime]]\nname = "kv_cache_dtype"\npattern = "kv=(?P<value>[a-z"\n'),
        says=("AGENTS.md:13", "runtime")),
    Case("rules-runtime-no-group", CHECK, block(
        '[[gate]]\nname = "a"\ncheck = "anchors"\nphases = ["spec"]\n\n'
        '[[runtime]]\nname = "kv_cache_dtype"\npattern = "kv=([a-z]+)"\n'),
        says=("AGENTS.md:", "value")),
    Case("rules-seam-bad-pattern", CHECK, block(
        '[[gate]]\nname = "a"\ncheck = "anchors"\nphases = ["spec"]\n\n'
        '[[seam]]\nname = "attn"\npattern = "attention("\nthrough = "backend"\n'),
        says=("AGENTS.md:13", "seam")),
    Case("rules-seam-bad-through", CHECK, block(
        '[[gate]]\nname = "a"\ncheck = "anchors"\nphases = ["spec"]\n\n'
        '[[seam]]\nname = "attn"\npattern = "attention"\nthrough = "*backend"\n'),
        says=("AGENTS.md:14", "seam")),
    Case("rules-spec-questions-string", CHECK, block(
        '[[gate]]\nname = "a"\ncheck = "anchors"\nphases = ["spec"]\n\n'
        '[spec]\nquestions = "kv_cache_dtype"\n'), says=("AGENTS.md:12", "spec.questions")),
    Case("rules-nested-bad", CHECK, _nested("# Sub\n\n```toml portwright\n[[gate]\n```\n"),
         says=("src/AGENTS.md:4",)),
    Case("rules-nested-not-utf8", CHECK, _nested(b"\xfe\xff"), says=("src/AGENTS.md", "utf-8")),
    Case("rules-nested-link", CHECK, _nested_link, says=("src/AGENTS.md", "link")),
    Case("rules-only-unknown", ("gates", "run", "--phase", "spec", "--only", "nope"),
         says=("nope",)),
    Case("rules-phase-unknown", ("gates", "run", "--phase", "deploy"), says=("deploy",)),
]
