"""The `league` command: train, evaluate, export, play, report and the service verbs.

`league train` has one flag per TrainConfig field, generated from the dataclass
(names, types, choices, defaults and help), so flags and config keys agree.

Bad input (unknown game, malformed config, missing run dir, ...) ends with one
`league: error: ...` line on stderr and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from league.cli_errors import EXIT_INTERRUPTED, EXIT_USAGE, exit_code, one_line
from league.cli_flags import (
    FlagsFormatter,
    HelpAllAction,
    add_field_flags,
    train_config_from_args,
)
from league.commands import (
    cmd_evaluate,
    cmd_export,
    cmd_play,
    cmd_probe,
    cmd_report,
    cmd_service,
    cmd_snapshots,
    cmd_train,
    cmd_tune,
)


class _Parser(argparse.ArgumentParser):
    """Usage errors end like every other error: one `league: error:` line, exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"league: error: {message} (see `{self.prog} --help`)\n")


def _train_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train players by self-play",
        usage="league train [--config FILE] [--resume] [--FLAG VALUE ...]",
        formatter_class=FlagsFormatter,
        description="Train a league (or plain self-play) on a game. Each setting is a flag "
        "--GROUP.FIELD and a key in a config file's GROUP: section; flags override --config, "
        "then a --resume'd run's config, then the game's defaults (generic ones in brackets). "
        "--help-all lists every setting.",
    )
    _settings_flags(p)
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir")
    cluster = {
        "--address": "Ray cluster address (auto, ray://host:10001, host:6379): train in the "
        "detached league-coordinator actor there instead of in this process",
        "--detach": "with --address: return once the coordinator runs (query it with "
        "`league status`)",
    }
    for flag, text in cluster.items():
        extra = {"action": "store_true"} if flag == "--detach" else {}
        action = p.add_argument(flag, help=argparse.SUPPRESS, **extra)
        action.full_help = text  # type: ignore[attr-defined]
    add_field_flags(p)


def _tune_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune",
        help="population-based training (Ray Tune) of a game's settings",
        usage="league tune --env GAME [--minutes M] [--trials N] [--rounds R] [--measure M] "
        "[--out DIR] [--FLAG VALUE ...]",
        formatter_class=FlagsFormatter,
        description="Population-based training (Ray Tune's PBT): --trials league runs of the "
        "game (the first with its defaults, the others with the learning rate, entropy bonus "
        "and its final value, magnet, the main's learner share and its self-play share sampled "
        "around them) train in --rounds rounds within --minutes all told; after each round "
        "the worst quarter continues from a copy of a best-quarter run with its settings "
        "perturbed. Runs are scored by the main's exact exploitability (OpenSpiel games) or "
        "its win rate against reference opponents. Writes OUT/tune.jsonl and OUT/best.yaml, "
        "a --config file for `league train`. Settings given as flags or in --config are kept "
        "fixed.",
    )
    p.add_argument("--minutes", type=float, default=15.0, help="total budget (default 15)")
    p.add_argument(
        "--trials",
        type=int,
        default=4,
        help="population size, the defaults' trial included (default 4)",
    )
    p.add_argument(
        "--rounds", type=int, default=3, help="rounds per trial; PBT acts between them (default 3)"
    )
    p.add_argument(
        "--measure",
        default="auto",
        choices=("auto", "exact", "win_rate"),
        help="exact exploitability (NashConv for more players), win rate against --opponents, "
        "or auto: exact where OpenSpiel computes it (default auto)",
    )
    p.add_argument(
        "--opponents",
        default="",
        help="win_rate's reference pool, comma-separated (default: the game's reference opponents)",
    )
    p.add_argument(
        "--score-games",
        type=int,
        default=200,
        help="win_rate's games per seat and opponent (default 200)",
    )
    p.add_argument(
        "--score-snapshots",
        type=int,
        default=1,
        help="score a round by the mean over the main and its K-1 latest snapshots, "
        "steadier than the last iterate alone (default 1: the main)",
    )
    p.add_argument("--out", default="runs/tune", help="output folder, new or empty")
    _settings_flags(p)
    add_field_flags(p)


def _settings_flags(p: argparse.ArgumentParser) -> None:
    """--help-all and --config (train and tune)."""
    p.add_argument(
        "--help-all", action=HelpAllAction, help="show every setting (docs/configuration.md)"
    )
    p.add_argument("--config", metavar="FILE", help="YAML or TOML settings, by group")


