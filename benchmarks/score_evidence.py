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
from portwright.evidence.surface import enumerate_surface  # noqa: E402

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


COMPATIBLE = {
    "parameter": {"parameter"},
    "branch": {"branch", "guard"},
    "guard": {"guard", "branch"},
    "error": {"raise", "throw", "assert"},
    "dtype": {"dtype"},
    "layout": {"layout", "dtype"},
    "config": {"config", "env", "global", "context"},
    "helper": {"helper"},
    "test": {"test", "parametrize"},
    "fixture": {"fixture", "test"},
}


def _where(anchor: str) -> tuple[str, int, int]:
    """``path:10``, ``path:10-12`` or ``path`` (a whole file) → path, first, last line."""
    anchor = anchor.rsplit("@", 1)[0]
    path, _, lines = anchor.rpartition(":")
    if not path or not lines.replace("-", "").isdigit():
        return anchor, 0, 10**9
    first, _, last = lines.partition("-")
    return path, int(first), int(last or first)


def _matches(label: dict[str, Any], item: dict[str, Any]) -> bool:
    if item["kind"] not in COMPATIBLE[label["kind"]]:
        return False
    path, first, last = _where(label["anchor"])
    got_path, got_line, _ = _where(item["anchor"])
    return got_path == path and (first == 0 or first <= got_line <= last)


def score_surface_one(label: dict[str, Any]) -> dict[str, Any]:
    """Enumerate one labelled symbol and compare."""
    up = real_repos.repo(label["repo"])
    name = label.get("name", label["symbol"])
    if up is None:
        return {"surface": name, "skipped": f"no clone of {label['repo']}"}
    try:
        report = enumerate_surface(up, label["symbol"], label["sha"])
    except Exception as exc:  # a failure to enumerate scores nothing found
        items: list[dict[str, Any]] = []
        error = f"{type(exc).__name__}: {exc}"
    else:
        items = [i.model_dump() for i in report.items if i.kind != "function"]
        error = ""
    labels = label["items"]
    found = [lab for lab in labels if any(_matches(lab, it) for it in items)]
    must = [lab for lab in labels if lab["must"]]
    must_found = [lab for lab in found if lab["must"]]
    right = [it for it in items if any(_matches(lab, it) for lab in labels)]
    return {
        "surface": name, "error": error, "labelled": len(labels), "found": len(found),
        "recall": round(len(found) / len(labels), 3),
        "must": len(must), "must_found": len(must_found),
        "must_recall": round(len(must_found) / len(must), 3) if must else None,
        "items": len(items), "precision": round(len(right) / len(items), 3) if items else None,
        "missed": [f"{lab['kind']} {lab['anchor']} {lab['name']}" for lab in labels
                   if lab not in found],
        "noise": [f"{it['kind']} {it['anchor'].rsplit('@', 1)[0]} {it['name']}" for it in items
                  if it not in right],
    }


def score_surface() -> dict[str, Any]:
    results = []
    for path in sorted((LABELS / "surface").glob("*.json")):
        label = json.loads(path.read_text())
        label["name"] = path.stem
        results.append(score_surface_one(label))
    scored = [r for r in results if "skipped" not in r]
    total: dict[str, Any] | None = None
    if scored:
        labelled = sum(r["labelled"] for r in scored)
        must = sum(r["must"] for r in scored)
        items = sum(r["items"] for r in scored)
        right = sum(round((r["precision"] or 0) * r["items"]) for r in scored)
        found = sum(r["found"] for r in scored)
        total = {"labelled": labelled, "recall": round(found / labelled, 3), "must": must,
                 "must_recall": round(sum(r["must_found"] for r in scored) / must, 3),
                 "items": items, "precision": round(right / items, 3) if items else None}
    return {"surfaces": results, "total": total}


def _print_surface(result: dict[str, Any], verbose: bool) -> None:
    for one in result["surfaces"]:
        if "skipped" in one:
            print(f"surface {one['surface']}: skipped ({one['skipped']})")
            continue
        print(f"surface {one['surface']}: must {one['must_found']}/{one['must']}, all "
              f"{one['found']}/{one['labelled']}, precision {one['precision']} of "
              f"{one['items']} items {one['error']}")
        if verbose:
            for line in one["missed"]:
                print(f"  missed {line}")
            for line in one["noise"]:
                print(f"  noise  {line}")
    if result["total"]:
        total = result["total"]
        print(f"surface total: must {total['must_recall']:.0%} of {total['must']}, all "
              f"{total['recall']:.0%} of {total['labelled']}, precision {total['precision']}")


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
        if args.only in (None, "surface"):
            out["surface"] = score_surface()
            _print_surface(out["surface"], args.verbose)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
