"""`league tune`: a small random search around a game's defaults, scored exactly.

A user's game gets the generic defaults, or a registry game's measured ones; a run of
`league tune` tries a few variations of the settings that matter most for a short run
each and keeps the best by the exact measure OpenSpiel gives (exploitability for two
players, NashConv for more) of the run's main player. Trial 0 is the defaults
themselves, so what it proposes scored at least as well as they did in the same
search. The trials split the budget evenly; each is a whole `league train` run in
OUT/trial_NNN (its own schedules span its own minutes, as a full run's span its).

What comes out: OUT/tune.jsonl (one row per trial: settings, score, env steps) and
OUT/best.yaml, a `--config` file with the flags given to `league tune` and the best
trial's settings: `league train --config OUT/best.yaml` trains with them.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from league.config import ConfigError, TrainConfig, resolve_config
from league.core.ids import MAIN, player_id
from league.presets import merge_settings
from league.run import RunDir
from league.snapshot import load_policy
from league.tools.openspiel_exploitability import (
    GameTooLargeError,
    NotAnOpenSpielGameError,
    check_exact_measure,
    exact_measure,
    openspiel_game,
)

MIN_TRIAL_MINUTES = 0.1
MAX_TRIALS = 100
MAX_MINUTES = 7 * 24 * 60.0
PROGRESS_EVERY_S = 30.0
RESULTS_FILE = "tune.jsonl"
BEST_FILE = "best.yaml"
TUNE_SETS = (("run", "run_dir"), ("run", "stop_minutes"), ("run", "stop_timesteps"))
"""Settings each trial's run gets from `league tune` itself (its folder and minutes)."""


@dataclass(frozen=True)
class Knob:
    """One setting the search varies: a factor of 2**U(-spread, spread) on the
    default (log scale), or a uniform value in [low, high]."""

    group: str
    name: str
    spread: float = 0.0
    low: float = 0.0
    high: float = 0.0
    league_only: bool = False
    scales: tuple[str, ...] = ()
    """Settings of the same group scaled by the same factor where they are set (a
    schedule's final value keeps its ratio to the start)."""

    @property
    def key(self) -> str:
        return f"{self.group}.{self.name}"

    def sample(self, base: TrainConfig, rng: np.random.Generator) -> dict[str, float]:
        """This knob's values for one trial: {setting name: value} in its group."""
        current = getattr(getattr(base, self.group), self.name)
        if not self.spread:
            return {self.name: round(float(rng.uniform(self.low, self.high)), 3)}
        factor = 2.0 ** float(rng.uniform(-self.spread, self.spread))
        values = {self.name: _round(current * factor)}
        for other in self.scales:
            value = getattr(getattr(base, self.group), other)
            if value is not None:
                values[other] = _round(value * factor)
        return values


KNOBS = (
    Knob("ppo", "lr", spread=1.5, scales=("lr_final",)),
    Knob("ppo", "entropy_coeff", spread=1.5, scales=("entropy_coeff_final",)),
    Knob("league", "main_learner_share", low=0.5, high=0.95, league_only=True),
)
"""What a short run is most sensitive to, measured on kuhn and leduc (the registry's
entries for them differ from the generic defaults in exactly these)."""


@dataclass
class Trial:
    index: int
    settings: dict[str, dict[str, float]]
    measure: str = ""
    score: float = math.nan
    env_steps: int = 0

    def row(self) -> dict[str, Any]:
        row = asdict(self)
        return {"trial": row.pop("index"), **row}

    def describe(self) -> str:
        if not self.settings:
            return "the defaults"
        return ", ".join(
            f"{group}.{name}={value:g}"
            for group, values in self.settings.items()
            for name, value in values.items()
        )


