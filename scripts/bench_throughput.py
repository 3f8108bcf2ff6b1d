"""Env steps/s on one game: raw PettingZoo, tuned plain RLlib PPO, and this project.

`--env` takes any game reference `league train --env` takes (default connect_four),
turn-based or simultaneous-move (`--env battle`: 12 agents acting every step).
All measured in one run, on one local Ray instance with the same CPUs, 1 env
runner by default:

  (a) the game's PettingZoo env (with the league's observation adapter, which
      finds masks in `info` for OpenSpiel games), uniform random legal moves (every
      live agent's in a simultaneous-move game), no RLlib;
  (a') OpenSpiel games: random legal play on pyspiel's own states (decisions only,
      no observations or masks), the rate issue 41 holds sampling to; beside it what
      every sampled step costs before any network runs (the game's RLlib env with
      observations and masks, and RLlib's episodes built from the finished games),
      so `bound (e)/(a')` is the most any batched runner could reach;
  (b) plain RLlib PPO self-play as a careful user runs it: RLlib's PettingZooEnv
      (ParallelPettingZooEnv for simultaneous-move games) and MultiAgentEnvRunner,
      `num_envs_per_env_runner=8`, `episodes_to_numpy=False`, this project's
      network and PPO hyperparameters (so only the runner differs);
  (b') sampling alone with (b)'s runner, as (e);
  (c) this project's training in self-play mode, defaults (`--env-runner` picks
      the runner; auto = the batched runner for the game's kind);
  (d) this project in league mode with a full active set (8 frozen snapshots
      seated by the matchmaking plan), league step included in each iteration;
  (e) sampling alone: the env runner's `sample()` of one train batch, no learner
      update, timed inside the runner actor.
  (f) simultaneous-move games of one side (battle): one exploring forward pass of
      the network per observation, at ours' batch and at (b)'s, on one thread; no
      runner samples faster than its forward passes plus the game's own step, so
      `bound (e)/(b')` is the most any runner could gain on (b') with this network.

Training throughput = env steps sampled / wall time of the timed iterations (after
one warm-up iteration), learner updates included. The learner's share of an
iteration comes from RLlib's timers (`learner_update_timer`). The headline ratio,
ours / plain RLlib's runner on the same network, is (c)/(b) for training and
(e)/(b') for sampling alone; the figures, ratios and the machine's load average
(1 minute, before and after) are also written to `--out` as JSON.

    .venv/bin/python scripts/bench_throughput.py [--env GAME] [--iterations 5] [--env-runner auto]

`--num-learners 0 1 2` measures (c) once per value (0: the learner in the driver
process; 1: a learner actor asking for `--num-cpus-per-learner` CPUs; 2: two
data-parallel learner actors), and
`--algo both` with APPO too (for each of those values); each extra (c) line gives its ratio to the
first (c). (d) and (e) use the first values.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import ray
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core import ALL_MODULES
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv
from ray.rllib.utils.metrics import NUM_MODULE_STEPS_TRAINED
from ray.tune.registry import register_env

from envs.adapters import make_rllib_env
from envs.registry import game_layout, game_spaces, get_game
from envs.spaces import MASK_KEY
from league.config import TrainConfig
from league.core.ids import is_reference_id, side_of
from league.tools.results import append_result
from league.training.algorithm import SelfPlayMapping, build_algorithm_config, env_runner_class
from league.training.batched_base import GameInPlay, episode_of
from league.training.driver import LeagueDriver
from rlmodules.masked_policy import masked_policy_spec

FULL_ACTIVE_SET = 8
PLAIN_NUM_ENVS = 8  # plain RLlib's vector copies per runner in (b), (b')


def raw_pettingzoo_steps_per_s(game: str, seconds: float, seed: int = 0) -> float:
    """Env steps/s of uniform random legal play: one move per step in a turn-based
    game, one move per live agent per step in a simultaneous-move one."""
    if get_game(game).kind == "simultaneous":
        return _raw_parallel_steps_per_s(game, seconds, seed)
    rng = np.random.default_rng(seed)
    env = get_game(game).make()
    env.reset(seed=seed)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        obs, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.reset(seed=int(rng.integers(2**31)))
            continue
        legal = np.flatnonzero(obs["action_mask"])
        env.step(int(rng.choice(legal)))
        steps += 1
    return steps / (time.perf_counter() - start)


def raw_pyspiel_steps_per_s(game: str, seconds: float, seed: int = 0) -> float:
    """Decisions/s of uniform random legal play on the OpenSpiel game itself (pyspiel's
    states, chance outcomes by their probabilities): no observation, no mask."""
    from envs.openspiel import load_openspiel_game, play_chance

    rng = np.random.default_rng(seed)
    spiel = load_openspiel_game(get_game(game).openspiel)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        state = spiel.new_initial_state()
        play_chance(state, rng)
        while not state.is_terminal():
            legal = state.legal_actions()
            state.apply_action(legal[int(rng.integers(len(legal)))])
            steps += 1
            play_chance(state, rng)
    return steps / (time.perf_counter() - start)


def turn_based_costs_us_per_step(game: str, seconds: float, seed: int = 0) -> dict[str, float]:
    """Microseconds per env step of the two costs every sampled step of a turn-based
    game pays in the batched runner, whatever the network: the game's RLlib env
    (random legal moves, the runner's per-step lists) and turning finished games into
    RLlib's numpy episodes (`episode_of`, the runner's own)."""
    rng = np.random.default_rng(seed)
    env = make_rllib_env(game)
    games: list[GameInPlay] = []
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        observations, infos = env.reset(seed=int(rng.integers(2**31)))
        game_in_play = GameInPlay(env=env, modules=dict.fromkeys(env.possible_agents, "main"))
        game_in_play.observations, game_in_play.infos = [observations], [infos]
        seat = next(iter(observations))
        while True:
            action = {seat: int(rng.choice(np.flatnonzero(observations[seat][MASK_KEY])))}
            observations, rewards, terminateds, truncateds, infos = env.step(action)
            steps += 1
            game_in_play.observations.append(observations)
            game_in_play.infos.append(infos)
            game_in_play.actions.append(action)
            game_in_play.rewards.append(rewards)
            game_in_play.extra_model_outputs.append({seat: {}})
            game_in_play.terminateds.update(terminateds)
            game_in_play.truncateds.update(truncateds)
            if terminateds["__all__"] or truncateds["__all__"]:
                break
            seat = next(iter(observations))
        games.append(game_in_play)
    env_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for game_in_play in games:
        episode_of(game_in_play)
    episode_seconds = time.perf_counter() - start
    return {"env": env_seconds / steps * 1e6, "episodes": episode_seconds / steps * 1e6}


def _raw_parallel_steps_per_s(game: str, seconds: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    env = get_game(game).make()
    observations, _ = env.reset(seed=seed)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        if not env.agents:
            observations, _ = env.reset(seed=int(rng.integers(2**31)))
            continue
        actions = {
            agent: int(rng.choice(np.flatnonzero(observations[agent]["action_mask"])))
            for agent in env.agents
        }
        observations, *_ = env.step(actions)
        steps += 1
    return steps / (time.perf_counter() - start)


def plain_rllib_config(game: str, num_env_runners: int, hparams: TrainConfig) -> PPOConfig:
    """Plain RLlib PPO self-play, tuned as a careful user would, with our network:
    RLlib's PettingZoo wrapper for the game's API (`PettingZooEnv` for turn-based,
    `ParallelPettingZooEnv` for simultaneous-move games) and RLlib's runner; one
    module per side (a game whose seats share their spaces has one)."""
    wrapper = PettingZooEnv if get_game(game).kind == "turn_based" else ParallelPettingZooEnv
    register_env("bench_game", lambda _: wrapper(get_game(game).make()))
    h = hparams
    layout = h.layout
    mapping = SelfPlayMapping(layout)
    return (
        PPOConfig()
        .environment("bench_game")
        .env_runners(
            num_env_runners=num_env_runners,
            num_envs_per_env_runner=PLAIN_NUM_ENVS,
            episodes_to_numpy=False,
        )
        .multi_agent(policies=set(mapping.main_of.values()), policy_mapping_fn=mapping)
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    module: masked_policy_spec(
                        *game_spaces(game, side_of(module)), model_config=h.model.network()
                    )
                    for module in set(mapping.main_of.values())
                }
            )
        )
        .training(
            train_batch_size_per_learner=h.ppo.train_batch_size,
            minibatch_size=h.ppo.minibatch_size,
            num_epochs=h.ppo.num_epochs,
            lr=h.ppo.lr,
            gamma=h.ppo.gamma,
            lambda_=h.ppo.lambda_,
            clip_param=h.ppo.clip_param,
            entropy_coeff=h.ppo.entropy_coeff,
            vf_loss_coeff=h.ppo.vf_loss_coeff,
        )
    )


class Timing:
    """Env steps/s, seconds per iteration and the learner's share of an iteration."""

    def __init__(
        self, steps: int, seconds: float, iterations: int, learner_s: float, trained: int = 0
    ):
        self.rate = steps / seconds
        self.per_iteration = seconds / iterations
        self.learner_share = learner_s / seconds
        self.trained_rate = trained / seconds

    def __str__(self) -> str:
        return (
            f"{self.rate:9,.0f} env steps/s ({self.per_iteration:.2f} s/iter, "
            f"learner {100 * self.learner_share:.0f}%, "
            f"{self.trained_rate:,.0f} rows/s through SGD)"
        )


