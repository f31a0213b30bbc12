"""A run's evidence bundle as markdown: what the pull request body and ``portwright report``
show. Everything in it comes from the run's folder (verdicts, surface, classification,
reviews, transcripts' usage, signed evidence records) and the state's references; text
written by a model or a command is quoted in code spans or blocks, never trusted as
markup."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from portwright.redact import redact
from portwright.runs.models import EvidenceKind, EvidenceRecord


def _load(run_dir: Path, name: str) -> Any:
    path = run_dir / name
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def md_text(text: object) -> str:
    """``text`` (a model's or a command's) as one line of markdown text: no table cell it
    could end, no HTML (an entity for each ``&``, ``<``, ``>``: a ``<!--`` or a
    ``<details>`` it wrote would hide or fold the sections after it), no code span it could
    close (a backtick is an entity too), no secret (:func:`portwright.redact.redact`)."""
    return (redact(str(text)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("`", "&#96;").replace("|", "\\|").replace("\n", " ").strip())


def spend(run_dir: Path) -> dict[str, dict[str, float]]:
    """Calls, tokens (``tokens``, of which ``tokens_in`` prompt and ``tokens_out``
    completion) and cost per role, summed over every transcript of the run (resumed
    processes included)."""
    out: dict[str, dict[str, float]] = {}
    for path in sorted(run_dir.glob("transcript-*.jsonl")):
        role = path.stem.removeprefix("transcript-").rsplit("-", 1)[0]
        totals = out.setdefault(role, {"calls": 0, "tokens": 0, "tokens_in": 0,
                                       "tokens_out": 0, "cost_usd": 0.0})
        for line in path.read_text(encoding="utf-8").splitlines():
            event = json.loads(line) if line.strip() else {}
            if event.get("event") == "usage":
                prompt = int(event.get("prompt_tokens", 0) or 0)
                completion = int(event.get("completion_tokens", 0) or 0)
                totals["calls"] += 1
                totals["tokens"] += prompt + completion
                totals["tokens_in"] += prompt
                totals["tokens_out"] += completion
                totals["cost_usd"] += float(event.get("cost_usd", 0) or 0)
    return out


def render_report(run_dir: Path, state: Mapping[str, Any], records: list[EvidenceRecord], *,
                  ledger_diff: str = "") -> str:
    """The report of one run (redacted: it is a pull request's body)."""
    parts = [f"# portwright run `{state.get('run_id', run_dir.name)}`: row "
             f"`{state.get('row', '?')}`", "",
             f"- status: **{state.get('status', '?')}**"
             + (f" — {md_text(state['reason'])}" if state.get("reason") else ""),
             f"- branch: `{state.get('branch', '')}` from `{str(state.get('base', ''))[:12]}`",
             f"- upstream pin: `{str(state.get('pin', ''))[:12]}`"]
    if state.get("pr_url"):
        number = f"#{state['pr_number']} " if state.get("pr_number") else ""
        parts.append(f"- pull request: {number}{state['pr_url']}")
    parts.append("")
    parts += _gap(run_dir) + _surface(run_dir)
    if state.get("spec_path"):
        parts += ["## Spec", "", f"`{state['spec_path']}` (committed on the branch)", ""]
    parts += _evidence(records) + _review(run_dir)
    if ledger_diff.strip():
        parts += ["## Ledger and matrix rows", "", "```diff", ledger_diff.strip(), "```", ""]
    parts += _cost(run_dir) + _timeline(state)
    return redact("\n".join(parts).rstrip() + "\n")


def _gap(run_dir: Path) -> list[str]:
    gap = _load(run_dir, "gap.json")
    if not gap:
        return []
    lines = ["## Gap verdict", "", f"**{gap['status']}** — {md_text(gap['reasoning'])}", ""]
    lines += [f"- {e['kind']} `{md_text(e['ref'])}`: {md_text(e['detail'])}"
              for e in gap.get("evidence", [])]
    return [*lines, ""]


def _surface(run_dir: Path) -> list[str]:
    classes = _load(run_dir, "classification.json")
    if not classes:
        return []
    lines = ["## Surface", "", f"Slice: {md_text(classes['slice'])}", "",
             "| item | classification | reason |", "| --- | --- | --- |"]
    lines += [f"| {md_text(i['item'])} | {i['classification']} | {md_text(i.get('reason', ''))} |"
              for i in classes["items"]]
    return [*lines, ""]


def _evidence(records: list[EvidenceRecord]) -> list[str]:
    if not records:
        return []
    lines = ["## Evidence (observed by portwright, signed)", "",
             "| # | phase | gate | kind | exit | passed | commit | tests failed |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in records:
        mark = "red" if r.kind is EvidenceKind.RED else "green" if r.kind is \
            EvidenceKind.GREEN else "gate"
        lines.append(f"| {r.seq} | {r.phase or '-'} | {md_text(r.gate)} | {mark} | "
                     f"{r.exit_code} | {'yes' if r.passed else 'no'} | `{r.commit[:12]}`"
                     f"{' (dirty)' if r.dirty else ''} | "
                     f"{md_text(', '.join(r.tests_failed) or '-')} |")
    return [*lines, ""]


def _review(run_dir: Path) -> list[str]:
    lines: list[str] = []
    for path in sorted(run_dir.glob("review-*.json")):
        review = json.loads(path.read_text(encoding="utf-8"))
        lines += [f"## Review ({path.stem})", "",
                  f"**{review['decision']}** — {md_text(review['summary'])}", ""]
        lines += [f"- `{md_text(f['path'])}:{f['line']}` [{f['severity']}] {md_text(f['message'])}"
                  for f in review.get("findings", [])]
        lines.append("")
    return lines


def _cost(run_dir: Path) -> list[str]:
    spent = spend(run_dir)
    if not spent:
        return []
    lines = ["## Model use", "", "| role | calls | tokens | cost (USD) |",
             "| --- | --- | --- | --- |"]
    lines += [f"| {role} | {int(v['calls'])} | {int(v['tokens'])} | {v['cost_usd']:.4f} |"
              for role, v in spent.items()]
    return [*lines, ""]


def _timeline(state: Mapping[str, Any]) -> list[str]:
    steps = state.get("timeline") or []
    if not steps:
        return []
    lines = ["## Timeline", "", "| node | seconds | note |", "| --- | --- | --- |"]
    for step in steps:
        seconds = step_seconds(step)
        lines.append(f"| {step['node']} | {seconds:.2f} | {md_text(step.get('note', ''))} |")
    return [*lines, ""]


def step_seconds(step: Mapping[str, Any]) -> float:
    """Duration of one timeline step (its ``started`` and ``finished`` as stored)."""
    return _ts(step["finished"]) - _ts(step["started"])


def _ts(value: Any) -> float:
    from datetime import datetime

    if isinstance(value, datetime):
        return value.timestamp()
    return datetime.fromisoformat(str(value)).timestamp()
