#!/usr/bin/env bash
# Installs Claude Code (npm @anthropic-ai/claude-code, a native binary) at a pinned version
# into the given prefix, for the end-to-end tests that run `claude -p` through hookgate.
# Usage: .ci/claude-code.sh VERSION PREFIX
# Needs npm (installed by .ci/system-deps.sh); without it says so and installs nothing
# (the tests then skip locally and fail under CI=true).
set -euo pipefail
version=$1
prefix=$2
if ! command -v npm >/dev/null 2>&1; then
  echo "claude-code: npm is missing; install nodejs and npm" >&2
  exit 0
fi
echo "claude-code: installing @anthropic-ai/claude-code@${version} into ${prefix}" >&2
mkdir -p "$prefix"
npm install --silent --no-audit --no-fund --prefix "$prefix" "@anthropic-ai/claude-code@${version}" >&2
"$prefix/node_modules/.bin/claude" --version
