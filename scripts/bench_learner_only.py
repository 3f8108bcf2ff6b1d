"""Do the learner-only modules pay for themselves? A 2x2 grid per game.

For tictactoe and connect_four, trains the main player four ways -- with and
without the shared value function (`shared_vf`), with and without the world
model (`world_model`, with ICM curiosity at `--curiosity-coeff`) -- for the
same number of env steps each, with the same seed and PPO settings, and prints:

  * training throughput: env steps sampled / wall time of `algo.train()` (learner
    updates included; the world model's extra forward passes and the shared
    critic's GAE are what this measures), the first, warm-up iteration left out;
  * strength: greedy win/draw/loss rate against each reference opponent of the
    game (`league.tools.evaluation.evaluate` with `envs.opponents.make_opponent`), both
    seats pooled;
  * for tictactoe also the exact exploitability (`league.tools.exploitability`) of the
    greedy and the sampled policy (0 = unexploitable; 1 = always beaten).

One seed and a modest budget give a noisy answer; use --seeds and a larger
--env-steps for a real comparison (the defaults run in roughly 10-20 minutes
on 2 idle cores).

    .venv/bin/python scripts/bench_learner_only.py [--env-steps 40000] [--games tictactoe]
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import dataclass

import ray

from envs.opponents import make_opponent, reference_opponents
from league.config import TrainConfig
from league.tools.evaluation import evaluate
from league.tools.exploitability import greedy, tictactoe_exploitability
from league.training.algorithm import MAIN_PLAYER, build_ppo_config
from league.training.loop import player_policy

GAMES = ("tictactoe", "connect_four")


@dataclass
class Outcome:
    game: str
    variant: str
    seed: int
    env_steps: int
    steps_per_s: float
    scores: dict[str, tuple[float, float, float]]
    """opponent -> (win, draw, loss) rates over both seats."""
    exploitability: tuple[float, float] | None = None
    """tictactoe: (greedy, sampled) mean best-response value."""


def variant_name(shared_vf: bool, world_model: bool) -> str:
    parts = [name for name, on in (("shared_vf", shared_vf), ("world_model", world_model)) if on]
    return "+".join(parts) or "baseline"


def run_one(base: TrainConfig, env_steps: int, eval_games: int) -> Outcome:
    """Train `base` for at least `env_steps` env steps, then measure the main player."""
    algo = build_ppo_config(base).build_algo()
    try:
        steps, iterations = 0, []
        while steps < env_steps:
            started = time.perf_counter()
            result = algo.train()
            sampled = int(result["env_runners"]["num_env_steps_sampled"])
            iterations.append((sampled, time.perf_counter() - started))
            steps += sampled
        # The first iteration (actor start-up, first calls) counts only if it is alone.
        timed = iterations[1:] or iterations
        steps_per_s = sum(n for n, _ in timed) / sum(t for _, t in timed)
        policy, _ = player_policy(algo, base, MAIN_PLAYER)
    finally:
        algo.stop()
    scores = {}
    for name in reference_opponents(base.game.env):
        records = evaluate(
            base.game.env,
            policy,
            make_opponent(name, base.game.env),
            eval_games,
            seed=base.run.seed,
        )
        games = sum(r.games for r in records)
        scores[name] = tuple(
            sum(getattr(r, outcome) for r in records) / games
            for outcome in ("wins", "draws", "losses")
        )
    exploit = None
    if base.game.env == "tictactoe":
        exploit = (
            tictactoe_exploitability(greedy(policy.action_probs)).mean,
            tictactoe_exploitability(policy.action_probs).mean,
        )
    return Outcome(
        game=base.game.env,
        variant=variant_name(base.model.shared_vf, base.model.world_model),
        seed=base.run.seed,
        env_steps=steps,
        steps_per_s=steps_per_s,
        scores=scores,
        exploitability=exploit,
    )


def format_outcome(o: Outcome) -> str:
    scores = " | ".join(
        f"vs {name} W{w:.2f} D{d:.2f} L{lo:.2f}" for name, (w, d, lo) in o.scores.items()
    )
    line = (
        f"{o.game:12s} {o.variant:22s} seed {o.seed} | {o.env_steps:8,d} steps | "
        f"{o.steps_per_s:7,.0f} steps/s | {scores}"
    )
    if o.exploitability is not None:
        line += (
            f" | exploitability greedy {o.exploitability[0]:.3f} sampled {o.exploitability[1]:.3f}"
        )
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=list(GAMES), choices=GAMES)
    parser.add_argument("--env-steps", type=int, default=40_000, help="env steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--mode", default="selfplay", choices=("selfplay", "league"))
    parser.add_argument("--curiosity-coeff", type=float, default=0.01)
    parser.add_argument("--eval-games", type=int, default=100, help="games per seat and opponent")
    parser.add_argument("--num-env-runners", type=int, default=1)
    parser.add_argument("--num-envs-per-env-runner", type=int, default=8)
    parser.add_argument("--train-batch-size", type=int, default=4000)
    parser.add_argument("--minibatch-size", type=int, default=500)
    parser.add_argument("--num-epochs", type=int, default=6)
    parser.add_argument("--hidden-sizes", type=int, nargs="+", default=[256, 256])
    parser.add_argument("--num-cpus", type=int, default=2)
    args = parser.parse_args()

    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    outcomes = []
    for game, seed, (shared_vf, world_model) in itertools.product(
        args.games, args.seeds, itertools.product((False, True), repeat=2)
    ):
        base = TrainConfig(
            env=game,
            mode=args.mode,
            seed=seed,
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=args.num_envs_per_env_runner,
            train_batch_size=args.train_batch_size,
            minibatch_size=min(args.minibatch_size, args.train_batch_size),
            num_epochs=args.num_epochs,
            hidden_sizes=list(args.hidden_sizes),
            shared_vf=shared_vf,
            world_model=world_model,
            curiosity_coeff=args.curiosity_coeff if world_model else 0.0,
        )
        outcome = run_one(base, args.env_steps, args.eval_games)
        outcomes.append(outcome)
        print(format_outcome(outcome), flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main()