def time_training(algo: Any, iterations: int, after_train=None) -> Timing:
    """Times `iterations` of `algo.train()` (plus `after_train(i, result)`) after a warm-up."""
    algo.train()
    steps, learner_s, trained, start = 0, 0.0, 0, time.perf_counter()
    for i in range(iterations):
        t = time.perf_counter()
        result = algo.train()
        learner_s += _learner_seconds(result, time.perf_counter() - t)
        if after_train is not None:
            after_train(i + 2, result)
        steps += int(result["env_runners"]["num_env_steps_sampled"])
        trained += _rows_trained(result)
    return Timing(steps, time.perf_counter() - start, iterations, learner_s, trained)


def _rows_trained(result: dict[str, Any]) -> int:
    """Rows that went through SGD this iteration, all modules, epochs counted (the
    learner's work: summed over data-parallel learners)."""
    learners = result.get("learners", {})
    return sum(
        int(stats.get(NUM_MODULE_STEPS_TRAINED, 0))
        for module_id, stats in learners.items()
        if module_id != ALL_MODULES and isinstance(stats, dict)
    )


def _learner_seconds(result: dict[str, Any], iteration_s: float) -> float:
    """This iteration's learner update time: RLlib's timers are smoothed means, so
    take the share of the training step and scale it to this iteration."""
    timers = result.get("timers", {})
    learner, step = timers.get("learner_update_timer"), timers.get("training_step")
    if not learner or not step:
        return float("nan")
    return iteration_s * float(learner) / float(step)


