"""Score the evidence engines against hand-labelled real repositories.

Labels (``benchmarks/labels/``) are facts about public repositories, written from the
diffs before looking at what the engines say:

- ``gap/<pair>.json`` — every upstream commit of a range, with the verdict a maintainer
  gives it against the port at a fixed commit (``not_applicable``, ``landed``, ``partial``,
  ``missing``), a one-line reason and ``up:``/``down:`` ``path:line`` anchors;
- ``surface/<name>.json`` — the items a porter must carry for one upstream symbol, each with
  its kind, a ``path:line`` anchor, and whether it is a must-find.

The script runs ``scan_range`` / ``enumerate_surface`` on the real clones (see
:mod:`real_repos`), prints the scores and writes them to
``benchmarks/results/evidence_scores.json``:

- gap: verdicts right; unsafe answers (a missing or partial commit called landed or not
  applicable); the share right among verdicts of confidence >= 0.9; the share ``uncertain``;
  the same accuracy for the naive rule "touches source or tests: missing, else not
  applicable";
- surface: must-find items found, all items found, precision (the share of the engine's
  items that match a labelled item).

    PORTWRIGHT_REAL_REPOS=~/src/real python benchmarks/score_evidence.py [--only gap|surface]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import real_repos  # noqa: E402

from portwright.config import PortwrightConfig, UpstreamConfig  # noqa: E402
from portwright.evidence.gap import scan_range  # noqa: E402
from portwright.evidence.history import HistoryIndex  # noqa: E402

LABELS = HERE / "labels"
RESULTS = HERE / "results" / "evidence_scores.json"
SAFE = {"missing": {"missing", "partial", "uncertain"}, "partial": {"missing", "partial",
                                                                     "uncertain"}}
CODE_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".py", ".c", ".cc", ".cpp", ".h",
                 ".hpp", ".cu", ".rs", ".go")


def _naive(files: list[dict[str, Any]]) -> str:
    """The naive rule: a commit touching code or tests is missing, any other is not
    applicable."""
    for changed in files:
        path = changed["path"]
        if path.endswith(CODE_SUFFIXES) or path.startswith(("test/", "tests/")):
            return "missing"
    return "not_applicable"


def score_gap_pair(label: dict[str, Any], cache: Path) -> dict[str, Any]:
    """Run the gap scan on one labelled pair and compare."""
    up = real_repos.repo(label["upstream"]["repo"])
    if up is None:
        return {"pair": label["pair"], "skipped": f"no clone of {label['upstream']['repo']}"}
    down = real_repos.checkout(label["downstream"]["repo"], label["downstream"]["sha"], cache)
    config = PortwrightConfig(upstream=UpstreamConfig(source=str(up), **label["config"]))
    index = HistoryIndex.open(down, "HEAD", cache / "index")
    started = time.perf_counter()
    report = scan_range(up, down, label["upstream"]["base"], label["upstream"]["head"], config,
                        index=index)
    seconds = time.perf_counter() - started
    truth = {c["sha"]: c for c in label["commits"]}
    rows = []
    for commit in report.commits:
        want = truth[commit.sha]["verdict"]
        rows.append({"sha": commit.sha, "subject": commit.subject, "label": want,
                     "verdict": commit.verdict.value, "confidence": commit.confidence,
                     "naive": _naive([f.model_dump() for f in commit.files]),
                     "reason": commit.reason, "why": truth[commit.sha]["reason"]})
    return {"pair": label["pair"], "seconds": round(seconds, 2), **_gap_metrics(rows),
            "rows": rows}


def _gap_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    right = sum(r["verdict"] == r["label"] for r in rows)
    unsafe = [r for r in rows if r["label"] in SAFE and r["verdict"] not in SAFE[r["label"]]]
    sure = [r for r in rows if r["confidence"] >= 0.9 and r["verdict"] != "uncertain"]
    uncertain = sum(r["verdict"] == "uncertain" for r in rows)
    confusion = Counter(f"{r['label']}->{r['verdict']}" for r in rows)
    return {
        "commits": n,
        "right": right,
        "accuracy": round(right / n, 3) if n else None,
        "unsafe": len(unsafe),
        "unsafe_commits": [f"{r['sha'][:10]} {r['label']}->{r['verdict']}" for r in unsafe],
        "confident": len(sure),
        "confident_right": round(sum(r["verdict"] == r["label"] for r in sure) / len(sure), 3)
        if sure else None,
        "uncertain": uncertain,
        "uncertain_share": round(uncertain / n, 3) if n else None,
        "naive_accuracy": round(sum(r["naive"] == r["label"] for r in rows) / n, 3)
        if n else None,
        "confusion": dict(sorted(confusion.items())),
    }


def score_gap(cache: Path, only: list[str] | None = None) -> dict[str, Any]:
    pairs = [score_gap_pair(json.loads(p.read_text()), cache)
             for p in sorted((LABELS / "gap").glob("*.json")) if not only or p.stem in only]
    scored = [p for p in pairs if "rows" in p]
    rows = [r for p in scored for r in p["rows"]]
    return {"pairs": pairs, "total": _gap_metrics(rows) if rows else None}


def _print_gap(result: dict[str, Any], verbose: bool) -> None:
    for pair in result["pairs"]:
        if "skipped" in pair:
            print(f"gap {pair['pair']}: skipped ({pair['skipped']})")
            continue
        print(f"gap {pair['pair']}: {pair['right']}/{pair['commits']} right "
              f"({pair['accuracy']:.0%}), unsafe {pair['unsafe']}, confident right "
              f"{pair['confident_right']}, uncertain {pair['uncertain_share']:.0%}, naive "
              f"{pair['naive_accuracy']:.0%}, {pair['seconds']} s")
        if verbose:
            for row in pair["rows"]:
                mark = " " if row["verdict"] == row["label"] else "X"
                print(f"  {mark} {row['sha'][:10]} {row['label']:>14} {row['verdict']:>14} "
                      f"{row['confidence']:.2f}  {row['subject'][:50]}  | {row['reason'][:90]}")
    total = result["total"]
    if total:
        print(f"gap total: {total['right']}/{total['commits']} right ({total['accuracy']:.0%}), "
              f"unsafe {total['unsafe']}, confident right {total['confident_right']} "
              f"(of {total['confident']}), uncertain {total['uncertain_share']:.0%}, naive "
              f"{total['naive_accuracy']:.0%}")
        print(f"  confusion: {total['confusion']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("gap", "surface"))
    parser.add_argument("--pair", action="append", help="score only these labelled pairs")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--cache", type=Path, default=None,
                        help="folder for downstream checkouts and indexes (default: temporary)")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if real_repos.root() is None:
        print(f"set {real_repos.ENV} to a folder of clones (see benchmarks/real_repos.py)")
        return 2
    with tempfile.TemporaryDirectory(prefix="pw-score-") as tmp:
        cache = args.cache or Path(tmp)
        out: dict[str, Any] = {}
        if args.only in (None, "gap"):
            out["gap"] = score_gap(cache, args.pair)
            _print_gap(out["gap"], args.verbose)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
