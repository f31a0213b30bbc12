"""portwright.toml: every error names the file, the line or key, and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from portwright.config import PinStoreKind, SandboxBackend, load_config
from portwright.errors import ConfigError

GOOD = """\
[upstream]
source = "../upstream"
name = "tinylib"
path_map = { "src/" = "lib/" }

[pin]
store = "yaml"
file = "port.yaml"
key = "[0].commit"

[sandbox]
backend = "docker"
memory = "1g"
pids = 128

[model]
name = "qwen"
base_url = "http://127.0.0.1:8000/v1"

[model.budget]
tokens = 1000
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "portwright.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_good_file_loads_with_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, GOOD), environ={})
    assert config.upstream.path_map == {"src/": "lib/"}
    assert config.pin.store is PinStoreKind.YAML
    assert config.sandbox.backend is SandboxBackend.DOCKER
    assert config.sandbox.pids == 128
    assert config.model.budget.tokens == 1000
    assert config.model.budget.calls == 400  # default kept
    assert config.artifacts.ledger == "parity-ledger.md"
    assert config.approvals.advance == "always"


def test_missing_file_says_how_to_create_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={})
    assert str(tmp_path / "portwright.toml") in str(info.value)
    assert "portwright init" in str(info.value)


def test_toml_syntax_error_names_line(tmp_path: Path) -> None:
    write(tmp_path, '[upstream]\nsource = "../up"\n\n[sandbox]\nmemory = 1g\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={})
    assert info.value.line == 5
    assert f"{tmp_path / 'portwright.toml'}:5" in str(info.value)
    assert "fix:" in str(info.value)


def test_missing_required_key_names_section_and_fix(tmp_path: Path) -> None:
    write(tmp_path, '[upstream]\nname = "x"\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={})
    error = info.value
    assert error.key == "upstream.source"
    assert error.line == 1  # the [upstream] header
    assert "add `source = ...` under [upstream]" in (error.fix or "")


def test_unknown_key_lists_the_valid_ones(tmp_path: Path) -> None:
    write(tmp_path, '[upstream]\nsource = "../up"\n\n[sandbox]\nmemroy = "1g"\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={})
    error = info.value
    assert (error.line, error.key) == (5, "sandbox.memroy")
    assert "unknown key 'memroy'" in error.message
    assert "memory" in (error.fix or "")


def test_wrong_value_says_expected_and_found(tmp_path: Path) -> None:
    write(tmp_path, '[upstream]\nsource = "../up"\n\n[sandbox]\npids = -3\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={})
    error = info.value
    assert (error.line, error.key) == (5, "sandbox.pids")
    assert "greater than 0" in error.message
    assert "found -3" in error.message


def test_wrong_enum_value(tmp_path: Path) -> None:
    write(tmp_path, '[upstream]\nsource = "../up"\n[pin]\nstore = "json"\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={})
    assert info.value.line == 4
    assert "'markdown', 'yaml' or 'toml'" in info.value.message


def test_pin_pattern_must_have_sha_group(tmp_path: Path) -> None:
    write(tmp_path, '[upstream]\nsource = "../up"\n[pin]\npattern = "pin: (\\\\w+)"\n')
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={})
    assert info.value.line == 4
    assert "(?P<sha>" in info.value.message


def test_environment_overrides_file(tmp_path: Path) -> None:
    write(tmp_path, GOOD)
    config = load_config(tmp_path, environ={
        "PORTWRIGHT_MODEL__NAME": "llama", "PORTWRIGHT_SANDBOX__PIDS": "64",
        "PORTWRIGHT_APPROVALS__PR": "always", "UNRELATED": "1",
    })
    assert config.model.name == "llama"
    assert config.sandbox.pids == 64
    assert config.approvals.pr == "always"


def test_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    write(tmp_path, GOOD)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={"PORTWRIGHT_MODEL__TIMEOUT": "soon"})
    error = info.value
    assert error.file == "environment variable PORTWRIGHT_MODEL__TIMEOUT"
    assert error.key == "model.timeout"
    assert "unset PORTWRIGHT_MODEL__TIMEOUT" in (error.fix or "")


def test_every_field_is_documented() -> None:
    from pydantic import BaseModel

    from portwright import config as module

    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == \
                module.__name__ and not value.__name__.startswith("_"):
            for name, field in value.model_fields.items():
                assert field.description, f"{value.__name__}.{name} has no docstring"