def sampling_only(algo: Any, batches: int) -> tuple[float, float]:
    """Env steps/s of the env runner's `sample()` alone, timed inside the runner, and
    the moves made per env step (agent steps / env steps)."""

    def value(stat: Any) -> int:
        return int(stat.peek() if hasattr(stat, "peek") else stat)

    def timed(runner: Any) -> tuple[int, int, float]:
        runner.sample()
        runner.get_metrics()
        steps, moves, start = 0, 0, time.perf_counter()
        for _ in range(batches):
            runner.sample()
            metrics = runner.get_metrics()
            steps += value(metrics["num_env_steps_sampled"])
            moves += sum(value(v) for v in metrics["num_agent_steps_sampled"].values())
        return steps, moves, time.perf_counter() - start

    results = algo.env_runner_group.foreach_env_runner(timed, local_env_runner=False)
    if not results:  # no remote runners: the local one samples
        results = [timed(algo.env_runner)]
    steps = sum(s for s, _, _ in results)
    return steps / max(t for _, _, t in results), sum(m for _, m, _ in results) / steps


def forward_seconds_per_row(game: str, hparams: TrainConfig, rows: int, repeats: int = 10) -> float:
    """Seconds per observation of one exploring forward pass of the players' network
    over `rows` observations at once, on one thread (as a remote env runner runs it).
    A runner can be no faster than this: it is the network's own cost."""
    obs_space, action_space = game_spaces(game)
    module = masked_policy_spec(
        obs_space, action_space, model_config=hparams.model.network()
    ).build()
    samples = [obs_space.sample() for _ in range(rows)]
    batch = {
        Columns.OBS: {
            key: torch.from_numpy(np.stack([sample[key] for sample in samples]))
            for key in samples[0]
        }
    }
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            module.forward_exploration(batch)  # warm-up
            start = time.perf_counter()
            for _ in range(repeats):
                module.forward_exploration(batch)
            return (time.perf_counter() - start) / repeats / rows
    finally:
        torch.set_num_threads(threads)


