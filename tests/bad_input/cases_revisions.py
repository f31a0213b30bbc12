"""Revisions given on the command line that do not name what the command needs."""

from __future__ import annotations

import hashlib
import subprocess

from tests.bad_input.harness import Case
from tests.bad_input.world import World


def _orphan_branch(w: World) -> None:
    w.git("checkout", "-q", "--orphan", "other", repo=w.up.path)
    w.git("rm", "-rqf", ".", repo=w.up.path)
    (w.up.path / "other.py").write_text("x = 1\n")
    w.git("add", "other.py", repo=w.up.path)
    w.git("commit", "-qm", "unrelated history", repo=w.up.path)
    w.git("checkout", "-q", "main", repo=w.up.path)


def _ambiguous(w: World) -> str:
    """A 4-hex prefix shared by two blobs written into upstream."""
    seen: dict[str, bytes] = {}
    for i in range(100_000):
        data = f"blob {i}\n".encode()
        sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        other = seen.setdefault(sha[:4], data)
        if other is not data:
            for content in (other, data):
                subprocess.run(["git", "-C", str(w.up.path), "hash-object", "-w", "--stdin"],
                               input=content, capture_output=True, check=True)
            return sha[:4]
    raise AssertionError("no shared prefix")


def _ambiguous_from(w: World) -> None:
    (w.root / "prefix").write_text(_ambiguous(w))


def _markup_subject(w: World) -> None:
    w.up_commit("fix [/] and [bold]markup[/bold] :x:", {"kv/cache.py": "KV = 1\n"})


def _markup_surface(w: World) -> None:
    w.up_commit("add f", {"kv/odd.py": 'def odd(x, mode="[/]"):\n'
                                         '    if mode == "[bold]":\n'
                                         '        raise ValueError("[/red]")\n'
                                         '    return x\n'})


def _dirty_ledger(w: World) -> None:
    w.write("parity-ledger.md", w.read("parity-ledger.md") + "\n<!-- an edit nobody "
            "committed -->\n")


def _injected(w: World, home: object) -> str | None:
    return "git wrote the file an option named" if (w.root / "injected").exists() else None


CASES = [
    Case("rev-gap-to-nonsense", ("gap", "--to", "nope"), says=("nope",)),
    Case("rev-gap-from-nonsense", ("gap", "--from", "nope"), says=("nope",)),
    Case("rev-gap-to-empty", ("gap", "--to", ""), says=("--to",)),
    Case("rev-gap-to-tree", ("gap", "--to", "{tree}"), says=("tree",)),
    Case("rev-gap-to-blob", ("gap", "--to", "{blob}"), says=("blob",)),
    Case("rev-gap-from-ambiguous", ("gap", "--from", "{prefix}"), _ambiguous_from,
         says=("ambiguous",)),
    Case("rev-gap-to-unrelated", ("gap", "--to", "other"), _orphan_branch,
         says=("other", "descend")),
    Case("rev-gap-reversed", ("gap", "--from", "{head}", "--to", "{pin}"),
         says=("descend",)),
    Case("rev-gap-option-injection", ("gap", "--to=--output={root}/injected"),
         says=("--output",), after=_injected),
    Case("rev-gap-row-unknown", ("gap", "--row", "nope"), says=("nope", "--row")),
    Case("rev-surface-at-nonsense", ("surface", "fp8_attention", "--at", "nope"),
         says=("nope",)),
    Case("rev-surface-at-tree", ("surface", "fp8_attention", "--at", "{tree}"), says=("tree",)),
    Case("rev-surface-unknown-symbol", ("surface", "no_such_symbol"), says=("no_such_symbol",)),
    Case("rev-anchors-at-nonsense", ("anchors", "check", "--at", "nope"), says=("nope",)),
    Case("rev-remap-to-nonsense", ("anchors", "remap", "--to", "nope"), says=("nope",)),
    Case("rev-remap-to-blob", ("anchors", "remap", "--to", "{blob}"), says=("blob",)),
    Case("rev-trace-base-nonsense", ("trace", "--base", "nope"), says=("nope",)),
    Case("rev-trace-pin-nonsense", ("trace", "--base", "HEAD", "--pin", "nope"),
         says=("nope",)),
    Case("rev-trace-base-injection", ("trace", "--base=--output={root}/injected"),
         says=("--output",), after=_injected),
    Case("rev-gates-base-nonsense", ("gates", "run", "--phase", "spec", "--base", "nope"),
         says=("nope",)),
    Case("rev-gates-base-injection", ("gates", "run", "--phase", "spec",
                                      "--base=--output={root}/injected"),
         says=("--output",), after=_injected),
    Case("rev-sync-to-nonsense", ("sync", "--to", "nope"), says=("nope", "--to")),
    Case("rev-sync-to-empty", ("sync", "--to", ""), says=("--to",)),
    Case("rev-sync-to-tree", ("sync", "--to", "{tree}"), says=("tree", "--to")),
    Case("rev-sync-to-unrelated", ("sync", "--to", "other"), _orphan_branch,
         says=("other", "descend", "--to")),
    Case("rev-sync-to-injection", ("sync", "--to=--output={root}/injected"),
         says=("--output",), after=_injected),
    Case("rev-sync-dirty-tree", ("sync", "--to", "{head}"), _dirty_ledger, commit=False,
         says=("uncommitted", "parity-ledger.md")),
    Case("rev-sync-concurrency-zero", ("sync", "--to", "{head}", "--concurrency", "0"),
         says=("--concurrency",)),
    # rich markup in commit subjects, titles and code is printed as written
    Case("markup-gap-subject", ("gap",), _markup_subject, expect=0,
         says=("fix [/] and [bold]markup[/bold] :x:",), json=False),
    Case("markup-surface", ("surface", "odd", "--at", "HEAD"), _markup_surface, expect=0,
         says=("'[/]'", "[/red]"), json=False),
]
