"""What each `league` subcommand does: parse results in, one function per command."""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from envs.registry import get_game
from league.cli_errors import (
    CliError,
    TrainingFailed,
    exit_code,
    from_ray,
    refuse,
    root_cause,
    write_traceback,
)
from league.cli_flags import train_config_from_args
from league.config import TrainConfig
from league.core.ids import MAIN, parse_module_id, side_of, snapshot_id
from league.run import RunDir, RunDirError

MAX_EVALUATION_GAMES = 1_000_000


def cmd_train(args: argparse.Namespace) -> int:
    # Bad input fails here, before Ray is imported.
    cfg = train_config_from_args(
        args, note=lambda line: print(f"league: note: {line}", file=sys.stderr)
    )
    if args.address:
        return _train_on_cluster(cfg, args)
    if args.detach:
        raise CliError("--detach needs --address (a cluster to leave the coordinator on)")
    from league.training.loop import train

    try:
        train(cfg, resume=args.resume)
    except Exception as err:
        if args.debug or (exit_code(err) is not None and not from_ray(err)):
            raise
        # Anything else failed inside the run (often in a Ray actor, where the error
        # comes wrapped in pages of traceback): one line here, the traceback in a file.
        log_file = write_traceback(RunDir(cfg.run.run_dir).logs, err)
        raise TrainingFailed(f"{root_cause(err)} (traceback: {log_file})") from err
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from league.cli_flags import given_values
    from league.training.tune import TrialFailed, tune

    try:
        tune(
            given_values(args),
            config_file=args.config,
            trials=args.trials,
            rounds=args.rounds,
            minutes=args.minutes,
            out=Path(args.out),
            measure=args.measure,
            opponents=tuple(name for name in args.opponents.split(",") if name),
            eval_games=args.score_games,
            score_snapshots=args.score_snapshots,
        )
    except TrialFailed as err:
        if args.debug:
            raise
        # Tune's own report is pages of a trial actor's traceback: one line here.
        cause = root_cause(err.error) if err.error is not None else "it ended without a result"
        where = f" (traceback: {err.log})" if err.log is not None else ""
        raise TrainingFailed(f"a trial failed: {cause}{where}") from err
    return 0


COORDINATOR_DOWN_S = 300.0
FOLLOWER_GRACE_S = 5.0
"""How long `league stop` leaves a stopped coordinator up for followers to see it."""
"""How long `league train --address` waits for Ray to bring a dead coordinator back."""


def _train_on_cluster(cfg: Any, args: argparse.Namespace) -> int:
    import ray

    from league.training.coordinator import start_coordinator

    with refuse(RuntimeError):
        actor = start_coordinator(cfg.to_dict(), args.resume, args.address)
    print(f"league-coordinator started on {args.address} (namespace league)", flush=True)
    if args.detach:
        print("detached: follow it with `league status`, end it with `league stop`")
        return 0
    seen = 0
    down_since: float | None = None

    def print_new_lines() -> int:
        last = seen
        for last, line in ray.get(actor.logs.remote(seen)):  # noqa: B007
            print(line, flush=True)
        return last

    try:
        while True:
            try:
                seen = print_new_lines()
                status = ray.get(actor.wait.remote(timeout=2.0))
                down_since = None
            except ray.exceptions.RayActorError:
                # Ray restarts a dead coordinator (it resumes from its checkpoint) and
                # the new one numbers its log lines from 1; a permanent death stays.
                down_since = down_since or time.monotonic()
                if time.monotonic() - down_since > COORDINATOR_DOWN_S:
                    raise
                if seen:
                    print("coordinator unavailable: waiting for Ray to restart it", flush=True)
                seen = 0
                time.sleep(2.0)
                continue
            if status["state"] in ("stopped", "failed"):
                with contextlib.suppress(ray.exceptions.RayActorError):
                    seen = print_new_lines()  # `league stop` may kill it meanwhile
                break
    except KeyboardInterrupt:
        print("interrupted: stopping the coordinator (final checkpoint)", flush=True)
        ray.get(actor.stop.remote())
        status = ray.get(actor.wait.remote())
    else:
        if status.get("stop_requested"):
            # `league stop` asked for it: that command reads the final status and then
            # ends the actor; killing it here could cut its reply off.
            return 0 if status["state"] == "stopped" else 1
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
        print(f"{'':6s}{'module':28s} {'Elo':>8s} {'Nash':>7s}")
        for rank, (module, rating, nash) in enumerate(ray.get(actor.standings.remote()), 1):
            print(f"{rank:4d}. {module:28s} {rating:8.1f} {nash:7.3f}")
    elif args.command in ("pause", "resume"):
        print(ray.get(getattr(actor, args.command).remote()))
    elif args.command == "stop":
        ray.get(actor.stop.remote())
        status = ray.get(actor.wait.remote())
        summary = status.get("summary") or {}
        print(f"stopped: {status['state']}; final checkpoint {summary.get('checkpoint')}")
        # A `league train --address` following the run polls every 2 s: let it see
        # the final state before the actor (and its name) goes away.
        time.sleep(FOLLOWER_GRACE_S)
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
    # Best rated first within each side (ratings of different sides are not compared).
    for sid, snap in sorted(
        rows.items(), key=lambda kv: (side_of(kv[0]), -float(kv[1].get("rating") or 0))
    ):
        rating = snap.get("rating")
        rating_text = f"{rating:8.1f}" if rating is not None else "       -"
        print(
            f"{sid:28s} role {snap.get('role', '-'):17s} rating {rating_text} "
            f"step {snap.get('step', snap.get('env_steps', '-'))}"
        )
    return 0