def league_training(cfg: TrainConfig, iterations: int) -> Timing:
    """League mode, the active set filled with FULL_ACTIVE_SET snapshots."""
    league_cfg = cfg.replace(
        mode="league",
        league={
            **cfg.to_dict()["league"],
            "active_set_size": FULL_ACTIVE_SET,
            "snapshot_step_budget": 10**12,  # no new snapshots while timing
        },
    )
    league_cfg = TrainConfig.from_dict(league_cfg.to_dict())
    algo = build_algorithm_config(league_cfg).build_algo()
    try:
        with tempfile.TemporaryDirectory() as run_dir:
            driver = LeagueDriver(algo, league_cfg, Path(run_dir), seed=0)
            weights = driver.learner_weights(driver.players)
            for i in range(FULL_ACTIVE_SET):
                player = driver.players[i % len(driver.players)]
                sid = driver.league.take_snapshot(player, iteration=0)
                driver.export_snapshot(sid, weights[player])
            driver.step(1, {})  # decide and push the full active set
            timing = time_training(algo, iterations, after_train=driver.step)
            # Reference opponents (connect_four's `search`) are loaded beside the set.
            frozen = [m for m in driver.active_set if not is_reference_id(m)]
            assert len(frozen) == FULL_ACTIVE_SET, driver.active_set
    finally:
        algo.stop()
    return timing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="connect_four", help="game reference (as league train)")
    parser.add_argument("--num-env-runners", type=int, default=1)
    parser.add_argument("--env-runner", default="auto", help="this project's runner (c, d, e)")
    parser.add_argument(
        "--num-envs", type=int, default=64, help="game copies per env runner in (c), (d), (e)"
    )
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations per setup")
    parser.add_argument("--raw-seconds", type=float, default=10.0)
    parser.add_argument("--num-cpus", type=int, default=2)
    parser.add_argument(
        "--skip-plain",
        action="store_true",
        help="leave out (b): plain RLlib takes minutes per iteration on games with very "
        "short episodes (poker)",
    )
    parser.add_argument(
        "--algo",
        default="ppo",
        choices=("ppo", "appo", "both"),
        help="this project's algorithm; both = one (c) line each (PPO first)",
    )
    parser.add_argument(
        "--num-learners",
        type=int,
        nargs="+",
        default=[0],
        choices=(0, 1, 2, 3, 4),
        help="measure (c) for each value (e.g. 0 1 2: learner in the driver, a learner "
        "actor, two data-parallel learner actors)",
    )
    parser.add_argument(
        "--num-cpus-per-learner",
        type=float,
        default=None,
        help="CPUs of a learner actor (default: RLlib's auto, 1)",
    )
    parser.add_argument(
        "--sample-ahead",
        default="on",
        choices=("off", "on", "both"),
        help="PPO's runners sample the next batch during the update (c, d; the project's "
        "default: on); both = the first (c) without, one more (c) line with it",
    )
    parser.add_argument(
        "--skip-league",
        action="store_true",
        help="leave out (d): a league of 8 frozen snapshots takes long on games whose "
        "learner update dominates (battle)",
    )
    parser.add_argument(
        "--overrides",
        type=json.loads,
        default={},
        help="TrainConfig fields as JSON for every setup, plain RLlib's network and PPO "
        """settings included (e.g. '{"conv_filters": [[8, 3, 2]], "hidden_sizes": [64]}')""",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="JSON file for the figures and ratios (default runs/throughput/GAME.json)",
    )
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    ours = TrainConfig.from_dict(
        {
            "env": args.env,
            "num_env_runners": args.num_env_runners,
            "env_runner": args.env_runner,
            "num_envs_per_env_runner": args.num_envs,
            "num_learners": args.num_learners[0],
            "algo": "ppo" if args.algo == "both" else args.algo,
            "num_cpus_per_learner": args.num_cpus_per_learner,
            "sample_ahead": args.sample_ahead == "on",
            **args.overrides,
        }
    )
    runner = env_runner_class(ours).__name__
    print(
        f"game {ours.game_id}: {ours.resources.num_env_runners} env runner(s) x "
        f"{ours.resources.num_envs_per_env_runner} games, env_runner {ours.resources.env_runner} ({runner}), "
        f"batch {ours.ppo.train_batch_size}, {ours.ppo.num_epochs} epochs of {ours.ppo.minibatch_size}; "
        f"load average {load_before:.2f}"
    )
    figures: dict[str, float] = {}
    raw = figures["a_raw"] = raw_pettingzoo_steps_per_s(ours.game_id, args.raw_seconds)
    print(f"(a) raw PettingZoo random legal play: {raw:9,.0f} env steps/s", flush=True)
    raw_spiel = None
    if get_game(ours.game_id).openspiel is not None:
        raw_spiel = figures["a_raw_pyspiel"] = raw_pyspiel_steps_per_s(
            ours.game_id, args.raw_seconds
        )
        print(f"(a') raw pyspiel random legal play:   {raw_spiel:9,.0f} env steps/s", flush=True)
        # What a sampled step costs before any network runs: the most (e)/(a') can be.
        costs = turn_based_costs_us_per_step(ours.game_id, args.raw_seconds)
        figures["env_us_per_step"], figures["episode_us_per_step"] = costs["env"], costs["episodes"]
        print(
            f"per sampled step, before the network: the game's RLlib env {costs['env']:.1f} us, "
            f"RLlib's episodes {costs['episodes']:.1f} us",
            flush=True,
        )
    plain = plain_sampling = None
    if not args.skip_plain:
        algo = plain_rllib_config(ours.game_id, args.num_env_runners, ours).build_algo()
        try:
            plain = time_training(algo, args.iterations)
            print(f"(b) plain RLlib PPO, tuned:           {plain}", flush=True)
            plain_sampling, _ = sampling_only(algo, args.iterations)
            print(f"(b') plain RLlib sampling alone:      {plain_sampling:9,.0f} env steps/s")
        finally:
            algo.stop()
        figures["b_plain"], figures["b_plain_sampling"] = plain.rate, plain_sampling
    algo = build_algorithm_config(ours.replace(mode="selfplay")).build_algo()
    try:
        selfplay = time_training(algo, args.iterations)
        print(f"(c) this project, self-play:          {selfplay}", flush=True)
        sampling, moves_per_step = sampling_only(algo, args.iterations)
    finally:
        algo.stop()
    figures["c_selfplay"] = selfplay.rate
    variants: list[dict[str, Any]] = [{"num_learners": n} for n in args.num_learners[1:]]
    if args.sample_ahead == "both":
        variants += [{"sample_ahead": True}]
    if args.algo == "both":  # APPO with each learner count
        variants += [
            {"algo": "appo", "num_learners": n, "sample_ahead": True} for n in args.num_learners
        ]
    for changes in variants:
        algo = build_algorithm_config(ours.replace(mode="selfplay", **changes)).build_algo()
        try:
            other = time_training(algo, args.iterations)
        finally:
            algo.stop()
        label = ", ".join(f"{k} {v}" for k, v in changes.items())
        figures[f"c_{label}"] = other.rate
        print(
            f"(c) with {label}: {other}  ({other.rate / selfplay.rate:.2f}x the first (c))",
            flush=True,
        )
    league = None if args.skip_league else league_training(ours, args.iterations)
    figures["e_sampling"] = sampling
    if league is not None:
        figures["d_league"] = league.rate
        print(f"(d) this project, league ({FULL_ACTIVE_SET} frozen):  {league}", flush=True)
    print(f"(e) sampling alone (self-play):       {sampling:9,.0f} env steps/s", flush=True)
    ratios = {"(e)/(a)": sampling / raw, "(c)/(a)": selfplay.rate / raw}
    if raw_spiel is not None:
        ratios["(e)/(a')"] = sampling / raw_spiel
        floor_s = (figures["env_us_per_step"] + figures["episode_us_per_step"]) * 1e-6
        ratios["bound (e)/(a')"] = (1 / floor_s) / raw_spiel
    if league is not None:
        ratios["(d)/(c)"] = league.rate / selfplay.rate
    if plain is not None and plain_sampling is not None:
        training_ratio = selfplay.rate / plain.rate
        sampling_ratio = sampling / plain_sampling
        ratios = {"(c)/(b)": training_ratio, "(e)/(b')": sampling_ratio, **ratios}
        if league is not None:
            ratios["(d)/(b)"] = league.rate / plain.rate
        print(
            f"ours ({runner}) / plain RLlib MultiAgentEnvRunner, same network: "
            f"training {training_ratio:.2f}x, sampling alone {sampling_ratio:.2f}x"
        )
    layout = game_layout(ours.game_id)
    if get_game(ours.game_id).kind == "simultaneous" and len(layout.sides) == 1:
        # Many agents act per step: the network's own cost bounds any runner. Forward
        # cost per observation at ours' batch (every live seat of every copy) and at
        # plain RLlib's (every seat of its 8 vector copies); one side: one network.
        seats = len(layout.seats)
        ours_rows = ours.resources.num_envs_per_env_runner * seats
        for label, rows in (("ours", ours_rows), ("plain", PLAIN_NUM_ENVS * seats)):
            seconds = forward_seconds_per_row(ours.game_id, ours, rows)
            figures[f"forward_us_per_row_{label}"] = seconds * 1e6
            print(f"forward pass, batch of {rows:4}: {seconds * 1e6:7.1f} us per observation")
        if plain_sampling is not None:
            # Ours can gain on plain RLlib's time per env step only down to its own
            # forward passes (the moves of a step) plus the game's step.
            floor = figures["forward_us_per_row_ours"] * 1e-6 * moves_per_step + 1 / raw
            ratios["bound (e)/(b')"] = (1 / plain_sampling) / floor
    print("ratios: " + "   ".join(f"{name} = {value:.2f}" for name, value in ratios.items()))
    ray.shutdown()
    load_after = os.getloadavg()[0]
    print(f"load average {load_before:.2f} before, {load_after:.2f} after")
    out = Path(args.out or f"runs/throughput/{_file_name(ours.game_id)}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "game": ours.game_id,
                "command": " ".join(sys.argv),
                "runner": runner,
                "num_env_runners": ours.resources.num_env_runners,
                "num_envs_per_env_runner": ours.resources.num_envs_per_env_runner,
                "iterations": args.iterations,
                "overrides": args.overrides,
                "env_steps_per_s": figures,
                "ratios": ratios,
                "load_average": {"before": load_before, "after": load_after},
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {out}")
    append_result(
        "throughput",
        {
            "game": ours.game_id,
            "runner": runner,
            "env_steps_per_s": {k: v if v is None else round(v) for k, v in figures.items()},
            "ratios": {k: round(v, 3) for k, v in ratios.items()},
            "load_average": {"before": load_before, "after": load_after},
        },
    )


def _file_name(game: str) -> str:
    """A game id as a file name (ids may carry kwargs as JSON)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", game).strip("_")


if __name__ == "__main__":
    main()
