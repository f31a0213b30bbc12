"""The built-in checks, as plain functions returning a :class:`GateResult`.

Each check passes when it has no failure messages; every message names ``file:line``.
:data:`BUILTINS` adapts them to a :class:`~portwright.gates.models.GateContext`, reading
gate options:

``anchors``            ``at`` (revision for anchors without ``@sha``; default the pin)
``spec-complete``      ``specs`` (globs; default the specs the change touches, else all)
``reconciled``         ``base``, ``ignore`` (globs of changed paths that need no ledger entry)
``red-green``          ``tests`` (globs of test files; default ``[upstream.path_kinds] tests``)
``no-test-weakening``  ``base``, ``tests``
``seams``              (the rules' ``[[seam]]`` tables)
``additive``           ``base`` (the rules' ``additive`` globs)
``runtime-config``     ``command`` (required), ``spec`` (path of the spec to compare with)
``tamper``             ``base``, ``tests``, ``ignore`` (globs not flagged), ``fail`` (flags fail)
``protected-paths``    ``base``, ``ignore`` (globs exempted, e.g. a venv the gates build)

The last two live in :mod:`portwright.gates.integrity`.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from portwright.config import PortwrightConfig
from portwright.errors import RevisionError, UsageError
from portwright.evidence.anchors import AnchorError, BlobReader, resolve_anchor
from portwright.gates import _diff
from portwright.gates.command import run_command
from portwright.gates.integrity import check_protected_paths, check_tamper
from portwright.gates.models import GateResult, result
from portwright.gates.testids import from_junit_text, from_output
from portwright.gates.weakening import weakening
from portwright.globs import match, match_any
from portwright.parity.inventory import load_inventory
from portwright.parity.ledger import LedgerEntry, LedgerKind, load_ledger
from portwright.parity.matrix import MatrixRow, load_rows, spec_path
from portwright.parity.pin import read_pin, resolve_pin
from portwright.parity.spec import Spec, load_spec, load_specs, spec_problems
from portwright.project import record_globs
from portwright.rules import BuiltinCheck, Rules
from portwright.runs.models import EvidenceKind, EvidenceRecord
from portwright.runs.store import RunStore
from portwright.vcs import plumbing

if TYPE_CHECKING:
    from portwright.gates.models import GateContext
    from portwright.sandboxes.base import Sandbox
    from portwright.vcs.git import Repo

logger = logging.getLogger(__name__)

__all__ = [
    "BUILTINS",
    "check_additive",
    "check_anchors",
    "check_no_test_weakening",
    "check_reconciled",
    "check_red_green",
    "check_runtime_config",
    "check_seams",
    "check_spec_complete",
]


def _usage(name: str, exc: UsageError) -> GateResult:
    return GateResult(name=name, passed=False, messages=[exc.render()], check=name)


# --------------------------------------------------------------------------- anchors

def check_anchors(repo: Path, config: PortwrightConfig, upstream: Repo, *,
                  at: str | None = None, strict: bool = False) -> GateResult:
    """Every anchor of every spec and of the ledger resolves, its excerpt matching.

    Anchors without ``@sha`` resolve at ``at``, else at their spec's ``pin``, else the pin.
    Ledger commit references must name upstream commits. A record that cannot be read (or
    a pin that names no upstream commit) fails the check; with ``strict`` it is raised
    instead, as the bad input it is.
    """
    name = BuiltinCheck.ANCHORS.value
    messages: list[str] = []
    notes: list[str] = []
    reader = BlobReader(upstream)
    try:
        pin = resolve_pin(repo, config, Path(upstream.working_dir or upstream.git_dir)) \
            if strict else read_pin(repo, config)
        specs = load_specs(repo, config)
        entries, problems = load_ledger(repo, config, strict=False)
    except UsageError as exc:
        if strict:
            raise
        return _usage(name, exc)
    messages += problems
    count = 0
    with contextlib.suppress(RevisionError):  # a missing revision is reported per anchor
        reader.prefetch([((a.sha or at or s.pin or pin), a.path) for s in specs
                         for a, _ in s.anchors]
                        + [((e.anchor.sha or at or pin), e.anchor.path) for e in entries
                           if e.anchor is not None])

    def one(anchor_rev: str, anchor: object, file: str, line: int) -> None:
        from portwright.evidence.anchors import Anchor

        assert isinstance(anchor, Anchor)
        try:
            resolve_anchor(upstream, anchor, anchor_rev, cited_in=file, cited_line=line,
                           reader=reader)
        except AnchorError as exc:
            messages.append(f"{file}:{line}: {exc.message}")

    for spec in specs:
        for anchor, line in spec.anchors:
            one(at or spec.pin or pin, anchor, spec.file, line)
            count += 1
    for entry in entries:
        if entry.anchor is not None:
            one(at or pin, entry.anchor, entry.file, entry.line)
            count += 1
        elif entry.commit is not None:
            try:
                reader.commit(entry.commit)
            except RevisionError:
                messages.append(f"{entry.file}:{entry.line}: upstream commit {entry.commit} "
                                "does not exist upstream")
            count += 1
    notes.append(f"{count} reference(s) checked")
    return result(name, messages, check=name, notes=notes if not messages else None)


# --------------------------------------------------------------------- spec-complete

def check_spec_complete(repo: Path, config: PortwrightConfig, rules: Rules, *,
                        specs: list[str] | None = None) -> GateResult:
    """Required sections present and non-empty, required answers given, front matter set,
    every surface item classified (a deferral with its reason). ``specs`` limits the check
    to those paths (default: every spec)."""
    name = BuiltinCheck.SPEC_COMPLETE.value
    required = rules.spec
    messages: list[str] = []
    try:
        chosen: list[Spec] = (load_specs(repo, config) if specs is None
                              else [load_spec(repo, repo / p) for p in specs])
        rows = load_rows(repo, config)
    except UsageError as exc:
        return _usage(name, exc)
    for row in rows:
        linked = spec_path(repo, row)
        if linked is not None and not (repo / linked).is_file():
            messages.append(f"{row.file}:{row.line}: row {row.id!r} links spec {row.spec}, "
                            "which does not exist")
    if not chosen:
        return result(name, messages, check=name,
                      notes=None if messages else ["no spec to check"])
    for spec in chosen:
        messages += spec_problems(spec, questions=required.questions,
                                  required_sections=required.sections)
    return result(name, messages, check=name)


# ------------------------------------------------------------------------ reconciled

def _covers(pattern: str, path: str) -> bool:
    pattern = pattern.strip().strip("`")
    if not pattern:
        return False
    if pattern == path or (pattern.endswith("/") and path.startswith(pattern)):
        return True
    return any(ch in pattern for ch in "*?") and match(path, pattern)


def _row_affected(repo: Path, row: MatrixRow, changed: set[str],
                  new_entries: list[LedgerEntry]) -> str | None:
    spec = spec_path(repo, row)
    if spec is not None and spec in changed:
        return f"its spec {spec} changed"
    for entry in new_entries:
        if entry.anchor is None:
            continue
        for item in row.upstream:
            is_path = "/" in item or "." in item
            if is_path and (_covers(item, entry.anchor.path) or entry.anchor.path == item
                            or entry.anchor.path.startswith(item.rstrip("/") + "/")):
                return f"ledger entry {entry.file}:{entry.line} ports {entry.anchor.path}"
            if not is_path and entry.anchor.excerpt and re.search(
                    rf"\b{re.escape(item)}\b", entry.anchor.excerpt):
                return f"ledger entry {entry.file}:{entry.line} ports {item}"
    return None


def check_reconciled(repo: Path, config: PortwrightConfig, *, base: str | None = None,
                     ignore: list[str] | None = None, head: str = "HEAD") -> GateResult:
    """Every introduced change (``base..head``) has a ledger entry, every from-scratch entry
    is in the inventory (with searched paths), every matrix row the change affects was
    updated in the change."""
    name = BuiltinCheck.RECONCILED.value
    messages: list[str] = []
    try:
        base = _diff.default_base(repo, base)
        changes = _diff.name_status(repo, base, head)
        entries, ledger_problems = load_ledger(repo, config, strict=False)
        inventory, inventory_problems = load_inventory(repo, config, strict=False)
        rows = load_rows(repo, config)
    except UsageError as exc:
        return _usage(name, exc)
    messages += ledger_problems + inventory_problems
    skip = [*record_globs(config), ".gitignore", "**/.gitignore", *(ignore or [])]
    changed = {c.path for c in changes}
    for change in changes:
        if change.status == "D" or match_any(change.path, skip):
            continue
        if not any(_covers(e.change, change.path) for e in entries):
            messages.append(f"{change.path}:1: introduced by the change but no ledger entry "
                            f"covers it (add a row to {config.artifacts.ledger})")
    for entry in entries:
        if entry.kind is not LedgerKind.FROM_SCRATCH:
            continue
        if not any(_covers(i.path, entry.change) or _covers(entry.change, i.path)
                   or i.item == entry.change for i in inventory):
            messages.append(f"{entry.file}:{entry.line}: {entry.change} is from scratch but "
                            f"not in the inventory ({config.artifacts.inventory})")
    ledger_rel = config.artifacts.ledger
    new_lines = (_diff.added_lines(repo, base, ledger_rel, head) if ledger_rel in changed
                 else set())
    new_entries = [e for e in entries if e.line in new_lines]
    added_by_file: dict[str, set[int]] = {}
    for row in rows:
        why = _row_affected(repo, row, changed, new_entries)
        if why is None:
            continue
        if row.file not in added_by_file:
            added_by_file[row.file] = (_diff.added_lines(repo, base, row.file, head)
                                       if row.file in changed else set())
        if row.line not in added_by_file[row.file]:
            messages.append(f"{row.file}:{row.line}: row {row.id!r} is affected ({why}) but "
                            f"was not updated (status still {row.status!r})")
    return result(name, messages, check=name)


# ------------------------------------------------------------------------- red-green

def _commit_exists(repo: Path, sha: str) -> bool:
    return plumbing.is_commit(repo, sha)


def _observed_ids(store: RunStore, record: EvidenceRecord) -> tuple[list[str], list[str]]:
    text = store.log_text(record)
    marker = "\n--- junit ---\n"
    if marker in text:
        return from_junit_text(text.split(marker, 1)[1])
    return from_output(text.replace("\n--- stderr ---\n", "\n"))


def _check_record(repo: Path, store: RunStore, record: EvidenceRecord, label: str) -> list[str]:
    where = f"{store.dir.name}/{label} record ({record.gate})"
    out: list[str] = []
    digest = store.log_digest(record)
    if record.log_sha256 is None or digest != record.log_sha256:
        out.append(f"{where}: the log does not match the digest recorded "
                   "(edited or forged evidence)")
        return out
    passed, failed = _observed_ids(store, record)
    if sorted(record.tests_failed) != failed or sorted(record.tests_passed) != passed:
        out.append(f"{where}: the test ids recorded are not those in its log "
                   "(edited or forged evidence)")
    if not _commit_exists(repo, record.commit):
        out.append(f"{where}: commit {record.commit[:12]} does not exist in this repository")
    if record.dirty:
        out.append(f"{where}: ran on a tree with uncommitted changes; commit, then run again")
    return out


def _same_tests(red: EvidenceRecord, green: EvidenceRecord) -> list[str]:
    """Every test that failed in red passes in green, and green ran no test red did not run
    (a suite that also holds passing tests is fine: they passed in red too)."""
    failed_red, green_ids = set(red.tests_failed), set(green.tests_passed)
    ran_red = failed_red | set(red.tests_passed)
    not_green = sorted(failed_red - green_ids)
    new = sorted(green_ids - ran_red)
    if not red.tests_failed or not (not_green or new):
        return []
    return ["red and green ran different tests: " + "; ".join(p for p in (
        f"failing in red but not passing in green: {', '.join(not_green)}" if not_green
        else "",
        f"passing in green but never run in red: {', '.join(new)}" if new else "") if p)]


def _order_problems(red: EvidenceRecord, green: EvidenceRecord, red_commit: str | None,
                    green_commit: str | None) -> list[str]:
    out: list[str] = []
    if red.seq >= green.seq:
        out.append(f"red record #{red.seq} was observed after green record #{green.seq}: "
                   "red must come first, on the tree without the implementation")
    for label, record, wanted in (("red", red, red_commit), ("green", green, green_commit)):
        if wanted is not None and record.commit != wanted:
            out.append(f"{label} record ({record.gate}) ran on {record.commit[:12]}, not on "
                       f"this run's {label} commit {wanted[:12]}")
    return out


def check_red_green(repo: Path, store: RunStore | None, *, tests: list[str],
                    red_commit: str | None = None,
                    green_commit: str | None = None) -> GateResult:
    """The focused tests were observed failing before the implementation and passing after:
    every record of the run carries this machine's signature and this run's id and number,
    the last red was observed before the last green, they agree on test ids, their logs match
    their digests and their test ids, the red commit is an ancestor of the green one, no test
    file changed in between, and something else did. A caller that knows the run's
    tests-only and implementation commits passes them as ``red_commit`` / ``green_commit``:
    the records must have run on exactly those."""
    name = BuiltinCheck.RED_GREEN.value
    if store is None:
        return result(name, ["no run store: red-green needs the run's evidence records"],
                      check=name)
    try:
        untrusted = store.untrusted()
        if untrusted:  # a record the framework did not sign is reported, never read
            return result(name, [exc.render() for exc in untrusted], check=name)
        reds = store.records(EvidenceKind.RED)
        greens = store.records(EvidenceKind.GREEN)
    except UsageError as exc:  # an untrusted record, or no usable evidence key
        return _usage(name, exc)
    if not reds or not greens:
        missing = " and ".join(k for k, v in (("red", reds), ("green", greens)) if not v)
        return result(name, [f"{store.dir}: no {missing} record; run the focused tests on the "
                             "tree without and with the implementation"], check=name)
    red, green = reds[-1], greens[-1]
    messages = (_check_record(repo, store, red, "red")
                + _check_record(repo, store, green, "green")
                + _order_problems(red, green, red_commit, green_commit))
    if messages:
        return result(name, messages, check=name)
    if red.exit_code == 0 or not red.tests_failed:
        messages.append(f"red record ({red.gate}): the focused tests did not fail on "
                        f"{red.commit[:12]}; a test that passes already proves nothing")
    if green.exit_code != 0 or green.tests_failed:
        messages.append(f"green record ({green.gate}): the focused tests did not pass on "
                        f"{green.commit[:12]} (failed: {', '.join(green.tests_failed) or '-'})")
    messages += _same_tests(red, green)
    if not plumbing.is_ancestor(repo, red.commit, green.commit):
        messages.append(f"red commit {red.commit[:12]} is not an ancestor of green commit "
                        f"{green.commit[:12]}")
        return result(name, messages, check=name)
    between = _diff.name_status(repo, red.commit, green.commit)
    touched_tests = [c for c in between if match_any(c.path, tests)
                     or (c.old_path is not None and match_any(c.old_path, tests))]
    for change in touched_tests:
        messages.append(f"{change.path}:1: test file changed between red ({red.commit[:12]}) "
                        f"and green ({green.commit[:12]})")
    if not [c for c in between if c not in touched_tests]:
        messages.append(f"nothing but tests changed between red ({red.commit[:12]}) and green "
                        f"({green.commit[:12]}): where is the implementation?")
    return result(name, messages, check=name)


# ---------------------------------------------------------------- no-test-weakening

def check_no_test_weakening(repo: Path, *, base: str | None, tests: list[str],
                            head: str = "HEAD") -> GateResult:
    """The diff of test files (``base..head``) adds no skip/xfail, removes no assertion,
    loosens no tolerance (Python and C++ patterns)."""
    name = BuiltinCheck.NO_TEST_WEAKENING.value
    try:
        base = _diff.default_base(repo, base)
        changes = _diff.name_status(repo, base, head)
    except UsageError as exc:
        return _usage(name, exc)
    paths: set[str] = set()
    for change in changes:
        for path in (change.path, change.old_path):
            if path is not None and match_any(path, tests):
                paths.update(p for p in (change.path, change.old_path) if p is not None)
    findings = weakening(_diff.unified(repo, base, sorted(paths), head))
    messages = [f.render() for f in findings]
    for change in changes:
        if change.status == "D" and match_any(change.path, tests):
            messages.append(f"{change.path}:1: test file deleted")
    return result(name, messages, check=name)


# ---------------------------------------------------------------------------- seams

def check_seams(repo: Path, config: PortwrightConfig, rules: Rules, *,
                files: list[str] | None = None) -> GateResult:
    """Files implementing a seam's behaviour route through it, or are a tracked exception
    (listed in the seam and covered by a ``divergence`` ledger entry)."""
    name = BuiltinCheck.SEAMS.value
    messages: list[str] = []
    try:
        entries, _ = load_ledger(repo, config, strict=False)
    except UsageError as exc:
        return _usage(name, exc)
    candidates = files if files is not None else _diff.tracked(repo)
    for seam in rules.seams:
        pattern, through = re.compile(seam.pattern, re.MULTILINE), re.compile(seam.through)
        for path in candidates:
            if seam.paths and not match_any(path, seam.paths):
                continue
            file = repo / path
            if not file.is_file():
                continue
            text = file.read_text(encoding="utf-8", errors="replace")
            hit = pattern.search(text)
            if hit is None or through.search(text):
                continue
            line = text.count("\n", 0, hit.start()) + 1
            if match_any(path, seam.exceptions) or path in seam.exceptions:
                tracked = [e for e in entries if _covers(e.change, path)
                           and e.kind is LedgerKind.DIVERGENCE]
                if not tracked:
                    messages.append(f"{path}:{line}: bypasses seam {seam.name!r} as an "
                                    "exception, but no divergence entry in the ledger tracks it")
                continue
            messages.append(f"{path}:{line}: implements {seam.name!r} "
                            f"(`{hit.group(0).strip()}`) without routing through it "
                            f"(expected /{seam.through}/ in the file)")
    return result(name, messages, check=name)


# -------------------------------------------------------------------------- additive

def check_additive(repo: Path, rules: Rules, *, base: str | None,
                   head: str = "HEAD") -> GateResult:
    """Under the rules' ``additive`` globs a change (``base..head``) may only add files."""
    name = BuiltinCheck.ADDITIVE.value
    globs = rules.additive
    if not globs:
        return result(name, [], check=name, notes=["no additive paths declared"])
    try:
        base = _diff.default_base(repo, base)
        changes = _diff.name_status(repo, base, head)
    except UsageError as exc:
        return _usage(name, exc)
    verbs = {"M": "edits", "D": "deletes", "R": "renames", "T": "changes the type of",
             "C": "copies over"}
    messages = []
    for change in changes:
        paths = [change.path] + ([change.old_path] if change.old_path else [])
        if change.status == "A" or not any(match_any(p, globs) for p in paths):
            continue
        if change.status == "C" and not match_any(change.old_path or "", globs):
            continue
        messages.append(f"{change.path}:1: the change {verbs.get(change.status, 'modifies')} "
                        f"an existing file under additive paths ({', '.join(globs)}); "
                        "add new files instead")
    return result(name, messages, check=name)