def _snapshots_from_run_dir(run_dir: Path, store_url: str | None) -> dict[str, dict[str, Any]]:
    """The registry from the league store (current ratings), or the snapshot files."""
    from league.snapshot import read_metadata
    from league.store import open_store

    if not run_dir.is_dir():
        raise CliError(f"run dir {str(run_dir)!r} does not exist")
    if store_url or RunDir(run_dir).store_file.is_file():
        with open_store(store_url, run_dir, read_only=True) as store:
            return store.snapshots()
    rows = {}
    for path in RunDir(run_dir).snapshot_dirs():
        meta = read_metadata(path)
        rows[path.name] = {"role": meta.role, "rating": meta.rating, "step": meta.env_steps}
    return rows


def cmd_export_mixture(args: argparse.Namespace) -> int:
    from league.core.league import League
    from league.run import RunDir
    from league.snapshot import MixturePolicy, SnapshotError, save_mixture
    from league.store import StoreError, open_store
    from league.tools.least_exploitable import NotZeroSumError, TooManyHistoriesError
    from league.tools.mixtures import MixtureError, league_mixture

    if args.format != "snapshot" and not args.distill:
        raise CliError("--mixture exports a mixture snapshot directory, not --format onnx")
    _refuse_existing(Path(args.out), args.force)
    run = RunDir(args.run_dir)
    if not run.path.is_dir():
        raise CliError(f"run dir {str(run.path)!r} does not exist")
    if args.store is None and not run.store_file.is_file():  # never create a store here
        raise CliError(
            f"run dir {str(run.path)!r} has no league store: --mixture needs a league run"
        )
    with refuse(StoreError), open_store(args.store, run.path, read_only=True) as store:
        state = store.state()
    if not state or not state.get("snapshots"):
        raise CliError(f"the league store of {str(run.path)!r} holds no snapshots")
    with refuse(RunDirError):
        cfg = TrainConfig.from_dict(run.load_config(), source="config.json")
    league_state = {k: v for k, v in state.items() if k != "driver"}
    league = League.from_state(cfg.league, league_state, cfg.layout)
    with refuse(MixtureError, SnapshotError, NotZeroSumError, TooManyHistoriesError):
        mixture = league_mixture(
            run,
            league,
            cfg.game_id,
            solver=args.solver,
            payoff=args.payoff,
            side=args.side,
            log=lambda line: print(line, flush=True),
        )
    weights = mixture.weights
    shown = ", ".join(f"{sid} {w:.3f}" for sid, w in sorted(weights.items(), key=lambda kv: -kv[1]))
    if args.distill:
        out = _export_distilled(args, MixturePolicy(mixture.members, weights))
        print(f"exported the league's {mixture.what} ({shown}) distilled into one network to {out}")
        return 0
    with refuse(SnapshotError):
        out = save_mixture(args.out, mixture.members, weights)
    print(f"exported the league's {mixture.what} ({len(weights)} members: {shown}) to {out}")
    return 0


