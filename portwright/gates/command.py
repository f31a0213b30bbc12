"""One command gate, observed: run it in the sandbox, read what it left, record evidence.

The command's output can be huge (hundreds of MB) and everything it wrote is untrusted:

- its output is streamed from the sandbox's framed log into the run's log (hashed on the
  way) and scanned for test ids line by line, so host memory stays bounded whatever the
  command prints;
- a JUnit report it was asked to write is removed before the command starts (a stale one
  must not count) and read afterwards only as a regular file inside the worktree, never
  through a link, and capped in size (:mod:`portwright.safefs`): a link planted there
  cannot make the host copy the evidence key, or any other file, into a log.

The record says which commit and tree the command ran on (tracked, modified and untracked
files, taken just before it started) and the phase it ran for. A command that failed for a
missing module, program, compiler or header gets a hint pointing at ``[sandbox] setup``
(:mod:`portwright.gates.toolchain`); the verdict is the command's.
"""

from __future__ import annotations

import hashlib
import logging
import posixpath
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from portwright import safefs
from portwright.errors import GateFailed, UnsafePath
from portwright.gates.testids import from_junit_text, from_output
from portwright.gates.toolchain import MissingToolchain
from portwright.runs.models import EvidenceKind, EvidenceRecord
from portwright.runs.store import RunStore
from portwright.sandboxes.base import ExecResult, Sandbox
from portwright.sandboxes.output import iter_log
from portwright.vcs import plumbing

logger = logging.getLogger(__name__)

JUNIT_MARKER = b"\n--- junit ---\n"
STDERR_MARKER = b"\n--- stderr ---\n"
JUNIT_CAP = 64 * 1024 * 1024
"""Largest JUnit report read back from the worktree."""
MAX_IDS = 20_000
"""Most test ids a record keeps (passed and failed together; failed ones first)."""
MAX_ID_BYTES = 4 * 1024 * 1024
"""Most bytes of test ids a record keeps: with :data:`MAX_IDS`, what keeps a record one the
store reads back and host memory bounded, whatever ids a command prints."""
MAX_ID_CHARS = 1024
"""Longest test id kept; a longer one is no test id (counted, not kept)."""
IDS_CAPPED = "test ids capped"
"""How the message of a record that left test ids out begins."""


class _IdScanner:
    """Test ids from a command's output, fed in chunks, one complete line at a time; at most
    :data:`MAX_IDS` ids (:data:`MAX_ID_BYTES`) are kept, the rest counted."""

    def __init__(self) -> None:
        self.passed: set[str] = set()
        self.failed: set[str] = set()
        self.dropped = 0
        self._bytes = 0
        self._rest = b""

    def feed(self, chunk: bytes) -> None:
        data = self._rest + chunk
        cut = data.rfind(b"\n") + 1
        self._rest = data[cut:][-65536:]  # a line longer than this is no test id line
        if cut:
            self._scan(data[:cut])

    def end(self) -> None:
        if self._rest:
            self._scan(self._rest + b"\n")
        self._rest = b""

    def _scan(self, lines: bytes) -> None:
        passed, failed = from_output(lines.decode("utf-8", errors="replace"))
        for ident in failed:
            self._keep(self.failed, ident)
        for ident in passed:
            self._keep(self.passed, ident)

    def _keep(self, into: set[str], ident: str) -> None:
        if ident in into:
            return
        size = len(ident.encode("utf-8", "surrogateescape"))
        if (len(ident) > MAX_ID_CHARS or len(self.passed) + len(self.failed) >= MAX_IDS
                or self._bytes + size > MAX_ID_BYTES):
            self.dropped += 1
            return
        into.add(ident)
        self._bytes += size

    def ids(self) -> tuple[list[str], list[str]]:
        return sorted(self.passed - self.failed), sorted(self.failed)


def _kept_ids(scanner: _IdScanner | None, passed: list[str], failed: list[str],
              messages: list[str]) -> tuple[list[str], list[str], int]:
    """The ids a record keeps (the scanner's, else the JUnit report's, capped) and how many
    were left out, which ``messages`` then says."""
    if scanner is None:  # the JUnit report's ids, within the same caps, failed ones first
        scanner = _IdScanner()
        for ident in failed:
            scanner._keep(scanner.failed, ident)
        for ident in passed:
            scanner._keep(scanner.passed, ident)
    passed, failed = scanner.ids()
    if scanner.dropped:
        kept = len(passed) + len(failed)
        messages.append(f"{IDS_CAPPED}: {kept + scanner.dropped} seen, {kept} kept (at most "
                        f"{MAX_IDS}, {MAX_ID_BYTES // (1024 * 1024)} MB, ids of up to "
                        f"{MAX_ID_CHARS} characters); the log has them all")
    return passed, failed, scanner.dropped


def _stream(result: ExecResult, stream: str) -> Iterator[bytes]:
    """The whole logged output of one stream (head + tail when no log was kept)."""
    if result.log_path:
        try:
            yield from iter_log(Path(result.log_path), "stdout" if stream == "stdout"
                                else "stderr")
            return
        except (OSError, ValueError) as exc:
            logger.warning("cannot read the command's log %s: %s", result.log_path, exc)
    head, tail, total = ((result.stdout_head, result.stdout_tail, result.stdout_bytes)
                         if stream == "stdout" else
                         (result.stderr_head, result.stderr_tail, result.stderr_bytes))
    yield head.encode() + (tail.encode() if total > len(head.encode()) else b"")


