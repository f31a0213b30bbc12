"""Benchmark: the diff parsers portwright had against the one it keeps, on a real history.

Reads ``git log -p -U0`` of the last ``--commits`` commits of ``--repo`` (default: this
repository; a long real history such as tinygrad's gives steadier figures) once into
memory, then times, in CPU seconds (best of ``--rounds``):

- *history index* (the hot path: every commit of a downstream history, token counts per
  file pair): the former hand parser of ``evidence/history.py`` (kept below as it was);
  :func:`portwright.evidence.history.parse_log` on :func:`~portwright.evidence.patch.
  parse_patch` (the one hand parser now); and unidiff's ``PatchSet`` per commit;
- *patches* (the upstream range scan: added and removed lines per file of each commit):
  ``parse_patch`` and unidiff;
- *added lines* (a gate: the lines a ``-U0`` diff adds): the former hunk-header regex of
  ``gates/_diff.py`` (kept below) and unidiff, on the same patches.

Each variant must give the same answer as the former one. The figures, with the input's
size and commit count, are printed and written to ``benchmarks/results/diff_parse.json``.

    python benchmarks/diff_parse.py [--repo PATH] [--name NAME] [--commits 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from unidiff import PatchSet

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from portwright.evidence.history import _LOG_ARGS, parse_log  # noqa: E402
from portwright.evidence.patch import git_header_path, parse_patch  # noqa: E402

_MARK = b"\x01"
_WORD_RB = re.compile(rb"[A-Za-z0-9_]+")
_WORD_RS = re.compile(r"[A-Za-z0-9_]+")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)

Pairs = list[tuple[str, dict[str, int]]]


# -- the former parsers, as they were --------------------------------------------------

def former_parse_log(lines: Iterable[bytes]) -> Iterator[tuple[str, Pairs]]:
    """``evidence/history.py``'s own hand parser before it used ``parse_patch``."""
    sha: str | None = None
    pairs: list[tuple[str, Counter[bytes]]] = []
    counts: Counter[bytes] | None = None
    in_hunk = False
    for line in lines:
        first = line[:1]
        if in_hunk and counts is not None and first in (b"+", b"-"):
            if first == b"+":
                counts.update(_WORD_RB.findall(line, 1))
            else:
                counts.subtract(_WORD_RB.findall(line, 1))
        elif first == _MARK:
            if sha is not None:
                yield sha, _decoded(pairs)
            sha, pairs, counts, in_hunk = line[1:].strip().decode(), [], None, False
        elif line.startswith(b"diff --git "):
            counts = Counter()
            pairs.append((git_header_path(line), counts))
            in_hunk = False
        elif first == b"@":
            in_hunk = line.startswith(b"@@")
    if sha is not None:
        yield sha, _decoded(pairs)


def _decoded(pairs: list[tuple[str, Counter[bytes]]]) -> Pairs:
    return [(path, {k.decode(): v for k, v in counts.items() if v}) for path, counts in pairs]


def former_added_lines(diff: str) -> set[int]:
    """``gates/_diff.py``'s hunk-header regex."""
    lines: set[int] = set()
    for match in _HUNK.finditer(diff):
        start = int(match.group(1))
        count = int(match.group(2)) if match.group(2) is not None else 1
        lines.update(range(start, start + count))
    return lines


# -- the candidates ----------------------------------------------------------------------

def new_parse_log(lines: Iterable[bytes]) -> Iterator[tuple[str, Pairs]]:
    for sha, pairs in parse_log(lines):
        yield sha, [(path, {k: v for k, v in counts.items() if v}) for path, counts in pairs]


def unidiff_parse_log(commits: list[tuple[str, str]]) -> Iterator[tuple[str, Pairs]]:
    for sha, text in commits:
        pairs: Pairs = []
        for patched in PatchSet(text):
            counts: Counter[str] = Counter()
            for hunk in patched:
                for line in hunk:
                    if line.is_added:
                        counts.update(_WORD_RS.findall(line.value))
                    elif line.is_removed:
                        counts.subtract(_WORD_RS.findall(line.value))
            pairs.append((patched.path, {k: v for k, v in counts.items() if v}))
        yield sha, pairs