def _export_distilled(args: argparse.Namespace, mixture: Any) -> Path:
    """Fit one network to the mixture's play and write it as a snapshot or ONNX."""
    from league.snapshot import POLICY_PREFIX, SnapshotError, save_snapshot
    from league.snapshot.onnx import export_onnx
    from league.tools.distill import distill_mixture
    from league.tools.least_exploitable import TooManyHistoriesError
    from league.tools.openspiel_exploitability import GameTooLargeError, NotAnOpenSpielGameError

    with refuse(NotAnOpenSpielGameError, GameTooLargeError, TooManyHistoriesError):
        policy, _ = distill_mixture(mixture, log=lambda line: print(line, flush=True))
    weights = {POLICY_PREFIX + k: v.numpy() for k, v in policy.net.state_dict().items()}
    with refuse(SnapshotError):
        if args.format == "snapshot":
            return save_snapshot(args.out, weights, policy.meta)
        with tempfile.TemporaryDirectory() as tmp:
            source = save_snapshot(Path(tmp) / "distilled", weights, policy.meta)
            return export_onnx(source, args.out, overwrite=args.force)


def _refuse_existing(out: Path, force: bool) -> None:
    """User files are never overwritten unasked; even with --force, only a snapshot,
    mixture or file of the same kind is replaced (save_snapshot/save_mixture check)."""
    if out.exists() and not force:
        raise CliError(f"{out} exists; not overwriting it (pass --force to replace it)")


