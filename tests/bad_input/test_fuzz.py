"""Fuzzing the readers of what a person writes: arbitrary bytes, and valid documents with
structured damage, give a parsed result or a :class:`PortwrightError` (which the command
line turns into a message naming the file and line), never another exception.

Readers: ``portwright.toml`` (with environment overrides), the ``AGENTS.md`` rules block,
the three pin stores, coverage matrices, the ledger, the inventory and specs; and those of
``portwright eval``: task files with their ``suite.toml`` defaults, reports and cassettes.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from portwright.config import PinStoreKind, PortwrightConfig, parse_config
from portwright.errors import PortwrightError
from portwright.parity.inventory import load_inventory, parse_inventory
from portwright.parity.ledger import load_ledger, parse_ledger
from portwright.parity.matrix import load_rows, rows_of_text
from portwright.parity.pin import read_pin
from portwright.parity.spec import parse_spec, spec_problems
from portwright.rules.loader import parse_rules_bytes
from tests.bad_input.world import AGENTS, CONFIG, INVENTORY, LEDGER, MATRIX, SPEC

FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])

CONFIG_FULL = CONFIG + """
[pin]
store = "markdown"
file = "upstream-sync.md"

[artifacts]
matrices = ["docs/parity/*.md"]
statuses = ["missing", "partial", "ported"]
done_statuses = ["ported"]

[sandbox]
backend = "auto"
memory = "2g"
timeout = 300
env = { LANG = "C.UTF-8" }

[model]
name = "gpt-4.1"
timeout = 60.5

