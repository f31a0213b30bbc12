"""Command output: the whole of it to a log file, a capped head and tail of it in memory.

The log file holds stdout and stderr interleaved as they arrived, each chunk framed by
a header line ``--- stdout <n>`` / ``--- stderr <n>`` (``n`` bytes of data follow, then
a newline). :func:`read_log` splits a log back into the two streams.

:func:`run_process` runs a host process (the local and bubblewrap backends) and reads
both of its pipes from one thread with a selector, so a child flooding one stream can
never stall on the other, a timeout is checked while it writes, and a child that keeps
a pipe open after it exits (a daemon) cannot keep the reader waiting.

:func:`relative_to` rewrites what a command printed for an agent's eyes: the files of the
folder it ran in named relative to that folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

from portwright.sandboxes.base import ExecResult

logger = logging.getLogger(__name__)

Stream = Literal["stdout", "stderr"]

_HEADER = re.compile(rb"--- (stdout|stderr) (\d+)\n")
_READ_SIZE = 256 * 1024
_DRAIN_GRACE = 1.0
"""Seconds a pipe may stay open after the command exited before reading stops."""


@dataclass
class _StreamBuffer:
    limit: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.limit - len(self.head)
        if room > 0:
            self.head += data[:room]
        self.tail += data[-self.limit:]
        if len(self.tail) > self.limit:
            del self.tail[: len(self.tail) - self.limit]

    def head_text(self) -> str:
        return bytes(self.head).decode("utf-8", errors="replace")

    def tail_text(self) -> str:
        if self.total <= self.limit:
            return ""  # the head already holds all of it
        return bytes(self.tail).decode("utf-8", errors="replace")


class OutputSink:
    """Collects one command's output: framed into a log file, capped in memory.

    Thread-safe; ``feed`` returns False once the hard cap is reached (the caller
    then kills the command). Bytes beyond the cap are counted but not logged.
    """

    def __init__(self, log_path: Path, *, tail_bytes: int, cap: int) -> None:
        self.log_path = log_path
        self.cap = cap
        self.capped = False
        self._buffers: dict[Stream, _StreamBuffer] = {
            "stdout": _StreamBuffer(tail_bytes),
            "stderr": _StreamBuffer(tail_bytes),
        }
        self._logged = 0
        self._lock = threading.Lock()
        self._digest = hashlib.sha256()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[bytes] | None = log_path.open("wb")

    def feed(self, stream: Stream, data: bytes) -> bool:
        """Take ``data`` from ``stream``; False when the cap is reached."""
        if not data:
            return not self.capped
        with self._lock:
            self._buffers[stream].add(data)
            room = self.cap - self._logged
            if room <= 0:
                self.capped = True
                return False
            chunk = data[:room]
            self._write(f"--- {stream} {len(chunk)}\n".encode() + chunk + b"\n")
            self._logged += len(chunk)
            if len(chunk) < len(data):
                self.capped = True
                return False
            return True

    def _write(self, record: bytes) -> None:
        if self._file is not None:
            self._file.write(record)
            self._digest.update(record)

    def close(self) -> str:
        """Close the log; return its sha256."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
            return self._digest.hexdigest()

    def result(
        self,
        argv: Sequence[str],
        *,
        exit_code: int,
        duration: float,
        timed_out: bool = False,
        oom_killed: bool = False,
    ) -> ExecResult:
        """Close the log and build the :class:`ExecResult`."""
        digest = self.close()
        out, err = self._buffers["stdout"], self._buffers["stderr"]
        return ExecResult(
            argv=list(argv),
            exit_code=exit_code,
            duration=duration,
            timed_out=timed_out,
            oom_killed=oom_killed,
            capped=self.capped,
            stdout_head=out.head_text(),
            stdout_tail=out.tail_text(),
            stderr_head=err.head_text(),
            stderr_tail=err.tail_text(),
            stdout_bytes=out.total,
            stderr_bytes=err.total,
            log_path=str(self.log_path),
            log_sha256=digest,
        )


def relative_to(text: str, root: Path) -> str:
    """``text`` with ``root``'s absolute path taken out: ``<root>/a/b`` reads ``a/b``, and
    ``<root>`` alone reads ``.``; ``<root>-old/x`` or ``<root>2`` stay as they are.

    A command run in a worktree names its files by where the host keeps them (a traceback,
    a compiler's diagnostics). An agent is shown them relative to the worktree it works in,
    so the same failure reads the same from any run folder (a replayed transcript matches
    its recording) and the host's folders stay out of the prompt. Evidence keeps the output
    as it was."""
    roots = {str(root), str(root.resolve())} - {"/", ""}
    for prefix in sorted(roots, key=len, reverse=True):
        pattern = re.compile(re.escape(prefix) + r"(/+|(?![\w.@+~-]))")
        text = pattern.sub(lambda m: "" if m.group(1) else ".", text)
    return text


