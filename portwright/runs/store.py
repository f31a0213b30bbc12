"""On-disk layout of a run::

    <state folder>/runs/<run_id>/       (see :class:`portwright.project.Project`)
        run.json                    the manifest: version, commit, rules digests, config
        evidence/0001-unit.json     one EvidenceRecord per observation, numbered in order
        logs/0001-unit.log          the full output of that command

That folder lies outside every tree a sandbox mounts, and the store writes its files
without following links (``O_NOFOLLOW``; evidence files are never overwritten). Still, it
trusts only what it signed itself: :meth:`RunStore.add` binds each record to the run (run
id, sequence number) and sets its
``mac``, an HMAC-SHA256 with this machine's evidence key (:mod:`portwright.runs.keys`, kept
outside every repository and every sandbox) over the record's canonical JSON, which
includes the log's sha256. :meth:`RunStore.records` verifies every record and raises
:class:`UntrustedEvidence` naming the file whose signature is missing or wrong;
:meth:`RunStore.untrusted` lists every such file. A record copied from another machine,
or rewritten together with its log and digest, does not verify; a record signed for
another run, or moved to another number in this one, is refused.

Records form a chain: each one's signature covers the signature of the record before it
(:attr:`EvidenceRecord.prev`), and ``chain.json`` beside them is a signed head (how many
records there are, the last one's signature), replaced at each append. So a record removed
from the middle or the end, records swapped or renumbered, or a head that went missing are
named by :meth:`RunStore.untrusted` (and with it by ``portwright log``, the pages and the
red-green gate). What a chain cannot show: a head *and* the records after it put back from
an earlier copy of the run's own folder, which only someone who can write the state folder
(the host user, never a sandbox) could do.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import stat
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from portwright.config import PortwrightConfig
from portwright.errors import ParityFileError, RunStateError, UsageError
from portwright.redact import redact_data
from portwright.runs.keys import evidence_key
from portwright.runs.models import EvidenceKind, EvidenceRecord, RunManifest

logger = logging.getLogger(__name__)

CHAIN_HEAD = "chain.json"
"""The signed head of a run's evidence chain, in the run's folder."""
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _slug(name: str) -> str:
    return _SAFE.sub("_", name).strip("_") or "gate"


def _write_new(path: Path, data: bytes, *, replace: bool = False) -> None:
    """Write ``path`` without following a link there; refuse an existing file unless
    ``replace`` (then a link or other non-file in its place is still refused).

    The bytes go to a hidden ``.partial`` file first, which then takes the name (a hard
    link, which fails on any existing name; or, to replace, a rename): a process killed
    mid-write leaves a stray ``.partial`` file, never a named record cut short, which a
    resumed run would read as broken evidence."""
    if replace:
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                raise UntrustedEvidence("not a regular file", file=path, fix=_UNTRUSTED_FIX)
        except FileNotFoundError:
            pass
    partial = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        if replace:
            partial.replace(path)  # a name is replaced, never followed
        else:
            os.link(partial, path, follow_symlinks=False)  # FileExistsError on any name
    finally:
        partial.unlink(missing_ok=True)


def _read_regular(path: Path, cap: int = 16 * 1024 * 1024) -> bytes:
    """The bytes of ``path``, a regular file (never through a link), at most ``cap``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise UntrustedEvidence(f"not a regular file ({exc.strerror})", file=path,
                                fix=_UNTRUSTED_FIX) from exc
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UntrustedEvidence("not a regular file", file=path, fix=_UNTRUSTED_FIX)
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise UntrustedEvidence(f"larger than {cap} bytes", file=path, fix=_UNTRUSTED_FIX)
    return data


class UntrustedEvidence(ParityFileError):
    """An evidence file that portwright did not write (and sign) on this machine."""


_UNTRUSTED_FIX = ("evidence files are written by portwright only; remove the run's evidence "
                  "and run the gates again")


