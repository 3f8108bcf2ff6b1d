"""Where each IterationRecord goes: progress.jsonl, TensorBoard, Prometheus, terminal.

Every sink reads the one typed record (league.run.IterationRecord); none builds its
own view of an iteration from RLlib's result dict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import IO, Any

from league.core.ids import is_reference_id, side_of
from league.run import IterationRecord, RunDir

# RLlib learner stats worth a TensorBoard curve, per trained module.
LEARNER_STATS = ("policy_loss", "vf_loss", "entropy", "mean_kl_loss", "total_loss")


def format_progress(record: IterationRecord, main: str) -> str:
    """The terminal line of one iteration."""
    stats = record.learners.get(main, {})

    def num(value: float | None, fmt: str) -> str:
        return format(value if value is not None else math.nan, fmt)

    return (
        f"iter {record.iteration:4d} | env steps {record.env_steps:>9,d} | "
        f"{record.steps_per_s:7,.0f} steps/s | episodes {record.episodes:5d} | "
        f"ep len {num(record.episode_len_mean, '5.1f')} | "
        f"first-seat return {num(record.first_seat_return, '+.2f')} | "
        f"policy loss {num(stats.get('policy_loss'), '+.3f')} | "
        f"vf loss {num(stats.get('vf_loss'), '.3f')} | "
        f"entropy {num(stats.get('entropy'), '.3f')}"
    )


def format_league(record: IterationRecord, active_set_size: int, top: int = 4) -> str:
    """The terminal `league:` line of one iteration."""
    league = record.league
    if league is None:
        return ""
    # The best rated of each side in equal parts (ratings of predators and prey are
    # not compared: with one list, one side would fill it).
    sides = sorted({side_of(m) for m in league.ratings})
    ratings = [
        kv
        for side in sides
        for kv in sorted(
            ((m, r) for m, r in league.ratings.items() if side_of(m) == side), key=lambda kv: -kv[1]
        )[: max(1, top // len(sides))]
    ]
    scores = " ".join(f"{role} {s:.2f}" for role, s in league.role_scores.items())
    changes = ""
    if league.new_snapshots or league.retired or league.resets:
        changes = (
            f" (+{len(league.new_snapshots)} snapshots, -{len(league.retired)} retired, "
            f"{len(league.resets)} resets)"
        )
    return (
        f"league: {league.size} snapshots{changes} | active "
        f"{sum(not is_reference_id(m) for m in league.active_set)}/{active_set_size} | matches {league.matches} | "
        f"top " + ", ".join(f"{m} {r:.0f}" for m, r in ratings) + f" | win rate {scores}"
    )


def format_evaluation(record: IterationRecord) -> str:
    """Greedy W/D/L against each reference opponent, per seat or team by its name (a
    team of several seats plays as one: `league.tools.evaluation`)."""
    parts = []
    for name, seats in (record.eval or {}).items():
        per_seat = " / ".join(
            f"{r.seat} W{r.rate('wins'):.2f} D{r.rate('draws'):.2f} L{r.rate('losses'):.2f}"
            for r in seats
        )
        parts.append(f"vs {name} {per_seat}")
    return "eval (greedy): " + " | ".join(parts)


def close_all(sinks: Sequence[Any], quietly: bool = False) -> None:
    """Close every sink, even after one fails to; then raise the first failure unless
    `quietly` (the caller is already raising an error of its own)."""
    first: Exception | None = None
    for sink in sinks:
        try:
            sink.close()
        except Exception as err:
            first = first or err
    if first is not None and not quietly:
        raise first


class ProgressFile:
    """progress.jsonl: one JSON line per iteration, flushed as it is written."""

    def __init__(self, run: RunDir) -> None:
        self._file: IO[str] = run.progress_file.open("a")

    def write(self, record: IterationRecord) -> None:
        self._file.write(record.to_json() + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def scalars(record: IterationRecord) -> dict[str, float]:
    """The record as TensorBoard tags -> values (None and non-finite left out)."""
    values: dict[str, Any] = {
        "throughput/env_steps_per_s": record.steps_per_s,
        "throughput/iteration_seconds": record.seconds,
        "throughput/train_seconds": record.train_seconds,
        "throughput/eval_seconds": record.eval_seconds,
        "episodes/count": record.episodes,
        "episodes/length_mean": record.episode_len_mean,
        "episodes/first_seat_return": record.first_seat_return,
    }
    for module, stats in record.learners.items():
        for name in LEARNER_STATS:
            values[f"learner/{module}/{name}"] = stats.get(name)
    league = record.league
    if league is not None:
        values["league/size"] = league.size
        values["league/active_set_size"] = len(league.active_set)
        values["league/matches"] = league.matches
        values["league/step_seconds"] = league.step_seconds
        values["league/store_write_seconds"] = league.store_seconds
        for module, rating in league.ratings.items():
            values[f"rating/{module}"] = rating
        for module, sigma in league.rating_uncertainty.items():
            values[f"rating_sigma/{module}"] = sigma
        for role, score in league.role_scores.items():
            values[f"role_win_rate/{role}"] = score
        for module, weight in league.nash.items():
            values[f"nash/{module}"] = weight
    for opponent, seats in (record.eval or {}).items():
        for seat in seats:
            for outcome in ("wins", "draws", "losses"):
                values[f"eval/{opponent}/{seat.seat}/{outcome}"] = seat.rate(outcome)
    return {
        tag: float(v)
        for tag, v in values.items()
        if isinstance(v, int | float) and math.isfinite(float(v))
    }


class TensorBoardSink:
    """Event files under DIR/tensorboard/, one point per iteration at its env steps."""

    def __init__(self, run: RunDir) -> None:
        from tensorboardX import SummaryWriter

        self._writer = SummaryWriter(logdir=str(run.tensorboard), flush_secs=10)

    def write(self, record: IterationRecord) -> None:
        for tag, value in scalars(record).items():
            self._writer.add_scalar(tag, value, global_step=record.env_steps)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()


class PrometheusSink:
    """`ray_league_*` metrics through `ray.util.metrics` (Ray's Prometheus endpoint,
    the dashboard's Metrics view), one update per iteration."""

    def __init__(self) -> None:
        from ray.util.metrics import Counter, Gauge

        self.steps_per_s = Gauge("league_env_steps_per_second", "Env steps per second.")
        self.iteration_s = Gauge("league_iteration_seconds", "Wall time of an iteration.")
        self.env_steps = Gauge("league_env_steps_total", "Env steps sampled in total.")
        self.league_size = Gauge("league_size", "Snapshots in the league registry.")
        self.active_set = Gauge("league_active_set_size", "Frozen opponents on env runners.")
        self.rating = Gauge(
            "league_rating",
            "Rating per module: Elo, or the skill rating's mu - 3 sigma.",
            tag_keys=("module",),
        )
        self.rating_sigma = Gauge(
            "league_rating_uncertainty",
            "Sigma of the skill rating over rankings per module (games of more seats).",
            tag_keys=("module",),
        )
        self.role_win_rate = Gauge(
            "league_role_win_rate", "Score against others per role.", tag_keys=("role",)
        )
        self.matches = Counter("league_matches_recorded", "Matches recorded.")
        self.store_latency = Gauge("league_store_write_seconds", "Store commit latency.")

    def write(self, record: IterationRecord) -> None:
        self.steps_per_s.set(record.steps_per_s)
        self.iteration_s.set(record.seconds)
        self.env_steps.set(float(record.env_steps))
        league = record.league
        if league is None:
            return
        self.league_size.set(float(league.size))
        self.active_set.set(float(len(league.active_set)))
        for module, rating in league.ratings.items():
            self.rating.set(float(rating), tags={"module": module})
        for module, sigma in league.rating_uncertainty.items():
            self.rating_sigma.set(float(sigma), tags={"module": module})
        for role, score in league.role_scores.items():
            self.role_win_rate.set(float(score), tags={"role": role})
        if league.matches:
            self.matches.inc(float(league.matches))
        self.store_latency.set(league.store_seconds)

    def close(self) -> None:
        pass
