"""A run on disk: its directory layout (RunDir) and its per-iteration record.

Pure Python, below the store, the tools and training: every layer that reads or
writes a run goes through these two names.
"""

from league.run.dir import RunDir, RunDirError, write_json_atomic
from league.run.record import IterationRecord, LeagueRecord, read_progress

__all__ = [
    "IterationRecord",
    "LeagueRecord",
    "RunDir",
    "RunDirError",
    "read_progress",
    "write_json_atomic",
]
