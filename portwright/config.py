"""``portwright.toml``: the pydantic models of a downstream repo's configuration.

Every component has one ``…Config`` model with ``extra="forbid"`` and a docstring
under each field. ``load_config`` reads the file, applies ``PORTWRIGHT_*``
environment overrides (:mod:`portwright.environment`: ``PORTWRIGHT_MODEL__NAME=gpt-4.1``
sets ``[model] name``; an unknown ``PORTWRIGHT_*`` name is an error) and turns every
validation error into a :class:`~portwright.errors.ConfigError` naming the file, line,
key (or the variable), what was expected and what was found.

Values that cannot work are refused here, not discovered later (:mod:`portwright.values`):
timeouts are finite and at least a second, sizes parse, paths stay inside the repository,
globs and regular expressions are well formed, no float is ``inf`` or ``nan``.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from portwright import environment
from portwright.config_errors import config_error, line_from_message, locate_key
from portwright.config_pr import SECRET_NAMES, PRBackendKind, PRConfig
from portwright.errors import ConfigError
from portwright.pathkinds import default_path_kinds, merge_path_kinds
from portwright.values import MemorySize, RepoFile, RepoFolder, RepoGlob, Seconds, TmpfsSize

__all__ = ["CONFIG_FILE", "SECRET_NAMES", "PRBackendKind", "PRConfig", "PortwrightConfig",
           "apply_overrides", "load_config", "locate_key", "parse_config"]

CONFIG_FILE = "portwright.toml"
ENV_PREFIX = environment.PREFIX


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True,
                              allow_inf_nan=False)


class UpstreamConfig(_Model):
    """Where the upstream project lives and how its paths map onto the port."""

    source: str
    """Local path (relative to the downstream repo) or git URL of the upstream repository."""
    name: str = "upstream"
    """Display name used in reports and pull requests."""
    branch: str = Field(default="HEAD", min_length=1)
    """The upstream revision that ``sync`` and ``gap`` scan towards by default."""
    path_map: dict[str, str] = Field(default_factory=dict)
    """Upstream path prefix → downstream path prefix, e.g. ``{"src/" = "lib/"}``."""
    path_kinds: dict[str, list[str]] = Field(default_factory=default_path_kinds)
    """Glob patterns that classify an upstream path by kind: ``tests``, or a kind a port does
    not carry (``build``, ``ci``, ``tooling``, ``bench``, ``demo``, ``docs``, ``dist``, ``types``,
    ``config``); the rest is ``source``. The defaults know each ecosystem's tooling (see
    :mod:`portwright.pathkinds`). A kind set here replaces that kind's defaults and is checked
    before them; kinds not set keep theirs; ``source = [...]`` claims paths for source."""

    @field_validator("path_kinds")
    @classmethod
    def _merge_path_kinds(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        return merge_path_kinds(value)

    @field_validator("source")
    @classmethod
    def _source_is_elsewhere(cls, value: str) -> str:
        import posixpath

        if not value.strip():
            raise ValueError("empty: name the upstream checkout (a path or a git URL)")
        if posixpath.normpath(value.strip()) == ".":
            raise ValueError("names the downstream repository itself; the upstream is "
                             "another repository")
        return value


class PinStoreKind(StrEnum):
    MARKDOWN = "markdown"
    YAML = "yaml"
    TOML = "toml"


class PinConfig(_Model):
    """Where the downstream repo records the upstream pin."""

    store: PinStoreKind = PinStoreKind.MARKDOWN
    """Kind of file holding the pin: ``markdown``, ``yaml`` or ``toml``."""
    file: RepoFile = "upstream-sync.md"
    """Path of that file, relative to the downstream repo."""
    key: str = ""
    """For yaml/toml: key path to the sha, e.g. ``[0].commit`` or ``upstream.commit``."""
    pattern: str = (
        r"(?im)^[ \t>*-]*\**\s*pin(?:ned)?(?:[ \t]+(?:upstream[ \t]+)?(?:commit|sha|revision))?"
        r"\s*\**\s*:\s*\**\s*`?(?P<sha>[0-9a-f]{7,40})`?"
    )
    """For markdown: regular expression whose ``sha`` group is the pin."""

    @field_validator("pattern")
    @classmethod
    def _pattern_has_sha(cls, value: str) -> str:
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
        if "sha" not in compiled.groupindex:
            raise ValueError("the pattern needs a named group (?P<sha>...)")
        return value


class ArtifactsConfig(_Model):
    """Where the parity records live in the downstream repo."""

    matrices: list[RepoGlob] = Field(default_factory=lambda: ["docs/parity/*.md"],
                                     min_length=1)
    """Glob patterns of coverage matrices (markdown tables); each must match a file."""
    ledger: RepoFile = "parity-ledger.md"
    """The parity ledger: every introduced change against its upstream reference."""
    inventory: RepoFile = "porting-inventory.md"
    """The from-scratch inventory: code written without an upstream source."""
    specs: RepoFolder = "specs/"
    """Folder of committed row specs."""
    statuses: list[str] = Field(
        default_factory=lambda: ["missing", "partial", "in-progress", "ported", "deferred",
                                 "not-applicable"], min_length=1
    )
    """Status vocabulary of the matrices, in order; unknown statuses are an error."""
    done_statuses: list[str] = Field(default_factory=lambda: ["ported", "not-applicable"])
    """Statuses that mean a row needs no more work (each one of ``statuses``)."""

    @field_validator("done_statuses")
    @classmethod
    def _done_are_statuses(cls, value: list[str], info: ValidationInfo) -> list[str]:
        known = {s.lower() for s in info.data.get("statuses", [])}
        unknown = [s for s in value if known and s.lower() not in known]
        if unknown:
            raise ValueError(f"{', '.join(unknown)} not among the statuses "
                             f"({', '.join(info.data['statuses'])})")
        return value


class SandboxBackend(StrEnum):
    AUTO = "auto"
    DOCKER = "docker"
    BWRAP = "bwrap"
    LOCAL = "local"


DEFAULT_LOCKFILES = (
    "requirements*.txt", "requirements/*.txt", "constraints*.txt", "pyproject.toml",
    "setup.cfg", "setup.py", "uv.lock", "poetry.lock", "Pipfile.lock", "environment.yml",
    "package.json", "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "CMakeLists.txt",
    "conanfile.txt", "conanfile.py", "vcpkg.json", "Cargo.toml", "Cargo.lock", "go.mod",
    "go.sum", "Gemfile.lock",
)
"""What ``[sandbox] lockfiles`` holds unless set: each ecosystem's dependency files, at the
top of the repository."""


def _check_gpus(value: object) -> object:
    """``"all"``, a positive count, or a non-empty list of device ids."""
    if isinstance(value, bool):
        raise ValueError("not a GPU request: use \"all\", a count (1, 2, …) or a list of "
                         "device ids")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"{value} GPUs: ask for at least 1, or remove the key for none")
        return value
    if isinstance(value, str):
        if value.strip().lower() == "all":
            return "all"
        if value.strip().isdigit():  # a count from an environment variable
            return _check_gpus(int(value))
        raise ValueError(f"{value!r} is not a GPU request: use \"all\", a count (1, 2, …) "
                         "or a list of device ids ([\"0\", \"1\"])")
    if isinstance(value, list):
        if not value:
            raise ValueError("an empty list of device ids: remove the key for no GPU")
        for item in value:
            if not isinstance(item, str | int) or isinstance(item, bool) or \
                    not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9:._-]*", str(item)):
                raise ValueError(f"{item!r} is not a device id (an index such as \"0\" or "
                                 "a UUID such as \"GPU-3f2a…\")")
        return [str(item) for item in value]
    raise ValueError("not a GPU request: use \"all\", a count or a list of device ids")


GpuRequest = Annotated[str | int | list[str], BeforeValidator(_check_gpus)]
"""``[sandbox] gpus``: ``"all"``, a count, or device ids."""


class SandboxConfig(_Model):
    """Where builds and tests run, and the limits they run under."""

    backend: SandboxBackend = SandboxBackend.AUTO
    """``auto`` (Docker if the engine answers, else bubblewrap), ``docker``, ``bwrap`` or
    ``local`` (a plain subprocess: no isolation, only when asked for by name)."""
    image: str = "portwright/base:bookworm"
    """Docker image the sandbox runs; built offline by ``portwright sandbox base-image``."""
    dockerfile: RepoFile | None = None
    """Optional Dockerfile in the downstream repo, built (and cached) instead of ``image``."""
    setup: list[str] = Field(default_factory=list)
    """Shell commands that install the port's toolchain and dependencies (``pip install -r
    requirements.txt``). Docker: run once, as root and with network, when the environment
    image is built (``FROM`` ``image``, or on top of ``dockerfile``), in a folder holding the
    ``lockfiles`` as committed; sandboxes then start from that image, without network.
    bubblewrap and ``local``: run in every new sandbox, in the worktree (bubblewrap: no
    network)."""
    base_build: str | None = None
    """A shell command that builds the tree (``cmake -S . -B build && cmake --build build``,
    ``npm ci``). portwright runs it on a clean export of the run's base — the commit the run
    started from, never one an agent made — once per base, and each gate phase's export
    then starts from what it left (its untracked files, files the phase's commit did not
    change dated before them), so the phase's own build is incremental. Unset: every phase
    builds from scratch."""
    base_build_timeout: Seconds = 1800.0
    """Timeout in seconds of ``base_build``."""
    lockfiles: list[RepoGlob] = Field(default_factory=lambda: list(DEFAULT_LOCKFILES))
    """Files the environment image is built from and keyed by (globs, as committed): a change
    to one of them, to ``setup``, to ``dockerfile`` or to the base image rebuilds it. Files a
    setup command names (``-r requirements-dev.txt``) count too. A glob set here must match a
    committed file; the defaults need not."""
    gpus: GpuRequest | None = None
    """GPUs for the Docker sandbox, through the engine's device requests: ``"all"``, a count
    (``2``) or device ids (``["0", "GPU-3f2…"]``). Needs the NVIDIA container toolkit on the
    engine's host; bubblewrap refuses it."""
    memory: MemorySize = "2g"
    """Memory limit (swap included), docker units: ``512m``, ``2g`` (at least ``32m``)."""
    pids: int = Field(default=512, gt=0)
    """Maximum number of processes inside the sandbox."""
    cpus: float = Field(default=2.0, gt=0, le=1024)
    """CPU limit in cores."""
    tmpfs_size: TmpfsSize = "256m"
    """Size cap of the writable ``/tmp`` (counts against ``memory``)."""
    network: bool = False
    """Give the sandbox a network. Off by default; gates should not need it."""
    timeout: Seconds = 600.0
    """Default timeout in seconds of one command (1 s to a week)."""
    output_cap: int = Field(default=256 * 1024 * 1024, gt=0)
    """Hard cap in bytes of one command's logged output; the command is killed beyond it."""
    tail_bytes: int = Field(default=16 * 1024, gt=0)
    """Bytes of head and tail of each stream kept in memory."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment passed into the sandbox. Nothing else from the host is passed; a forge's
    token (``GITHUB_TOKEN``, ``GH_TOKEN``, …, and ``[pr] token_env``) never is."""

    @field_validator("base_build")
    @classmethod
    def _a_command(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("an empty command: set the command that builds the tree, or "
                             "remove the key")
        return value

    @field_validator("env")
    @classmethod
    def _no_forge_token(cls, value: dict[str, str]) -> dict[str, str]:
        secret = sorted(name for name in value if name.upper() in SECRET_NAMES)
        if secret:
            raise ValueError(f"{secret[0]} is a forge's token: sandboxed code must never "
                             "see it")
        return value


class ModelBudget(_Model):
    """Limits the framework enforces on model use. ``0`` means unlimited."""

    tokens: int = Field(default=2_000_000, ge=0)
    """Total prompt + completion tokens."""
    cost_usd: float = Field(default=20.0, ge=0)
    """Total cost in US dollars, from the price table."""
    calls: int = Field(default=400, ge=0)
    """Number of model calls, failed and unparseable ones included."""
    wall_seconds: float = Field(default=3600.0, ge=0)
    """Wall time spent in the agents."""


class Price(_Model):
    """Price of a model in US dollars per million tokens."""

    prompt: float = Field(ge=0)
    """Per million uncached prompt tokens."""
    completion: float = Field(ge=0)
    """Per million completion tokens."""
    cached: float | None = Field(default=None, ge=0)
    """Per million cached prompt tokens (defaults to the prompt price)."""


class ModelConfig(_Model):
    """The model endpoint the agents talk to (any OpenAI-compatible server)."""

    provider: Literal["openai", "replay"] = "openai"
    """``openai`` (any Chat Completions server) or ``replay`` (plays a recorded cassette)."""
    name: str = "gpt-4.1"
    """Model name sent to the server."""
    base_url: str | None = None
    """Server URL, e.g. ``http://localhost:8000/v1`` for vLLM; unset means OpenAI."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable that holds the API key (never the key itself)."""
    timeout: Seconds = 120.0
    """Seconds before one request times out."""
    max_retries: int = Field(default=3, ge=0)
    """Retries on 429 / 5xx / connection errors, done by the SDK with backoff."""
    cassette: str | None = None
    """For ``replay``: path of the cassette (JSONL) to play."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature; unset leaves the server's default."""
    budget: ModelBudget = Field(default_factory=ModelBudget)
    """Per-run budget."""
    role_budgets: dict[str, ModelBudget] = Field(default_factory=dict)
    """Per-role budgets (``gap_verifier``, ``enumerator``, ``implementer``, ``reviewer``)."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Price table by model name."""
    context_tokens: int = Field(default=60_000, gt=0)
    """Ceiling on the context assembled for one role."""
    max_steps: int = Field(default=40, gt=0)
    """Maximum tool-calling steps of one agent turn."""


Policy = Literal["always", "never", "unusual"]


class ApprovalsConfig(_Model):
    """Where a run stops and waits for a person: ``always``, ``never`` (autonomous runs) or
    ``unusual`` (only when something is: a deferred surface item, a gate retried, a bound
    nearly spent)."""

    spec: Policy = "unusual"
    """Once the spec passes its checks, before any test is ported."""
    advance: Policy = "always"
    """Once the change is reviewed and reconciled, before it is committed as done."""
    pr: Policy = "never"
    """Before the pull request is opened."""


POSTGRES_SCHEMES = ("postgresql", "postgres")
"""The schemes of a ``[runs] checkpoint_url`` (libpq's)."""


class RunsConfig(_Model):
    """Where runs keep their checkpoints, and what drives them."""

    checkpoint_url: str | None = None
    """``postgresql://user:password@host:port/database`` to keep checkpoints in Postgres
    (``portwright[postgres]``), for runs resumed on other machines; unset: an SQLite file
    in the state folder. Postgres is the only server: another scheme is refused here."""
    engine: Literal["local", "temporal"] = "local"
    """What drives a run of the cycle: ``local`` (this process, LangGraph checkpoints) or
    ``temporal`` (a Temporal workflow run by ``portwright worker`` processes, see
    ``[temporal]``; ``portwright[temporal]``). ``portwright run --engine`` overrides it."""

    @field_validator("checkpoint_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        url = value.strip()
        parts = urlsplit(url)
        if parts.scheme.lower() not in POSTGRES_SCHEMES:
            given = f"a {parts.scheme}:// URL" if parts.scheme else "not a URL"
            raise ValueError(f"must be a postgresql:// URL (checkpoints go to Postgres, or "
                             f"unset to an SQLite file in the state folder); this is {given}")
        try:
            _ = parts.port  # raises for a port that is not one
        except ValueError as exc:
            raise ValueError(f"the URL's port is not a port ({exc})") from None
        return url


_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):[0-9]{1,5}$")
_QUEUE = re.compile(r"^[A-Za-z0-9_.:@/-]{1,200}$")
_SERVER_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_loopback(host: str) -> bool:
    """Whether the host name or address ``host`` is this machine's loopback interface
    (127.0.0.0/8, ::1 with or without brackets, ``localhost`` and its subdomains): the one
    test of "a secret may go there in clear" for every endpoint the config names."""
    host = host.strip("[]")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class TemporalConfig(_Model):
    """The Temporal service that runs workflows when ``[runs] engine = "temporal"``, and how
    workers run the cycle's nodes as its activities. ``PORTWRIGHT_TEMPORAL__ADDRESS`` and
    the like override each key from the environment (a worker fleet shares one file)."""

    address: str = "127.0.0.1:7233"
    """``host:port`` of the Temporal frontend (the dev server's default)."""
    namespace: str = Field(default="default", min_length=1, max_length=200)
    """Temporal namespace of the project's workflows and schedules."""
    task_queue: str = "default"
    """Task queue of the workflows and of every node not in ``node_queues``: the queue of
    ordinary sandboxes. ``portwright worker`` polls it unless ``--queue`` names another."""
    node_queues: dict[str, str] = Field(default_factory=dict)
    """Node → task queue for nodes that need another class of sandbox, e.g.
    ``{ full_gate = "gpu" }``: only workers started with ``--queue gpu`` run them."""
    heartbeat_timeout: Seconds = 60.0
    """A node whose worker has not reported for this long (killed, cut off) is given to
    another worker. Workers report every third of it."""
    node_timeout: Seconds = 4 * 3600.0
    """Longest one attempt of one node may run (a gate, an agent turn)."""
    max_attempts: int = Field(default=3, ge=1, le=100)
    """Attempts of one node before the run fails (a dead worker's attempt counts)."""
    max_concurrent_nodes: int = Field(default=2, ge=1, le=64)
    """Nodes one worker runs at once (each may hold a sandbox)."""
    tls: bool = False
    """Connect to the frontend over TLS; its certificate is checked against ``server_ca``
    (the system's roots when unset) for ``server_name`` (the host of ``address`` when
    unset)."""
    server_ca: str | None = None
    """PEM file of the CA that signed the frontend's certificate (an absolute path; needs
    ``tls``)."""
    client_cert: str | None = None
    """PEM file of this process's certificate, for a frontend that requires mTLS (an
    absolute path; needs ``tls`` and ``client_key``)."""
    client_key: str | None = Field(default=None, validate_default=True)
    """PEM file of the private key of ``client_cert`` (an absolute path, outside every
    repository)."""
    server_name: str | None = None
    """The name the frontend's certificate carries, sent as the TLS server name (needs
    ``tls``): for an ``address`` that is an IP address or another name."""
    api_key_env: str | None = Field(default=None, validate_default=True)
    """Name of the environment variable that holds the frontend's API key (never the key
    itself), sent as ``authorization: Bearer`` on every call. Needs ``tls`` unless
    ``address`` is on the loopback interface: a key never travels in clear."""

    @field_validator("address")
    @classmethod
    def _host_port(cls, value: str) -> str:
        if not _ADDRESS.match(value) or not 0 < int(value.rpartition(":")[2]) < 65536:
            raise ValueError(f"must be host:port (e.g. 127.0.0.1:7233), not {value!r}")
        return value

    @field_validator("server_ca", "client_cert", "client_key")
    @classmethod
    def _pem_file(cls, value: str | None, info: ValidationInfo) -> str | None:
        cert = info.data.get("client_cert")
        if info.field_name == "client_key" and (value is None) != (cert is None):
            raise ValueError("client_cert needs its private key: set client_key to its PEM "
                             "file" if value is None else
                             "client_key without client_cert: set both, or neither")
        if value is None:
            return None
        if not Path(value).expanduser().is_absolute():
            raise ValueError(f"must be an absolute path (certificates and keys live outside "
                             f"every repository), not {value!r}")
        if not info.data.get("tls"):
            raise ValueError(f"{info.field_name} is set but tls is not: set tls = true")
        return value

    @field_validator("server_name")
    @classmethod
    def _server_name(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not info.data.get("tls"):
            raise ValueError("server_name is set but tls is not: set tls = true")
        if value is not None and not _SERVER_NAME.match(value):
            raise ValueError(f"must be a host name, not {value!r}")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _api_key_env(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if not _ENV_NAME.match(value):
            raise ValueError("the name of an environment variable (letters, digits, _), not "
                             "a key")
        if value.upper().startswith(ENV_PREFIX):
            raise ValueError(f"{ENV_PREFIX}* variables are portwright's own settings: name "
                             "another (e.g. TEMPORAL_API_KEY)")
        address = info.data.get("address")
        if not info.data.get("tls") and isinstance(address, str) and not is_loopback(
                address.rpartition(":")[0]):
            raise ValueError(f"an API key over plain text to {address} would travel in clear: "
                             "set tls = true")
        return value

    @field_validator("task_queue")
    @classmethod
    def _queue_name(cls, value: str) -> str:
        if not _QUEUE.match(value):
            raise ValueError(f"must be a task queue name (letters, digits, _.:@/-), not "
                             f"{value!r}")
        return value

    @field_validator("node_queues")
    @classmethod
    def _queue_names(cls, value: dict[str, str]) -> dict[str, str]:
        for node, queue in value.items():
            if not _QUEUE.match(queue):
                raise ValueError(f"the queue of {node!r} must be a task queue name (letters, "
                                 f"digits, _.:@/-), not {queue!r}")
        return value


class BoundsConfig(_Model):
    """Upper bounds of every loop in the cycle; exhausting one ends the run ``blocked``."""

    spec_attempts: int = Field(default=3, gt=0)
    """Attempts at a spec that passes ``check_spec``."""
    red_attempts: int = Field(default=3, gt=0)
    """Attempts at ported tests that fail before the implementation."""
    implement_attempts: int = Field(default=5, gt=0)
    """Implementation attempts (focused green, full gate)."""
    review_rounds: int = Field(default=2, gt=0)
    """Review rounds that may request changes."""


class SyncConfig(_Model):
    """How ``portwright sync`` and ``portwright run --next`` run their port runs."""

    concurrency: int = Field(default=2, gt=0, le=64)
    """Port runs that go at once (each has its own worktree and sandbox)."""


class PortwrightConfig(_Model):
    """The whole of ``portwright.toml``."""

    upstream: UpstreamConfig
    """The upstream project."""
    pin: PinConfig = Field(default_factory=PinConfig)
    """Where the pin is recorded."""
    artifacts: ArtifactsConfig = Field(default_factory=ArtifactsConfig)
    """Where the parity records live."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """Sandbox backend and limits."""
    model: ModelConfig = Field(default_factory=ModelConfig)
    """Model endpoint and budgets."""
    approvals: ApprovalsConfig = Field(default_factory=ApprovalsConfig)
    """Human-in-the-loop policy."""
    bounds: BoundsConfig = Field(default_factory=BoundsConfig)
    """Loop bounds."""
    runs: RunsConfig = Field(default_factory=RunsConfig)
    """Checkpoints of runs, and their engine."""
    sync: SyncConfig = Field(default_factory=SyncConfig)
    """Pin syncs and scheduled runs."""
    pr: PRConfig = Field(default_factory=PRConfig)
    """Where a finished run's pull request goes."""
    temporal: TemporalConfig = Field(default_factory=TemporalConfig)
    """The Temporal service and its workers (``[runs] engine = "temporal"``)."""
    state_dir: str | None = None
    """Folder for run state, caches and the upstream clone, shared by projects (each gets
    ``projects/<name>-<hash>`` in it). An absolute path outside every repository: sandboxed
    commands can write the repository. Unset: ``$XDG_STATE_HOME/portwright`` or
    ``~/.local/state/portwright``; ``PORTWRIGHT_STATE_DIR`` sets it too."""
    _env: dict[str, str] = PrivateAttr(default_factory=dict)

    @field_validator("pr")
    @classmethod
    def _token_stays_out_of_sandboxes(cls, value: PRConfig, info: ValidationInfo) -> PRConfig:
        sandbox = info.data.get("sandbox")
        if isinstance(sandbox, SandboxConfig) and value.token_env in sandbox.env:
            raise ValueError(f"[sandbox] env passes {value.token_env}, the variable of the "
                             "token (token_env): sandboxed code must never see it; remove it "
                             "from [sandbox] env")
        return value

    @field_validator("state_dir")
    @classmethod
    def _state_dir_absolute(cls, value: str | None) -> str | None:
        if value is None:
            return None
        path = Path(value).expanduser()
        if not path.is_absolute():
            raise ValueError(f"must be an absolute path outside every repository, not "
                             f"{value!r}")
        if path.resolve() == Path("/"):
            raise ValueError("must not be the filesystem root")
        return value

    def origin(self, key: str, file: Path | str) -> str:
        """Where ``key`` (dotted) was set: ``environment variable PORTWRIGHT_…`` when an
        override set it (or a table above it), else ``file``."""
        parts = key.split(".")
        for depth in range(len(parts), 0, -1):
            name = self._env.get(".".join(parts[:depth]))
            if name is not None:
                return environment.where(name)
        return str(file)


def apply_overrides(config: PortwrightConfig, overrides: Mapping[str, Any]) -> PortwrightConfig:
    """``config`` with ``{"section.key": value}`` overrides (a command's options, carried to
    another process) applied, each section validated again."""
    sections: dict[str, dict[str, Any]] = {}
    for dotted, value in overrides.items():
        section, _, key = dotted.partition(".")
        if section not in PortwrightConfig.model_fields or not key:
            raise ConfigError(f"no setting {dotted!r} to override", key=dotted,
                              fix="name a key of portwright.toml as section.key")
        sections.setdefault(section, {})[key] = value
    update: dict[str, Any] = {}
    for section, values in sections.items():
        current = getattr(config, section)
        try:
            update[section] = type(current).model_validate({**current.model_dump(), **values})
        except ValidationError as exc:
            raise ConfigError(f"bad override of [{section}]: {exc.errors()[0]['msg']}",
                              key=section, fix="pass a value the setting accepts") from exc
    return config.model_copy(update=update)


def load_config(
    repo: Path, *, environ: Mapping[str, str] | None = None, file: Path | None = None
) -> PortwrightConfig:
    """Read ``portwright.toml`` from ``repo`` with environment overrides applied."""
    path = file or repo / CONFIG_FILE
    if path.is_symlink() or not path.is_file():
        raise ConfigError(
            "portwright.toml is a symbolic link" if path.is_symlink() else
            "no portwright.toml here",
            file=path,
            fix="replace the link by the file itself" if path.is_symlink() else
            "run `portwright init` in the downstream repository, or pass --repo",
        )
    return parse_config(path.read_bytes(), path, environ=environ)


def parse_config(
    data: bytes, path: Path, *, environ: Mapping[str, str] | None = None
) -> PortwrightConfig:
    """``portwright.toml``'s bytes (``path`` names the file in errors) with environment
    overrides applied."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError("not UTF-8 text", file=path, line=data[: exc.start].count(b"\n") + 1,
                          fix="save the file as UTF-8") from exc
    try:
        parsed: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None) or line_from_message(str(exc))
        raise ConfigError(
            f"not valid TOML: {getattr(exc, 'msg', exc)}",
            file=path,
            line=line,
            fix="fix the TOML syntax at that line (strings need quotes, tables [brackets])",
        ) from exc
    env_sources = environment.overlay(parsed, os.environ if environ is None else environ,
                                      PortwrightConfig.model_fields)
    try:
        config = PortwrightConfig.model_validate(parsed)
    except ValidationError as exc:
        raise config_error(exc, path, text, env_sources, PortwrightConfig) from exc
    config._env = {".".join(keys): name for keys, name in env_sources.items()}
    return config