def _log(result: ExecResult, junit: bytes | None, scanner: _IdScanner | None,
         missing: MissingToolchain) -> Iterator[bytes]:
    """The evidence log: stdout, a marker, stderr, and the JUnit report if any."""
    for number, stream in enumerate(("stdout", "stderr")):
        if number:
            yield STDERR_MARKER
        for chunk in _stream(result, stream):
            if scanner is not None:
                scanner.feed(chunk)
            missing.feed(chunk)
            yield chunk
        if scanner is not None:
            scanner.end()
        missing.end()
    if junit is not None:
        yield JUNIT_MARKER + junit


def _excerpt(result: ExecResult) -> str:
    """What the command printed, head and tail of both streams, for messages."""
    parts = [result.stdout_head, result.stdout_tail if result.stdout_bytes > len(
        result.stdout_head.encode()) else "", result.stderr_head, result.stderr_tail
        if result.stderr_bytes > len(result.stderr_head.encode()) else ""]
    return "\n".join(p for p in parts if p)


def _read_junit(repo: Path, rel: str,
                messages: list[str]) -> tuple[bytes | None, list[str], list[str]]:
    """The JUnit report the command wrote at ``rel`` and its (passed, failed) ids; what
    went wrong is appended to ``messages``."""
    try:
        data = safefs.read_file(repo, rel, cap=JUNIT_CAP)
    except FileNotFoundError:
        messages.append(f"{rel}: the command wrote no JUnit report where the gate declares one")
        return None, [], []
    except (UnsafePath, OSError) as exc:
        messages.append(f"{rel}: not read ({exc}); a JUnit report must be a regular file the "
                        "command wrote")
        return None, [], []
    try:
        passed, failed = from_junit_text(data.decode("utf-8", errors="replace"))
    except GateFailed as exc:
        messages.append(f"{rel}: {exc}")
        return data, [], []
    return data, passed, failed


def run_command(
    sandbox: Sandbox,
    command: str,
    *,
    repo: Path,
    name: str,
    kind: EvidenceKind = EvidenceKind.GATE,
    directory: str = "",
    timeout: float | None = None,
    junit: str | None = None,
    store: RunStore | None = None,
    phase: str | None = None,
    snapshot: tuple[str, str, bool] | None = None,
) -> tuple[EvidenceRecord, str]:
    """Run ``command`` (a shell line) in ``sandbox`` from ``directory`` of the worktree and
    record what was observed, on the tree ``snapshot`` shows (taken now when not given).
    Returns the record and an excerpt of the output (head and tail of each stream)."""
    junit_rel = posixpath.normpath(posixpath.join(directory, junit)) if junit else None
    messages: list[str] = []
    if junit_rel is not None:
        try:
            if safefs.stat(repo, junit_rel) is not None:
                snapshot = None  # the tree the caller saw held the report removed now
            safefs.unlink(repo, junit_rel)  # a stale report from an earlier run must not count
        except (UnsafePath, OSError) as exc:
            messages.append(f"{junit_rel}: {exc}")
    cwd = Path(directory) if directory else None
    sha, tree, dirty = snapshot if snapshot is not None else plumbing.snapshot(repo)
    result = sandbox.exec(["sh", "-c", command], timeout=timeout, cwd=cwd)
    junit_bytes: bytes | None = None
    passed_ids: list[str] = []
    failed_ids: list[str] = []
    if junit_rel is not None and not messages:
        junit_bytes, passed_ids, failed_ids = _read_junit(repo, junit_rel, messages)
    scanner = _IdScanner() if junit_rel is None else None
    missing = MissingToolchain()
    chunks = _log(result, junit_bytes, scanner, missing)
    if store is not None:
        log_name, log_digest = store.write_log_chunks(name, chunks)
    else:
        digest = hashlib.sha256()
        for chunk in chunks:
            digest.update(chunk)
        log_name, log_digest = None, digest.hexdigest()
    passed_ids, failed_ids, dropped = _kept_ids(scanner, passed_ids, failed_ids, messages)
    if result.timed_out:
        messages.append(f"timed out after {timeout}s and was killed")
    if result.oom_killed:
        messages.append("killed for memory")
    if result.capped:
        messages.append("output exceeded the cap; killed")
    passed = result.ok and not failed_ids and not (junit_rel is not None and messages)
    if dropped and kind in (EvidenceKind.RED, EvidenceKind.GREEN):
        # red and green are compared id by id: ids left out cannot be compared
        passed = False
        messages.append("a red or focused gate must name its tests: narrow it to the "
                        "focused tests")
    hint = missing.hint() if result.exit_code != 0 or failed_ids else None
    if hint is not None:  # a pointer for whoever reads the failure, not a verdict
        messages.append(hint)
    record = EvidenceRecord(
        gate=name, kind=kind, phase=phase, command=command, exit_code=result.exit_code,
        passed=passed, duration=round(result.duration, 3), tests_passed=passed_ids,
        tests_failed=failed_ids, log=log_name, log_sha256=log_digest, commit=sha, tree=tree,
        dirty=dirty, sandbox=getattr(sandbox, "name", ""), timestamp=datetime.now(UTC),
        messages=messages,
    )
    if store is not None:
        _, record = store.append(record)
    return record, _excerpt(result)
