"""`league tune`: population-based training (Ray Tune's PBT) of league runs on one game.

A population of `--trials` league runs, each a Ray Tune trial, trains in `--rounds`
rounds. A round is `league train`'s own loop, resumed from the trial's run dir, for
the trial's share of `--minutes` over the rounds; it ends by scoring the run's main
with the measure the user chose and reporting the run dir as the trial's checkpoint:

- `exact`: OpenSpiel's exploitability (NashConv for more than two players) of the
  main's policy, lower is better (OpenSpiel games whose tree can be enumerated);
- `win_rate`: the main's win rate (draws count half) against a fixed pool of
  reference opponents (`--opponents`, default the game's own), higher is better.

A last iterate swings between snapshots (a kuhn trial with unchanged settings scored
0.065, 0.072, 0.109 in its three rounds), so `--score-snapshots K` scores the mean
over the main and its K-1 latest snapshots instead of the main alone.

Between rounds Tune's PopulationBasedTraining does what it does for any trainable:
the worst quarter of the population (at least one of two) continues from a copy of
a best-quarter run dir (league, snapshots, optimizer state) with that trial's
settings perturbed (x0.8 or x1.2) or resampled. The knobs are the ones a short run is
most sensitive to (KNOBS). Trial 0 starts with the defaults; the others start from
values sampled around them. Trials that do not fit the cluster at once are
time-multiplexed by the scheduler; each trial's run needs what `league train` needs
(Ray's placement group from RLlib's own resource request), so on a cluster Tune
runs as many side by side as fit. A trial may run on any node: on a cluster OUT must
be a folder every node shares (NFS or the like; Ray Tune refuses a local one there).

Schedules: with `anneal_over: run` each round anneals its part of the trial's whole
budget (`run.anneal_minutes`), so the last round ends at the final values.

What comes out: OUT/tune.jsonl (one row per trial and round: settings, score, env
steps, the trial copied from), OUT/runs/TRIAL (each trial's run dir), OUT/ray (Tune's
experiment) and OUT/best.yaml, a `--config` file with the flags given to `league
tune` and the best trial's last settings: `league train --config OUT/best.yaml`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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

MIN_ROUND_MINUTES = 0.1
MAX_TRIALS = 100
MAX_ROUNDS = 1000
MAX_MINUTES = 7 * 24 * 60.0
MAX_EVAL_GAMES = 100_000
MAX_SCORE_SNAPSHOTS = 100
MEASURES = ("auto", "exact", "win_rate")
RESULTS_FILE = "tune.jsonl"
BEST_FILE = "best.yaml"
STATE_FILE = "tune_state.json"
"""In each checkpoint: the trial that wrote it and the rounds it has trained."""
TUNE_SETS = (
    ("run", "run_dir"),
    ("run", "stop_minutes"),
    ("run", "stop_timesteps"),
    ("run", "anneal_minutes"),
)
"""Settings each trial's run gets from `league tune` itself (its folder and minutes)."""


