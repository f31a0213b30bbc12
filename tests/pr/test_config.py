"""``[pr]`` in portwright.toml: what it accepts, and what it refuses with the key named."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.config import PRBackendKind, parse_config
from portwright.errors import ConfigError

HEAD = '[upstream]\nsource = "../upstream"\n'


def load(text: str, environ: dict[str, str] | None = None) -> object:
    return parse_config((HEAD + text).encode(), Path("portwright.toml"), environ=environ or {})


def test_defaults_are_the_local_backend() -> None:
    config = load("")
    pr = config.pr  # type: ignore[attr-defined]
    assert pr.backend is PRBackendKind.LOCAL
    assert (pr.remote, pr.token_env, pr.draft) == (None, "GITHUB_TOKEN", True)
    assert pr.api_url == "https://api.github.com"


def test_a_github_section() -> None:
    pr = load('[pr]\nbackend = "github"\nrepository = "octo/port"\nbase = "main"\n'
              'draft = false\nlabels = ["portwright"]\nreviewers = ["octocat", "octo/core"]\n'
              'token_env = "PORT_BOT_TOKEN"\napi_url = "https://ghe.example.com/api/v3/"\n'
              ).pr  # type: ignore[attr-defined]
    assert pr.api_url == "https://ghe.example.com/api/v3"
    assert pr.reviewers == ["octocat", "octo/core"]


def test_environment_overrides_reach_it() -> None:
    pr = load("", {"PORTWRIGHT_PR__BACKEND": "github",
                   "PORTWRIGHT_PR__REPOSITORY": "octo/port"}).pr  # type: ignore[attr-defined]
    assert pr.repository == "octo/port"


@pytest.mark.parametrize(("body", "key", "says"), [
    ('backend = "gitlab"', "pr.backend", "github"),
    ('backend = "github"', "pr.repository", "owner/name"),
    ('backend = "github"\nrepository = "octo"', "pr.repository", "owner/name"),
    ('repository = "octo/port/extra"', "pr.repository", "owner/name"),
    ('api_url = "http://api.github.com"', "pr.api_url", "clear"),
    ('api_url = "ftp://x"', "pr.api_url", "https"),
    ('api_url = "https://user:secret@ghe.example.com/api/v3"', "pr.api_url", "credentials"),
    ('token_env = "ghp_abc-123"', "pr.token_env", "not a token"),
    ('token_env = "PORTWRIGHT_TOKEN"', "pr.token_env", "PORTWRIGHT_"),
    ('remote = "--upload-pack=evil"', "pr.remote", "'-'"),
    ('remote = "https://x-access-token:ghp_1@github.com/o/r.git"', "pr.remote", "credentials"),
    ('base = ""', "pr.base", "non-empty"),
    ('labels = [""]', "pr.labels", "1 to 50"),
    ('labels = "portwright"', "pr.labels", "list"),
    ('reviewers = ["not a login"]', "pr.reviewers", "login"),
    ("draft = 2", "pr.draft", "bool"),
    ("timeout = inf", "pr.timeout", ""),
    ('colour = "red"', "pr.colour", "token_env"),
])
def test_bad_values_name_their_key(body: str, key: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(f"\n[pr]\n{body}\n")
    assert caught.value.key == key
    assert caught.value.line is not None
    assert says in caught.value.render()
    assert caught.value.fix


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "GH_TOKEN", "github_token"])
def test_a_sandbox_never_gets_a_forge_token(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(f'\n[sandbox]\nenv = {{ {name} = "x" }}\n')
    assert caught.value.key == "sandbox.env"
    assert "never" in caught.value.render()


def test_nor_the_variable_of_the_configured_token() -> None:
    with pytest.raises(ConfigError) as caught:
        load('\n[sandbox]\nenv = { PORT_BOT_TOKEN = "x" }\n\n[pr]\ntoken_env = "PORT_BOT_TOKEN"\n')
    assert caught.value.key is not None
    assert caught.value.key.startswith("pr")
    assert "PORT_BOT_TOKEN" in caught.value.render()


def test_every_field_is_documented() -> None:
    from portwright.config_pr import PRConfig

    for name, field in PRConfig.model_fields.items():
        assert field.description, f"PRConfig.{name} has no docstring"
