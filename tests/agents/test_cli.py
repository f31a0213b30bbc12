"""``portwright model check``, ``prompts render`` and ``agent verify-gap`` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_httpserver import HTTPServer

from portwright.agents.loop import SUBMIT
from portwright.agents.transcript import read_transcript
from portwright.project import Project
from tests.agents.helpers import chat_body

PATH = "/v1/chat/completions"


def portwright(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), *args],
                          capture_output=True, text=True, timeout=120)


def configure(pair: dict[str, Any], model: str) -> Path:
    downstream = pair["downstream"]
    downstream.commit("portwright", {
        "portwright.toml": f'[upstream]\nsource = "../upstream"\nname = "pyserve"\n\n'
                           f"[model]\n{model}\n",
        "upstream-sync.md": f"# Upstream sync\n\npin: {pair['pin']}\n",
        ".gitignore": ".portwright/\n",
    })
    return Path(downstream.path)


def test_prompts_render(tmp_path: Path) -> None:
    done = portwright(tmp_path, "prompts", "render", "implementer", "--mode", "tests_only",
                      "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["template"] == "implementer.j2"
    assert "write_file" in out["tools"]
    assert "TESTS ONLY" in out["messages"][0]["content"]
    text = portwright(tmp_path, "prompts", "render", "gap_verifier")
    assert text.returncode == 0
    assert "You are the gap verifier" in text.stdout
    bad = portwright(tmp_path, "prompts", "render", "poet")
    assert bad.returncode == 2
    assert "unknown role 'poet'" in bad.stderr


def test_model_check(httpserver: HTTPServer, pair: dict[str, Any]) -> None:
    repo = configure(pair, f'name = "fake-model"\nbase_url = "{httpserver.url_for("/v1")}"\n'
                           "max_retries = 0\ntimeout = 5")
    httpserver.expect_request(PATH).respond_with_json(chat_body(content="ok",
                                                                cached_tokens=3))
    done = portwright(repo, "model", "check", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["endpoint"]["base_url"] == httpserver.url_for("/v1")
    assert out["endpoint"]["api_key_env"] == "OPENAI_API_KEY"
    assert out["endpoint"]["api_key_set"] is False
    assert out["request"]["reply"] == "ok"
    assert out["request"]["usage"]["cached_tokens"] == 3
    offline = portwright(repo, "model", "check", "--offline")
    assert offline.returncode == 0
    assert "not set" in offline.stdout
    assert len(httpserver.log) == 1


def test_model_check_refuses_a_real_endpoint_in_tests(pair: dict[str, Any]) -> None:
    repo = configure(pair, 'name = "gpt-4.1"')
    done = portwright(repo, "model", "check", "--json")
    assert done.returncode == 1
    out = json.loads(done.stdout)
    assert out["ok"] is False
    assert "refusing a real model request" in out["error"]["message"]


def test_verify_gap_records_then_replays(httpserver: HTTPServer, pair: dict[str, Any],
                                        tmp_path: Path) -> None:
    repo = configure(pair, f'name = "fake-model"\nbase_url = "{httpserver.url_for("/v1")}"\n'
                           "max_retries = 0\ntimeout = 5")
    verdict = {"status": "missing", "reasoning": "defined upstream only",
               "evidence": [{"kind": "upstream", "ref": "src/attn.py:1-2",
                             "detail": "def rope_scaling"}]}
    httpserver.expect_ordered_request(PATH).respond_with_json(
        chat_body(calls=[("gap_evidence", {"symbols": ["rope_scaling"]})]))
    httpserver.expect_ordered_request(PATH).respond_with_json(
        chat_body(calls=[(SUBMIT, verdict)]))
    cassette = tmp_path / "gap.jsonl"
    done = portwright(repo, "agent", "verify-gap", "--symbol", "rope_scaling", "--record",
                      str(cassette), "--run-id", "rec", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "done"
    assert out["verdict"]["status"] == "missing"
    run_dir = Project.load(repo).run_dir("rec")
    assert out["transcript"] == str(run_dir / "transcript.jsonl")
    assert not run_dir.is_relative_to(repo)
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["command"] == "agent verify-gap --symbol rope_scaling"
    assert list(manifest["rules"]) == ["AGENTS.md"]
    first_request = json.loads(httpserver.log[0][0].get_data())
    task = first_request["messages"][1]["content"]
    assert "symbol rope_scaling" in task
    assert "upstream at the pin: 3" in task
    assert f"upstream src/attn.py:1-6@{pair['pin'][:12]} (rope_scaling at the pin)" in task
    assert task.count("upstream tests/test_attn.py:1-5@") == 1  # overlapping hits merged
    assert "Keep the port faithful." in first_request["messages"][0]["content"]
    tool_answer = json.loads(httpserver.log[1][0].get_data())["messages"][-1]["content"]
    assert "downstream at HEAD: none" in tool_answer

    httpserver.clear()
    replayed = portwright(repo, "agent", "verify-gap", "--symbol", "rope_scaling", "--replay",
                          str(cassette), "--run-id", "rep")
    assert replayed.returncode == 0, replayed.stderr
    assert "verdict   missing" in replayed.stdout
    runs = Project.load(repo).runs_dir
    assert read_transcript(runs / "rec/transcript.jsonl") == read_transcript(
        runs / "rep/transcript.jsonl")
    assert len(httpserver.log) == 0
    assert portwright(repo, "agent", "verify-gap", "-s", "rope_scaling").returncode == 1

    other = portwright(repo, "agent", "verify-gap", "--symbol", "other", "--replay",
                       str(cassette))
    assert other.returncode == 1
    assert "differs from the recorded request" in other.stderr