# -------------------------------------------------------------------- runtime-config

def check_runtime_config(repo: Path, rules: Rules, sandbox: Sandbox | None, *,
                         command: str, spec: Path, store: RunStore | None = None,
                         timeout: float = 600.0) -> GateResult:
    """Run ``command``, extract the values it logs with the rules' ``[[runtime]]`` probes,
    and compare each with the answer ``spec`` declares under the probe's name."""
    name = BuiltinCheck.RUNTIME_CONFIG.value
    probes = rules.runtime
    if not probes:
        return result(name, ["no [[runtime]] probes in the rules; declare what to extract"],
                      check=name)
    if sandbox is None:
        return result(name, ["no sandbox to run the program in"], check=name)
    try:
        declared = load_spec(repo, spec)
    except UsageError as exc:
        return _usage(name, exc)
    record, output = run_command(sandbox, command, repo=repo, name=name, store=store,
                                 timeout=timeout)
    messages: list[str] = []
    at = f"{declared.file}:{declared.front_line or 1}"
    for probe in probes:
        values = sorted({m.group("value").strip()
                         for m in re.finditer(probe.pattern, output, re.MULTILINE)})
        wanted = declared.answers.get(probe.name)
        if wanted is None:
            messages.append(f"{at}: the spec declares no `{probe.name}` to compare with")
            continue
        if not values:
            messages.append(f"`{command}` (exit {record.exit_code}) logged no {probe.name} "
                            f"(pattern /{probe.pattern}/)")
            continue
        if any(v.strip().lower() != wanted.strip().lower() for v in values):
            messages.append(f"{at}: the spec declares {probe.name} = {wanted!r}, but the "
                            f"running program logged {', '.join(map(repr, values))}")
    return result(name, messages, check=name)


