"""``[temporal]`` and ``[runs] engine``: bad values exit 2 naming the key and a fix."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from portwright.config import load_config
from portwright.errors import ConfigError
from tests.conftest import GitRepo

BASE = '[upstream]\nsource = "../upstream"\n'


def _repo(make_repo: Callable[[str], GitRepo], extra: str) -> Path:
    make_repo("upstream").commit("up", {"a.py": "x = 1\n"})
    down = make_repo("downstream")
    down.commit("cfg", {"portwright.toml": BASE + extra})
    return down.path


def test_defaults(make_repo: Callable[[str], GitRepo]) -> None:
    config = load_config(_repo(make_repo, ""), environ={})
    assert config.temporal.address == "127.0.0.1:7233"
    assert config.temporal.namespace == "default"
    assert config.temporal.task_queue == "default"
    assert config.runs.engine == "local"


def test_environment_sets_the_address(make_repo: Callable[[str], GitRepo]) -> None:
    config = load_config(_repo(make_repo, ""),
                         environ={"PORTWRIGHT_TEMPORAL__ADDRESS": "10.0.0.5:7233",
                                  "PORTWRIGHT_TEMPORAL__NAMESPACE": "ports"})
    assert config.temporal.address == "10.0.0.5:7233"
    assert config.temporal.namespace == "ports"


@pytest.mark.parametrize(("extra", "key", "at_load"), [
    ('[temporal]\naddress = "no-port"\n', "temporal.address", True),
    ("[temporal]\nheartbeat_timeout = 0\n", "temporal.heartbeat_timeout", True),
    ('[temporal]\nnode_queues = { full_gate = "a b" }\n', "temporal.node_queues", True),
    ('[temporal]\nnode_queues = { nonsense = "gpu" }\n', "temporal.node_queues", False),
    ('[temporal]\ntask_queue = ""\n', "temporal.task_queue", True),
    ('[temporal]\nunknown = 1\n', "temporal.unknown", True),
    ('[runs]\nengine = "celery"\n', "runs.engine", True),
])
def test_bad_values_name_the_key(make_repo: Callable[[str], GitRepo], extra: str,
                                 key: str, at_load: bool) -> None:
    """Most are refused when the file is read; a queue for a node the cycle does not have
    when a worker starts (the node names belong to the graph, not to the config)."""
    repo = _repo(make_repo, extra)
    if at_load:
        with pytest.raises(ConfigError) as caught:
            load_config(repo, environ={})
        assert key in caught.value.render()
    done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), "worker",
                           "--json"], capture_output=True, text=True, timeout=120,
                          env={**os.environ})
    assert done.returncode == 2, done.stdout + done.stderr
    assert key.split(".")[-1] in done.stderr


def test_unknown_engine_option_exits_2(make_repo: Callable[[str], GitRepo]) -> None:
    repo = _repo(make_repo, "")
    done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), "run", "x",
                           "--engine", "celery"], capture_output=True, text=True, timeout=120,
                          env={**os.environ})
    assert done.returncode == 2
    assert "--engine" in done.stderr


def test_schedule_of_an_unknown_command_exits_2(make_repo: Callable[[str], GitRepo]) -> None:
    repo = _repo(make_repo, "")
    done = subprocess.run([sys.executable, "-m", "portwright", "-C", str(repo), "schedule",
                           "create", "--cron", "0 3 * * *", "gates", "run"],
                          capture_output=True, text=True, timeout=120, env={**os.environ})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "schedule" in done.stderr


@pytest.mark.parametrize(("extra", "key", "says"), [
    ('tls = true\nserver_ca = "ca.pem"\n', "temporal.server_ca", "absolute path"),
    ('server_ca = "/etc/ca.pem"\n', "temporal.server_ca", "set tls = true"),
    ('tls = true\nclient_cert = "/etc/w.pem"\n', "temporal.client_key", "private key"),
    ('tls = true\nclient_key = "/etc/w.key"\n', "temporal.client_key", "without client_cert"),
    ('server_name = "temporal.test"\n', "temporal.server_name", "set tls = true"),
    ('tls = true\nserver_name = "not a name"\n', "temporal.server_name", "host name"),
    ('api_key_env = "sk-0123456789abcdef"\n', "temporal.api_key_env", "environment variable"),
    ('api_key_env = "PORTWRIGHT_KEY"\n', "temporal.api_key_env", "portwright's own"),
    ('address = "temporal.internal:7233"\napi_key_env = "TEMPORAL_API_KEY"\n',
     "temporal.api_key_env", "would travel in clear"),
], ids=["relative-ca", "ca-without-tls", "cert-without-key", "key-without-cert",
        "name-without-tls", "bad-name", "a-key-not-a-name", "own-prefix", "key-in-clear"])
def test_bad_tls_and_key_settings_name_the_key(make_repo: Callable[[str], GitRepo],
                                               extra: str, key: str, says: str) -> None:
    repo = _repo(make_repo, "[temporal]\n" + extra)
    with pytest.raises(ConfigError) as caught:
        load_config(repo, environ={})
    rendered = " ".join(caught.value.render().split())
    assert key in rendered and says in rendered, rendered
    assert "sk-0123456789abcdef" not in str(caught.value)


def test_an_api_key_on_loopback_may_go_without_tls(make_repo: Callable[[str], GitRepo]) -> None:
    config = load_config(_repo(make_repo, '[temporal]\napi_key_env = "TEMPORAL_API_KEY"\n'),
                         environ={})
    assert config.temporal.api_key_env == "TEMPORAL_API_KEY" and not config.temporal.tls


@pytest.mark.parametrize(("extra", "environ", "key", "says"), [
    ('tls = true\nserver_ca = "{missing}"\n', {}, "temporal.server_ca", "cannot read"),
    ('tls = true\nserver_ca = "{not_pem}"\n', {}, "temporal.server_ca", "not a PEM file"),
    ('api_key_env = "PW_TEST_UNSET_KEY"\n', {}, "temporal.api_key_env", "is not set"),
], ids=["missing-ca", "not-pem", "unset-key"])
def test_credentials_that_cannot_be_read_are_named_before_connecting(
        make_repo: Callable[[str], GitRepo], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        extra: str, environ: dict[str, str], key: str, says: str) -> None:
    import asyncio

    from portwright.dist.client import connect

    (tmp_path / "not.pem").write_text("just text\n")
    extra = extra.format(missing=tmp_path / "missing.pem", not_pem=tmp_path / "not.pem")
    monkeypatch.delenv("PW_TEST_UNSET_KEY", raising=False)
    config = load_config(_repo(make_repo, "[temporal]\n" + extra), environ=environ)
    with pytest.raises(ConfigError) as caught:
        asyncio.run(connect(config.temporal))
    rendered = " ".join(caught.value.render().split())
    assert key in rendered and says in rendered, rendered


@pytest.mark.temporal
def test_a_namespace_the_service_lacks_is_named(make_repo: Callable[[str], GitRepo],
                                                 temporal_address: str) -> None:
    import asyncio

    from portwright.dist.client import connect

    config = load_config(_repo(make_repo, ""),
                         environ={"PORTWRIGHT_TEMPORAL__ADDRESS": temporal_address,
                                  "PORTWRIGHT_TEMPORAL__NAMESPACE": "no-such-namespace"})
    with pytest.raises(ConfigError) as caught:
        asyncio.run(connect(config.temporal))
    assert caught.value.key == "temporal.namespace"
    assert "no-such-namespace" in caught.value.message
    assert caught.value.fix is not None
    assert "namespace create" in caught.value.fix