def check_tune_request(given: Mapping[str, Any], trials: int, minutes: float, out: Path) -> None:
    """Refuse a request that cannot run, before anything is written or Ray starts."""
    if not 2 <= trials <= MAX_TRIALS:
        raise ConfigError(
            f"--trials must be 2..{MAX_TRIALS} (trial 0 is the defaults), got {trials}"
        )
    if not (math.isfinite(minutes) and 0 < minutes <= MAX_MINUTES):
        raise ConfigError(
            f"--minutes must be a number of minutes in (0, {MAX_MINUTES:g}], got {minutes}"
        )
    if minutes / trials < MIN_TRIAL_MINUTES:
        raise ConfigError(
            f"--minutes {minutes:g} over {trials} trials leaves {minutes / trials:.2f} min a "
            f"trial; each needs at least {MIN_TRIAL_MINUTES} (fewer trials or more minutes)"
        )
    taken = [f"--{g}.{n.replace('_', '-')}" for g, n in TUNE_SETS if n in given.get(g, {})]
    if taken:
        raise ConfigError(
            f"league tune sets each trial's {', '.join(taken)}: give --out and --minutes instead"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(
            f"--out {out} already exists and is not an empty folder; tune never overwrites"
        )


def base_config(given: Mapping[str, Any], config_file: str | None) -> TrainConfig:
    """The settings every trial starts from (a registry game's own included), checked
    for an exact measure: an OpenSpiel game whose tree can be enumerated."""
    cfg = resolve_config(given, config_file=config_file, source=config_file or "command line")
    try:
        openspiel_game(cfg.game_id)
        check_exact_measure(cfg.game_id)
    except (NotAnOpenSpielGameError, GameTooLargeError) as err:
        raise ConfigError(f"league tune scores runs exactly: {err}") from err
    if cfg.layout.multi_side:
        raise ConfigError(
            f"{cfg.game_id}: league tune scores one main; this game has several sides"
        )
    return cfg


def sample_trials(base: TrainConfig, fixed: set[str], trials: int, seed: int) -> list[Trial]:
    """Trial 0: the defaults; the rest: every knob not `fixed` by the user, sampled."""
    rng = np.random.default_rng(seed)
    knobs = [
        k for k in KNOBS if k.key not in fixed and not (k.league_only and base.run.mode != "league")
    ]
    out = [Trial(0, {})]
    for index in range(1, trials):
        settings: dict[str, dict[str, float]] = {}
        for knob in knobs:
            values = knob.sample(base, rng)  # a schedule's end the user fixed stays
            kept = {n: v for n, v in values.items() if f"{knob.group}.{n}" not in fixed}
            settings.setdefault(knob.group, {}).update(kept)
        out.append(Trial(index, settings))
    return out


def tune(
    given: Mapping[str, Any],
    *,
    config_file: str | None,
    trials: int,
    minutes: float,
    out: Path,
    log: Callable[[str], None] = print,
    train_log: Callable[[str], None] | None = None,
) -> list[Trial]:
    """Run the search (module doc); returns the trials, best first."""
    check_tune_request(given, trials, minutes, out)
    base = base_config(given, config_file)
    from league.training.loop import train  # Ray: only once the request is sound

    fixed = {
        f"{g}.{n}" for g, values in _file_and_flags(given, config_file).items() for n in values
    }
    plan = sample_trials(base, fixed, trials, base.run.seed)
    per_trial = minutes / trials
    out.mkdir(parents=True, exist_ok=True)
    log(
        f"tuning {base.game_id} ({base.run.mode}): {trials} trials x {per_trial:.2f} min, "
        f"scored by the main's exact measure; results in {out / RESULTS_FILE}"
    )
    for trial in plan:
        log(f"trial {trial.index}/{trials - 1}: {trial.describe()}")
        run_dir = out / f"trial_{trial.index:03d}"
        cfg = resolve_config(
            merge_settings(
                merge_settings(given, trial.settings),
                {"run": {"run_dir": str(run_dir), "stop_minutes": per_trial}},
            ),
            config_file=config_file,
            source=config_file or "command line",
        )
        summary = train(cfg, log=train_log or every(PROGRESS_EVERY_S, log))
        if summary.interrupted:
            log(f"interrupted: trial {trial.index} is not scored; its run is in {run_dir}")
            raise KeyboardInterrupt
        main_dir = RunDir(cfg.run.run_dir).player_dir(player_id(MAIN, 0))
        policy = load_policy(main_dir, game=cfg.game_id)
        trial.measure, trial.score = exact_measure(cfg.game_id, policy)
        trial.env_steps = summary.env_steps
        with (out / RESULTS_FILE).open("a") as f:
            f.write(json.dumps(trial.row()) + "\n")
        best = min(plan[: trial.index + 1], key=lambda t: t.score)
        mark = "  (best so far)" if best is trial else ""
        log(f"  {trial.measure} {trial.score:.4f} after {trial.env_steps:,d} env steps{mark}")
    ranked = sorted(plan, key=lambda t: t.score)
    best = ranked[0]
    write_best(out / BEST_FILE, given, best)
    log(
        f"best: trial {best.index} ({best.describe()}): {best.measure} {best.score:.4f}, "
        f"against {plan[0].score:.4f} for the defaults"
    )
    log(f"train with it: league train --config {out / BEST_FILE}")
    return ranked


def write_best(path: Path, given: Mapping[str, Any], best: Trial) -> None:
    """The flags tune was given (but its own run settings) and the best trial's
    settings, as a --config file."""
    settings = merge_settings(_without_tune_sets(given), best.settings)
    header = f"# league tune: trial {best.index}, {best.measure} {best.score:.4f}\n"
    path.write_text(header + yaml.safe_dump(settings, sort_keys=True))


def _without_tune_sets(given: Mapping[str, Any]) -> dict[str, Any]:
    out = {g: dict(v) if isinstance(v, Mapping) else v for g, v in given.items()}
    for group, name in TUNE_SETS:
        if isinstance(out.get(group), dict):
            out[group].pop(name, None)
    return {g: v for g, v in out.items() if v != {}}


def _file_and_flags(given: Mapping[str, Any], config_file: str | None) -> dict[str, Any]:
    """Every setting the user gave (flags over the --config file), grouped: those
    the search leaves alone."""
    from league.config import grouped, load_config_file

    from_file = grouped(load_config_file(config_file))[0] if config_file else {}
    merged = merge_settings(from_file, grouped(dict(given))[0])
    return {g: v for g, v in merged.items() if isinstance(v, Mapping)}


def every(seconds: float, log: Callable[[str], None]) -> Callable[[str], None]:
    """A run's log, quiet: its iteration lines at most one per `seconds`, indented."""
    last = [-math.inf]

    def log_iterations(line: str) -> None:
        now = time.monotonic()
        if line.startswith("iter") and now - last[0] >= seconds:
            last[0] = now
            log("  " + line)

    return log_iterations


def _round(value: float) -> float:
    """Three significant digits: a setting a reader can copy."""
    return float(f"{value:.3g}")
