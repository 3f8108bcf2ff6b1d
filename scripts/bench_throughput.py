"""Env steps/s on one game: raw PettingZoo, plain RLlib PPO, and this project.

`--env` takes any game reference `league train --env` takes (default connect_four).
All measured in one run, on one local Ray instance with the same CPUs:

  (a) the game's PettingZoo env (with the league's observation adapter, which
      finds masks in `info` for OpenSpiel games), uniform random legal moves, no RLlib;
  (b) plain RLlib PPO self-play through RLlib's PettingZooEnv with RLlib's default
      settings (one env per runner, episodes_to_numpy on, default runner class,
      PPO's default training hyperparameters); the same masked module as (c),
      since RLlib's default module cannot read action-mask dict observations;
  (b') like (b) but with this project's PPO hyperparameters, so that the (c)/(b')
      ratio isolates sampling and runner changes;
  (c) this project's training (`league.training.algorithm.build_algorithm_config`),
      defaults, with `--algo ppo` (default), `appo`, or `both` (one line each).

Training throughput = env steps sampled / wall time of `algo.train()` over the
timed iterations (after one warm-up iteration), learner updates included. APPO's
runners keep sampling during updates, so its number also holds steps that the
learner will only train on later (or drop, when its queue is full).

    .venv/bin/python scripts/bench_throughput.py [--env GAME] [--num-env-runners 1] \
        [--iterations 5] [--algo ppo|appo|both]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import ray
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
from ray.tune.registry import register_env

from envs.registry import get_game
from league.config import TrainConfig
from league.training.algorithm import build_algorithm_config
from rlmodules.masked_policy import masked_policy_spec


def raw_pettingzoo_steps_per_s(game: str, seconds: float, seed: int = 0) -> float:
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


def plain_rllib_config(
    game: str, num_env_runners: int, project_hparams: TrainConfig, with_hparams: bool
) -> PPOConfig:
    model = project_hparams.model_config  # the same network as (c): only the runner differs
    register_env("bench_game", lambda _: PettingZooEnv(get_game(game).make()))
    config = (
        PPOConfig()
        .environment("bench_game")
        .env_runners(num_env_runners=num_env_runners)
        .multi_agent(
            policies={"shared"},
            policy_mapping_fn=lambda agent_id, episode, **kw: "shared",
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={"shared": masked_policy_spec(model_config=model)}
            )
        )
    )
    if with_hparams:
        h = project_hparams
        config.training(
            train_batch_size_per_learner=h.train_batch_size,
            minibatch_size=h.minibatch_size,
            num_epochs=h.num_epochs,
            lr=h.lr,
        )
    return config


def training_steps_per_s(config: AlgorithmConfig, iterations: int) -> tuple[float, float]:
    """(env steps/s, mean seconds per iteration) over `iterations` after one warm-up."""
    algo = config.build_algo()
    try:
        algo.train()
        steps, start = 0, time.perf_counter()
        for _ in range(iterations):
            result = algo.train()
            steps += int(result["env_runners"]["num_env_steps_sampled"])
        elapsed = time.perf_counter() - start
    finally:
        algo.stop()
    return steps / elapsed, elapsed / iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="connect_four", help="game reference (as league train)")
    parser.add_argument("--num-env-runners", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=5, help="timed iterations per setup")
    parser.add_argument("--raw-seconds", type=float, default=10.0)
    parser.add_argument("--num-cpus", type=int, default=2)
    parser.add_argument(
        "--algo",
        choices=("ppo", "appo", "both"),
        default="ppo",
        help="algorithm of (c), this project's training; both = one (c) line each",
    )
    parser.add_argument(
        "--skip-plain",
        action="store_true",
        help="measure only (a) and (c): plain RLlib with one env per runner takes minutes "
        "per iteration on games with very short episodes (poker)",
    )
    args = parser.parse_args()

    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    ours = TrainConfig.from_dict({"env": args.env, "num_env_runners": args.num_env_runners})
    print(f"game {ours.game}")

    raw = raw_pettingzoo_steps_per_s(ours.game, args.raw_seconds)
    print(f"(a)  raw PettingZoo random legal play: {raw:9,.0f} env steps/s", flush=True)
    plain = plain_h = None
    if not args.skip_plain:
        plain, plain_it = training_steps_per_s(
            plain_rllib_config(ours.game, args.num_env_runners, ours, False), args.iterations
        )
        print(
            f"(b)  plain RLlib PPO, defaults:        {plain:9,.0f} env steps/s "
            f"({plain_it:.1f} s/iter)",
            flush=True,
        )
        plain_h, plain_h_it = training_steps_per_s(
            plain_rllib_config(ours.game, args.num_env_runners, ours, True), args.iterations
        )
        print(
            f"(b') plain RLlib PPO, our PPO hparams: {plain_h:9,.0f} env steps/s "
            f"({plain_h_it:.1f} s/iter)",
            flush=True,
        )
    for algo in ("ppo", "appo") if args.algo == "both" else (args.algo,):
        cfg = ours.replace(algo=algo)
        project, project_it = training_steps_per_s(build_algorithm_config(cfg), args.iterations)
        print(
            f"(c)  this project's training, {algo:4s}:   {project:9,.0f} env steps/s "
            f"({project_it:.1f} s/iter; {cfg.num_env_runners} runners x "
            f"{cfg.num_envs_per_env_runner} envs)",
            flush=True,
        )
        ratios = f"(c)/(a) = {project / raw:.2f}"
        if plain is not None and plain_h is not None:
            ratios = (
                f"(c)/(b) = {project / plain:.2f}x   (c)/(b') = {project / plain_h:.2f}x   "
                f"{ratios}   (b)/(a) = {plain / raw:.2f}"
            )
        print(f"ratios ({algo}): {ratios}")
    ray.shutdown()


if __name__ == "__main__":
    main()