class RunStore:
    """Evidence records and logs of one run.

    ``key`` signs and verifies the records; by default this machine's evidence key
    (:func:`~portwright.runs.keys.evidence_key`, read when first needed).
    """

    def __init__(self, root: Path, run_id: str, *, key: bytes | None = None) -> None:
        if not run_id or _slug(run_id) != run_id or run_id.startswith("."):
            raise UsageError(f"run id {run_id!r} is not a valid run id", key="run id",
                             fix="use letters, digits, '.', '_' and '-' only, not starting "
                                 "with '.'")
        self.root = root
        self.run_id = run_id
        self.dir = root / run_id
        self._key = key

    def _signing_key(self) -> bytes:
        if self._key is None:
            self._key = evidence_key()
        return self._key

    @property
    def evidence_dir(self) -> Path:
        return self.dir / "evidence"

    @property
    def logs_dir(self) -> Path:
        return self.dir / "logs"

    @property
    def head_path(self) -> Path:
        return self.dir / CHAIN_HEAD

    def _head_mac(self, count: int, last: str) -> str:
        message = f"portwright-chain\0{self.run_id}\0{count}\0{last}".encode()
        return hmac.new(self._signing_key(), message, hashlib.sha256).hexdigest()

    def _write_head(self, count: int, last: str) -> None:
        head = {"count": count, "last": last, "mac": self._head_mac(count, last)}
        _write_new(self.head_path, (json.dumps(head) + "\n").encode("utf-8"), replace=True)

    def _read_head(self) -> tuple[int, str] | None:
        """The head's (count, last signature); None when there is none; raises
        :class:`UntrustedEvidence` for one this store did not sign."""
        if not os.path.lexists(self.head_path):
            return None
        try:
            data = json.loads(_read_regular(self.head_path, cap=4096))
        except ValueError as exc:
            raise UntrustedEvidence("the head of the evidence chain is not JSON",
                                    file=self.head_path, fix=_UNTRUSTED_FIX) from exc
        count, last, mac = (data.get(k) if isinstance(data, dict) else None
                            for k in ("count", "last", "mac"))
        if not (isinstance(count, int) and isinstance(last, str) and isinstance(mac, str)
                and hmac.compare_digest(mac, self._head_mac(count, last))):
            raise UntrustedEvidence("the head of the evidence chain is not signed by this "
                                    "machine for this run", file=self.head_path,
                                    fix=_UNTRUSTED_FIX)
        return count, last

    def _next_seq(self) -> int:
        if not self.evidence_dir.is_dir():
            return 1
        numbers = [self.number(p) for p in self.evidence_dir.glob("*.json")]
        return max((n for n in numbers if n is not None), default=0) + 1

    def write_manifest(self, *, command: str, commit: str, rules_digests: dict[str, str],
                       config: PortwrightConfig, engine: Literal["local", "temporal"] = "local",
                       workflow_id: str | None = None) -> Path:
        """Record what the run used: its command, the downstream commit, the sha256 of every
        rules file, the configuration (redacted: a password in a URL, such as
        ``[runs] checkpoint_url``'s, is masked; a key or token is only ever named by its
        variable), and what drives it (``engine``, the Temporal ``workflow_id``)."""
        from portwright import __version__

        self.dir.mkdir(parents=True, exist_ok=True)
        path = self.dir / "run.json"
        manifest = RunManifest(run_id=self.run_id, command=command, commit=commit,
                               portwright=__version__, created=datetime.now(UTC),
                               rules=rules_digests,
                               config=redact_data(config.model_dump(mode="json")),
                               engine=engine, workflow_id=workflow_id)
        _write_new(path, (manifest.model_dump_json(indent=2) + "\n").encode("utf-8"),
                   replace=True)
        return path

    def manifest(self) -> RunManifest | None:
        """The run's ``run.json``; None when there is none. Raises
        :class:`~portwright.errors.RunStateError` naming the file when it does not read as
        a manifest (damaged, cut short, written by another program)."""
        path = self.dir / "run.json"
        if not path.is_file():
            return None
        try:
            return RunManifest.model_validate_json(path.read_bytes())
        except (OSError, ValidationError) as exc:
            if isinstance(exc, OSError):
                why = exc.strerror or str(exc)
            else:
                first = exc.errors()[0]
                where = ".".join(str(part) for part in first["loc"])
                why = f"{where}: {first['msg']}" if where else first["msg"]
            raise RunStateError(
                f"run {self.run_id}'s manifest does not read ({why}): what started the run, "
                "its commit and config are lost", file=path,
                fix=f"put run.json back from a copy, if there is one; without it the run "
                    "cannot be resumed (`portwright status` shows its checkpoint, if any): "
                    f"move its folder aside (`mv {self.dir} {self.dir}.damaged`) and start a "
                    "new run of its row") from exc

    def write_log(self, name: str, data: bytes) -> tuple[str, str]:
        """Store a log; returns (path relative to the run directory, sha256)."""
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        path = self.logs_dir / f"{self._next_seq():04d}-{_slug(name)}.log"
        _write_new(path, data, replace=True)
        return path.relative_to(self.dir).as_posix(), hashlib.sha256(data).hexdigest()

    def write_log_chunks(self, name: str, chunks: Iterable[bytes]) -> tuple[str, str]:
        """Store a log given in pieces (bounded memory); returns (path relative to the run
        directory, sha256)."""
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        path = self.logs_dir / f"{self._next_seq():04d}-{_slug(name)}.log"
        digest = hashlib.sha256()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        with os.fdopen(fd, "wb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise UntrustedEvidence("not a regular file", file=path, fix=_UNTRUSTED_FIX)
            for chunk in chunks:
                digest.update(chunk)
                handle.write(chunk)
        return path.relative_to(self.dir).as_posix(), digest.hexdigest()

    def add(self, record: EvidenceRecord) -> Path:
        """:meth:`append` ``record``; returns the file written."""
        return self.append(record)[0]

    def append(self, record: EvidenceRecord) -> tuple[Path, EvidenceRecord]:
        """Bind ``record`` to this run (run id, next sequence number), sign it and write it
        as the next numbered evidence file (never through a link, never over a file);
        returns the file and the record as written."""
        key = self._signing_key()
        seq = self._next_seq()
        prev = self._prev_for(seq)
        record = record.model_copy(update={"run_id": self.run_id, "seq": seq, "mac": None,
                                           "prev": prev})
        record = record.model_copy(update={"mac": record.sign(key)})
        self.evidence_dir.mkdir(parents=True, exist_ok=True)
        path = self.evidence_dir / f"{seq:04d}-{_slug(record.gate)}.json"
        _write_new(path, (record.model_dump_json(indent=2) + "\n").encode("utf-8"))
        assert record.mac is not None
        self._write_head(seq, record.mac)
        logger.debug("evidence %s: %s passed=%s", path.name, record.gate, record.passed)
        return path, record

    def _prev_for(self, seq: int) -> str:
        """What record ``seq`` links to: the last signature the head names ("" for a run's
        first record). Without a head, the signature of record ``seq - 1`` when that is a
        record of a run written before chains (it links the new one in); else "": a head that
        went missing leaves the chain broken, never mended by the next record."""
        if seq <= 1:
            return ""
        try:
            head = self._read_head()
        except UntrustedEvidence:
            return ""  # the chain names the forged head
        if head is not None:
            return head[1]
        found = [p for p in self._paths() if p.name.startswith(f"{seq - 1:04d}-")]
        try:
            last = self.read(found[0]) if len(found) == 1 else None
        except UntrustedEvidence:
            return ""
        if last is None or last.prev is not None:
            return ""
        return last.mac or ""

    def _scan(self) -> tuple[list[EvidenceRecord], list[UntrustedEvidence], set[int]]:
        """Every evidence file read once: the records that verify, the errors of those that
        do not, and the numbers of those."""
        records: list[EvidenceRecord] = []
        errors: list[UntrustedEvidence] = []
        unreadable: set[int] = set()
        for path in self._paths():
            try:
                records.append(self.read(path))
            except UntrustedEvidence as exc:
                errors.append(exc)
                number = self.number(path)
                if number is not None:
                    unreadable.add(number)
        return records, errors, unreadable

    @staticmethod
    def number(path: Path) -> int | None:
        """The sequence number an evidence file's name gives (``0007-unit.json`` → 7)."""
        number = path.name.split("-", 1)[0]
        return int(number) if number.isdigit() else None

    def chain_problems(self, records: list[EvidenceRecord] | None = None,
                       unreadable: set[int] | frozenset[int] = frozenset()
                       ) -> list[UntrustedEvidence]:
        """Where the chain of records is broken: a number missing, a record whose
        predecessor is not the one it signed, a head that is missing or names more records
        (or another last one) than there are. Records of a run written before chains (no
        ``prev``, no head) have none. ``records`` (and the numbers of the files that did
        not verify, ``unreadable``) when the caller read them already."""
        if records is None:
            records, _, unreadable = self._scan()
        chained = [r for r in records if r.prev is not None]
        if not chained:
            return []
        problems: list[UntrustedEvidence] = []

        def broken(message: str) -> None:
            problems.append(UntrustedEvidence(message, file=self.evidence_dir,
                                              fix=_UNTRUSTED_FIX))

        seqs = {r.seq for r in records} | unreadable
        top = max(seqs)
        for seq in range(1, top + 1):
            if seq not in seqs:
                broken(f"evidence record {seq} is missing (removed after it was signed)")
        by_seq = {r.seq: r for r in records}
        for record in chained:
            before = by_seq.get(record.seq - 1)
            expected = "" if record.seq == 1 else (before.mac if before is not None
                                                    and record.seq - 1 not in unreadable
                                                    else None)
            if expected is not None and record.prev != expected:
                broken(f"evidence record {record.seq} does not follow record "
                       f"{record.seq - 1}: records were replaced or reordered")
        try:
            head = self._read_head()
        except UntrustedEvidence as exc:
            return [*problems, exc]
        if head is None:
            broken("the head of the chain is missing (chain.json): records may have been "
                   "removed at the end")
            return problems
        count, last = head
        if count > top:
            broken(f"{count} records were signed, {len(records)} remain: records were "
                   "removed at the end")
        elif count < top or (top not in unreadable and by_seq[top].mac != last):
            broken("the head of the chain does not name the last record: the chain was put "
                   "back from an earlier copy, or records were added by another writer")
        return problems

    def read(self, path: Path) -> EvidenceRecord:
        """The record in ``path``, its signature verified.

        Raises :class:`UntrustedEvidence` when the file is not a record, or its ``mac`` is
        missing or was not made with this store's key.
        """
        try:
            record = EvidenceRecord.model_validate_json(_read_regular(path))
        except ValidationError as exc:
            raise UntrustedEvidence(f"not an evidence record: {exc.errors()[0]['msg']}",
                                    file=path, fix=_UNTRUSTED_FIX) from exc
        if record.mac is None:
            raise UntrustedEvidence("not written by portwright on this machine: the record "
                                    "is not signed", file=path, fix=_UNTRUSTED_FIX)
        if not record.signed_by(self._signing_key()):
            raise UntrustedEvidence("not written by portwright on this machine: signature "
                                    "mismatch (edited, forged or signed with another key)",
                                    file=path, fix=_UNTRUSTED_FIX)
        if record.run_id != self.run_id:
            raise UntrustedEvidence(f"a record of run {record.run_id!r}, not of this run "
                                    f"({self.run_id!r}): copied from another run",
                                    file=path, fix=_UNTRUSTED_FIX)
        if self.number(path) != record.seq:
            raise UntrustedEvidence(f"record number {record.seq} of this run stored as "
                                    f"{path.name}: moved or replayed out of order",
                                    file=path, fix=_UNTRUSTED_FIX)
        return record

    def _paths(self) -> list[Path]:
        if not self.evidence_dir.is_dir():
            return []
        return sorted(self.evidence_dir.glob("*.json"))

    def records(self, kind: EvidenceKind | None = None) -> list[EvidenceRecord]:
        """Every record in order (optionally only one kind), each signature verified;
        the first file that does not verify raises :class:`UntrustedEvidence`."""
        out: list[EvidenceRecord] = []
        for path in self._paths():
            record = self.read(path)
            if kind is None or record.kind is kind:
                out.append(record)
        return out

    def untrusted(self) -> list[UntrustedEvidence]:
        """Every evidence file that does not verify, one error each, and where the chain of
        them is broken (:meth:`chain_problems`); empty: all good."""
        records, errors, unreadable = self._scan()
        return errors + self.chain_problems(records, unreadable)

    def log_digest(self, record: EvidenceRecord) -> str | None:
        """sha256 of the log ``record`` points at, as it is on disk now (None if missing)."""
        path = self._log_path(record)
        if path is None:
            return None
        digest = hashlib.sha256()
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        return digest.hexdigest()

    def _log_path(self, record: EvidenceRecord) -> Path | None:
        """Where ``record``'s log is, when it names a file of this run's logs folder."""
        if record.log is None:
            return None
        rel = Path(record.log)
        if rel.is_absolute() or ".." in rel.parts or rel.parts[:1] != ("logs",):
            return None
        return self.dir / rel

    def log_text(self, record: EvidenceRecord) -> str:
        """The log of ``record`` as text ('' when missing)."""
        path = self._log_path(record)
        if path is None:
            return ""
        try:
            return _read_regular(path, cap=1 << 30).decode("utf-8", errors="replace")
        except UntrustedEvidence:
            return ""
