"""Bad input in the parity records: matrices, ledger, inventory, specs."""

from __future__ import annotations

from tests.bad_input.harness import Case, Setup
from tests.bad_input.world import MATRIX, World

M = "docs/parity/models.md"
L = "parity-ledger.md"
INV = "porting-inventory.md"
SPEC = "specs/attn-fp8.md"
ROWS = ("rows",)
LEDGER = ("ledger", "check")
ANCHORS = ("anchors", "check")


def matrix(text: str | bytes) -> Setup:
    return lambda w: w.write(M, text)


def edit(rel: str, old: str, new: str) -> Setup:
    return lambda w: w.replace(rel, old, new)


def ledger_row(row: str) -> Setup:
    return lambda w: w.write(L, w.read(L) + row + "\n")


def _spec_front(front: str) -> Setup:
    def setup(w: World) -> None:
        text = w.read(SPEC)
        body = text.split("---\n", 2)[2]
        w.write(SPEC, f"---\n{front.replace('{pin}', w.pin)}---\n{body}")
    return setup


def _unplaceable(w: World) -> None:
    """Upstream moves on: the function the spec cites moves down two lines (placeable),
    the line the ledger cites is rewritten (unplaceable)."""
    fp8 = (w.up.path / "attn" / "fp8.py").read_text()
    w.up_commit("move and rewrite", {
        "attn/fp8.py": "# header\n# more\n" + fp8.replace("def fp8_attention(q, k, v):",
                                                        "def fp8_attention(query, k, v):")
        .replace("    scale = q.shape[-1] ** -0.5\n", "    scale = query.shape[-1] ** -0.5\n")})
    (w.root / "prefix").write_text(w.git("rev-parse", "HEAD", repo=w.up.path))


def _spec_pin_kept(w: World, home: object) -> str | None:
    return None if f"pin: {w.pin}" in w.read(SPEC) else "the spec's pin moved"


def _brackets_title(w: World) -> None:
    w.replace(M, "| FP8 attention |", "| FP8 [bold]attention[/] [/] :x: |")


CASES = [
    # matrices
    Case("mat-no-separator", ROWS, matrix(MATRIX.replace("| --- | --- | --- | --- | --- | --- |\n",
                                                         "")), says=(f"{M}:3",)),
    Case("mat-header-key", ROWS, edit(M, "| id |", "| key |"), says=(f"{M}:3", "id")),
    Case("mat-no-table", ROWS, matrix("# Models\n\nNothing yet.\n"), says=(M,)),
    Case("mat-empty-file", ROWS, matrix(""), says=(M,)),
    Case("mat-unknown-status", ROWS, edit(M, "| partial |", "| halfway |"),
         says=(f"{M}:5", "halfway")),
    Case("mat-duplicate-id", ROWS, edit(M, "| kv-cache |", "| attn-fp8 |"), says=(f"{M}:6",)),
    Case("mat-row-without-id", ROWS, edit(M, "| kv-cache |", "|  |"), says=(f"{M}:6",)),
    Case("mat-not-utf8", ROWS, matrix(b"| id | status |\n| --- | --- |\n| a\xff | missing |\n"),
         says=(M, "utf-8")),
    Case("mat-status-filter-unknown", ("rows", "--status", "bogus"), says=("bogus", "--status")),
    Case("mat-gap-row-no-upstream", ("gap", "--row", "attn-fp8"),
         edit(M, "| fp8_attention |", "|  |"), says=(f"{M}:5",)),
    Case("markup-rows-title", ROWS, _brackets_title, expect=0,
         says=("FP8 [bold]attention[/] [/] :x:",), json=False),
    Case("markup-gap-row-title", ("gap", "--row", "attn-fp8"), _brackets_title, expect=0,
         says=("[bold]attention[/] [/] :x:",), json=False),
    # ledger and inventory
    Case("ledger-missing", LEDGER, lambda w: w.remove(L), says=(L,)),
    Case("ledger-no-table", LEDGER, lambda w: w.write(L, "# Ledger\n\n| path | ref |\n"
                                                        "| --- | --- |\n| a | b |\n"),
         says=(L,)),
    Case("ledger-not-utf8", LEDGER, lambda w: w.write(L, b"# \xff\n"), says=(L, "utf-8")),
    Case("ledger-bad-kind", LEDGER, ledger_row("| src/ring.py | from-scratch | copied | | |"),
         expect=1, says=(f"{L}:6",)),
    Case("ledger-bad-reference", LEDGER, ledger_row("| src/x.py | somewhere | port | | |"),
         expect=1, says=(f"{L}:6", "somewhere")),
    Case("ledger-divergence-no-cost", LEDGER, ledger_row(
        "| src/x.py | `kv/cache.py:1` | divergence | | |"), expect=1, says=(f"{L}:6", "cost")),
    Case("ledger-anchor-beyond-file", LEDGER, ledger_row(
        "| src/x.py | `kv/cache.py:90-99` | port | | |"), expect=1, says=(f"{L}:6",)),
    Case("ledger-unknown-commit", LEDGER, ledger_row(
        "| src/x.py | " + "cd" * 20 + " | port | | |"), expect=1, says=(f"{L}:6",)),
    Case("inventory-no-searched", LEDGER, lambda w: w.write(INV, w.read(INV) + "| ring | "
                                                           "src/r.py | - | |\n"),
         expect=1, says=(f"{INV}:6",)),
    Case("inventory-not-utf8", LEDGER, lambda w: w.write(INV, b"\xff\xfe"), says=(INV, "utf-8")),
    # specs
    Case("spec-front-invalid", ANCHORS, _spec_front("row: [attn\n"), says=(SPEC,)),
    Case("spec-front-list", ANCHORS, _spec_front("- row\n- pin\n"), says=(SPEC,)),
    Case("spec-front-answers-list", ("gates", "run", "--phase", "spec"),
         _spec_front("row: attn-fp8\npin: {pin}\nslice: x\nanswers: [a, b]\n"), says=(SPEC,),
         expect=1, runs_left=True),
    Case("spec-not-utf8", ANCHORS, lambda w: w.write(SPEC, b"---\nrow: \xff\n---\n"),
         says=(SPEC, "utf-8")),
    Case("spec-pin-integer", ANCHORS, lambda w: w.replace(SPEC, f"pin: {w.pin}", "pin: 1234567"),
         expect=1, says=(SPEC,)),
    Case("spec-anchor-excerpt", ANCHORS, edit(SPEC, '"scale = q.shape', '"scale = k.shape'),
         expect=1, says=(f"{SPEC}:21",)),
    Case("spec-anchor-beyond", ANCHORS, edit(SPEC, "`attn/fp8.py:9-10`", "`attn/fp8.py:90-99`"),
         expect=1, says=(f"{SPEC}:13",)),
    Case("spec-missing-section", ("gates", "run", "--phase", "spec"),
         edit(SPEC, "## Slice\n\nDecode only.\n", ""), expect=1, says=(SPEC, "Slice")),
    Case("remap-unplaceable", ("anchors", "remap", "--to", "{prefix}"), _unplaceable,
         expect=1, says=(f"{SPEC}:12",), after=_spec_pin_kept),
    Case("remap-unplaceable-pin", ("anchors", "remap", "--to", "{prefix}", "--move-pin"),
         _unplaceable, expect=1, says=(f"{SPEC}:12",), after=_spec_pin_kept),
]
