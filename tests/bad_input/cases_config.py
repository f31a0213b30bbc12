"""Bad input in portwright.toml."""

from __future__ import annotations

from tests.bad_input.harness import Case, Setup
from tests.bad_input.world import World


def section(name: str, body: str) -> Setup:
    """``[name]`` with ``body`` appended to portwright.toml (its first key is on line 6)."""
    return lambda w: w.config(f"\n[{name}]\n{body}\n")


def toml(text: str) -> Setup:
    """portwright.toml replaced by ``text``."""
    return lambda w: w.write("portwright.toml", text)


def source(value: str) -> Setup:
    return lambda w: w.replace("portwright.toml", 'source = "../upstream"', f"source = {value}")


def _plain_folder(w: World) -> None:
    (w.root / "plain").mkdir()
    (w.root / "plain" / "lib.py").write_text("x = 1\n")
    source('"../plain"')(w)


def _cassette(data: bytes) -> Setup:
    def setup(w: World) -> None:
        w.write("cassette.jsonl", data)
        w.config('\n[model]\nprovider = "replay"\ncassette = "cassette.jsonl"\n')
    return setup


def _toml_dir(w: World) -> None:
    w.remove("portwright.toml")
    (w.repo / "portwright.toml").mkdir()
    (w.repo / "portwright.toml" / "keep").write_text("")


def _toml_link(w: World) -> None:
    w.write("other.toml", w.read("portwright.toml"))
    w.symlink("portwright.toml", "other.toml")


S = "portwright.toml:6"
MODEL = ("model", "check", "--offline")

