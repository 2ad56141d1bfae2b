#!/usr/bin/env bash
# Installs the real services the tests run against (Debian packages), when missing:
# prometheus (dashboard queries are evaluated by a real Prometheus), redis-server
# (the shared store for several replicas) and npm (which installs Claude Code, a real
# client of the Anthropic routes: see .ci/claude-code.sh) and chromium (the admin UI's
# browser tests drive it headless through Playwright).
# Needs root or sudo; otherwise says what is missing. Tests that need a missing service
# are skipped locally and fail under CI=true.
set -euo pipefail
packages=()
command -v prometheus >/dev/null 2>&1 || packages+=(prometheus)
command -v redis-server >/dev/null 2>&1 || packages+=(redis-server)
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
command -v chromium >/dev/null 2>&1 || packages+=(chromium)
[ ${#packages[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "system-deps: missing ${packages[*]}; install them with apt-get" >&2
  exit 0
fi
echo "system-deps: installing ${packages[*]}" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
