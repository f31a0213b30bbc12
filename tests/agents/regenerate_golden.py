"""Regenerate the golden rendered prompts: ``python -m tests.agents.regenerate_golden``."""

from __future__ import annotations

from pathlib import Path

from portwright.agents.roles import ROLES
from portwright.agents.roles.implementer import sample as implementer_sample

GOLDEN = Path(__file__).parent / "golden"


def rendered() -> dict[str, str]:
    """File name → rendered messages of each role's sample context."""
    out = {}
    for name, role in ROLES.items():
        contexts = {name: role.sample()} if role.sample else {}
        if name == "implementer":
            contexts = {f"{name}-{mode}": implementer_sample(mode)
                        for mode in ("tests_only", "implementation_only")}
        for label, context in contexts.items():
            messages = role.messages(context)
            out[f"{label}.txt"] = "".join(
                f"===== {m.role} =====\n{m.content}" for m in messages)
    return out


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name, text in rendered().items():
        (GOLDEN / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