def unidiff_added_lines(diff: str) -> set[int]:
    return {line.target_line_no for patched in PatchSet(diff) for hunk in patched
            for line in hunk if line.is_added and line.target_line_no is not None}


# -- harness -----------------------------------------------------------------------------

def _cpu(rounds: int, work: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        start = time.process_time()
        result = work()
        best = min(best, time.process_time() - start)
    return best, result


def _split(raw: bytes) -> list[tuple[str, bytes]]:
    """``(sha, patch bytes)`` per commit of the log."""
    out: list[tuple[str, bytes]] = []
    for chunk in raw.split(b"\n" + _MARK):
        head, _, body = chunk.lstrip(_MARK).partition(b"\n")
        out.append((head.strip().decode(), body))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=HERE.parent)
    parser.add_argument("--name", help="the repository's name in the results (default: its "
                        "folder's)")
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "diff_parse.json")
    args = parser.parse_args()

    raw = subprocess.run(["git", "-C", str(args.repo), *_LOG_ARGS, "-n", str(args.commits),
                          "HEAD", "--"], check=True, capture_output=True).stdout
    lines = list(io.BytesIO(raw))  # split on \n only, as a git pipe is read
    commits = _split(raw)
    texts = [(sha, body.decode("utf-8", "surrogateescape")) for sha, body in commits]
    figures: dict[str, dict[str, float]] = {}

    former_t, former = _cpu(args.rounds, lambda: list(former_parse_log(lines)))
    new_t, new = _cpu(args.rounds, lambda: list(new_parse_log(lines)))
    uni_t, uni = _cpu(args.rounds, lambda: list(unidiff_parse_log(texts)))
    assert new == former, "parse_log disagrees with the former parser"
    agree = sum(a == b for a, b in zip(former, uni, strict=True))
    figures["history_index"] = {"former_hand_parser": former_t, "parse_patch": new_t,
                                "unidiff": uni_t, "unidiff_agrees_on_commits": agree}

    patch_t, patches = _cpu(args.rounds, lambda: [parse_patch(io.BytesIO(body))
                                                  for _, body in commits])
    uni_patch_t, _ = _cpu(args.rounds, lambda: [list(PatchSet(text)) for _, text in texts])
    figures["patches"] = {"parse_patch": patch_t, "unidiff": uni_patch_t}

    def former_all() -> list[set[int]]:
        return [former_added_lines(text) for _, text in texts]

    def unidiff_all() -> list[set[int]]:
        return [unidiff_added_lines(text) for _, text in texts]

    def hand_all() -> list[set[int]]:
        return [{n for patch in found for n, _ in patch.added} for found in patches]

    former_lines_t, former_lines = _cpu(args.rounds, former_all)
    uni_lines_t, uni_lines = _cpu(args.rounds, unidiff_all)
    assert uni_lines == former_lines, "unidiff's added lines disagree with the former regex"
    figures["added_lines"] = {"former_regex": former_lines_t, "unidiff": uni_lines_t,
                              "parse_patch_from_parsed": _cpu(args.rounds, hand_all)[0]}

    head = subprocess.run(["git", "-C", str(args.repo), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    result = {
        "repository": args.name or args.repo.resolve().name, "head": head, "commits": len(commits),
        "log_bytes": len(raw), "log_lines": len(lines), "rounds": args.rounds,
        "cpu_seconds": figures,
        "unidiff_vs_hand_on_history_index": round(uni_t / new_t, 2),
        "parse_patch_vs_former_on_history_index": round(new_t / former_t, 2),
        "python": platform.python_version(), "machine": platform.machine(),
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
