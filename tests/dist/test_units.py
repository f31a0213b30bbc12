"""The small pieces of scale-out that need no server: run ids of scheduled workflows, the
cassette a fresh worker process plays from the middle, overrides carried to a worker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from portwright.agents.llm import Completion, CompletionRequest, Message, Usage
from portwright.agents.offline import CassetteMismatch, ReplayModel
from portwright.config import PortwrightConfig, apply_overrides
from portwright.errors import ConfigError


def _request(text: str) -> CompletionRequest:
    return CompletionRequest(messages=[Message(role="user", content=text)])


def _cassette(path: Path, texts: list[str]) -> Path:
    lines = []
    for text in texts:
        request = _request(text)
        completion = Completion(message=Message(role="assistant", content=f"re {text}"),
                                model="m", usage=Usage())
        lines.append(json.dumps({"request_digest": request.digest(),
                                 "request": request.model_dump(mode="json", by_alias=True),
                                 "completion": completion.model_dump(mode="json")}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_run_id_of_a_scheduled_workflow_is_a_branch_name() -> None:
    pytest.importorskip("temporalio")
    from portwright.dist.models import run_id_of

    assert run_id_of("nightly-2025-01-01T03:00:00Z") == "nightly-2025-01-01T03-00-00Z"
    assert run_id_of("run-1") == "run-1"


def test_seeking_replay_answers_a_later_call_first(tmp_path: Path) -> None:
    cassette = _cassette(tmp_path / "c.jsonl", ["one", "two", "three"])
    fresh = ReplayModel(cassette, seek=True)  # a worker that takes the run at its 3rd call
    assert fresh.complete(_request("three")).message.content == "re three"
    assert fresh.complete(_request("one")).message.content == "re one"
    with pytest.raises(CassetteMismatch):
        fresh.complete(_request("never recorded"))
    strict = ReplayModel(cassette)
    with pytest.raises(CassetteMismatch):
        strict.complete(_request("three"))


def test_overrides_are_validated_where_they_are_applied() -> None:
    config = PortwrightConfig.model_validate({"upstream": {"source": "../up"}})
    changed = apply_overrides(config, {"approvals.spec": "never", "model.name": "m2"})
    assert changed.approvals.spec == "never"
    assert changed.model.name == "m2"
    with pytest.raises(ConfigError, match="approvals"):
        apply_overrides(config, {"approvals.spec": "sometimes"})
    with pytest.raises(ConfigError, match=r"nothing\.key"):
        apply_overrides(config, {"nothing.key": "x"})


_EXITING = '''
import atexit, sys
if sys.argv[1] == "bridge":
    import temporalio.bridge.temporal_sdk_bridge  # what submit, schedule and worker load
atexit.register(lambda: print("finalized", flush=True))
sys.argv = ["portwright", *sys.argv[2:]]
from portwright.cli import main
main()
'''


@pytest.mark.parametrize(("argv", "code", "said"), [
    (["--version"], 0, "portwright"),
    (["schedule", "create", "--cron", "61 3 * * *", "run", "kv"], 2, "minute"),
])
def test_a_process_that_loaded_temporal_exits_without_finalizing(
        tmp_path: Path, argv: list[str], code: int, said: str) -> None:
    """The Temporal SDK's native threads can abort an interpreter that finalizes after a
    client call (temporalio/sdk-python#300): a command that loaded it exits with its code
    and its output, finalization skipped (no atexit handler runs); one that did not
    finalizes as usual."""
    import subprocess
    import sys

    for mode, finalized in (("bridge", False), ("plain", True)):
        done = subprocess.run([sys.executable, "-c", _EXITING, mode, *argv], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == code, done.stdout + done.stderr
        assert said in done.stdout + done.stderr
        assert ("finalized" in done.stdout) is finalized, done.stdout