@dataclass(frozen=True)
class Knob:
    """One setting the search varies: on a log scale around the default (a factor
    2**U(-spread, spread)), or uniformly in [low, high]."""

    group: str
    name: str
    spread: float = 0.0
    low: float = 0.0
    high: float = 1.0
    league_only: bool = False
    scales: tuple[str, ...] = ()
    """Settings of the same group scaled with it where they are set (a schedule's
    final value keeps its ratio to the start)."""
    rescales: tuple[str, ...] = ()
    """Shares that fill what is left of 1 in their old proportions (a role mix)."""

    @property
    def key(self) -> str:
        return f"{self.group}.{self.name}"

    def default(self, base: TrainConfig) -> float:
        value = getattr(getattr(base, self.group), self.name)
        return 0.0 if value is None else float(value)  # a schedule's unset end

    def applies(self, base: TrainConfig) -> bool:
        if self.league_only and base.run.mode != "league":
            return False
        if self.rescales:  # a share with nothing to trade against is not a knob
            return sum(getattr(getattr(base, self.group), n) for n in self.rescales) > 0
        return not self.spread or self.default(base) > 0

    def bounds(self, base: TrainConfig) -> tuple[float, float]:
        if self.spread:
            default = self.default(base)
            return default * 2.0**-self.spread, default * 2.0**self.spread
        return self.low, self.high

    def sample(self, base: TrainConfig, rng: np.random.Generator) -> float:
        low, high = self.bounds(base)
        if self.spread:
            return _round(math.exp(rng.uniform(math.log(low), math.log(high))))
        return _round(rng.uniform(low, high))

    def settings(self, base: TrainConfig, value: float) -> dict[str, float]:
        """The settings of this knob's group a value means (clipped to its bounds:
        PBT's perturbations may step past them)."""
        low, high = self.bounds(base)
        value = _round(min(max(value, low), high))
        group = getattr(base, self.group)
        out = {self.name: value}
        if self.spread:
            factor = value / self.default(base)
            for other in self.scales:
                if getattr(group, other) is not None:
                    out[other] = _round(getattr(group, other) * factor)
        if self.rescales:
            rest = sum(getattr(group, n) for n in self.rescales)
            shares = {n: _round(getattr(group, n) * (1.0 - value) / rest) for n in self.rescales}
            largest = max(shares, key=lambda n: shares[n])  # rounding must keep the sum 1
            rest_of_it = 1.0 - value - sum(v for n, v in shares.items() if n != largest)
            shares[largest] = round(rest_of_it, 12)  # no 0.05999999999999998 in best.yaml
            out.update(shares)
        return out


KNOBS = (
    Knob("ppo", "lr", spread=1.5, scales=("lr_final",)),
    Knob("ppo", "entropy_coeff", spread=1.5),
    Knob("ppo", "entropy_coeff_final", spread=1.5),
    Knob("ppo", "magnet_coeff", spread=1.5),
    Knob("league", "main_learner_share", low=0.5, high=0.95, league_only=True),
    Knob(
        "league",
        "main_self_play_prob",
        low=0.1,
        high=0.9,
        league_only=True,
        rescales=(
            "main_pfsp_prob",
            "main_forgotten_prob",
            "main_exploiter_prob",
            "main_reference_prob",
        ),
    ),
)
"""The learning rate, the entropy bonus and its final value (where the game's
defaults anneal it), the magnet (where the game uses one), the main's learner share
and its self-play share of the role mix: what short runs on kuhn and leduc were most
sensitive to (the registry's entries for them differ from the generic defaults in
these)."""


@dataclass(frozen=True)
class TunePlan:
    """What every trial shares: the flags given, the knobs and the time."""

    given: dict[str, Any]
    config_file: str | None
    knobs: tuple[Knob, ...]
    rounds: int
    round_minutes: float
    measure: str
    opponents: tuple[str, ...]
    eval_games: int
    out: str
    cwd: str
    score_snapshots: int = 1
    """Policies averaged into a round's score: the main and its latest snapshots."""

    @property
    def mode(self) -> str:
        return "min" if self.measure == "exact" else "max"

    def settings(self, base: TrainConfig, values: Mapping[str, float]) -> dict[str, dict]:
        out: dict[str, dict[str, float]] = {}
        for knob in self.knobs:
            if knob.key in values:
                out.setdefault(knob.group, {}).update(knob.settings(base, values[knob.key]))
        return out


