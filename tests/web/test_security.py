"""What `portwright serve` refuses: starting off loopback without a token, any request
without the token (one made when none is given, on loopback too), cross-site posts, and
markup from a model."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.conftest import GitRepo
from tests.web.conftest import AUTH, SECRET, TOKEN, free_port, pw, serve
from tests.workflows.conftest import build_world


def state_changing_routes() -> list[str]:
    """Every route of the app that changes state (all of them take POST)."""
    from starlette.routing import Route

    from portwright.web.app import ROUTES

    paths = [r.path.replace("{run_id}", "some-run") for r in ROUTES
             if isinstance(r, Route) and "POST" in (r.methods or set())]
    assert len(paths) >= 3, paths
    return paths


def test_off_loopback_without_a_token_refuses_to_start(
        make_repo: Callable[[str], GitRepo]) -> None:
    repo = build_world(make_repo).repo
    done = pw(repo, "serve", "--host", "0.0.0.0", "--port", "9")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--token" in done.stderr


def test_on_loopback_without_a_token_one_is_made_printed_once_and_required(
        make_repo: Callable[[str], GitRepo]) -> None:
    """A page another site runs in a browser on this machine, or any local process, can
    reach 127.0.0.1: a server with no token would let it read runs and approve them."""
    repo = build_world(make_repo).repo
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "portwright", "-C", str(repo), "serve", "--port", str(port),
         "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        event = json.loads(process.stdout.readline())
        assert event["event"] == "serving"
        assert event["token_made"] is True
        login = event["login_url"]
        assert login.startswith(f"http://127.0.0.1:{port}/login?token=")
        made = login.split("token=", 1)[1]
        assert len(made) >= 32
        assert made != TOKEN
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline
            assert process.poll() is None
            time.sleep(0.2)
        assert httpx.get(url + "/").status_code == 401
        assert httpx.get(url + "/", headers=AUTH).status_code == 401  # another token
        for path in state_changing_routes():
            answer = httpx.post(url + path, data={"decision": "approve"},
                                headers={"Origin": url})
            assert answer.status_code == 401, path
        with httpx.Client(base_url=url) as client:
            assert client.get(login.removeprefix(url), follow_redirects=True).status_code \
                == 200
            assert client.get("/").status_code == 200
    finally:
        process.terminate()
        out, err = process.communicate(timeout=20)
    # printed once, in the event: nowhere else in what it wrote
    assert made not in out + err


def test_every_state_changing_route_needs_the_token_off_loopback(
        make_repo: Callable[[str], GitRepo], tmp_path: Path) -> None:
    repo = build_world(make_repo).repo
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with serve(repo, "--token-file", str(token_file), host="0.0.0.0", headers=auth) as server:
        for path in state_changing_routes():
            answer = httpx.post(server.url + path, data={"decision": "approve"})
            assert answer.status_code == 401, (path, answer.status_code)
            wrong = httpx.post(server.url + path, data={"decision": "approve"},
                               headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401, path
        assert httpx.get(server.url + "/").status_code == 401
        page = httpx.get(server.url + "/", headers=auth)
        assert page.status_code == 200
        assert TOKEN not in page.text
        assert SECRET not in page.text
        # with the token, a post from another site is still refused
        for path in state_changing_routes():
            foreign = httpx.post(server.url + path, data={"decision": "approve"},
                                 headers={**auth, "Origin": "https://evil.example"})
            assert foreign.status_code == 403, path
        # a browser signs in once through a link; the token then lives in a cookie
        with httpx.Client(base_url=server.url) as client:
            signed_in = client.get(f"/login?token={TOKEN}", follow_redirects=True)
            assert signed_in.status_code == 200
            assert TOKEN not in signed_in.text
            assert client.get("/").status_code == 200


def test_a_cross_site_post_is_refused(make_repo: Callable[[str], GitRepo]) -> None:
    repo = build_world(make_repo).repo
    with serve(repo) as server, httpx.Client(base_url=server.url, headers=AUTH) as client:
        page = client.get("/")
        assert page.status_code == 200
        csrf = client.cookies.get("portwright_csrf")
        assert csrf
        for path in state_changing_routes():
            # another site's form: its origin, no per-session token
            foreign = client.post(path, data={"decision": "approve"},
                                  headers={"Origin": "https://evil.example"})
            assert foreign.status_code == 403, path
            # same origin but no token in the form (a forged request that rode the cookie)
            bare = client.post(path, data={"decision": "approve"},
                               headers={"Origin": server.url})
            assert bare.status_code == 403, path
            # neither Origin nor Referer
            blind = client.post(path, data={"decision": "approve", "csrf": csrf})
            assert blind.status_code == 403, path
        # both checks pass: the request reaches the run (which does not exist)
        real = client.post("/runs/some-run/approve", data={"decision": "approve", "csrf": csrf},
                           headers={"Origin": server.url})
        assert real.status_code == 404
        # a foreign Host (DNS rebinding) is refused before anything else
        rebound = httpx.get(server.url + "/", headers={"Host": "evil.example"})
        assert rebound.status_code == 400