# ------------------------------------------------------------------------ dispatch

def _option_list(ctx: GateContext, key: str, default: list[str]) -> list[str]:
    value = ctx.options.get(key)
    if value is None:
        return default
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _option_str(ctx: GateContext, key: str) -> str | None:
    value = ctx.options.get(key)
    return None if value is None else str(value)


def _option_bool(ctx: GateContext, key: str) -> bool:
    value = ctx.options.get(key)
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _tests_globs(ctx: GateContext) -> list[str]:
    return _option_list(ctx, "tests", ctx.config.upstream.path_kinds.get("tests", []))


def _changed_specs(ctx: GateContext) -> list[str] | None:
    globs = ctx.options.get("specs")
    folder = ctx.config.artifacts.specs.rstrip("/") + "/"
    if globs is not None:
        patterns = _option_list(ctx, "specs", [])
        from portwright.parity._files import glob_files, rel

        return [rel(ctx.repo, p) for p in glob_files(ctx.repo, patterns)]
    if ctx.changed is not None:
        return [p for p in ctx.changed if p.startswith(folder) and p.endswith(".md")
                and (ctx.repo / p).is_file()] or None
    return None


def _anchors(ctx: GateContext) -> GateResult:
    try:
        upstream = ctx.upstream()
    except UsageError as exc:
        return _usage(BuiltinCheck.ANCHORS.value, exc)
    return check_anchors(ctx.repo, ctx.config, upstream, at=_option_str(ctx, "at"))