def cmd_export(args: argparse.Namespace) -> int:
    from league.snapshot import POLICY_PREFIX, load_policy, save_snapshot
    from league.snapshot.onnx import export_onnx

    if args.mixture:
        return cmd_export_mixture(args)

    player = _default_player(Path(args.run_dir), args.player)
    if args.version is not None:
        with refuse(ValueError):
            player = snapshot_id(player, args.version)
    source = _player_path(Path(args.run_dir), player)
    policy = load_policy(source)  # refuses a corrupt or foreign snapshot before writing
    out = Path(args.out)
    _refuse_existing(out, args.force)
    if args.format == "onnx":
        export_onnx(source, out, overwrite=args.force)
    else:
        weights = {POLICY_PREFIX + k: v.numpy() for k, v in policy.net.state_dict().items()}
        save_snapshot(out, weights, policy.meta)
    print(f"exported {player} ({policy.meta.game}) to {out} as {args.format}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from league.snapshot import load_policy

    if not 1 <= args.games <= MAX_EVALUATION_GAMES:
        raise CliError(f"--games must be in 1..{MAX_EVALUATION_GAMES:,}, got {args.games:,}")
    run_dir = Path(args.run_dir)
    # Without --player: the main, or in a game of several sides every side's main.
    players = [args.player] if args.player is not None else _mains(run_dir)
    policies = {player: load_policy(_player_path(run_dir, player)) for player in players}
    opponent = None  # None: `--opponent` names a scripted one
    if Path(args.opponent).is_dir():
        from league.tools.evaluation import policy_side

        opponent = load_policy(args.opponent, game=next(iter(policies.values())).meta.game)
        if args.player is None and len(players) > 1:  # a snapshot plays its own side only
            players = [p for p in players if side_of(p) != policy_side(opponent)]
    teams = _run_teams(run_dir)
    for player in players:
        _evaluate_one(args, player, policies[player], opponent, teams)
    return 0


def _evaluate_one(
    args: argparse.Namespace,
    player: str,
    policy: Any,
    opponent: Any,
    teams: dict[str, Any] | None,
) -> None:
    """One player against the opponent (a loaded snapshot, or None: `--opponent` by
    name), in every seat or team of its side, ranked by the run's `teams`."""
    from envs.opponents import make_opponent
    from league.tools.evaluation import evaluate
    from league.tools.exploitability import greedy, tictactoe_exploitability

    game = policy.meta.game
    if opponent is None:
        with refuse(ValueError):
            opponent = make_opponent(args.opponent, game)
    mode = "sampled" if args.sample else "greedy"
    print(f"{player} ({mode}) vs {args.opponent} on {game}, {args.games} games per seat")
    records = evaluate(
        game,
        policy,
        opponent,
        args.games,
        greedy=not args.sample,
        seed=args.seed,
        progress=print if args.games >= 10_000 else None,
        teams=teams,
    )
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
    if get_game(game).openspiel is not None:
        from league.tools.openspiel_exploitability import (
            GameTooLargeError,
            exact_measure,
            uniform_measure,
        )

        try:
            name, value = exact_measure(game, policy)
        except GameTooLargeError as err:
            print(f"  exact exploitability: not computed: {err}")
            return
        how = "NashConv/2" if name == "exploitability" else "every seat playing it"
        print(
            f"  {name} (OpenSpiel, {how}, sampled): {value:.4f}"
            f"  (uniform play: {uniform_measure(game):.4f})"
        )


def cmd_play(args: argparse.Namespace) -> int:
    from league.snapshot import load_policy
    from league.tools.play import play

    teams = None  # a snapshot alone: the game's own teams
    if args.snapshot:
        path = Path(args.snapshot)
    elif args.run_dir:
        run_dir = Path(args.run_dir)
        path = _player_path(run_dir, _default_player(run_dir, args.player))
        teams = _run_teams(run_dir)
    else:
        raise CliError("give --snapshot PATH, or --run-dir DIR (with --player)")
    policy = load_policy(path)
    with refuse(ValueError):
        play(policy, policy.meta.game, args.seat, seed=args.seed, teams=teams)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from league.tools.report import ReportError, write_report

    with refuse(ReportError):
        paths = write_report(
            Path(args.run_dir), Path(args.out) if args.out else None, top_n=args.top
        )
    for path in paths:
        print(f"wrote {path}")
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    from league.snapshot import SnapshotError, load_policy

    if not args.minutes > 0 or args.games < 2:
        raise CliError("--minutes must be > 0 and --games at least 2")
    if (args.env is None) != (args.reference is None):
        raise CliError("--env goes with --reference (a snapshot knows its game)")
    if args.reference is not None:
        from envs.opponents import make_opponent
        from envs.registry import get_game

        with refuse(ValueError):  # refused here, before Ray and the trainer load
            get_game(args.env)
        try:
            make_opponent(args.reference, args.env)
        except Exception as err:  # a user's bot: any failure is bad input
            raise CliError(f"--reference: {err}") from None
        from league.training.probe import ReferenceTarget

        target: Any = ReferenceTarget(args.reference, args.env)
    else:
        with refuse(SnapshotError):
            target = load_policy(args.snapshot)  # refused here, before Ray and the trainer load
    from league.training.probe import probe

    result = probe(target, minutes=args.minutes, games=args.games, seed=args.seed)
    print(result.format())
    return 0


def _mains(run_dir: Path) -> list[str]:
    """The run's mains, one per side (`main_0`, or `adversary.main_0` and
    `agent.main_0` in a game of two sides), from its saved players."""
    if not run_dir.is_dir():
        raise CliError(f"run dir {str(run_dir)!r} does not exist")
    found = []
    for path in RunDir(run_dir).players.glob("*main_0"):
        with contextlib.suppress(ValueError):
            parsed = parse_module_id(path.name)
            if parsed.role == MAIN and parsed.index == 0 and path.is_dir():
                found.append(path.name)
    if not found:
        raise CliError(f"no main in {str(run_dir)!r} (looked in {RunDir(run_dir).players})")
    return sorted(found)


def _run_teams(run_dir: Path) -> dict[str, Any] | None:
    """The teams a run was trained with (`--teams`; None: the game's own), which its
    snapshots do not carry: evaluate and play rank by them."""
    run = RunDir(run_dir)
    if not run.config_file.is_file():
        return None
    with refuse(RunDirError):
        cfg = TrainConfig.from_dict(run.load_config(), source="config.json")
    return dict(cfg.game.teams) if cfg.game.teams else None


def _default_player(run_dir: Path, player: str | None) -> str:
    """`--player` as given, else the run's main; a game of several sides has one main
    per side, and which one must be said."""
    if player is not None:
        return player
    mains = _mains(run_dir)
    if len(mains) > 1:
        raise CliError(
            f"{str(run_dir)!r} has a main per side: say which (--player "
            + " or --player ".join(mains)
            + ")"
        )
    return mains[0]


def _player_path(run_dir: Path, player: str) -> Path:
    """A trainable player's latest weights, or a frozen snapshot by its id."""
    if not run_dir.is_dir():
        raise CliError(f"run dir {str(run_dir)!r} does not exist")
    with refuse(ValueError):  # module_dir parses the id: a player or a snapshot
        path = RunDir(run_dir).module_dir(player)
    if not path.is_dir():
        raise CliError(f"no player {player!r} in {str(run_dir)!r} (looked in {path})")
    return path
