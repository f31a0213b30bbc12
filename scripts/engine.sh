#!/usr/bin/env bash
# Make sure a Docker engine answers and the offline sandbox image exists.
# As root on Debian: installs docker.io, debootstrap and bubblewrap when missing and
# starts dockerd. Otherwise prints what to do and leaves the machine alone.
set -euo pipefail
cd "$(dirname "$0")/.."

engine_up() { docker info >/dev/null 2>&1; }

# Two setups at once (two clones, `make demo` side by side) take turns: installing packages
# and starting dockerd happen once. The folder is the one image builds lock in.
if [ -n "${XDG_RUNTIME_DIR:-}" ] && [ -d "${XDG_RUNTIME_DIR}" ]; then
  locks="$XDG_RUNTIME_DIR/portwright/locks"
else
  locks="${XDG_CACHE_HOME:-$HOME/.cache}/portwright/locks"
fi
if mkdir -p -m 700 "$locks" 2>/dev/null && command -v flock >/dev/null 2>&1; then
  exec 9>"$locks/engine-setup.lock"
  flock 9
fi

if ! engine_up; then
  if [ "$(id -u)" != 0 ]; then
    echo "No Docker engine answers, and only root can start one here." >&2
    echo "fix: start Docker (sudo dockerd &), or add yourself to the docker group;" >&2
    echo "     without an engine, sandboxes fall back to bubblewrap where it works." >&2
    exit 0
  fi
  missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "› installing ${missing[*]} (Debian packages)"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  echo "› starting dockerd (log: /var/log/dockerd.log)"
  # 9>&-: the daemon must not inherit the setup lock, or it holds it as long as it runs
  nohup dockerd >/var/log/dockerd.log 2>&1 9>&- &
  for _ in $(seq 1 60); do
    engine_up && break
    sleep 0.5
  done
  if ! engine_up; then
    echo "dockerd did not answer within 30 s; see /var/log/dockerd.log" >&2
    tail -n 20 /var/log/dockerd.log >&2 || true
    exit 1
  fi
fi

if [ "$(id -u)" = 0 ]; then
  for tool in debootstrap bwrap; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      pkg=$([ "$tool" = bwrap ] && echo bubblewrap || echo "$tool")
      apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null
    fi
  done
fi

exec 9>&-  # the image build takes its own lock (one per image)

if [ "$(id -u)" = 0 ]; then
  .venv/bin/portwright sandbox base-image
elif ! .venv/bin/portwright sandbox base-image; then
  echo "(continuing without the sandbox image: Docker-backed steps will say what is missing)" >&2
fi