def check_tune_request(
    given: Mapping[str, Any],
    trials: int,
    rounds: int,
    minutes: float,
    out: Path,
    score_snapshots: int = 1,
) -> None:
    """Refuse a request that cannot run, before anything is written or Ray starts."""
    if not 1 <= score_snapshots <= MAX_SCORE_SNAPSHOTS:
        raise ConfigError(
            f"--score-snapshots must be 1..{MAX_SCORE_SNAPSHOTS} (the main and its latest "
            f"snapshots), got {score_snapshots}"
        )
    if not 2 <= trials <= MAX_TRIALS:
        raise ConfigError(
            f"--trials must be 2..{MAX_TRIALS} (a population; trial 0 starts with the "
            f"defaults), got {trials}"
        )
    if not 1 <= rounds <= MAX_ROUNDS:
        raise ConfigError(f"--rounds must be 1..{MAX_ROUNDS}, got {rounds}")
    if not (math.isfinite(minutes) and 0 < minutes <= MAX_MINUTES):
        raise ConfigError(
            f"--minutes must be a number of minutes in (0, {MAX_MINUTES:g}], got {minutes}"
        )
    if minutes / trials / rounds < MIN_ROUND_MINUTES:
        raise ConfigError(
            f"--minutes {minutes:g} over {trials} trials x {rounds} rounds leaves "
            f"{minutes / trials / rounds:.2f} min a round; each needs at least "
            f"{MIN_ROUND_MINUTES} (fewer trials or rounds, or more minutes)"
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


def base_config(
    given: Mapping[str, Any],
    config_file: str | None,
    measure: str,
    opponents: tuple[str, ...],
    eval_games: int,
) -> tuple[TrainConfig, str, tuple[str, ...]]:
    """The settings every trial starts from (a registry game's own included) and the
    measure that scores them (`auto`: exact where OpenSpiel computes it, else the
    win rate), checked."""
    if measure not in MEASURES:
        raise ConfigError(f"--measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    if not 1 <= eval_games <= MAX_EVAL_GAMES:
        raise ConfigError(f"--score-games must be 1..{MAX_EVAL_GAMES:,d}, got {eval_games}")
    cfg = resolve_config(given, config_file=config_file, source=config_file or "command line")
    if cfg.layout.multi_side:
        raise ConfigError(
            f"{cfg.game_id}: league tune scores one main; this game has several sides"
        )
    if measure in ("auto", "exact"):
        try:
            openspiel_game(cfg.game_id)
            check_exact_measure(cfg.game_id)
            return cfg, "exact", ()
        except (NotAnOpenSpielGameError, GameTooLargeError) as err:
            if measure == "exact":
                raise ConfigError(
                    f"--measure exact: {err} (--measure win_rate scores any game)"
                ) from err
    from envs.opponents import make_opponent, reference_opponents

    pool = opponents or reference_opponents(cfg.game_id)
    for name in pool:
        try:
            make_opponent(name, cfg.game_id)
        except (ValueError, ImportError) as err:
            raise ConfigError(f"--opponents: {err}") from err
    return cfg, "win_rate", tuple(pool)


def initial_values(
    base: TrainConfig, knobs: tuple[Knob, ...], trials: int, seed: int
) -> list[dict[str, float]]:
    """Each trial's starting knob values: trial 0 the defaults, the rest sampled."""
    rng = np.random.default_rng(seed)
    out = [{k.key: _round(k.default(base)) for k in knobs}]
    for _ in range(1, trials):
        out.append({k.key: k.sample(base, rng) for k in knobs})
    return out


def tuned_knobs(base: TrainConfig, fixed: set[str]) -> tuple[Knob, ...]:
    """The knobs that apply to the game's defaults and that the user left free."""
    out = []
    for knob in KNOBS:
        touched = {knob.key, *(f"{knob.group}.{n}" for n in knob.scales + knob.rescales)}
        if knob.applies(base) and not touched & fixed:
            out.append(knob)
    return tuple(out)


def print_line(line: str) -> None:
    """`print`, as a function of this module. Tune pickles its callbacks (the console
    log among them) and pickles `print` by reference to `builtins.print`, which fails
    once Ray has swapped that for its own (`ray.experimental.tqdm_ray` does, in the
    driver, when any worker's progress bar reports)."""
    print(line)


def tune(
    given: Mapping[str, Any],
    *,
    config_file: str | None,
    trials: int,
    rounds: int,
    minutes: float,
    out: Path,
    measure: str = "auto",
    opponents: tuple[str, ...] = (),
    eval_games: int = 200,
    score_snapshots: int = 1,
    log: Callable[[str], None] = print_line,
) -> list[dict[str, Any]]:
    """Run the population (module doc); returns each trial's last row, best first."""
    check_tune_request(given, trials, rounds, minutes, out, score_snapshots)
    # Ray's own logs go to OUT/logs, as a run's go to RUN_DIR/logs.
    in_out = merge_settings(given, {"run": {"run_dir": str(out)}})
    base, measure, opponents = base_config(in_out, config_file, measure, opponents, eval_games)
    fixed = {
        f"{g}.{n}" for g, values in _file_and_flags(given, config_file).items() for n in values
    }
    knobs = tuned_knobs(base, fixed)
    if not knobs:
        raise ConfigError("every setting league tune varies is fixed by a flag or --config")

    import ray

    from league.training.library_logs import LibraryLogs
    from league.training.loop import start_ray

    out.mkdir(parents=True, exist_ok=True)
    with LibraryLogs(RunDir(out).logs, verbose=base.run.verbose):
        start_ray(base, log)
        resources = trial_resources(base)
        side_by_side = trials_side_by_side(
            resources.required_resources, ray.cluster_resources(), trials
        )
        plan = TunePlan(
            given=dict(given),
            config_file=str(Path(config_file).resolve()) if config_file else None,
            knobs=knobs,
            rounds=rounds,
            round_minutes=minutes * side_by_side / trials / rounds,
            measure=measure,
            opponents=opponents,
            eval_games=eval_games,
            out=str(out.resolve()),
            cwd=os.getcwd(),
            score_snapshots=score_snapshots,
        )
        what = "exact " + ("NashConv" if len(base.layout.seats) > 2 else "exploitability")
        if measure == "win_rate":
            what = f"win rate against {', '.join(opponents)}"
        if score_snapshots > 1:
            what += f", mean over it and its {score_snapshots - 1} latest snapshots"
        log(
            f"tuning {base.game_id} ({base.run.mode}): population-based training of {trials} "
            f"trials, {side_by_side} side by side, {rounds} rounds x "
            f"{plan.round_minutes:.2f} min; scored by the main's {what}; varying "
            f"{', '.join(k.key for k in knobs)}; results in {out / RESULTS_FILE}"
        )
        rows = fit_population(plan, base, trials, resources, log)
    sign = 1 if plan.mode == "min" else -1
    ranked = sorted(rows, key=lambda r: sign * r["score"])
    best = ranked[0]
    write_best(out / BEST_FILE, given, best)
    log(
        f"best: trial {best['trial']} ({describe(best['settings'])}): {best['measure']} "
        f"{best['score']:.4f} after {best['env_steps']:,d} env steps"
    )
    log(f"train with it: league train --config {out / BEST_FILE}")
    return ranked


def trial_resources(base: TrainConfig) -> Any:
    """What one trial's run needs: RLlib's own placement-group request for the
    algorithm `league train` builds (the driver's bundle, then one per env runner
    and learner); Tune places each trial's actors in it."""
    from league.training.algorithm import build_algorithm_config

    algo_config = build_algorithm_config(base)
    return algo_config.algo_class.default_resource_request(algo_config)


def trials_side_by_side(
    required: Mapping[str, float], available: Mapping[str, float], trials: int
) -> int:
    """How many trials the cluster holds at once (at least one): every resource a
    trial asks for counts (CPUs, GPUs, custom ones such as a node's
    `env_runner_resources`), the scarcest decides."""
    fits = [int(available.get(name, 0) // need) for name, need in required.items() if need > 0]
    return max(1, min([trials, *fits]))


def fit_population(
    plan: TunePlan, base: TrainConfig, trials: int, resources: Any, log: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Tune's PBT over the trials; each trial's last result."""
    from ray import tune as ray_tune
    from ray.tune.schedulers import PopulationBasedTraining

    starts = initial_values(base, plan.knobs, trials, base.run.seed)
    pbt = PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=1,
        hyperparam_mutations={
            k.key: (ray_tune.loguniform if k.spread else ray_tune.uniform)(*k.bounds(base))
            for k in plan.knobs
        },
        quantile_fraction=0.25,
        resample_probability=0.25,
        synch=True,  # every trial reaches a round's end before any is copied
    )
    param_space = {
        "trial": ray_tune.grid_search(list(range(trials))),
        **{
            k.key: ray_tune.sample_from(lambda config, key=k.key: starts[config["trial"]][key])
            for k in plan.knobs
        },
    }
    tuner = ray_tune.Tuner(
        ray_tune.with_resources(
            ray_tune.with_parameters(run_trial, plan=plan), resources=resources
        ),
        param_space=param_space,
        tune_config=ray_tune.TuneConfig(
            scheduler=pbt, metric="score", mode=plan.mode, reuse_actors=False
        ),
        run_config=ray_tune.RunConfig(
            name="ray",
            storage_path=plan.out,
            stop={"training_iteration": plan.rounds},
            verbose=0,
            callbacks=[ProgressCallback(Path(plan.out) / RESULTS_FILE, log)],
            failure_config=ray_tune.FailureConfig(fail_fast=True),
        ),
    )
    results = tuner.fit()
    failed = [r for r in results if r.error is not None]
    rows = [r.metrics for r in results if r.metrics and "score" in r.metrics]
    if failed:
        raise TrialFailed(failed[0].error, Path(failed[0].path) / "error.txt")
    if len(rows) < trials:
        raise TrialFailed(None, None)
    return rows


class TrialFailed(RuntimeError):
    """A trial's run failed inside: `error` is what Tune caught (None: a trial ended
    without a result), `log` the trial's traceback file."""

    def __init__(self, error: BaseException | None, log: Path | None) -> None:
        super().__init__(f"a trial failed: {error if error is not None else 'no result'}")
        self.error = error
        self.log = log


def run_trial(config: dict[str, Any], plan: TunePlan) -> None:
    """One Tune trial: rounds of `league train`, each resumed from the trial's run
    dir (or the checkpoint PBT hands it: another trial's, when this one exploits)."""
    from ray import tune as ray_tune

    from league.training.loop import train

    os.chdir(plan.cwd)  # Tune starts trials in their own folder; the user's paths are theirs
    # PBT hands an exploiting trial the source's whole config ("trial" too): a trial's
    # own index is its place in Tune's creation order, the end of its id.
    index = int(ray_tune.get_context().get_trial_id().rsplit("_", 1)[1])
    trial_name = f"trial_{index:03d}"
    run_dir = Path(plan.out) / "runs" / trial_name
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    rounds_done, copied_from = 0, ""
    checkpoint = ray_tune.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as saved:
            state = json.loads((Path(saved) / STATE_FILE).read_text())
            rounds_done = int(state["rounds"])
            if state["trial"] != trial_name:
                copied_from = state["trial"]
            if Path(saved).resolve() != run_dir.resolve():
                shutil.rmtree(run_dir, ignore_errors=True)
                shutil.copytree(saved, run_dir, symlinks=True)
    base = resolve_config(plan.given, config_file=plan.config_file, source="league tune")
    settings = plan.settings(base, {k.key: config[k.key] for k in plan.knobs})
    run_log = (run_dir.parent / f"{trial_name}.log").open("a")
    try:
        while rounds_done < plan.rounds:
            resume = (run_dir / "config.json").exists()
            left = plan.rounds - rounds_done
            cfg = resolve_config(
                merge_settings(
                    merge_settings(plan.given, settings),
                    {
                        "run": {
                            "run_dir": str(run_dir),
                            "stop_minutes": plan.round_minutes,
                            "anneal_minutes": left * plan.round_minutes,
                        }
                    },
                ),
                config_file=plan.config_file,
                resume=resume,
                source="league tune",
            )
            summary = train(
                cfg, resume=resume, log=lambda line: print(line, file=run_log, flush=True)
            )
            if summary.interrupted:
                raise KeyboardInterrupt
            rounds_done += 1
            measure, score = score_main(cfg, plan)
            (run_dir / STATE_FILE).write_text(
                json.dumps({"trial": trial_name, "rounds": rounds_done})
            )
            ray_tune.report(
                {
                    "trial": index,
                    "round": rounds_done,
                    "measure": measure,
                    "score": score,
                    "env_steps": summary.env_steps,
                    "settings": settings,
                    "copied_from": copied_from,
                },
                checkpoint=ray_tune.Checkpoint.from_directory(str(run_dir)),
            )
            copied_from = ""
    finally:
        run_log.close()


def scored_policy_dirs(run: RunDir, count: int) -> list[Path]:
    """The main's folder and those of its ``count - 1`` latest snapshots."""
    main = player_id(MAIN, 0)
    return [run.player_dir(main), *run.latest_snapshot_dirs(main, count - 1)]


def score_main(cfg: TrainConfig, plan: TunePlan) -> tuple[str, float]:
    """The run's main scored by the plan's measure (the mean over it and its latest
    snapshots with `--score-snapshots`)."""
    scores = []
    for path in scored_policy_dirs(RunDir(cfg.run.run_dir), plan.score_snapshots):
        measure, score = score_policy(cfg, plan, load_policy(path, game=cfg.game_id))
        scores.append(score)
    return measure, sum(scores) / len(scores)


def score_policy(cfg: TrainConfig, plan: TunePlan, policy: Any) -> tuple[str, float]:
    """One policy scored by the plan's measure."""
    if plan.measure == "exact":
        return exact_measure(cfg.game_id, policy)
    from envs.opponents import make_opponent
    from league.tools.evaluation import evaluate

    wins = draws = games = 0
    for name in plan.opponents:
        records = evaluate(
            cfg.game_id, policy, make_opponent(name, cfg.game_id), plan.eval_games,
            greedy=False, seed=cfg.run.seed, teams=cfg.game.teams or None,
        )  # fmt: skip
        for record in records:
            wins, draws, games = wins + record.wins, draws + record.draws, games + record.games
    return "win_rate", (wins + 0.5 * draws) / games


class ProgressCallback:
    """One line per trial and round on the console, one row in OUT/tune.jsonl."""

    def __new__(cls, results: Path, log: Callable[[str], None]) -> Any:
        from ray.tune import Callback

        class _Progress(Callback):
            def on_trial_result(
                self, iteration: int, trials: list, trial: Any, result: dict, **info: Any
            ) -> None:
                row = {
                    k: result[k]
                    for k in (
                        "trial",
                        "round",
                        "measure",
                        "score",
                        "env_steps",
                        "settings",
                        "copied_from",
                    )
                }
                with results.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                copied = f", continued from {row['copied_from']}" if row["copied_from"] else ""
                log(
                    f"trial {row['trial']} round {row['round']}: {row['measure']} "
                    f"{row['score']:.4f} after {row['env_steps']:,d} env steps "
                    f"({describe(row['settings'])}{copied})"
                )

        return _Progress()


def describe(settings: Mapping[str, Mapping[str, float]]) -> str:
    return ", ".join(
        f"{group}.{name}={value:g}"
        for group, values in settings.items()
        for name, value in values.items()
    )


def write_best(path: Path, given: Mapping[str, Any], best: Mapping[str, Any]) -> None:
    """The flags tune was given (but its own run settings) and the best trial's
    settings, as a --config file."""
    settings = merge_settings(_without_tune_sets(given), best["settings"])
    header = (
        f"# league tune: trial {best['trial']} after {best['round']} rounds, "
        f"{best['measure']} {best['score']:.4f}\n"
    )
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


def _round(value: float) -> float:
    """Three significant digits: a setting a reader can copy."""
    return float(f"{value:.3g}")
