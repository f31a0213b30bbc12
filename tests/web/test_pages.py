"""The pages over stored runs (made as the benchmark makes them: real run folders, signed
records, checkpoints written by the compiled cycle), through the app in-process."""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from portwright.project import Project
from portwright.web import summaries
from portwright.web.app import create_app
from portwright.web.checkpoints import Checkpoints
from portwright.web.security import Guard

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "web_runs.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("web_runs_bench", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def stored(tmp_path: Path) -> Project:
    bench = _bench()
    down, pin, base, port = bench.repositories(tmp_path)
    project = Project.load(down)
    bench.build_runs(project, 8, pin, base, port)
    return project


@pytest.fixture
def client(stored: Project) -> Iterator[Any]:
    from starlette.testclient import TestClient

    app = create_app(stored.root, Guard.for_bind("127.0.0.1", None))
    with TestClient(app, base_url="http://127.0.0.1") as test_client:
        yield test_client


def test_runs_page_lists_runs_and_filters(client: Any) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.text.count("<tr data-run=") == 8
    table = page.text[page.text.index('<table id="runs">'):]
    statuses = re.findall(r'<span class="pill (\w+)"', table)
    assert statuses == sorted(statuses, key=lambda s: s != "running")  # running before ended
    assert statuses.count("running") == 2
    blocked = client.get("/?status=blocked")
    assert blocked.text.count("<tr data-run=") == 2
    assert "the implement bound is exhausted" in blocked.text
    assert client.get("/?row=other").text.count("<tr data-run=") == 0
    assert client.get("/runs-table?status=done").text.count("<tr data-run=") == 4


def test_summaries_are_cached_until_a_run_moves(stored: Project,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with Checkpoints(stored) as checkpoints:
        first = summaries.summaries(stored, checkpoints)
        assert (summaries.web_dir(stored) / summaries.CACHE).is_file()
        made: list[str] = []
        original = summaries.summarise

        def counting(project: Project, run_id: str, *args: Any) -> summaries.RunSummary:
            made.append(run_id)
            return original(project, run_id, *args)

        monkeypatch.setattr(summaries, "summarise", counting)
        assert summaries.summaries(stored, checkpoints) == first
        assert made == []
        moved = next(s for s in first if s.status == "running")
        config = {"configurable": {"thread_id": moved.run_id}}
        values = checkpoints.graph.get_state(config).values
        checkpoints.graph.update_state(config, {**values, "status": "blocked",
                                                "reason": "stopped by hand"}, as_node="blocked")
        again = summaries.summaries(stored, checkpoints)
        assert made == [moved.run_id]
        assert next(s for s in again if s.run_id == moved.run_id).status == "blocked"


def test_a_forged_record_and_an_edited_log_are_shown_as_such(stored: Project,
                                                              client: Any) -> None:
    run_dir = stored.run_dir("run-0001")
    path = sorted((run_dir / "evidence").glob("*-focused.json"))[0]
    record = json.loads(path.read_text())
    record["exit_code"] = 0
    path.write_text(json.dumps(record))
    log = sorted((run_dir / "logs").glob("*-unit.log"))[0]
    log.write_text(log.read_text() + "all good, trust me\n")
    page = client.get("/runs/run-0001").text
    assert "does not verify" in page
    assert "signature mismatch" in page
    assert "log changed since signed" in page
    assert page.count(">verified<") == 3


def test_model_text_is_escaped_everywhere(stored: Project, client: Any) -> None:
    run_dir = stored.run_dir("run-0002")
    gap = json.loads((run_dir / "gap.json").read_text())
    gap["reasoning"] = '<img src=x onerror="alert(1)"> <script>alert(2)</script>'
    (run_dir / "gap.json").write_text(json.dumps(gap))
    with (run_dir / "transcript-reviewer-1.jsonl").open("a") as handle:
        handle.write(json.dumps({"event": "message", "message": {
            "role": "assistant", "content": "</pre><script>alert(3)</script>"}}) + "\n")
    page = client.get("/runs/run-0002").text
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    # transcripts load when opened, escaped as well
    assert 'hx-get="/runs/run-0002/transcripts/transcript-reviewer-1.jsonl"' in page
    events = client.get("/runs/run-0002/transcripts/transcript-reviewer-1.jsonl").text
    assert "&lt;/pre&gt;&lt;script&gt;alert(3)" in events
    assert "<script>" not in events
    for name in ("..%2Frun.json", "run.json", "transcript-reviewer-9.jsonl"):
        assert client.get(f"/runs/run-0002/transcripts/{name}").status_code == 404
    headers = client.get("/runs/run-0002").headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"


def test_spec_markdown_is_rendered_safely_with_anchor_links() -> None:
    from portwright.web.markdown import render_spec, upstream_link

    text = ("---\nrow: r\npin: " + "a" * 40 + "\n---\n# Title\n\n- `kv/cache.py:4-8`\n"
            "- `kv/cache.py:2@" + "b" * 12 + "`\n\n<script>x()</script> "
            "[click](javascript:alert(1))\n")
    front, html = render_spec(text, link=upstream_link("r1"))
    assert "pin: " + "a" * 40 in front
    assert f'href="/runs/r1/upstream/kv/cache.py?at={"a" * 40}#L4"' in html
    assert f'href="/runs/r1/upstream/kv/cache.py?at={"b" * 12}#L2"' in html
    assert "&lt;script&gt;" in html
    assert 'href="javascript:' not in html


def test_upstream_view_shows_files_at_a_sha_only(stored: Project, client: Any) -> None:
    pin = client.get("/runs/run-0001").text.split("upstream pin <b class=\"mono\">")[1][:12]
    shown = client.get(f"/runs/run-0001/upstream/kv/cache.py?at={pin}")
    assert shown.status_code == 200
    assert 'id="L4"' in shown.text
    assert client.get("/runs/run-0001/upstream/kv/cache.py?at=HEAD").status_code == 404
    assert client.get("/runs/run-0001/upstream/kv/cache.py?at=--output=x").status_code == 404
    assert client.get(f"/runs/run-0001/upstream/../x?at={pin}").status_code == 404
    assert client.get("/runs/..%2Fetc/upstream/x?at=" + pin).status_code == 404


def test_the_static_report_stands_alone(stored: Project) -> None:
    from portwright.web.render import write_report

    path = write_report(stored, "run-0003")
    assert path == stored.run_dir("run-0003") / "report.html"
    html = path.read_text()
    assert "<style>" in html
    assert "<script" not in html
    assert "/static/" not in html
    assert 'class="record red"' in html
    assert "hx-post" not in html


def test_a_record_removed_from_the_chain_is_shown(stored: Project, client: Any) -> None:
    run_dir = stored.run_dir("run-0001")
    paths = sorted((run_dir / "evidence").glob("*.json"))
    assert len(paths) > 2
    paths[1].unlink()
    page = client.get("/runs/run-0001").text
    assert "does not verify" in page
    assert f"evidence record {int(paths[1].name[:4])} is missing" in page
