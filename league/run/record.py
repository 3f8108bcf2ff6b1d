"""IterationRecord: what one training iteration did, written once, read by every sink.

The loop builds one per iteration; `progress.jsonl` (one JSON line each), the
coordinator's status and Prometheus metrics, TensorBoard and `league report` all
read this type and nothing else.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from league.core.outcomes import SeatRecord
from league.run.dir import RunDir, RunDirError


@dataclass
class LeagueRecord:
    """The league step of one iteration (league mode only)."""

    size: int
    active_set: list[str]
    matches: int
    new_snapshots: list[str]
    retired: list[str]
    ratings: dict[str, float]
    role_scores: dict[str, float]
    resets: list[str] = field(default_factory=list)
    nash: dict[str, float] = field(default_factory=dict)
    """Weights of the league's meta-solver mixture of its snapshots, per side (Nash over
    the payoff table for games of two teams, alpha-rank for more)."""
    rating_uncertainty: dict[str, float] = field(default_factory=dict)
    """Per module, sigma of the skill rating over rankings (empty with Elo); `ratings`
    then holds the conservative mu - 3 sigma."""
    step_seconds: float = 0.0
    """The league's own time: drain, record, decide, export, push (not algo.train())."""
    store_seq: int = 0
    store_seconds: float = 0.0


@dataclass
class IterationRecord:
    iteration: int
    env_steps: int
    """Total env steps of the run so far."""
    seconds: float
    """Wall time of the whole iteration: `algo.train()`, the league step, the store
    commit and any evaluation."""
    steps_per_s: float = 0.0
    """Env steps sampled in the iteration per second of `seconds`."""
    episodes: int = 0
    episode_len_mean: float | None = None
    first_seat_return: float | None = None
    train_seconds: float = 0.0
    """Of `seconds`, the time in `algo.train()` (sampling and learner updates); the
    league step's and the store's are in `league`, evaluation's in `eval_seconds`."""
    eval_seconds: float = 0.0
    learners: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per trained module: policy_loss, vf_loss, entropy, ... (finite values only)."""
    league: LeagueRecord | None = None
    eval: dict[str, list[SeatRecord]] | None = None
    """Reference opponent -> the main's greedy results, one SeatRecord per seat."""

    def to_dict(self) -> dict[str, Any]:
        return _finite(dataclasses.asdict(self))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IterationRecord:
        values = {f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data}
        if values.get("league") is not None:
            known = {f.name for f in dataclasses.fields(LeagueRecord)}
            values["league"] = LeagueRecord(
                **{k: v for k, v in values["league"].items() if k in known}
            )
        if values.get("eval") is not None:
            values["eval"] = {
                name: [SeatRecord(**seat) for seat in seats]
                for name, seats in values["eval"].items()
            }
        return cls(**values)


def _finite(value: Any) -> Any:
    """NaN and inf (RLlib reports NaN for modules without samples) become None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def read_progress(run: RunDir) -> list[IterationRecord]:
    """The iteration records of `progress.jsonl`, oldest first.

    A run that is still training may be halfway through writing its last line, so
    a malformed *last* line is skipped; a malformed line elsewhere means the file
    is damaged and is an error. After a resume the trainer appends again from the
    checkpoint's iteration, so iterations can repeat: the later record wins and
    the abandoned ones are dropped.
    """
    if not run.path.is_dir():
        raise RunDirError(f"run dir {str(run.path)!r} does not exist")
    path = run.progress_file
    if not path.is_file():
        raise RunDirError(
            f"run dir {str(run.path)!r} has no {path.name}: has `league train` run there?"
        )
    lines = [(n, line) for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]
    records: list[IterationRecord] = []
    for i, (number, line) in enumerate(lines):
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            if i == len(lines) - 1:
                continue  # being written right now
            raise RunDirError(f"{path}:{number}: not a JSON line ({err.msg})") from None
        if not isinstance(data, dict) or not isinstance(data.get("iteration"), int):
            raise RunDirError(f"{path}:{number}: expected an object with an int 'iteration'")
        try:
            record = IterationRecord.from_dict(data)
        except (TypeError, ValueError, AttributeError) as err:
            raise RunDirError(f"{path}:{number}: not an iteration record ({err})") from None
        while records and records[-1].iteration >= record.iteration:
            records.pop()  # a resume restarted the timeline here
        records.append(record)
    if not records:
        raise RunDirError(f"{path} has no iteration records yet")
    return records