def _spec_complete(ctx: GateContext) -> GateResult:
    return check_spec_complete(ctx.repo, ctx.config, ctx.rules, specs=_changed_specs(ctx))


def _reconciled(ctx: GateContext) -> GateResult:
    return check_reconciled(ctx.repo, ctx.config, base=ctx.base or _option_str(ctx, "base"),
                            ignore=_option_list(ctx, "ignore", []), head=ctx.head)


def _red_green(ctx: GateContext) -> GateResult:
    return check_red_green(ctx.repo, ctx.store, tests=_tests_globs(ctx))


def _weakening(ctx: GateContext) -> GateResult:
    return check_no_test_weakening(ctx.repo, base=ctx.base or _option_str(ctx, "base"),
                                   tests=_tests_globs(ctx), head=ctx.head)


def _seams(ctx: GateContext) -> GateResult:
    return check_seams(ctx.repo, ctx.config, ctx.rules, files=ctx.changed)


def _additive(ctx: GateContext) -> GateResult:
    return check_additive(ctx.repo, ctx.rules, base=ctx.base or _option_str(ctx, "base"),
                          head=ctx.head)


def _runtime(ctx: GateContext) -> GateResult:
    name = BuiltinCheck.RUNTIME_CONFIG.value
    command = _option_str(ctx, "command")
    if not command:
        return result(name, [f"{ctx.gate.source}: gate {ctx.gate.name!r} needs "
                             "options.command (the program whose log says what ran)"],
                      check=name)
    spec = _option_str(ctx, "spec")
    if spec is None:
        changed = _changed_specs(ctx) or []
        if len(changed) != 1:
            return result(name, [f"{ctx.gate.source}: gate {ctx.gate.name!r} needs "
                                 "options.spec (which spec's answers to compare with)"],
                          check=name)
        spec = changed[0]
    return check_runtime_config(ctx.repo, ctx.rules, ctx.sandbox, command=command,
                                spec=ctx.repo / spec, store=ctx.store,
                                timeout=ctx.gate.spec.timeout)


