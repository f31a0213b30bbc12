"""The report of a pin sync: the per-commit table (verdict, who decided it, how it is
accounted for, what holds it back), the port runs, the pin gates. It is the body of the
pin advance's pull request and what ``portwright report SYNC`` prints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from portwright.runs.report import md_text

__all__ = ["commit_rows", "render_sync_report"]


def commit_rows(values: Mapping[str, Any]) -> list[dict[str, str]]:
    """One plain row per upstream commit: sha, subject, verdict, decided by, account,
    row / run, hold."""
    out = []
    for c in values.get("commits", []):
        out.append({"commit": str(c["sha"])[:12], "subject": str(c["subject"]),
                    "verdict": str(c.get("verdict") or c["scan"]),
                    "decided_by": str(c.get("decided_by", "scan")),
                    "account": str(c["account"]),
                    "run": str(c.get("run_id") or ""), "row": str(c.get("row") or ""),
                    "hold": str(c.get("hold") or "")})
    return out


def _pin_line(values: Mapping[str, Any]) -> str:
    if values.get("target") and values.get("target") == values.get("pin"):
        return f"already at `{str(values['target'])[:12]}`: nothing to move"
    if values.get("pin_commit") and values.get("status") == "done":
        return f"moved to `{str(values.get('target', ''))[:12]}` in " \
               f"`{str(values['pin_commit'])[:12]}`"
    return f"not moved (still `{str(values.get('pin', ''))[:12]}`)"


def render_sync_report(values: Mapping[str, Any]) -> str:
    """The sync's report as markdown."""
    status = values.get("status", "?")
    parts = [f"# portwright sync `{values.get('sync_id', '?')}`: upstream "
             f"`{str(values.get('pin', ''))[:12]}` → `{str(values.get('target', ''))[:12]}`", "",
             f"- status: **{status}**"
             + (f" — {md_text(values['reason'])}" if values.get("reason") else ""),
             f"- branch: `{values.get('branch', '')}` from `{str(values.get('base', ''))[:12]}`",
             f"- pin: {_pin_line(values)}",
             "", "## Upstream commits", "",
             "| commit | subject | verdict | decided by | account | port run | holds the pin "
             "back |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in commit_rows(values):
        parts.append(f"| `{row['commit']}` | {md_text(row['subject'])} | {row['verdict']} | "
                     f"{row['decided_by']} | {row['account']} | {md_text(row['run']) or '-'} | "
                     f"{md_text(row['hold']) or '-'} |")
    ports = values.get("ports", {})
    if ports:
        parts += ["", "## Port runs", "", "| row | run | status | branch | failed gates |",
                  "| --- | --- | --- | --- | --- |"]
        for row, result in ports.items():
            parts.append(f"| {md_text(row)} | `{result['run_id']}` | {result['status']} | "
                         f"`{result.get('branch', '')}` | "
                         f"{', '.join(result.get('failed_gates', [])) or '-'} |")
    gates = values.get("gates", [])
    parts += ["", "## Pin gates", ""]
    if gates:
        parts += ["| gate | result | record | message |", "| --- | --- | --- | --- |"]
        parts += [f"| pin/{md_text(g['name'])} | {'passed' if g['passed'] else 'FAILED'} | "
                  f"{g.get('record') or '-'} | {md_text(g.get('message', ''))[:200] or '-'} |"
                  for g in gates]
    else:
        parts.append("Not run: the pin gates run once every commit is accounted for.")
    parts += ["", "Every verdict above comes from the framework's gap scan, or from the gap "
              "verifier within the verdicts the scan's evidence allows (`decided by`); the "
              "evidence of each commit is in the sync's `gap.json` and in its ledger entry.", ""]
    return "\n".join(parts)
