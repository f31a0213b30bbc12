"""Regenerate tests/eval/golden/*.md from the writers.

Run ``python tests/eval/regen_golden.py``.

Review the diff before committing: a golden file changes only when a writer's output should.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.eval.golden_cases import CASES, GOLDEN


def main() -> None:
    for name, case in CASES.items():
        (GOLDEN / f"{name}.md").write_bytes(case().encode())
        print(f"wrote {GOLDEN / f'{name}.md'}")


if __name__ == "__main__":
    main()