[model.budget]
tokens = 1000
"""

SPEC_TEXT = SPEC.format(pin="0123456789abcdef0123456789abcdef01234567") + (
    "\n## Dependency anchors\n\n- `requirements.txt:2 \"torch==2.4.0\"`\n")
PIN_MD = "# Upstream sync\n\nPinned commit: `0123456789abcdef0123456789abcdef01234567`\n"
PIN_YAML = "# pins\n- name: up\n  commit: 0123456789abcdef0123456789abcdef01234567 # head\n"
PIN_TOML = '[upstream]\n# the pin\ncommit = "0123456789abcdef0123456789abcdef01234567"\n'
NASTY = ["\x00", "\ufeff", "\r", "\r\n", "|", "\\|", "`", '"', "'", "[", "]", "{", "}", "---\n",
         "```", "```toml portwright\n", "[[gate]]\n", "# ", "## ", "\t", " " * 5, "é", "💥",
         "\u2028", "inf", "nan", "-1", "1e999", "0x1F", "2001-02-30", "!!python/object:os.system",
         "&a", "*a", "<<: *a", "? ", ": ", "- ", "%YAML 1.1\n", "\\", "\n" * 3]


def mutated(document: str) -> st.SearchStrategy[str]:
    """``document`` damaged by a few edits: characters and lines deleted, duplicated,
    swapped or replaced, and nasty fragments inserted."""
    @st.composite
    def build(draw: st.DrawFn) -> str:
        text = document
        for _ in range(draw(st.integers(1, 4))):
            kind = draw(st.sampled_from(["insert", "delete", "line", "swap", "dup"]))
            at = draw(st.integers(0, len(text)))
            if kind == "insert":
                piece = draw(st.one_of(st.sampled_from(NASTY), st.text(max_size=8)))
                text = text[:at] + piece + text[at:]
            elif kind == "delete":
                text = text[:at] + text[at + draw(st.integers(1, 12)):]
            else:
                lines = text.splitlines(keepends=True) or [""]
                i = draw(st.integers(0, len(lines) - 1))
                j = draw(st.integers(0, len(lines) - 1))
                if kind == "line":
                    lines[i] = draw(st.sampled_from(NASTY)) + "\n"
                elif kind == "swap":
                    lines[i], lines[j] = lines[j], lines[i]
                else:
                    lines.insert(j, lines[i])
                text = "".join(lines)
        return text
    return build()


def inputs(document: str) -> st.SearchStrategy[bytes]:
    """Arbitrary bytes, or ``document`` damaged (as UTF-8, sometimes with a bad byte)."""
    damaged = mutated(document).map(lambda t: t.encode("utf-8", "surrogatepass"))
    broken = st.tuples(damaged, st.integers(0, 10_000)).map(
        lambda pair: pair[0][: pair[1]] + b"\xff" + pair[0][pair[1]:])
    return st.one_of(st.binary(max_size=400), damaged, broken)


def tolerated(read: Callable[[], Any]) -> None:
    """``read()`` returns, or raises a PortwrightError; anything else fails the test."""
    with contextlib.suppress(PortwrightError):
        read()


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _repo(files: dict[str, bytes]) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="portwright-fuzz-"))
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    return folder


def _config(**pin: str) -> PortwrightConfig:
    return PortwrightConfig.model_validate({"upstream": {"source": "../up"}, "pin": pin})


def test_valid_documents_parse() -> None:
    """The undamaged documents the fuzzing starts from are valid."""
    parse_config(CONFIG_FULL.encode(), Path("portwright.toml"), environ={})
    assert parse_rules_bytes(AGENTS.encode(), Path("AGENTS.md"), "AGENTS.md").block.gate
    assert rows_of_text(MATRIX, Path("m.md"), "m.md", ["missing", "partial", "ported"])
    assert parse_ledger(LEDGER, "l.md") [0]
    assert parse_inventory(INVENTORY, "i.md")[0]
    spec = parse_spec(SPEC_TEXT, Path("s.md"), "s.md")
    assert spec.anchors


@FUZZ
@given(data=inputs(CONFIG_FULL),
       env=st.dictionaries(st.sampled_from(["PORTWRIGHT_SANDBOX__MEMORY",
                                            "PORTWRIGHT_MODEL__TIMEOUT",
                                            "PORTWRIGHT_STATE_DIR", "PORTWRIGHT_PIN",
                                            "PORTWRIGHT_SANDBOX__ENV__X", "PORTWRIGHT_X__Y"]),
                           st.one_of(st.sampled_from(NASTY), st.text(max_size=10)),
                           max_size=2))
@example(data=b"[upstream]\nsource = 1\n", env={})
@example(data=b"[" * 3000, env={})
def test_config(data: bytes, env: dict[str, str]) -> None:
    tolerated(lambda: parse_config(data, Path("portwright.toml"), environ=env))


@FUZZ
@given(data=inputs(AGENTS))
@example(data=b"```toml portwright\n[[runtime]]\nname='a'\npattern='('\n```\n")
@example(data=b">" * 3000 + b" x\n")
def test_rules_block(data: bytes) -> None:
    tolerated(lambda: parse_rules_bytes(data, Path("AGENTS.md"), "AGENTS.md"))


@FUZZ
@given(data=inputs(PIN_MD))
def test_markdown_pin(data: bytes) -> None:
    repo = _repo({"upstream-sync.md": data})
    tolerated(lambda: read_pin(repo, _config()))


@FUZZ
@given(data=inputs(PIN_YAML), key=st.sampled_from(["[0].commit", "commit", "[1]", "a.b[2].c",
                                                   "[0]", "[-1].commit"]))
@example(data=b"[" * 1000, key="[0].commit")
@example(data=b"- commit: 2001-02-30\n", key="[0].commit")
def test_yaml_pin(data: bytes, key: str) -> None:
    repo = _repo({"port.yaml": data})
    tolerated(lambda: read_pin(repo, _config(store=PinStoreKind.YAML, file="port.yaml",
                                             key=key)))


@FUZZ
@given(data=inputs(PIN_TOML), key=st.sampled_from(["upstream.commit", "commit", "a[0]",
                                                   "upstream"]))
@example(data=b"[upstream]\ncommit = 1979-05-27T07:32:00Z\n", key="upstream.commit")
def test_toml_pin(data: bytes, key: str) -> None:
    repo = _repo({"port.toml": data})
    tolerated(lambda: read_pin(repo, _config(store=PinStoreKind.TOML, file="port.toml",
                                             key=key)))


@FUZZ
@given(data=inputs(MATRIX))
def test_matrix(data: bytes) -> None:
    repo = _repo({"docs/parity/models.md": data})
    tolerated(lambda: load_rows(repo, _config()))


@FUZZ
@given(data=inputs(LEDGER))
def test_ledger(data: bytes) -> None:
    repo = _repo({"parity-ledger.md": data})
    tolerated(lambda: load_ledger(repo, _config()))
    tolerated(lambda: parse_ledger(_text(data), "parity-ledger.md"))


@FUZZ
@given(data=inputs(INVENTORY))
def test_inventory(data: bytes) -> None:
    repo = _repo({"porting-inventory.md": data})
    tolerated(lambda: load_inventory(repo, _config()))
    tolerated(lambda: parse_inventory(_text(data), "porting-inventory.md"))


@FUZZ
@given(data=inputs(SPEC_TEXT))
@example(data=b"---\nrow: [" + b"[" * 1000 + b"\n---\n")
@example(data=b"---\npin: 2001-02-30\n---\n")
@example(data=b"---\nanswers: {a: !!binary 'AA=='}\n---\n")
def test_spec(data: bytes) -> None:
    def read() -> None:
        spec = parse_spec(_text(data), Path("specs/s.md"), "specs/s.md")
        spec_problems(spec, questions=["kv_cache_dtype"], required_sections=["Surface", "Slice"])
    tolerated(read)


# -- the eval room: task files, suite defaults, reports, cassettes ---------------------------

SHA = "0123456789abcdef0123456789abcdef01234567"
TASK_FILE = f"""# a task
id = "calc/sub"
title = "Port sub"

