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
# Three workers, each with its own Ray, one test file each at a time (module fixtures
# stay shared): most of a test's time is waiting on processes it starts, and three
# overlap that on 2 cores. Files go out longest first (tests/conftest.py:
# LONGEST_FIRST), not by xdist's count of tests. PYTEST_WORKERS=0 runs in one process.
exec .venv/bin/pytest -n "${PYTEST_WORKERS:-3}" --dist loadfile --no-loadscope-reorder "$@"
