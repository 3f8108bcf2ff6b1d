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
# The docs site: generated pages current, every link and anchor resolves (not
# --quiet: it hides the warnings that --strict turns into a failure).
.venv/bin/python scripts/gen_docs.py --check
site="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$site"
rm -rf "$site"
exec .venv/bin/pytest "$@"
