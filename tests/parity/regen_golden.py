"""Regenerate tests/parity/golden/*.out.md from the writers.

Run ``python tests/parity/regen_golden.py``.

Review the diff before committing: a golden file changes only when a writer's output should.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.parity.golden_cases import CASES, GOLDEN


def main() -> None:
    for name, case in CASES.items():
        with tempfile.TemporaryDirectory() as scratch:
            text = case(Path(scratch))
        (GOLDEN / f"{name}.out.md").write_bytes(text.encode())
        print(f"wrote {GOLDEN / f'{name}.out.md'}")


if __name__ == "__main__":
    main()