[upstream]
repo = "acme/calc-js"
commits = ["{SHA}"]

[downstream]
repo = "acme/calc-py"
parent = "{SHA}"
port = "{SHA}"

[hidden]
paths = ["tests/test_sub.py"]
tests = ["tests/test_sub.py::test_sub"]
regress = ["tests/"]

[environment]
test = "python3 -m pytest -q -rA {{tests}}"
path_map = {{ "src/" = "", "test/" = "tests/" }}
timeout = 600
"""
SUITE_DEFAULTS = ('[upstream]\nurl = "https://example.com/up"\n\n[environment]\n'
                  'image = "portwright/base:bookworm"\nreport = "pytest"\n')
CASSETTE_LINE = ('{"request_digest": "00", "request": {"messages": [{"role": "system", '
                 '"content": "x"}]}, "completion": {"message": {"role": "assistant", '
                 '"content": "done"}, "model": "m"}}\n')


def _report_json() -> str:
    from tests.eval.data import cycle_report

    return cycle_report().model_dump_json(indent=1)


def test_valid_eval_documents_parse() -> None:
    from portwright.agents.offline import load_cassette
    from portwright.eval.results import read_report
    from portwright.eval.tasks import load_suite

    suite = _repo({"t.toml": TASK_FILE.encode(), "suite.toml": SUITE_DEFAULTS.encode()})
    assert load_suite(suite).tasks[0].id == "calc/sub"
    assert read_report(_repo({"r.json": _report_json().encode()}) / "r.json").results
    assert load_cassette(_repo({"c.jsonl": CASSETTE_LINE.encode() * 2}) / "c.jsonl")


@FUZZ
@given(task=inputs(TASK_FILE), defaults=inputs(SUITE_DEFAULTS))
@example(task=b"[" * 3000, defaults=b"")
@example(task=TASK_FILE.replace('"" }', '"/etc/" }').encode(), defaults=b"")
def test_task_file(task: bytes, defaults: bytes) -> None:
    from portwright.eval.tasks import load_suite

    suite = _repo({"t.toml": task, "suite.toml": defaults})
    tolerated(lambda: load_suite(suite))


@FUZZ
@given(data=inputs(_report_json()))
@example(data=b"[" * 100_000)
@example(data=b'{"suite": ' + b"{" * 100_000)
def test_report_file(data: bytes) -> None:
    from portwright.eval.results import read_report

    path = _repo({"report.json": data}) / "report.json"
    tolerated(lambda: read_report(path))


@FUZZ
@given(data=inputs(CASSETTE_LINE * 2))
@example(data=b"[" * 100_000 + b"\n")
def test_cassette(data: bytes) -> None:
    from portwright.agents.offline import load_cassette

    path = _repo({"c.jsonl": data}) / "c.jsonl"
    tolerated(lambda: load_cassette(path))
