"""APPO vs PPO at equal wall-clock: same game, same resources, defaults otherwise.

`league train --env GAME --ppo.algo ppo` and `--algo appo` run one after the other for
the same number of minutes (nothing else should run on the machine meanwhile);
then each run's `main_0` plays the game's reference opponents (e.g. connect_four's
search opponent; greedy, seats alternating) and the two mains play each other
(both sampling, seats alternating).

    .venv/bin/python scripts/bench_algos.py [--env connect_four] [--minutes 15]
        [--mode league] [--out runs/algos] [--games 500] [--extra ...]

Runs that already finished in OUT are measured again, not retrained.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench_league_quality import league_train

from envs.opponents import make_opponent, reference_opponents
from league.run import RunDir
from league.snapshot import load_policy
from league.tools.evaluation import evaluate

ALGOS = ("ppo", "appo")
MAIN = "main_0"


def train(args: argparse.Namespace, algo: str, run: RunDir) -> None:
    flags = ["--env", args.env, "--ppo.algo", algo, "--mode", args.mode]
    league_train(algo, [*flags, "--stop-minutes", str(args.minutes), *args.extra], run)


def score(seats: list) -> float:
    """Wins plus half the draws, per game, over all seats."""
    games = sum(s.games for s in seats)
    return (sum(s.wins for s in seats) + sum(s.draws for s in seats) / 2) / games


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="connect_four")
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--mode", default="league", choices=("league", "selfplay"))
    parser.add_argument("--out", default="runs/algos")
    parser.add_argument("--games", type=int, default=500, help="games per seat per match-up")
    parser.add_argument(
        "--extra", nargs=argparse.REMAINDER, default=[], help="more `league train` flags"
    )
    args = parser.parse_args()
    runs = {algo: RunDir(Path(args.out) / f"{args.env}-{algo}") for algo in ALGOS}
    for algo in ALGOS:
        train(args, algo, runs[algo])
    mains = {algo: load_policy(runs[algo].player_dir(MAIN), game=args.env) for algo in ALGOS}
    print(f"\nAPPO vs PPO, {args.env}, {args.mode}, {args.minutes:g} min each")
    for algo in ALGOS:
        env_steps = int(json.loads(runs[algo].latest_file.read_text())["env_steps"])
        figures = [f"{env_steps:>11,d} env steps"]
        for name in reference_opponents(args.env):
            opponent = make_opponent(name, args.env)
            seats = evaluate(args.env, mains[algo], opponent, args.games, seed=1)
            figures.append(f"score vs {name} {score(seats):.3f}")
        print(f"{algo:5s} " + " | ".join(figures))
    seats = evaluate(args.env, mains["appo"], mains["ppo"], args.games, greedy=False, seed=2)
    print(f"appo main vs ppo main (both sampling, {2 * args.games} games): {score(seats):.3f}")


if __name__ == "__main__":
    main()
