"""The one redactor (:mod:`portwright.redact`): what it masks, what it leaves, and that a
hostile megabyte costs it linear time."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from portwright import redact
from portwright.redact import MASK, credentials_in, redact_data, register, registered


@pytest.fixture(autouse=True)
def _empty_registry() -> Iterator[None]:
    with registered():
        yield


@pytest.mark.parametrize(("text", "shown"), [
    ("https://user:pw@github.com/o/r.git", f"https://user:{MASK}@github.com/o/r.git"),
    ("HTTPS://user:pw@github.com/o/r", f"HTTPS://user:{MASK}@github.com/o/r"),
    ("postgresql://port:s3cr3t@db.internal:5432/runs",
     f"postgresql://port:{MASK}@db.internal:5432/runs"),
    ("git+ssh://me:hunter2@host/repo.git", f"git+ssh://me:{MASK}@host/repo.git"),
    ("fetch postgresql://u:p@ss@db/x failed", f"fetch postgresql://u:{MASK}@db/x failed"),
    ("https://github.com/o/r.git", "https://github.com/o/r.git"),
    ("ssh://git@github.com/o/r", "ssh://git@github.com/o/r"),
])
def test_url_passwords_of_any_scheme(text: str, shown: str) -> None:
    assert redact.redact(text) == shown


@pytest.mark.parametrize(("text", "shown"), [
    ("Authorization: Bearer abc.def-123", f"Authorization: {MASK}"),
    ("proxy-authorization: Basic dXNlcjpwYXNz", f"proxy-authorization: {MASK}"),
    ('{"Authorization": "token 0123456789abcdef"}', f'{{"Authorization": "{MASK}"}}'),
    ("sent Bearer eyJhbGciOiJIUzI1NiJ9.e30.x1 to it", f"sent Bearer {MASK} to it"),
    ("with token 0a1b2c3d4e5f6a7b8c9d", f"with token {MASK}"),
    ("header Basic dXNlcjpwYXNzd29yZA==", f"header Basic {MASK}"),
    ("the token comes from token_env", "the token comes from token_env"),
    ("Basic configuration applies", "Basic configuration applies"),
    ("a token ceiling. and token GITHUB_TOKEN", "a token ceiling. and token GITHUB_TOKEN"),
])
def test_authorization_headers_and_schemes(text: str, shown: str) -> None:
    assert redact.redact(text) == shown


@pytest.mark.parametrize("token", [
    "ghp_" + "a1B2" * 9, "gho_" + "Z" * 36, "ghs_" + "0" * 36, "ghu_" + "x9" * 18,
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "sk-" + "q" * 48, "sk-proj-" + "Ab3_" * 10,
])
def test_token_shapes(token: str) -> None:
    said = redact.redact(f"Incorrect API key provided: {token}. See the docs.")
    assert token not in said
    assert said == f"Incorrect API key provided: {MASK}. See the docs."


def test_x_access_token_userinfo() -> None:
    said = redact.redact("push to https://x-access-token:opaquevalue42@github.com/o/r")
    assert "opaquevalue42" not in said
    assert "github.com/o/r" in said


def test_registered_values_are_replaced_exactly_short_ones_ignored() -> None:
    register("opaque-value-of-a-key", "short", None, "")
    assert redact.redact("key=opaque-value-of-a-key!") == f"key={MASK}!"
    assert redact.redact("a short word") == "a short word"


def test_the_registry_takes_the_variables_named() -> None:
    environ = {"MY_KEY": "an-opaque-model-key-1", "OTHER": "not-secret-at-all"}
    redact.register_environment(environ, ["MY_KEY", "MISSING"])
    assert redact.redact("an-opaque-model-key-1 not-secret-at-all") == \
        f"{MASK} not-secret-at-all"


def test_registered_within_a_block_only() -> None:
    with registered("value-of-the-block"):
        assert redact.redact("value-of-the-block") == MASK
    assert redact.redact("value-of-the-block") == "value-of-the-block"


class _Reason(BaseModel):
    reason: str
    tags: list[str]


@dataclass(frozen=True)
class _Step:
    note: str


def test_data_is_walked_and_keeps_its_types() -> None:
    register("opaque-key-in-data")
    data = {"a": ["x opaque-key-in-data"], "b": (1, "opaque-key-in-data"),
            "m": _Reason(reason="opaque-key-in-data", tags=["ok"]),
            "s": _Step(note="https://u:pw@h/x"), "n": 3, "opaque-key-in-data": True}
    out = redact_data(data)
    assert out == {"a": [f"x {MASK}"], "b": (1, MASK), "m": _Reason(reason=MASK, tags=["ok"]),
                   "s": _Step(note=f"https://u:{MASK}@h/x"), "n": 3, MASK: True}
    assert redact_data("unchanged") == "unchanged"


@pytest.mark.parametrize("url", [
    "https://user:pw@host/r", "HTTPS://user:pw@host/r", "Https://token@host/r",
    "postgresql://u:p@db/x", "git+ssh://u:p@h/r",
])
def test_credentials_in_a_url(url: str) -> None:
    assert credentials_in(url)


@pytest.mark.parametrize("url", ["https://host/r", "origin", "git@github.com:o/r.git",
                                 "/srv/repo", "ssh://host/r"])
def test_no_credentials(url: str) -> None:
    assert not credentials_in(url)


@pytest.mark.parametrize("hostile", [
    "a://a:" * 200_000, "https://" + ":" * 1_000_000, "Authorization:" + " " * 1_000_000,
    "token " * 200_000, "ghp_" * 250_000, "sk-" + "a" * 1_000_000,
    "x-access-token:" + "b" * 1_000_000, "Bearer " + "=" * 1_000_000,
    "http://" * 150_000, "u:" * 500_000,
])
def test_a_hostile_megabyte_takes_linear_time(hostile: str) -> None:
    register("registered-secret-value")
    started = time.perf_counter()
    redact.redact(hostile + "registered-secret-value")
    assert time.perf_counter() - started < 2.0


def test_what_holds_no_secret_is_the_same_object() -> None:
    from enum import StrEnum

    class Status(StrEnum):
        DONE = "done"

    data = {"status": Status.DONE, "steps": [_Step(note="ok")], "m": _Reason(reason="r",
                                                                            tags=[])}
    assert redact_data(data) is data
    assert redact_data({"s": Status.DONE, "x": "https://u:pw@h/"})["s"] is Status.DONE


def test_unredacted_puts_back_only_what_was_masked() -> None:
    live = {"runs": {"checkpoint_url": "postgresql://u:pw@db/x"}, "model": {"name": "new"},
            "gates": ["https://u:pw@h/"]}
    recorded = redact_data({**live, "model": {"name": "old"}})
    assert recorded["runs"]["checkpoint_url"] == f"postgresql://u:{MASK}@db/x"
    assert redact.unredacted(recorded, live) == {**live, "model": {"name": "old"}}
    assert redact.unredacted(recorded, {}) == recorded
