"""Benchmark: HistoryIndex against a loop of ``git log -S`` on a generated history.

Generates a repository of ``--commits`` (+100) commits with ``git fast-import``
(one process, no ``git commit`` per commit), builds the index over the first
``--commits`` (time, commits/s, peak Python memory), saves it, updates it
incrementally with the last 100 (load + update + save), runs the same
``--searches`` symbol searches through the index and through ``git log -S``
over the whole history, asserts identical answers and writes the figures to
``benchmarks/results/history_index.json``.

    python benchmarks/history_index.py [--commits 5000] [--searches 200] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from portwright.evidence.history import HistoryIndex, pickaxe

ROOT = Path(__file__).resolve().parent
_WORDS_TEXT = ("load parse model weight scale tensor cache batch token quant kernel layer norm "
         "rope attention decode encode buffer shape stride alloc free graph node edge fuse "
         "split merge route expert gate sample logit prompt vocab embed")
WORDS = _WORDS_TEXT.split()


def _name(rng: random.Random) -> str:
    words = rng.sample(WORDS, rng.randint(2, 3))
    style = rng.randrange(3)
    if style == 0:
        return "_".join(words)
    if style == 1:
        return words[0] + "".join(w.capitalize() for w in words[1:])
    return "".join(w.capitalize() for w in words)


def generate(repo: Path, commits: int, seed: int = 7) -> list[str]:
    """Create ``repo`` with ``commits`` commits; return the vocabulary of names used."""
    rng = random.Random(seed)
    names = sorted({_name(rng) for _ in range(1500)})
    files: dict[str, list[str]] = {}
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    chunks: list[bytes] = []
    for number in range(1, commits + 1):
        touched = rng.sample(range(300), rng.randint(1, 3))
        body: list[bytes] = []
        for file_no in touched:
            path = f"src/mod{file_no // 30}/file{file_no}.py"
            lines = files.setdefault(path, [])
            for _ in range(rng.randint(1, 4)):
                action = rng.random()
                if lines and action < 0.3:
                    lines.pop(rng.randrange(len(lines)))
                elif lines and action < 0.5:
                    lines[rng.randrange(len(lines))] = _line(rng, names)
                else:
                    lines.insert(rng.randint(0, len(lines)), _line(rng, names))
            data = ("\n".join(lines) + "\n").encode()
            body.append(b"M 100644 inline " + path.encode() + b"\n")
            body.append(b"data %d\n" % len(data) + data + b"\n")
        message = f"change {number}\n".encode()
        chunks.append(b"commit refs/heads/main\nmark :%d\n" % number)
        chunks.append(b"committer Bench <bench@example.invalid> %d +0000\n"
                      % (1_600_000_000 + number * 60))
        chunks.append(b"data %d\n" % len(message) + message)
        if number > 1:
            chunks.append(b"from :%d\n" % (number - 1))
        chunks.extend(body)
        chunks.append(b"\n")
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=b"".join(chunks),
                   check=True)
    subprocess.run(["git", "-C", str(repo), "reset", "-q", "--hard", "main"], check=True)
    return names


def _line(rng: random.Random, names: list[str]) -> str:
    a, b, c = rng.sample(names, 3)
    return f"{a} = {b}({c}, {rng.randint(0, 999)})"


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True)
    return done.stdout.strip()


def run(commits: int, searches: int, out: Path | None, extra: int = 100) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="pw-bench-") as tmp:
        repo = Path(tmp) / "repo"
        started = time.perf_counter()
        names = generate(repo, commits + extra)
        generate_s = time.perf_counter() - started
        tip = _git(repo, "rev-parse", "main")
        _git(repo, "update-ref", "refs/heads/main", f"main~{extra}")

        tracemalloc.start()
        started = time.perf_counter()
        index = HistoryIndex(repo, cache_dir=Path(tmp) / "cache")
        index.update()
        build_s = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        built = len(index)
        started = time.perf_counter()
        cache_file = index.save()
        save_s = time.perf_counter() - started
        _git(repo, "update-ref", "refs/heads/main", tip)
        started = time.perf_counter()
        reopened = HistoryIndex.open(repo, cache_dir=Path(tmp) / "cache")
        update_s = time.perf_counter() - started
        started = time.perf_counter()
        HistoryIndex.open(repo, cache_dir=Path(tmp) / "cache")
        load_s = time.perf_counter() - started

        rng = random.Random(11)
        needles = rng.sample(names, searches - searches // 10)
        needles += [rng.choice(WORDS) for _ in range(searches // 20)]  # substrings of names
        needles += [f"absent_{i}" for i in range(searches - len(needles))]

        started = time.perf_counter()
        via_index = [reopened.search(n) for n in needles]
        index_s = time.perf_counter() - started
        started = time.perf_counter()
        via_git = [pickaxe(repo, n) for n in needles]
        git_s = time.perf_counter() - started
        mismatches = [n for n, a, b in zip(needles, via_index, via_git, strict=True) if a != b]
        assert not mismatches, f"index and git log -S disagree on {mismatches[:5]}"

        results: dict[str, object] = {
            "commits": len(reopened),
            "commits_built": built,
            "searches": len(needles),
            "hits_total": sum(len(r) for r in via_git),
            "generate_s": round(generate_s, 3),
            "build_s": round(build_s, 3),
            "build_commits_per_s": round(built / build_s, 1),
            "incremental_commits": len(reopened) - built,
            "incremental_load_update_save_s": round(update_s, 3),
            "build_peak_python_mib": round(peak / 2**20, 1),
            "process_max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                                         1),
            "cache_bytes": cache_file.stat().st_size if cache_file else 0,
            "cache_save_s": round(save_s, 3),
            "cache_load_s": round(load_s, 3),
            "index_search_s": round(index_s, 4),
            "git_log_s_search_s": round(git_s, 3),
            "speedup": round(git_s / index_s, 1),
            "identical_answers": True,
            "git": subprocess.run(["git", "--version"], capture_output=True, text=True,
                                  check=True).stdout.strip(),
            "python": platform.python_version(),
        }
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "history_index.json")
    args = parser.parse_args(argv)
    results = run(args.commits, args.searches, args.out)
    json.dump(results, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0 if float(str(results["speedup"])) >= 10 else 1


if __name__ == "__main__":
    sys.exit(main())
