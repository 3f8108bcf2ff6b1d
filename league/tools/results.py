"""Benchmark results as data: one JSON line per measured row in `docs/results/*.jsonl`.

Each line names what measured it (command, commit, machine, date) beside its figures,
so a figure quoted in the docs can be traced to the run that produced it, and a later
run appends rather than overwrites.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parents[2] / "docs" / "results"


def current_commit() -> str:
    """The checkout's short commit hash ('unknown' outside git)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=RESULTS_DIR.parent,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def machine() -> dict[str, Any]:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"host": platform.node(), "cpus": os.cpu_count(), "load_1min": load}


def append_result(name: str, figures: dict[str, Any], path: Path | None = None) -> Path:
    """Append one row to `docs/results/NAME.jsonl` (or `path`) and return the file."""
    target = path or RESULTS_DIR / f"{name}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    row = {
        "command": shlex.join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "commit": current_commit(),
        "machine": machine(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **figures,
    }
    with target.open("a") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")
    return target
