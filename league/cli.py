"""The `league` command: train, evaluate.

Bad input (unknown game, malformed config, missing run dir, ...) ends with one
`league: error: ...` line on stderr and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envs.registry import GAMES, UnknownGameError

EXIT_USAGE = 2


class CliError(Exception):
    """An error worth one clear line to the user, not a traceback."""


def _train_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train players by self-play",
        description="Train by self-play. Flags override values from --config.",
    )
    p.add_argument("--env", help=f"game: {', '.join(sorted(GAMES))} (default tictactoe)")
    p.add_argument(
        "--mode",
        choices=["league", "selfplay"],
        help="league (default): roles, PFSP, snapshots; selfplay: the plain baseline",
    )
    p.add_argument(
        "--run-dir", help="directory for checkpoints and snapshots (default runs/default)"
    )
    p.add_argument("--stop-timesteps", type=int, help="stop after this many env steps in total")
    p.add_argument("--stop-minutes", type=float, help="stop after this many minutes")
    p.add_argument("--num-env-runners", type=int, help="env-runner actors (default 1)")
    p.add_argument(
        "--num-envs-per-env-runner", type=int, help="vectorized envs per runner (default 8)"
    )
    p.add_argument("--num-cpus", type=int, help="CPUs for the local Ray instance (default: all)")
    p.add_argument("--seed", type=int, help="random seed (default 0)")
    p.add_argument("--config", help="YAML or TOML file with TrainConfig fields")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir")


def _evaluate_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="play a trained player against a reference opponent",
        description="Win/draw/loss per seat with 95%% Wilson intervals; exact exploitability "
        "for tictactoe.",
    )
    p.add_argument("--run-dir", required=True, help="run directory of a training run")
    p.add_argument("--player", default="main_0", help="player id (default main_0)")
    p.add_argument(
        "--opponent",
        default="random",
        help="random | minimax (tictactoe) | search (connect_four) | a snapshot directory",
    )
    p.add_argument("--games", type=int, default=500, help="games in each seat (default 500)")
    p.add_argument(
        "--sample", action="store_true", help="sample the player's actions instead of argmax"
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="league", description="League self-play trainer for PettingZoo games."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _train_parser(sub)
    _evaluate_parser(sub)
    return parser


_TRAIN_FLAGS = (
    "env",
    "mode",
    "run_dir",
    "stop_timesteps",
    "stop_minutes",
    "num_env_runners",
    "num_envs_per_env_runner",
    "num_cpus",
    "seed",
)


def train_config_from_args(args: argparse.Namespace) -> Any:
    from league.config import TrainConfig, load_config_file
    from league.train import resume_config

    values: dict[str, Any] = load_config_file(args.config) if args.config else {}
    source = args.config or "command line"
    flags = {k: getattr(args, k) for k in _TRAIN_FLAGS if getattr(args, k) is not None}
    if args.resume:
        run_dir = flags.get("run_dir") or values.get("run_dir") or TrainConfig.run_dir
        return resume_config(run_dir, {**values, **flags})
    return TrainConfig.from_dict({**values, **flags}, source=source)


def cmd_train(args: argparse.Namespace) -> int:
    from league.train import train

    cfg = train_config_from_args(args)
    train(cfg, resume=args.resume)
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from envs.opponents import make_opponent
    from league.evaluation import evaluate
    from league.exploitability import greedy, tictactoe_exploitability
    from league.snapshot import load_policy
    from league.train import RunDir

    if args.games < 1:
        raise CliError(f"--games must be >= 1, got {args.games}")
    run = RunDir(Path(args.run_dir))
    if not run.path.is_dir():
        raise CliError(f"run dir {args.run_dir!r} does not exist")
    path = run.player_dir(args.player)
    if "@" in args.player:
        path = run.path / "snapshots" / args.player
    if not path.is_dir():
        raise CliError(f"no player {args.player!r} in {args.run_dir!r} (looked in {path})")
    policy = load_policy(path)
    game = policy.meta.game
    if Path(args.opponent).is_dir():
        opponent = load_policy(args.opponent, game=game)
    else:
        try:
            opponent = make_opponent(args.opponent, game)
        except ValueError as err:
            raise CliError(str(err)) from err
    mode = "sampled" if args.sample else "greedy"
    print(f"{args.player} ({mode}) vs {args.opponent} on {game}, {args.games} games per seat")
    records = evaluate(game, policy, opponent, args.games, greedy=not args.sample, seed=args.seed)
    for record in records:
        print("  " + record.format())
    if game == "tictactoe":
        for label, fn in (
            ("greedy", greedy(policy.action_probs)),
            ("sampled", policy.action_probs),
        ):
            ex = tictactoe_exploitability(fn)
            print(
                f"  exploitability ({label}): as first {ex.as_first:.4f}, "
                f"as second {ex.as_second:.4f}, mean {ex.mean:.4f}"
            )
    return 0


COMMANDS = {"train": cmd_train, "evaluate": cmd_evaluate}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from league.config import ConfigError
    from league.snapshot import SnapshotError
    from league.train import RunDirError

    try:
        return COMMANDS[args.command](args)
    except (CliError, ConfigError, UnknownGameError, RunDirError, SnapshotError) as err:
        print(f"league: error: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