def _service_parsers(sub: argparse._SubParsersAction) -> None:
    helps = {
        "status": "state, iteration, env steps and league size of the running coordinator",
        "standings": "rating (Elo, or mu - 3 sigma over rankings) and mixture weight of every "
        "player and snapshot",
        "pause": "pause training after the current iteration",
        "resume": "resume a paused coordinator",
        "stop": "stop training, write a final checkpoint, and end the coordinator",
    }
    for name, text in helps.items():
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("--address", default="auto", help="Ray cluster address (default auto)")
    p = sub.add_parser(
        "snapshots",
        help="list the league's snapshots (from the running coordinator, or a run dir)",
    )
    p.add_argument("--run-dir", help="read the run dir instead of asking the coordinator")
    p.add_argument("--store", help="the run's league store URL, if not the run dir's SQLite")
    p.add_argument("--address", default="auto", help="Ray cluster address (default auto)")
    p = sub.add_parser(
        "export",
        help="export a player's or snapshot's weights (snapshot dir or ONNX)",
        description="Copy a player's latest weights, or one of its snapshots (--version), "
        "out of a run as a portable snapshot directory or an ONNX model.",
    )
    p.add_argument("--run-dir", required=True)
    p.add_argument(
        "--player",
        help="player id (default main_0; in a game of several sides, say whose: adversary.main_0)",
    )
    p.add_argument("--version", type=int, help="snapshot version: exports PLAYER@VERSION")
    p.add_argument("--out", required=True, help="output path (a directory, or a .onnx file)")
    p.add_argument("--format", choices=["snapshot", "onnx"], default="snapshot")
    p.add_argument(
        "--mixture",
        action="store_true",
        help="export the league's Nash mixture of snapshots (members + weights) instead",
    )
    p.add_argument(
        "--payoff",
        choices=["auto", "exact", "league"],
        default="auto",
        help="with --mixture --solver nash: the meta-game to solve: the league's payoff table (win rates "
        "of the games played in training), or exact expected returns between every pair "
        "of snapshots and players (OpenSpiel games only); auto = exact where possible",
    )
    p.add_argument(
        "--solver",
        choices=["auto", "nash", "least-exploitable", "alpharank"],
        default="auto",
        help="with --mixture: 'nash' solves the meta-game between the members (PSRO's "
        "restricted Nash; games of two teams); 'least-exploitable' weighs them against every "
        "opponent the game allows, by exact best responses (OpenSpiel games: the least "
        "exploitable mixture with two players, zero-sum; the least NashConv a local search "
        "finds with more, trees of up to 3M histories); 'alpharank' ranks them by "
        "alpha-rank over the league's payoffs (any "
        "number of seats or teams; not a Nash equilibrium); auto = least-exploitable where "
        "possible (unless --payoff is given), else nash for two teams, else alpharank",
    )
    p.add_argument(
        "--side",
        help="with --mixture, in a game of several sides (predators and prey): whose mixture",
    )
    p.add_argument(
        "--distill",
        action="store_true",
        help="with --mixture: export one network fitted to play as the mixture does (its "
        "behaviour strategy on every information state; OpenSpiel games whose tree can be "
        "enumerated) instead of the members and weights; --format onnx works with it",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing snapshot, mixture or .onnx file at --out "
        "(a directory holding anything else is never replaced)",
    )
    p.add_argument("--store", help="league store URL (default: the run's own)")


def _evaluate_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evaluate",
        help="play a trained player against a reference opponent",
        description="Win/draw/loss per seat with 95%% Wilson intervals; exact exploitability "
        "for tictactoe.",
    )
    p.add_argument("--run-dir", required=True, help="run directory of a training run")
    p.add_argument(
        "--player",
        help="player id (default main_0; in a game of several sides, every side's main)",
    )
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


def _play_report_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("play", help="play a game in the terminal against a player or snapshot")
    p.add_argument("--run-dir", help="run directory (with --player)")
    p.add_argument(
        "--player",
        help="player or snapshot id (default main_0; in a game of several sides, say whose)",
    )
    p.add_argument("--snapshot", help="a snapshot directory instead of --run-dir/--player")
    p.add_argument("--seat", help="your seat (agent id, e.g. player_2); default: move first")
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("report", help="write PNGs: rating curves, payoff heatmap, league size")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--out", help="output directory (default RUN_DIR/report)")
    p.add_argument("--top", type=int, default=30, help="modules in the heatmap (default 30)")
    p = sub.add_parser(
        "probe",
        help="approximate exploitability: train a fresh best response against a snapshot "
        "or a scripted player",
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--snapshot", help="snapshot directory to exploit")
    target.add_argument(
        "--reference",
        metavar="NAME",
        help="a scripted player to exploit instead: the game's reference opponent "
        "(search on connect_four) or package.module:callable; needs --env",
    )
    p.add_argument("--env", help="the game of --reference (a registered game id)")
    p.add_argument("--minutes", type=float, default=5.0, help="training time (default 5)")
    p.add_argument("--games", type=int, default=500, help="evaluation games (default 500)")
    p.add_argument("--seed", type=int, default=0)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="league", description="League self-play trainer for PettingZoo games.")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an error (before the command)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _train_parser(sub)
    _tune_parser(sub)
    _evaluate_parser(sub)
    _service_parsers(sub)
    _play_report_parsers(sub)
    return parser


COMMANDS = {
    "export": cmd_export,
    "play": cmd_play,
    "probe": cmd_probe,
    "report": cmd_report,
    "train": cmd_train,
    "tune": cmd_tune,
    "evaluate": cmd_evaluate,
    "status": cmd_service,
    "standings": cmd_service,
    "pause": cmd_service,
    "resume": cmd_service,
    "stop": cmd_service,
    "snapshots": cmd_snapshots,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("league: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        code = exit_code(err)
        if code is None or args.debug:
            raise  # not an expected failure: a bug, keep its traceback
        # Our errors already say what and where.
        own = code == EXIT_USAGE or type(err).__name__ in ("OutOfSpaceError", "TrainingFailed")
        shown = one_line(err) if own else f"{type(err).__name__}: {one_line(err)}"
        print(f"league: error: {shown}", file=sys.stderr)
        return code


__all__ = ["build_parser", "main", "train_config_from_args"]


if __name__ == "__main__":
    sys.exit(main())
