#!/usr/bin/env bash
# Create .venv (Python 3.11) and install League with pinned packages.
# Idempotent: a second run only re-checks the installed set.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" - <<'PY'
import sys
if sys.version_info[:2] != (3, 11):
    sys.exit(f"League needs Python 3.11, found {sys.version.split()[0]} (set PYTHON=...)")
PY

if [ ! -x .venv/bin/python ]; then
    echo "[setup] creating .venv"
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.league-installed
want="$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "[setup] installing pinned packages (torch CPU, ray[rllib,default], pettingzoo, ...)"
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -c constraints.txt -e ".[test,watch,docs]"
    echo "$want" > "$stamp"
fi
