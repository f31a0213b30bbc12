"""`portwright serve` in a real browser: runs started from the CLI, their evidence, and
decisions that resume them exactly as `portwright approve / reject / edit` do."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.web.conftest import ADVANCE, AUTH, SCRIPT, SECRET, WebWorld, pw

pytestmark = [pytest.mark.docker, pytest.mark.browser]

WAIT = 240_000
"""Milliseconds a resumed run may take to reach its next stop (sandboxed gates)."""


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as _expect

    return _expect(locator)


def test_runs_page_lists_cli_runs_waiting_first_with_filters(web: WebWorld, page: Any) -> None:
    page.goto(web.server.url + "/")
    rows = page.locator("table#runs tbody tr")
    expect(rows).to_have_count(4)
    for run_id in (ADVANCE, "ask-reject", "ask-approve", "ask-edit"):
        row = page.locator(f'tr[data-run="{run_id}"]')
        expect(row.locator("td.status")).to_have_text("waiting for approval")
        expect(row.locator("td.row")).to_have_text("kv-cache")
    adv = page.locator(f'tr[data-run="{ADVANCE}"]')
    expect(adv.locator("td.node")).to_have_text("approve_advance")
    assert int(adv.locator("td.tokens").inner_text().replace(",", "")) > 0
    page.select_option("select[name=status]", "done")
    page.click("form#filters button[type=submit]")
    expect(page.locator("table#runs tbody tr")).to_have_count(0)
    page.goto(web.server.url + "/?status=waiting&row=kv-cache")
    expect(page.locator("table#runs tbody tr")).to_have_count(4)
    page.click(f'tr[data-run="{ADVANCE}"] a')
    expect(page).to_have_url(re.compile(f"/runs/{ADVANCE}$"))


def test_run_page_shows_the_evidence(web: WebWorld, page: Any, tmp_path: Path) -> None:
    page.goto(f"{web.server.url}/runs/{ADVANCE}")
    expect(page.locator("#status")).to_have_text("waiting for approval")
    expect(page.locator("#timeline tbody tr").first).to_contain_text("prepare")
    expect(page.locator("#gap")).to_contain_text("missing")
    expect(page.locator("#surface tbody tr")).to_have_count(8)
    expect(page.locator("#spec a.anchor").first).to_have_attribute(
        "href", re.compile(r"/upstream/kv/cache\.py\?at=[0-9a-f]{40}#L4$"))
    red = page.locator("#evidence tr.record.red").first
    expect(red).to_contain_text("tests/test_cache.py::test_alloc")
    expect(red.locator("td.exit")).to_have_text("1")
    expect(red.locator("td.signature")).to_have_text("verified")
    green = page.locator("#evidence tr.record.green").first
    expect(green.locator("td.exit")).to_have_text("0")
    expect(green.locator("td.signature")).to_have_text("verified")
    expect(page.locator("#gates")).to_contain_text("red-green")
    expect(page.locator("#review")).to_contain_text("approve")
    expect(page.locator('#diff .file[data-path="kv/cache.py"]')).to_be_visible()
    expect(page.locator("#diff .highlight").first).to_be_visible()
    expect(page.locator("#records")).to_contain_text("kv-cache")
    expect(page.locator("#spend")).to_contain_text("implementer")
    approval = page.locator("#approval")
    expect(approval).to_contain_text("approve_advance")
    expect(approval.locator("button[value=approve]")).to_be_visible()
    # what a model wrote is text, never markup, and no secret reaches the page
    transcript = page.locator('#transcripts details.transcript[data-role="gap_verifier"]')
    transcript.locator(":scope > summary").click()
    expect(transcript).to_contain_text(SCRIPT)
    expect(page.locator("#gap")).to_contain_text(SCRIPT)
    assert page.evaluate("window.__pwned") is None
    html = page.content()
    assert SECRET not in html
    page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
    # the upstream view an anchor links to shows the file at the pin
    page.locator("#spec a.anchor").first.click()
    expect(page.locator("#L4")).to_contain_text("def alloc")


def test_rejection_message_reaches_the_redone_step(web: WebWorld, page: Any) -> None:
    run_id = "ask-reject"
    page.goto(f"{web.server.url}/runs/{run_id}")
    expect(page.locator("#approval")).to_contain_text("approve_spec")
    message = "classify the negative n error path with care <b>please</b>"
    page.fill("#approval textarea[name=message]", message)
    page.click("#approval button[value=reject]")
    expect(page.locator("#decision-result")).to_contain_text("resuming")
    redone = web.run_dir(run_id) / "transcript-enumerator-2.jsonl"
    deadline = time.monotonic() + WAIT / 1000
    while not (redone.is_file() and "with care" in redone.read_text()):
        assert time.monotonic() < deadline, "the enumerator never ran again"
        time.sleep(0.5)
    assert "classify the negative n error path with care <b>please</b>" in \
        redone.read_text().replace("\\u003c", "<").replace("\\u003e", ">")
    # the run asks again, and the page says so without a reload
    expect(page.locator("#status")).to_have_text("waiting for approval", timeout=WAIT)
    expect(page.locator("#approval")).to_contain_text("approve_spec")
    assert web.status(run_id)["status"] == "waiting"


def test_approve_resumes_live_and_a_second_click_is_already_decided(
        web: WebWorld, browser: Any) -> None:
    run_id = "ask-approve"
    url = f"{web.server.url}/runs/{run_id}"
    live = browser.new_page(extra_http_headers=AUTH)
    stale = browser.new_page(extra_http_headers=AUTH)
    stale.route("**/events**", lambda route: route.abort())  # a tab that never updates
    live.goto(url)
    stale.goto(url)
    expect(stale.locator("#approval button[value=approve]")).to_be_visible()
    live.click("#approval button[value=approve]")
    expect(live.locator("#decision-result")).to_contain_text("resuming")
    # the run goes on, in the server's background, and the page follows it live
    expect(live.locator("#status")).to_have_text("running", timeout=WAIT)
    expect(live.locator("#status")).to_have_text("waiting for approval", timeout=WAIT)
    expect(live.locator("#approval")).to_contain_text("approve_advance")
    # the stale tab still shows the spec approval: its click must not resume anything
    stale.click("#approval button[value=approve]")
    expect(stale.locator("#decision-result")).to_contain_text("already decided")
    status = web.status(run_id)
    assert status["status"] == "waiting"
    assert status["waiting"]["action_requests"][0]["name"] == "approve_advance"
    live.close()
    stale.close()


def test_edit_that_breaks_an_anchor_is_refused_with_the_checks_message(
        web: WebWorld, page: Any) -> None:
    run_id = "ask-edit"
    page.goto(f"{web.server.url}/runs/{run_id}")
    page.locator("#edit summary").click()
    editor = page.locator("#edit textarea[name=spec]")
    spec = editor.input_value()
    assert "`kv/cache.py:4`" in spec
    editor.fill(spec.replace("`kv/cache.py:4`", "`kv/cache.py:400`"))
    page.click("#edit button[value=preview]")
    check = page.locator("#spec-check")
    expect(check).to_contain_text("The spec checks fail")
    expect(check).to_contain_text("kv/cache.py:400")
    expect(page.locator("#spec-preview")).to_contain_text("kv-cache: alloc")
    page.click("#edit button[value=edit]")
    result = page.locator("#decision-result")
    expect(result).to_contain_text("refused")
    expect(result).to_contain_text("kv/cache.py:400")
    status = web.status(run_id)
    assert status["status"] == "waiting"
    assert status["waiting"]["action_requests"][0]["name"] == "approve_spec"
    branch = status["branch"]
    assert "spec-edit" not in web.world.downstream.git("log", "--format=%b", branch)


def test_static_report_is_one_self_contained_file(web: WebWorld, page: Any) -> None:
    done = pw(web.repo, "report", ADVANCE, "--html")
    assert done.returncode == 0, done.stderr
    path = Path(done.stdout.strip())
    assert path == web.run_dir(ADVANCE) / "report.html"
    html = path.read_text()
    assert "<style>" in html
    assert not re.search(r"<script|<link|src=|/static/", html)
    assert "&lt;script&gt;" in html
    assert SECRET not in html
    page.goto(path.as_uri())
    expect(page.locator("#evidence tr.record.red").first).to_contain_text("test_alloc")
    expect(page.locator("#diff .highlight").first).to_be_visible()
    assert page.locator("#approval button").count() == 0
    assert page.evaluate("window.__pwned") is None
    # into a folder that does not exist: bad input naming --output, no traceback
    missing = web.repo.parent / "no-such-folder" / "report.html"
    refused = pw(web.repo, "report", ADVANCE, "--html", "-o", str(missing), "--json")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "Traceback" not in refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert error["key"] == "--output"
    assert "its folder does not exist" in error["message"]
