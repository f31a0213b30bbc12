"""Regenerate the golden rendered prompts: ``python -m tests.agents.regenerate_golden``."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from portwright.agents.budget import RunBudget
from portwright.agents.loop import SUBMIT
from portwright.agents.offline import ScriptedModel, call
from portwright.agents.roles import ROLES, gap_verifier
from portwright.agents.roles.implementer import sample as implementer_sample
from portwright.agents.tools import Workspace
from portwright.agents.transcript import Transcript, read_transcript
from portwright.config import ModelBudget, Price
from portwright.eval import loop
from tests.conftest import GitRepo

GOLDEN = Path(__file__).parent / "golden"


def rendered() -> dict[str, str]:
    """File name → rendered messages of each role's sample context."""
    out = {}
    for name, role in {**ROLES, loop.ROLE.name: loop.ROLE}.items():
        contexts = {name: role.sample()} if role.sample else {}
        if name == "implementer":
            contexts = {f"{name}-{mode}": implementer_sample(mode)
                        for mode in ("tests_only", "implementation_only")}
        for label, context in contexts.items():
            messages = role.messages(context)
            out[f"{label}.txt"] = "".join(
                f"===== {m.role} =====\n{m.content}" for m in messages)
    return out


TRANSCRIPT = "gap_verifier.transcript.jsonl"


def normalise(text: str, tmp: Path) -> str:
    """Values that change from run to run, replaced by placeholders."""
    text = text.replace(str(tmp), "<tmp>")
    text = re.sub(r"\b[0-9a-f]{40}\b", "<sha>", text)
    return re.sub(r"\b[0-9a-f]{12}\b", "<sha12>", text)


def scripted_transcript() -> str:
    """A scripted gap-verifier turn on a small upstream/downstream pair, normalised."""
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        upstream, downstream = GitRepo(tmp / "upstream"), GitRepo(tmp / "downstream")
        pin = upstream.commit("upstream v1", {"src/attn.py": "def rope_scaling(x):\n"
                                                             "    return x * 2\n"})
        downstream.commit("port start", {"lib/attn.cpp": "int other() { return 0; }\n"})
        model = ScriptedModel.from_replies([
            "The port lacks it.",
            call("search", {"pattern": "rope_scaling", "repo": "upstream"}),
            call("read_file", {"path": "../upstream/src/attn.py"}),
            call(SUBMIT, {"status": "missing", "reasoning": "only upstream defines it",
                          "evidence": [{"kind": "upstream", "ref": "src/attn.py:1-2",
                                        "detail": "def rope_scaling(x)"}]}),
        ])
        context = gap_verifier.sample().model_copy(update={"pin": pin})
        budget = RunBudget(ModelBudget(), prices={"scripted": Price(prompt=2, completion=8)})
        path = tmp / "transcript.jsonl"
        gap_verifier.ROLE.run(context, client=model,
                              workspace=Workspace(worktree=downstream.path,
                                                  upstream=upstream.path, pin=pin),
                              budget=budget.for_role("gap_verifier"),
                              transcript=Transcript(path))
        lines = [json.dumps(e, sort_keys=True) for e in read_transcript(path)]
        return normalise("\n".join(lines) + "\n", tmp)


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name, text in rendered().items():
        (GOLDEN / name).write_text(text, encoding="utf-8")
    (GOLDEN / TRANSCRIPT).write_text(scripted_transcript(), encoding="utf-8")


if __name__ == "__main__":
    main()