def iter_log(path: Path, stream: Stream, *, chunk: int = 1 << 20) -> Iterator[bytes]:
    """The logged bytes of one ``stream`` of a framed log file, in pieces of at most
    ``chunk`` bytes: the whole output in bounded memory. The file is opened without
    following a link."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        pos = 0
        while header := handle.readline(64):
            match = _HEADER.match(header)
            if match is None:
                raise ValueError(f"{path}: not a portwright log at byte {pos}")
            size = int(match.group(2))
            pos += len(header) + size + 1
            if match.group(1).decode() != stream:
                handle.seek(size + 1, os.SEEK_CUR)
                continue
            while size > 0:
                piece = handle.read(min(size, chunk))
                if not piece:
                    raise ValueError(f"{path}: the log ends inside a record")
                size -= len(piece)
                yield piece
            handle.read(1)


def read_log(path: Path) -> tuple[bytes, bytes]:
    """The whole (logged) stdout and stderr of a framed log file."""
    data = path.read_bytes()
    parts: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
    pos = 0
    while pos < len(data):
        match = _HEADER.match(data, pos)
        if match is None:
            raise ValueError(f"{path}: not a portwright log at byte {pos}")
        size = int(match.group(2))
        start = match.end()
        parts[match.group(1).decode()].append(data[start : start + size])
        pos = start + size + 1
    return b"".join(parts["stdout"]), b"".join(parts["stderr"])


class LogNamer:
    """Names one log file per command in a folder: ``0001-pytest.log``, ``0002-make.log``."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self._count = 0
        self._lock = threading.Lock()

    def next(self, argv: Sequence[str]) -> Path:
        with self._lock:
            self._count += 1
            count = self._count
        word = Path(argv[0]).name if argv else "cmd"
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", word)[:40] or "cmd"
        path = self.log_dir / f"{count:04d}-{slug}.log"
        while path.exists():
            with self._lock:
                self._count += 1
                count = self._count
            path = self.log_dir / f"{count:04d}-{slug}.log"
        return path


def signal_exit_code(returncode: int) -> int:
    """subprocess's ``-N`` for signal N → the shell's ``128+N``."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass
class ProcessOutcome:
    """How a host process ended."""

    exit_code: int
    duration: float
    timed_out: bool
    capped: bool


def run_process(
    argv: Sequence[str],
    sink: OutputSink,
    *,
    timeout: float,
    env: Mapping[str, str],
    cwd: Path,
    kill: Callable[[subprocess.Popen[bytes]], None],
    preexec_fn: Callable[[], None] | None = None,
    pass_fds: Sequence[int] = (),
) -> ProcessOutcome:
    """Run ``argv`` on the host, stream its output into ``sink``, enforce ``timeout``.

    ``kill(proc)`` must end the whole tree of the command; it is called on timeout,
    when the output cap is reached, and once more after the command exits (to end
    background processes it left behind).
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=preexec_fn,
        pass_fds=tuple(pass_fds),
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    timed_out = False
    capped = False
    exited_at: float | None = None
    selector = selectors.DefaultSelector()
    for pipe, name in ((proc.stdout, "stdout"), (proc.stderr, "stderr")):
        os.set_blocking(pipe.fileno(), False)
        selector.register(pipe, selectors.EVENT_READ, name)
    deadline = start + timeout
    try:
        while selector.get_map():
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
                kill(proc)
            if exited_at is not None and now - exited_at > _DRAIN_GRACE:
                break
            if exited_at is None and now >= deadline:
                timed_out = True
                kill(proc)
                exited_at = now
                continue
            wait = min(0.1, max(0.0, deadline - now))
            for key, _ in selector.select(wait):
                fd = key.fd
                try:
                    data = os.read(fd, _READ_SIZE)
                except BlockingIOError:
                    continue
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                if not sink.feed(key.data, data) and not capped:
                    capped = True
                    kill(proc)
                    exited_at = exited_at or time.monotonic()
    finally:
        selector.close()
        proc.stdout.close()
        proc.stderr.close()
    try:
        returncode = proc.wait(timeout=max(0.1, deadline - time.monotonic()) if not timed_out
                               else 5.0)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill(proc)
        returncode = proc.wait()
    kill(proc)
    duration = time.monotonic() - start
    return ProcessOutcome(signal_exit_code(returncode), duration, timed_out, capped)


def kill_process_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group ``proc`` leads (its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
