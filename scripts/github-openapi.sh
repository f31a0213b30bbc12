#!/usr/bin/env bash
# Fetch GitHub's OpenAPI description once, for the tests' fake GitHub: the npm package
# @octokit/openapi (pinned, checked by digest), of which only generated/api.github.com.json
# is kept, in a cache folder outside the repository (PORTWRIGHT_TEST_CACHE, default
# ~/.cache/portwright-tests). A second run only checks. Without npm it says so and exits 0,
# unless PORTWRIGHT_REQUIRE_ENGINE=1 (CI): then a missing description is an error.
set -euo pipefail

version=23.0.2
sha256=71a18407dd5e8464f4e0525daf03deabbe65abd9287d6adc7b5d98f516cd0d0c
cache=${PORTWRIGHT_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portwright-tests}
target=$cache/octokit-openapi-$version/api.github.com.json

if [ -s "$target" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "GitHub's OpenAPI description is missing and npm is not installed: the tests of the" >&2
  echo "github pull-request backend skip (fail with PORTWRIGHT_REQUIRE_ENGINE=1)." >&2
  echo "fix: apt-get install npm, then run $0" >&2
  [ "${PORTWRIGHT_REQUIRE_ENGINE:-}" = 1 ] && exit 1
  exit 0
fi
echo "› fetching GitHub's OpenAPI description (@octokit/openapi@$version) into $cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "@octokit/openapi@$version" >/dev/null)
tarball=$work/octokit-openapi-$version.tgz
if [ "$(sha256sum "$tarball" | cut -d' ' -f1)" != "$sha256" ]; then
  echo "the downloaded @octokit/openapi@$version does not have the expected sha256" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$work" package/generated/api.github.com.json
mkdir -p "$(dirname "$target")"
mv "$work/package/generated/api.github.com.json" "$target.part"
mv "$target.part" "$target"
