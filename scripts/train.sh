#!/usr/bin/env bash
# Quickstart: install, then `league train` on the embedded defaults
# (local Ray, tictactoe, run dir runs/default). Extra arguments go to `league train`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
exec .venv/bin/league train "$@"