CASES = [
    Case("cfg-missing", ("rows",), lambda w: w.remove("portwright.toml"),
         says=("portwright.toml", "portwright init")),
    Case("cfg-missing-doctor", ("doctor",), lambda w: w.remove("portwright.toml"),
         says=("portwright.toml", "portwright init")),
    Case("cfg-directory", ("rows",), _toml_dir, says=("portwright.toml",)),
    Case("cfg-symlink", ("rows",), _toml_link, says=("portwright.toml", "link")),
    Case("cfg-empty", ("rows",), toml(""), says=("portwright.toml", "[upstream]", "source")),
    Case("cfg-not-utf8", ("rows",), lambda w: w.write(
        "portwright.toml", b'[upstream]\nsource = "../up\xffstream"\n'),
        says=("portwright.toml:2", "utf-8")),
    Case("cfg-not-utf8-doctor", ("doctor",), lambda w: w.write(
        "portwright.toml", b'[upstream]\nsource = "../up\xffstream"\n'),
        says=("portwright.toml:2", "utf-8")),
    Case("cfg-toml-syntax", ("rows",), source("../upstream"), says=("portwright.toml:2",)),
    Case("cfg-duplicate-key", ("rows",), lambda w: w.config('source = "../x"\n'),
         says=("portwright.toml:4",)),
    Case("cfg-no-upstream", ("rows",), toml('[pin]\nfile = "upstream-sync.md"\n'),
         says=("portwright.toml", "[upstream]", "source")),
    Case("cfg-upstream-scalar", ("rows",), toml('upstream = "../upstream"\n'),
         says=("portwright.toml:1", "upstream")),
    Case("cfg-source-empty", ("rows",), source('""'),
         says=("portwright.toml:2", "upstream.source")),
    Case("cfg-source-dot", ("gap",), source('"."'), says=("portwright.toml:2", "upstream.source")),
    Case("cfg-source-dot-slash", ("gap",), source('"./"'),
         says=("portwright.toml:2", "upstream.source")),
    Case("cfg-source-self-absolute", ("gap",),
         lambda w: source(f'"{w.repo}"')(w), says=("upstream.source",)),
    Case("cfg-source-own-subfolder", ("anchors", "check"), source('"src"'),
         says=("upstream.source",)),
    Case("cfg-source-missing", ("gap",), source('"../nowhere"'),
         says=("upstream.source", "nowhere")),
    Case("cfg-source-not-git", ("gap",), _plain_folder,
         says=("upstream.source", "not a git repository")),
    Case("cfg-source-is-file", ("gap",), source('"../upstream/README.md"'),
         says=("upstream.source",)),
    Case("cfg-branch-empty", ("gap",), lambda w: w.config('branch = ""\n'),
         says=("upstream.branch",)),
    Case("cfg-branch-missing", ("gap",), lambda w: w.config('branch = "release"\n'),
         says=("upstream.branch", "release")),
    Case("cfg-path-map-not-string", ("rows",), lambda w: w.config('path_map = {"src/" = 1}\n'),
         says=("portwright.toml:4", "path_map")),
    Case("cfg-unknown-key", ("rows",), lambda w: w.config('colour = "red"\n'),
         says=("portwright.toml:4", "colour")),
    Case("cfg-unknown-section", ("rows",), section("sandboxx", 'memory = "2g"'),
         says=("portwright.toml:5", "sandboxx", "sandbox")),
    # sandbox values that cannot work
    Case("cfg-timeout-inf", ("sandbox", "info"), section("sandbox", "timeout = inf"),
         says=(S, "sandbox.timeout")),
    Case("cfg-timeout-nan", ("sandbox", "info"), section("sandbox", "timeout = nan"),
         says=(S, "sandbox.timeout")),
    Case("cfg-timeout-huge", ("sandbox", "info"), section("sandbox", "timeout = 1e300"),
         says=(S, "sandbox.timeout")),
    Case("cfg-timeout-zero", ("sandbox", "info"), section("sandbox", "timeout = 0"),
         says=(S, "sandbox.timeout")),
    Case("cfg-timeout-tiny", ("sandbox", "info"), section("sandbox", "timeout = 1e-9"),
         says=(S, "sandbox.timeout")),
    Case("cfg-timeout-negative", ("sandbox", "info"), section("sandbox", "timeout = -5"),
         says=(S, "sandbox.timeout")),
    Case("cfg-timeout-string", ("sandbox", "info"), section("sandbox", 'timeout = "10m"'),
         says=(S, "sandbox.timeout")),
    Case("cfg-gpus-banana", ("sandbox", "info"), section("sandbox", 'gpus = "banana"'),
         says=(S, "sandbox.gpus", "banana")),
    Case("cfg-gpus-banana-doctor", ("doctor",), section("sandbox", 'gpus = "banana"'),
         says=(S, "sandbox.gpus")),
    Case("cfg-gpus-zero", ("sandbox", "build"), section("sandbox", "gpus = 0"),
         says=(S, "sandbox.gpus")),
    Case("cfg-gpus-empty-list", ("sandbox", "build"), section("sandbox", "gpus = []"),
         says=(S, "sandbox.gpus")),
    Case("cfg-gpus-bad-id", ("sandbox", "build"), section("sandbox", 'gpus = ["0; rm"]'),
         says=(S, "sandbox.gpus")),
    Case("cfg-gpus-env-banana", ("sandbox", "build"), env={"PORTWRIGHT_SANDBOX__GPUS": "banana"},
         says=("PORTWRIGHT_SANDBOX__GPUS",)),
    Case("cfg-lockfiles-outside", ("sandbox", "build"),
         section("sandbox", 'setup = ["true"]\nlockfiles = ["../requirements.txt"]'),
         says=("portwright.toml:7", "sandbox.lockfiles")),
    Case("cfg-lockfiles-not-a-list", ("sandbox", "build"),
         section("sandbox", 'lockfiles = "requirements.txt"'), says=(S, "sandbox.lockfiles")),
    Case("cfg-memory-banana", ("doctor",), section("sandbox", 'memory = "banana"'),
         says=(S, "sandbox.memory")),
    Case("cfg-memory-banana-exec", ("sandbox", "exec", "--", "true"),
         section("sandbox", 'memory = "banana"'), says=(S, "sandbox.memory"), docker=True),
    Case("cfg-memory-zero", ("sandbox", "info"), section("sandbox", 'memory = "0"'),
         says=(S, "sandbox.memory")),
    Case("cfg-memory-negative", ("sandbox", "info"), section("sandbox", 'memory = "-1g"'),
         says=(S, "sandbox.memory")),
    Case("cfg-memory-tiny", ("sandbox", "info"), section("sandbox", 'memory = "1k"'),
         says=(S, "sandbox.memory")),
    Case("cfg-memory-unit", ("sandbox", "info"), section("sandbox", 'memory = "2gb!"'),
         says=(S, "sandbox.memory")),
    Case("cfg-tmpfs-banana", ("sandbox", "info"), section("sandbox", 'tmpfs_size = "lots"'),
         says=(S, "sandbox.tmpfs_size")),
    Case("cfg-base-build-empty", ("sandbox", "info"), section("sandbox", 'base_build = "  "'),
         says=(S, "sandbox.base_build", "builds the tree")),
    Case("cfg-base-build-list", ("sandbox", "info"), section("sandbox", "base_build = [1]"),
         says=(S, "sandbox.base_build")),
    Case("cfg-cpus-inf", ("sandbox", "info"), section("sandbox", "cpus = inf"),
         says=(S, "sandbox.cpus")),
    Case("cfg-cpus-nan", ("sandbox", "info"), section("sandbox", "cpus = nan"),
         says=(S, "sandbox.cpus")),
    Case("cfg-cpus-huge", ("sandbox", "info"), section("sandbox", "cpus = 1e9"),
         says=(S, "sandbox.cpus")),
    Case("cfg-pids-zero", ("sandbox", "info"), section("sandbox", "pids = 0"),
         says=(S, "sandbox.pids")),
    Case("cfg-output-cap-zero", ("sandbox", "info"), section("sandbox", "output_cap = 0"),
         says=(S, "sandbox.output_cap")),
    Case("cfg-backend-unknown", ("sandbox", "info"), section("sandbox", 'backend = "podman"'),
         says=(S, "sandbox.backend")),
    Case("cfg-sandbox-env-not-string", ("sandbox", "info"), section("sandbox", "env = {A = 1}"),
         says=(S, "sandbox.env")),
    Case("cfg-setup-not-list", ("sandbox", "info"), section("sandbox", 'setup = "make"'),
         says=(S, "sandbox.setup")),
    # model
    Case("cfg-model-timeout-inf", MODEL, section("model", "timeout = inf"),
         says=(S, "model.timeout")),
    Case("cfg-model-timeout-nan", MODEL, section("model", "timeout = nan"),
         says=(S, "model.timeout")),
    Case("cfg-model-provider", ("model", "check", "--offline"),
         section("model", 'provider = "anthropic"'), says=(S, "model.provider")),
    Case("cfg-model-budget-negative", ("model", "check", "--offline"),
         section("model.budget", "tokens = -1"), says=(S, "model.budget.tokens")),
    Case("cfg-model-budget-nan", ("model", "check", "--offline"),
         section("model.budget", "cost_usd = nan"), says=(S, "model.budget.cost_usd")),
    Case("cfg-model-temperature-nan", ("model", "check", "--offline"),
         section("model", "temperature = nan"), says=(S, "model.temperature")),
    Case("cfg-model-retries-negative", ("model", "check", "--offline"),
         section("model", "max_retries = -1"), says=(S, "model.max_retries")),
    Case("cfg-cassette-missing", ("model", "check", "--offline"),
         section("model", 'provider = "replay"\ncassette = "nope.jsonl"'),
         says=("nope.jsonl",)),
    Case("cfg-cassette-not-utf8", ("model", "check", "--offline"),
         _cassette(b'{"request_digest": "\xff"}\n'), says=("cassette.jsonl", "utf-8")),
    Case("cfg-cassette-not-json", ("model", "check", "--offline"),
         _cassette(b'not json\n'), says=("cassette.jsonl:1",)),
    # pull requests
    Case("cfg-pr-backend-unknown", ("rows",), section("pr", 'backend = "gitlab"'),
         says=(S, "pr.backend")),
    Case("cfg-pr-github-no-repository", ("rows",), section("pr", 'backend = "github"'),
         says=("portwright.toml:5", "pr.repository", "owner/name")),
    Case("cfg-pr-repository-malformed", ("rows",), section("pr", 'repository = "octo"'),
         says=(S, "pr.repository")),
    Case("cfg-pr-api-url-clear", ("rows",), section("pr", 'api_url = "http://ghe.example"'),
         says=(S, "pr.api_url", "https")),
    Case("cfg-pr-token-env-a-token", ("rows",), section("pr", 'token_env = "ghp_x-1"'),
         says=(S, "pr.token_env")),
    Case("cfg-pr-remote-option", ("rows",), section("pr", 'remote = "--exec=x"'),
         says=(S, "pr.remote")),
    Case("cfg-pr-reviewer", ("rows",), section("pr", 'reviewers = ["a b"]'),
         says=(S, "pr.reviewers")),
    Case("cfg-pr-token-in-sandbox", ("rows",), section("sandbox", 'env = { GH_TOKEN = "x" }'),
         says=(S, "sandbox.env", "GH_TOKEN")),
    Case("cfg-pr-env-override", ("rows",), env={"PORTWRIGHT_PR__BACKEND": "gitea"},
         says=("PORTWRIGHT_PR__BACKEND", "pr.backend")),
    # pin config
    Case("cfg-pin-pattern-regex", ("rows",), section("pin", 'pattern = "(["'),
         says=(S, "pin.pattern")),
    Case("cfg-pin-pattern-no-group", ("rows",), section("pin", 'pattern = "[0-9a-f]{40}"'),
         says=(S, "pin.pattern")),
    Case("cfg-pin-store-unknown", ("rows",), section("pin", 'store = "json"'),
         says=(S, "pin.store")),
    Case("cfg-pin-yaml-no-key", ("anchors", "check"),
         section("pin", 'store = "yaml"\nfile = "port.yaml"'), says=("pin.key",)),
    Case("cfg-pin-file-absolute", ("gap",), section("pin", 'file = "/etc/hostname"'),
         says=(S, "pin.file")),
    Case("cfg-pin-file-escapes", ("gap",), section("pin", 'file = "../upstream/README.md"'),
         says=(S, "pin.file")),
    Case("cfg-pin-file-empty", ("gap",), section("pin", 'file = ""'), says=(S, "pin.file")),
    # artifacts
    Case("cfg-matrices-empty", ("rows",), section("artifacts", "matrices = []"),
         says=(S, "artifacts.matrices")),
    Case("cfg-matrices-no-match", ("rows",), section("artifacts", 'matrices = ["doc/*.md"]'),
         says=("artifacts.matrices", "doc/*.md")),
    Case("cfg-statuses-empty", ("rows",), section("artifacts", "statuses = []"),
         says=(S, "artifacts.statuses")),
    Case("cfg-done-not-a-status", ("rows",), section("artifacts", 'done_statuses = ["finished"]'),
         says=(S, "artifacts.done_statuses", "finished")),
    Case("cfg-ledger-absolute", ("ledger", "check"), section("artifacts", 'ledger = "/etc/passwd"'),
         says=(S, "artifacts.ledger")),
    Case("cfg-ledger-escapes", ("ledger", "check"), section("artifacts", 'ledger = "../x.md"'),
         says=(S, "artifacts.ledger")),
    Case("cfg-specs-escapes", ("anchors", "check"), section("artifacts", 'specs = "../specs/"'),
         says=(S, "artifacts.specs")),
    # state folder
    Case("cfg-state-relative", ("rows",), lambda w: w.write(
        "portwright.toml", 'state_dir = "../.."\n' + w.read("portwright.toml")),
        env={"PORTWRIGHT_STATE_DIR": None}, says=("portwright.toml:1", "state_dir")),
    Case("cfg-state-root", ("gates", "run", "--phase", "spec"), lambda w: w.write(
        "portwright.toml", 'state_dir = "/"\n' + w.read("portwright.toml")),
        env={"PORTWRIGHT_STATE_DIR": None}, says=("portwright.toml:1", "state_dir")),
    Case("cfg-state-in-repo", ("gates", "run", "--phase", "spec"), lambda w: w.write(
        "portwright.toml", f'state_dir = "{w.repo}/.state"\n' + w.read("portwright.toml")),
        env={"PORTWRIGHT_STATE_DIR": None}, says=("portwright.toml", "state_dir")),
    Case("cfg-bounds-zero", ("rows",), section("bounds", "spec_attempts = 0"),
         says=(S, "bounds.spec_attempts")),
]
