#!/usr/bin/env bash
# Install everything the tests need (venv, pinned packages, redis-server), then run
# ruff and the whole pytest suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh

if ! command -v redis-server >/dev/null 2>&1; then
    echo "[test] installing redis-server (Debian package)"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
fi

.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/pytest "$@"
