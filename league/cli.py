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
    p.add_argument(
        "--store",
        help="league store: sqlite (default, a file in the run dir), sqlite:///path, "
        "redis://[:password@]host:port/db, rediss://... (TLS)",
    )
    p.add_argument("--config", help="YAML or TOML file with TrainConfig fields")
    p.add_argument("--resume", action="store_true", help="continue the run in --run-dir")
    p.add_argument(
        "--address",
        help="Ray cluster address (auto, ray://host:10001, host:6379): train in the detached "
        "league-coordinator actor there instead of in this process",
    )
    p.add_argument(
        "--detach",
        action="store_true",
        help="with --address: return once the coordinator runs (query it with `league status`)",
    )


def _service_parsers(sub: argparse._SubParsersAction) -> None:
    helps = {
        "status": "state, iteration, env steps and league size of the running coordinator",
        "standings": "ratings of every player and snapshot, best first",
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
    p.add_argument("--player", default="main_0", help="player id (default main_0)")
    p.add_argument("--version", type=int, help="snapshot version: exports PLAYER@VERSION")
    p.add_argument("--out", required=True, help="output path (a directory, or a .onnx file)")
    p.add_argument("--format", choices=["snapshot", "onnx"], default="snapshot")


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


def _play_report_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("play", help="play a game in the terminal against a player or snapshot")
    p.add_argument("--run-dir", help="run directory (with --player)")
    p.add_argument("--player", default="main_0", help="player or snapshot id (default main_0)")
    p.add_argument("--snapshot", help="a snapshot directory instead of --run-dir/--player")
    p.add_argument("--seat", help="your seat (agent id, e.g. player_2); default: move first")
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("report", help="write PNGs: rating curves, payoff heatmap, league size")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--out", help="output directory (default RUN_DIR/report)")
    p.add_argument("--top", type=int, default=30, help="modules in the heatmap (default 30)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="league", description="League self-play trainer for PettingZoo games."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _train_parser(sub)
    _evaluate_parser(sub)
    _service_parsers(sub)
    _play_report_parsers(sub)
    return parser


_TRAIN_FLAGS = (
    "env",
    "mode",
    "store",
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
    from league.training.loop import resume_config

    values: dict[str, Any] = load_config_file(args.config) if args.config else {}
    source = args.config or "command line"
    flags = {k: getattr(args, k) for k in _TRAIN_FLAGS if getattr(args, k) is not None}
    if args.resume:
        run_dir = flags.get("run_dir") or values.get("run_dir") or TrainConfig.run_dir
        return resume_config(run_dir, {**values, **flags})
    return TrainConfig.from_dict({**values, **flags}, source=source)


def cmd_train(args: argparse.Namespace) -> int:
    from league.training.loop import train

    cfg = train_config_from_args(args)
    if args.address:
        return _train_on_cluster(cfg, args)
    if args.detach:
        raise CliError("--detach needs --address (a cluster to leave the coordinator on)")
    train(cfg, resume=args.resume)
    return 0


def _train_on_cluster(cfg: Any, args: argparse.Namespace) -> int:
    import ray

    from league.training.coordinator import start_coordinator

    try:
        actor = start_coordinator(cfg.to_dict(), args.resume, args.address)
    except RuntimeError as err:
        raise CliError(str(err)) from err
    print(f"league-coordinator started on {args.address} (namespace league)", flush=True)
    if args.detach:
        print("detached: follow it with `league status`, end it with `league stop`")
        return 0
    seen = 0

    def print_new_lines() -> int:
        last = seen
        for last, line in ray.get(actor.logs.remote(seen)):  # noqa: B007
            print(line, flush=True)
        return last

    try:
        while True:
            seen = print_new_lines()
            status = ray.get(actor.wait.remote(timeout=2.0))
            if status["state"] in ("stopped", "failed"):
                seen = print_new_lines()
                break
    except KeyboardInterrupt:
        print("interrupted: stopping the coordinator (final checkpoint)", flush=True)
        ray.get(actor.stop.remote())
        status = ray.get(actor.wait.remote())
    ray.kill(actor)
    return 0 if status["state"] == "stopped" else 1


def cmd_service(args: argparse.Namespace) -> int:
    import ray

    from league.training.coordinator import get_coordinator

    actor = get_coordinator(args.address)
    if args.command == "status":
        status = ray.get(actor.status.remote())
        for key, value in status.items():
            print(f"{key}: {value}")
    elif args.command == "standings":
        for rank, (module, rating) in enumerate(ray.get(actor.standings.remote()), 1):
            print(f"{rank:4d}. {module:28s} {rating:8.1f}")
    elif args.command in ("pause", "resume"):
        print(ray.get(getattr(actor, args.command).remote()))
    elif args.command == "stop":
        ray.get(actor.stop.remote())
        status = ray.get(actor.wait.remote())
        summary = status.get("summary") or {}
        print(f"stopped: {status['state']}; final checkpoint {summary.get('checkpoint')}")
        ray.kill(actor)
    return 0


def cmd_snapshots(args: argparse.Namespace) -> int:
    if args.run_dir:
        rows = _snapshots_from_run_dir(Path(args.run_dir), args.store)
    else:
        import ray

        from league.training.coordinator import get_coordinator

        rows = ray.get(get_coordinator(args.address).snapshots.remote())
    if not rows:
        print("no snapshots")
    for sid, snap in sorted(rows.items(), key=lambda kv: -float(kv[1].get("rating") or 0)):
        rating = snap.get("rating")
        rating_text = f"{rating:8.1f}" if rating is not None else "       -"
        print(
            f"{sid:28s} role {snap.get('role', '-'):17s} rating {rating_text} "
            f"step {snap.get('step', snap.get('env_steps', '-'))}"
        )
    return 0


def _snapshots_from_run_dir(run_dir: Path, store_url: str | None) -> dict[str, dict[str, Any]]:
    """The registry from the league store (current ratings), or the snapshot files."""
    from league.run import RunDir
    from league.snapshot import read_metadata
    from league.store import open_store

    if not run_dir.is_dir():
        raise CliError(f"run dir {str(run_dir)!r} does not exist")
    if store_url or RunDir(run_dir).store_file.is_file():
        with open_store(store_url, run_dir) as store:
            return store.snapshots()
    rows = {}
    for path in sorted((run_dir / "snapshots").glob("*@*")):
        meta = read_metadata(path)
        rows[path.name] = {"role": meta.role, "rating": meta.rating, "step": meta.env_steps}
    return rows


def cmd_export(args: argparse.Namespace) -> int:
    from league.snapshot import load_policy, save_snapshot
    from league.snapshot.onnx import export_onnx

    player = args.player if args.version is None else f"{args.player}@{args.version}"
    source = _player_path(Path(args.run_dir), player)
    policy = load_policy(source)  # refuses a corrupt or foreign snapshot before writing
    out = Path(args.out)
    if args.format == "onnx":
        export_onnx(source, out)
    else:
        weights = {f"policy_net.{k}": v.numpy() for k, v in policy.net.state_dict().items()}
        save_snapshot(out, weights, policy.meta)
    print(f"exported {player} ({policy.meta.game}) to {out} as {args.format}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from envs.opponents import make_opponent
    from league.snapshot import load_policy
    from league.tools.evaluation import evaluate
    from league.tools.exploitability import greedy, tictactoe_exploitability

    if args.games < 1:
        raise CliError(f"--games must be >= 1, got {args.games}")
    policy = load_policy(_player_path(Path(args.run_dir), args.player))
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


def cmd_play(args: argparse.Namespace) -> int:
    from league.snapshot import load_policy
    from league.tools.play import play

    if args.snapshot:
        path = Path(args.snapshot)
    elif args.run_dir:
        path = _player_path(Path(args.run_dir), args.player)
    else:
        raise CliError("give --snapshot PATH, or --run-dir DIR (with --player)")
    policy = load_policy(path)
    try:
        play(policy, policy.meta.game, args.seat, seed=args.seed)
    except ValueError as err:
        raise CliError(str(err)) from err
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from league.tools.report import ReportError, write_report

    try:
        paths = write_report(
            Path(args.run_dir), Path(args.out) if args.out else None, top_n=args.top
        )
    except ReportError as err:
        raise CliError(str(err)) from err
    for path in paths:
        print(f"wrote {path}")
    return 0


def _player_path(run_dir: Path, player: str) -> Path:
    """A trainable player's latest weights, or a frozen snapshot by its id."""
    if not run_dir.is_dir():
        raise CliError(f"run dir {str(run_dir)!r} does not exist")
    path = run_dir / "snapshots" / player if "@" in player else run_dir / "players" / player
    if not path.is_dir():
        raise CliError(f"no player {player!r} in {str(run_dir)!r} (looked in {path})")
    return path


COMMANDS = {
    "export": cmd_export,
    "play": cmd_play,
    "report": cmd_report,
    "train": cmd_train,
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
    from league.config import ConfigError
    from league.snapshot import SnapshotError
    from league.store import StoreError
    from league.training.coordinator import CoordinatorNotFound
    from league.training.loop import RunDirError

    try:
        return COMMANDS[args.command](args)
    except (
        CliError,
        ConfigError,
        UnknownGameError,
        RunDirError,
        SnapshotError,
        CoordinatorNotFound,
        StoreError,
    ) as err:
        print(f"league: error: {err}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
