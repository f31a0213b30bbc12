"""The run store and the test-id readers behind evidence records."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from portwright.errors import GateFailed, ParityFileError, UsageError
from portwright.gates.testids import from_junit_text, from_output
from portwright.runs import EvidenceKind, EvidenceRecord, RunStore

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.test_a" name="test_ok" time="0.01"/>
<testcase classname="tests.test_a" name="test_bad"><failure message="boom"/></testcase>
<testcase classname="tests.test_a" name="test_err"><error message="oops"/></testcase>
<testcase classname="tests.test_a" name="test_skip"><skipped message="later"/></testcase>
</testsuite></testsuites>
"""


def test_junit_ids() -> None:
    assert from_junit_text(JUNIT) == (["tests.test_a::test_ok"],
                                      ["tests.test_a::test_bad", "tests.test_a::test_err"])
    with pytest.raises(GateFailed, match="not a JUnit XML report"):
        from_junit_text("<nope")


def test_output_ids_pytest_and_gtest() -> None:
    text = ("PASSED tests/test_a.py::test_ok\nFAILED tests/test_a.py::test_bad - assert 1 == 2\n"
            "[       OK ] Gemm.Small (0 ms)\n[  FAILED  ] Gemm.Large (1 ms)\n")
    assert from_output(text) == (["Gemm.Small", "tests/test_a.py::test_ok"],
                                 ["Gemm.Large", "tests/test_a.py::test_bad"])


def _record(gate: str, log: str | None = None, digest: str | None = None) -> EvidenceRecord:
    return EvidenceRecord(gate=gate, kind=EvidenceKind.GATE, command="true", exit_code=0,
                          passed=True, duration=0.1, commit="0" * 40, log=log,
                          log_sha256=digest, timestamp=datetime.now(UTC))


def test_store_numbers_records_and_checks_logs(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs", "run-7")
    log, digest = store.write_log("unit tests", b"1 passed\n")
    first = store.add(_record("unit tests", log, digest))
    second = store.add(_record("anchors"))
    assert [first.name, second.name] == ["0001-unit_tests.json", "0002-anchors.json"]
    records = store.records()
    assert [r.gate for r in records] == ["unit tests", "anchors"]
    assert store.log_digest(records[0]) == digest
    (store.dir / log).write_bytes(b"2 passed\n")
    assert store.log_digest(records[0]) != digest
    escaped = records[0].model_copy(update={"log": "../../../etc/passwd"})
    assert store.log_digest(escaped) is None


def test_store_rejects_edited_json_and_bad_ids(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs", "run-7")
    path = store.add(_record("unit"))
    path.write_text(path.read_text().replace('"exit_code": 0', '"exit_code": "zero"'))
    with pytest.raises(ParityFileError, match="not an evidence record"):
        store.records()
    with pytest.raises(UsageError, match="run id"):
        RunStore(tmp_path, "../escape")
