#!/usr/bin/env bash
# Installs the npm agent clients the end-to-end tests run through hookgate — Codex CLI,
# Gemini CLI, opencode and the Vercel AI SDK — at the versions pinned in .ci/clients/
# (package.json + package-lock.json; `npm install` keeps to the lock, where `npm ci`
# refuses opencode's per-platform optional packages) into the given prefix.
# Usage: .ci/clients.sh PREFIX
# Needs npm (installed by .ci/system-deps.sh); without it says so and installs nothing
# (the tests then skip locally and fail under CI=true).
set -euo pipefail
prefix=$1
here="$(cd "$(dirname "$0")" && pwd)/clients"
if ! command -v npm >/dev/null 2>&1; then
  echo "clients: npm is missing; install nodejs and npm" >&2
  exit 0
fi
echo "clients: installing the pinned agent clients into ${prefix}" >&2
mkdir -p "$prefix"
cp "$here/package.json" "$here/package-lock.json" "$prefix/"
npm install --silent --no-audit --no-fund --prefix "$prefix" >&2
cp "$here/package-lock.json" "$prefix/.installed-lock.json"
