#!/usr/bin/env bash
# Submit `league train` to a Ray cluster as a Ray job.
#   RAY_ADDRESS=http://HEAD:8265 bash scripts/submit_job.sh [ray job submit flags] -- [league train flags]
# The working dir is uploaded (deploy/runtime_env.yaml excludes .venv, runs, .git);
# the cluster's Python must already have the pinned packages (deploy/Dockerfile or
# deploy/cluster.yaml install them).
set -euo pipefail
cd "$(dirname "$0")/.."
RAY="${RAY:-.venv/bin/ray}"
submit_flags=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    submit_flags+=("$1")
    shift
done
[ "${1:-}" = "--" ] && shift
exec "$RAY" job submit --address "${RAY_ADDRESS:-http://127.0.0.1:8265}" \
    --working-dir . --runtime-env deploy/runtime_env.yaml "${submit_flags[@]}" \
    -- python -m league.cli train "$@"
