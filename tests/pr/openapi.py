"""GitHub's own OpenAPI description for the fake GitHub: where the fetched copy is cached,
the part of it the fake serves (the operations below and every component they reach), and
the smallest instance of a schema (required properties only, nulls where allowed) that the
fake fills in with its state before validating its answer against the description.

The description is fetched by ``scripts/github-openapi.sh`` (``make test`` and ``.ci/run``
call it); the version pinned there is read from it, so the two never disagree.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FETCH = ROOT / "scripts" / "github-openapi.sh"

OPERATIONS: dict[str, tuple[str, str]] = {
    "repos/get": ("/repos/{owner}/{repo}", "get"),
    "pulls/list": ("/repos/{owner}/{repo}/pulls", "get"),
    "pulls/create": ("/repos/{owner}/{repo}/pulls", "post"),
    "pulls/get": ("/repos/{owner}/{repo}/pulls/{pull_number}", "get"),
    "pulls/update": ("/repos/{owner}/{repo}/pulls/{pull_number}", "patch"),
    "issues/add-labels": ("/repos/{owner}/{repo}/issues/{issue_number}/labels", "post"),
    "pulls/request-reviewers": ("/repos/{owner}/{repo}/pulls/{pull_number}/"
                                "requested_reviewers", "post"),
}
"""The operations the fake GitHub serves (operationId → path, method)."""


def version() -> str:
    match = re.search(r"^version=(\S+)$", FETCH.read_text(encoding="utf-8"), re.M)
    assert match, f"no version= line in {FETCH}"
    return match.group(1)


def cached_description() -> Path:
    """Where ``scripts/github-openapi.sh`` keeps ``api.github.com.json``."""
    cache = os.environ.get("PORTWRIGHT_TEST_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "portwright-tests")
    return Path(cache) / f"octokit-openapi-{version()}" / "api.github.com.json"


@functools.cache
def served_description() -> dict[str, Any]:
    """The operations of :data:`OPERATIONS` with every component they reach, out of the
    whole description (13 MB; a few hundred kB remain)."""
    whole = json.loads(cached_description().read_text(encoding="utf-8"))
    paths: dict[str, dict[str, Any]] = {}
    for path, method in OPERATIONS.values():
        item = whole["paths"][path]
        paths.setdefault(path, {k: v for k, v in item.items() if k == "parameters"})
        paths[path][method] = item[method]
    components: dict[str, dict[str, Any]] = {}
    pending = _refs(paths)
    while pending:
        ref = pending.pop()
        _, _, kind, name = ref.split("/", 3)
        if name in components.get(kind, {}):
            continue
        value = whole["components"][kind][name]
        components.setdefault(kind, {})[name] = value
        pending |= _refs(value)
    return {"openapi": whole["openapi"], "info": whole["info"],
            "servers": whole["servers"], "paths": paths, "components": components}


def _refs(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {value["$ref"]} if isinstance(value.get("$ref"), str) else set()
        for item in value.values():
            found |= _refs(item)
        return found
    if isinstance(value, list):
        return set().union(*(_refs(item) for item in value)) if value else set()
    return set()


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$ref`` (if any) followed."""
    while "$ref" in schema:
        _, _, kind, name = schema["$ref"].split("/", 3)
        schema = served_description()["components"][kind][name]
    return schema


def response_schema(operation: str, status: int) -> dict[str, Any] | None:
    """The JSON schema of ``operation``'s answer with ``status`` (None: not described)."""
    path, method = OPERATIONS[operation]
    responses = served_description()["paths"][path][method]["responses"]
    answer = responses.get(str(status))
    if answer is None:
        return None
    content = resolve(answer).get("content", {}).get("application/json")
    return None if content is None else resolve(content["schema"])


_FORMATS = {"uri": "https://example.invalid/", "date-time": "2025-01-01T00:00:00Z",
            "email": "octocat@example.invalid", "date": "2025-01-01"}


def minimal(schema: dict[str, Any]) -> Any:
    """The smallest value valid under ``schema``: required properties only, ``null`` where
    the schema allows it, the first enum value, the first ``oneOf``/``anyOf`` branch."""
    schema = resolve(schema)
    if schema.get("nullable"):
        return None
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return minimal(schema[key][0])
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            value = minimal(part)
            if isinstance(value, dict):
                merged.update(value)
        return merged
    kind = schema.get("type", "object")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: minimal(properties.get(name, {})) for name in schema.get("required", [])}
    if kind == "array":
        return []
    if kind == "string":
        return _FORMATS.get(schema.get("format", ""), "x")
    return {"integer": 1, "number": 1, "boolean": False}[kind]