def _tamper(ctx: GateContext) -> GateResult:
    return check_tamper(ctx.repo, base=ctx.base or _option_str(ctx, "base"),
                        tests=_tests_globs(ctx), ignore=_option_list(ctx, "ignore", []),
                        fail=_option_bool(ctx, "fail"))


def _protected_paths(ctx: GateContext) -> GateResult:
    return check_protected_paths(ctx.repo, base=ctx.base or _option_str(ctx, "base"),
                                 ignore=_option_list(ctx, "ignore", []))


BUILTINS: dict[BuiltinCheck, Callable[[GateContext], GateResult]] = {
    BuiltinCheck.ANCHORS: _anchors,
    BuiltinCheck.SPEC_COMPLETE: _spec_complete,
    BuiltinCheck.RECONCILED: _reconciled,
    BuiltinCheck.RED_GREEN: _red_green,
    BuiltinCheck.NO_TEST_WEAKENING: _weakening,
    BuiltinCheck.SEAMS: _seams,
    BuiltinCheck.ADDITIVE: _additive,
    BuiltinCheck.RUNTIME_CONFIG: _runtime,
    BuiltinCheck.TAMPER: _tamper,
    BuiltinCheck.PROTECTED_PATHS: _protected_paths,
}

RUNS_COMMANDS: frozenset[BuiltinCheck] = frozenset({BuiltinCheck.RUNTIME_CONFIG})
"""The checks that run a command in the sandbox (which may change the worktree): the others
only read it, so consecutive ones of a phase share the snapshot of the tree taken before
the first (:func:`portwright.gates.runner.run_gates`)."""
