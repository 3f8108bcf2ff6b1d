"""The `league` command: train, evaluate, export, play, report and the service verbs.

`league train` has one flag per TrainConfig field, generated from the dataclass
(names, types, choices, defaults and help), so flags and config keys agree.

Bad input (unknown game, malformed config, missing run dir, ...) ends with one
`league: error: ...` line on stderr and exit code 2, before anything is written.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from envs.registry import UnknownGameError, get_game
from league.config import ConfigError, TrainConfig, check_choice, load_config_file, matches_type
from league.core.ids import snapshot_id
from league.run import RunDir, RunDirError

EXIT_USAGE = 2
MAX_EVALUATION_GAMES = 1_000_000
EXIT_DATA = 65  # sysexits EX_DATAERR: input that parses but cannot be used
EXIT_IO = 74  # sysexits EX_IOERR
EXIT_SOFTWARE = 70  # sysexits EX_SOFTWARE: the run failed inside; traceback in its logs
EXIT_INTERRUPTED = 130  # the shell's code for a process ended by Ctrl-C


class CliError(Exception):
    """An error worth one clear line to the user, not a traceback."""


@contextlib.contextmanager
def _refuse(*errors: type[Exception]) -> Iterator[None]:
    """Report these errors of a library call as one `league: error:` line."""
    try:
        yield
    except errors as err:
        raise CliError(str(err)) from err


class _Parser(argparse.ArgumentParser):
    """Usage errors end like every other error: one `league: error:` line, exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"league: error: {message} (see `{self.prog} --help`)\n")


FieldPath = tuple[str, ...]
"""A TrainConfig field's keys, as nested in a config file: ("lr",), ("league", "pfsp_p")."""

_METAVARS: dict[type, str] = {int: "INT", float: "FLOAT", str: "TEXT"}


def _leaf_fields(
    cls: type, prefix: FieldPath = ()
) -> Iterator[tuple[FieldPath, dataclasses.Field[Any], Any]]:
    """(path, field, type hint) of every plain field; nested dataclasses are walked into."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        path = (*prefix, f.name)
        if dataclasses.is_dataclass(hints[f.name]):
            yield from _leaf_fields(hints[f.name], path)
        else:
            yield path, f, hints[f.name]


def _dest(path: FieldPath) -> str:
    return ".".join(path)


def _flag(path: FieldPath) -> str:
    # `lambda_` only dodges the Python keyword; users type --lambda.
    return "--" + _dest(path).rstrip("_").replace("_", "-")


def _field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def _show(value: Any) -> str:
    """A default as the user would type it on the command line."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict) or (
        isinstance(value, list) and value and isinstance(value[0], list)
    ):
        return json.dumps(value)
    if isinstance(value, list):
        return " ".join(map(str, value)) if value else "none"
    return str(value)


def _help_text(f: dataclasses.Field[Any]) -> str:
    return f.metadata["help"].replace("%", "%%")  # argparse %-formats help strings


def _field_help(f: dataclasses.Field[Any]) -> str:
    return f"{_help_text(f)} (default: {_show(_field_default(f))})"


def _split_optional(hint: Any) -> tuple[Any, bool]:
    """(X, True) for `X | None`, else (hint, False)."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (types.UnionType, typing.Union) and type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return inner, True
    return hint, False


def _optional(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """`none` unsets an optional field, e.g. a stop condition set in the config file."""

    def parse(text: str) -> Any:
        return None if text.lower() == "none" else convert(text)

    parse.__name__ = convert.__name__  # argparse says "invalid int value: ..."
    return parse


def _choice(f: dataclasses.Field[Any]) -> Callable[[str], str]:
    """Refuse a value outside the field's choices with the config file's own message."""

    def parse(text: str) -> str:
        try:
            check_choice(f, text)
        except ConfigError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
        return text

    return parse


def _json_value(f: dataclasses.Field[Any], hint: Any) -> Callable[[str], Any]:
    """Parse a JSON flag value (a mapping, or a list of lists) and check its type."""

    def parse(text: str) -> Any:
        try:
            value = json.loads(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"not valid JSON: {err}") from None
        if not matches_type(value, hint):
            raise argparse.ArgumentTypeError(f"{f.name} must be {hint}, got {value!r}")
        return value

    parse.__name__ = "JSON"
    return parse


def _parse_options(f: dataclasses.Field[Any], hint: Any) -> dict[str, Any]:
    """argparse keywords that parse one field's values, from its type hint."""
    inner, optional = _split_optional(hint)
    if inner is bool and not optional:
        return {"action": argparse.BooleanOptionalAction}
    nested_list = (
        typing.get_origin(inner) is list and typing.get_origin(typing.get_args(inner)[0]) is list
    )
    if typing.get_origin(inner) is dict or nested_list:
        return {"type": _json_value(f, inner), "metavar": "JSON"}
    if typing.get_origin(inner) is list and not optional:
        (item,) = typing.get_args(inner)
        return {"type": item, "nargs": "+", "metavar": _METAVARS[item]}
    if inner not in _METAVARS:
        raise TypeError(f"no command-line flag for field {f.name!r} of type {hint}")
    if "choices" in f.metadata:
        return {"type": _choice(f), "choices": f.metadata["choices"]}
    metavar = _METAVARS[inner] + ("|none" if optional else "")
    return {"type": _optional(inner) if optional else inner, "metavar": metavar}


# `league train --help` shows these, grouped, with a one-line help each; `--help-all`
# shows every setting with its full help.
MAIN_FLAGS: dict[str, dict[str, str]] = {
    "game": {
        "env": "registry name, package.module:callable or openspiel:GAME(k=v)",
        "env_kwargs": "the game's keyword arguments",
        "teams": "team name -> its seats; {} = the game's own teams",
        "preset": "named settings for any game: board, poker, descent",
    },
    "run": {
        "mode": "league or selfplay",
        "run_dir": "checkpoints, snapshots, logs",
        "stop_minutes": "wall-clock budget",
        "seed": "random seed",
        "store": "league store URL; none = SQLite in the run dir",
        "verbose": "Ray's and RLlib's logs on the console, not in RUN_DIR/logs",
    },
    "resources": {
        "num_env_runners": "env-runner actors",
        "num_learners": "learner actors (0 = in this process)",
        "num_gpus_per_learner": "GPUs per learner",
    },
    "algorithm": {"algo": "ppo or appo", "lr": "learning rate", "entropy_coeff": "entropy bonus"},
    "network": {"hidden_sizes": "MLP layer sizes", "encoder": "auto, mlp or conv"},
    "league": {
        "league.opponent_sampling": "pfsp, nash or alpharank",
        "league.ratings": "elo, skill (rankings) or auto",
    },
    "evaluation": {"eval_interval": "evaluate every N iterations"},
}


def _brief_help(key: str, f: dataclasses.Field[Any]) -> str:
    text = next(helps[key] for helps in MAIN_FLAGS.values() if key in helps)
    return f"{text} ({_show(_field_default(f))})".replace("%", "%%")


class _HelpAll(argparse.Action):
    """Print every setting with its full help (the brief --help shows the main ones)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        show_every_setting(parser)
        parser.print_help()
        parser.exit()


def show_every_setting(parser: argparse.ArgumentParser) -> None:
    """Turn `league train`'s brief help into the full one (--help-all, the docs page)."""
    for action in parser._actions:
        full = getattr(action, "full_help", None)
        if full is not None:
            action.help = full
    for group in parser._action_groups:
        if getattr(group, "full_description", None) is not None:
            group.description = group.full_description


def _add_field_flags(p: argparse.ArgumentParser) -> None:
    """One flag per TrainConfig field. --help lists the main ones in MAIN_FLAGS' groups;
    the rest keep their full help for --help-all, in their section's group."""
    main = {name: group for group, helps in MAIN_FLAGS.items() for name in helps}
    shown = {group: p.add_argument_group(f"{group} flags") for group in MAIN_FLAGS}
    sections = {f.name: f for f in dataclasses.fields(TrainConfig)}
    more = p.add_argument_group("more flags (league train --help-all)")
    groups: dict[str, argparse._ArgumentGroup] = {}
    for path, f, hint in _leaf_fields(TrainConfig):
        key = ".".join(path)
        container: argparse._ActionsContainer = more
        if key in main:
            container = shown[main[key]]
        elif len(path) > 1:
            if path[0] not in groups:
                groups[path[0]] = _section_group(p, sections[path[0]])
            container = groups[path[0]]
        action = container.add_argument(
            _flag(path),
            dest=_dest(path),
            # Absent flags stay absent, so they never mask the config file or a resumed run.
            default=argparse.SUPPRESS,
            help=_brief_help(key, f) if key in main else argparse.SUPPRESS,
            **_parse_options(f, hint),
        )
        action.full_help = _field_help(f)  # type: ignore[attr-defined]


def _section_group(
    p: argparse.ArgumentParser, f: dataclasses.Field[Any]
) -> argparse._ArgumentGroup:
    group = p.add_argument_group(f"{f.name} flags (all)")
    # Shown by --help-all only: under --help the group has no visible flag.
    group.full_description = (  # type: ignore[attr-defined]
        f"{_help_text(f)} Also settable as the `{f.name}:` mapping of --config; each flag "
        "overrides one key of it."
    )
    return group


def _train_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train players by self-play",
        usage="league train [--config FILE] [--resume] [--FLAG VALUE ...]",
        description="Train a league (or plain self-play) on a game. Every setting is a flag "
        "and a config-file key; a flag overrides --config, which overrides a --resume'd "
        "run's stored config, which overrides the game's defaults (the generic ones are in "
        "brackets). The main flags; --help-all lists every setting:",
    )
    p.add_argument("--help-all", action=_HelpAll, help="show every setting (docs/configuration.md)")
    p.add_argument("--config", help="YAML or TOML file with TrainConfig fields")
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
    _add_field_flags(p)


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
    p.add_argument("--player", default="main_0", help="player id (default main_0)")
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
        "opponent the game allows, by exact best responses (two-player zero-sum OpenSpiel "
        "games only); 'alpharank' ranks them by alpha-rank over the league's payoffs (any "
        "number of seats or teams; not a Nash equilibrium); auto = least-exploitable where "
        "possible (unless --payoff is given), else nash for two teams, else alpharank",
    )
    p.add_argument(
        "--side",
        help="with --mixture, in a game of several sides (predators and prey): whose mixture",
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
    _evaluate_parser(sub)
    _service_parsers(sub)
    _play_report_parsers(sub)
    return parser


def _given_values(args: argparse.Namespace) -> dict[str, Any]:
    """The field flags given on the command line, nested like a config file."""
    values: dict[str, Any] = {}
    for path, _, _ in _leaf_fields(TrainConfig):
        if hasattr(args, _dest(path)):
            node = values
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = getattr(args, _dest(path))
    return values


def _overlay(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`top` over `base`; nested mappings merge key by key, so one league flag keeps the
    other league settings of the config file."""
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _overlay(merged[key], value)
        else:
            merged[key] = value
    return merged


def _resume_overrides(run_dir: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """resume_config replaces whole keys of the stored config; merge the nested league
    mapping here so that overriding one league key keeps the run's others."""
    run = RunDir(run_dir)
    if "league" not in overrides or not run.config_file.is_file():
        return overrides  # resume_config refuses a run dir that cannot be resumed
    return _overlay(run.load_config(), overrides)


def train_config_from_args(args: argparse.Namespace) -> TrainConfig:
    """Flags over the --config file over a resumed run's stored config over defaults."""
    values: dict[str, Any] = load_config_file(args.config) if args.config else {}
    overrides = _overlay(values, _given_values(args))
    if args.resume:
        from league.training.loop import resume_config  # imports Ray: only when resuming

        run_dir = overrides.get("run_dir") or TrainConfig.run_dir
        return resume_config(run_dir, _resume_overrides(run_dir, overrides))
    return TrainConfig.from_dict(overrides, source=args.config or "command line")


def cmd_train(args: argparse.Namespace) -> int:
    cfg = train_config_from_args(args)  # bad input fails here, before Ray is imported
    if args.address:
        return _train_on_cluster(cfg, args)
    if args.detach:
        raise CliError("--detach needs --address (a cluster to leave the coordinator on)")
    from league.training.loop import train

    try:
        train(cfg, resume=args.resume)
    except Exception as err:
        if args.debug or (_exit_code(err) is not None and not _from_ray(err)):
            raise
        # Anything else failed inside the run (often in a Ray actor, where the error
        # comes wrapped in pages of traceback): one line here, the traceback in a file.
        log_file = _write_traceback(RunDir(cfg.run_dir).logs, err)
        raise TrainingFailed(f"{_root_cause(err)} (traceback: {log_file})") from err
    return 0


class TrainingFailed(Exception):
    """A training run failed for a reason League did not check for; the traceback is
    in the run's logs."""


def _from_ray(err: BaseException) -> bool:
    """An error Ray passed on from an actor or task (RayTaskError also subclasses the
    original's class, so a ValueError in an env runner is still one of these)."""
    exceptions = sys.modules.get("ray.exceptions")
    return exceptions is not None and isinstance(err, exceptions.RayError)


def _root_cause(err: BaseException) -> str:
    """The innermost error's type and first line: what went wrong, not where Ray
    passed it on (RayTaskError keeps the original as `cause`)."""
    seen: set[int] = set()
    while id(err) not in seen:
        seen.add(id(err))
        inner = getattr(err, "cause", None) or err.__cause__
        if not isinstance(inner, BaseException):
            break
        err = inner
    lines = [line for line in str(err).splitlines() if line.strip()]
    first = lines[0].strip() if lines else ""
    return f"{type(err).__name__}: {first[:300]}" if first else type(err).__name__


def _write_traceback(log_dir: Path, err: BaseException) -> Path:
    import traceback

    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / "error.log"
    with path.open("a") as f:
        f.write(time.strftime("%Y-%m-%d %H:%M:%S ") + "league train failed\n")
        f.write("".join(traceback.format_exception(err)) + "\n")
    return path


COORDINATOR_DOWN_S = 300.0
FOLLOWER_GRACE_S = 5.0
"""How long `league stop` leaves a stopped coordinator up for followers to see it."""
"""How long `league train --address` waits for Ray to bring a dead coordinator back."""


def _train_on_cluster(cfg: Any, args: argparse.Namespace) -> int:
    import ray

    from league.training.coordinator import start_coordinator

    with _refuse(RuntimeError):
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
    from league.config import TrainConfig
    from league.core.league import League
    from league.run import RunDir, RunDirError
    from league.snapshot import SnapshotError, save_mixture
    from league.store import StoreError, open_store
    from league.tools.least_exploitable import NotZeroSumError
    from league.tools.mixtures import MixtureError, league_mixture

    if args.format != "snapshot":
        raise CliError("--mixture exports a mixture snapshot directory, not --format onnx")
    _refuse_existing(Path(args.out), args.force)
    run = RunDir(args.run_dir)
    if not run.path.is_dir():
        raise CliError(f"run dir {str(run.path)!r} does not exist")
    if args.store is None and not run.store_file.is_file():  # never create a store here
        raise CliError(
            f"run dir {str(run.path)!r} has no league store: --mixture needs a league run"
        )
    with _refuse(StoreError), open_store(args.store, run.path, read_only=True) as store:
        state = store.state()
    if not state or not state.get("snapshots"):
        raise CliError(f"the league store of {str(run.path)!r} holds no snapshots")
    with _refuse(RunDirError):
        cfg = TrainConfig.from_dict(run.load_config(), source="config.json")
    league_state = {k: v for k, v in state.items() if k != "driver"}
    league = League.from_state(cfg.league, league_state, cfg.layout)
    with _refuse(MixtureError, SnapshotError, NotZeroSumError):
        mixture = league_mixture(
            run,
            league,
            cfg.game,
            solver=args.solver,
            payoff=args.payoff,
            side=args.side,
            log=lambda line: print(line, flush=True),
        )
    with _refuse(SnapshotError):
        out = save_mixture(args.out, mixture.members, mixture.weights)
    weights = mixture.weights
    shown = ", ".join(f"{sid} {w:.3f}" for sid, w in sorted(weights.items(), key=lambda kv: -kv[1]))
    print(f"exported the league's {mixture.what} ({len(weights)} members: {shown}) to {out}")
    return 0


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

    player = args.player
    if args.version is not None:
        with _refuse(ValueError):
            player = snapshot_id(args.player, args.version)
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
    from envs.opponents import make_opponent
    from league.snapshot import load_policy
    from league.tools.evaluation import evaluate
    from league.tools.exploitability import greedy, tictactoe_exploitability

    if not 1 <= args.games <= MAX_EVALUATION_GAMES:
        raise CliError(f"--games must be in 1..{MAX_EVALUATION_GAMES:,}, got {args.games:,}")
    policy = load_policy(_player_path(Path(args.run_dir), args.player))
    game = policy.meta.game
    if Path(args.opponent).is_dir():
        opponent = load_policy(args.opponent, game=game)
    else:
        with _refuse(ValueError):
            opponent = make_opponent(args.opponent, game)
    mode = "sampled" if args.sample else "greedy"
    print(f"{args.player} ({mode}) vs {args.opponent} on {game}, {args.games} games per seat")
    records = evaluate(
        game,
        policy,
        opponent,
        args.games,
        greedy=not args.sample,
        seed=args.seed,
        progress=print if args.games >= 10_000 else None,
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
            return 0
        how = "NashConv/2" if name == "exploitability" else "every seat playing it"
        print(
            f"  {name} (OpenSpiel, {how}, sampled): {value:.4f}"
            f"  (uniform play: {uniform_measure(game):.4f})"
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
    with _refuse(ValueError):
        play(policy, policy.meta.game, args.seat, seed=args.seed)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from league.tools.report import ReportError, write_report

    with _refuse(ReportError):
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

        with _refuse(ValueError):  # refused here, before Ray and the trainer load
            get_game(args.env)
        try:
            make_opponent(args.reference, args.env)
        except Exception as err:  # a user's bot: any failure is bad input
            raise CliError(f"--reference: {err}") from None
        from league.training.probe import ReferenceTarget

        target: Any = ReferenceTarget(args.reference, args.env)
    else:
        with _refuse(SnapshotError):
            target = load_policy(args.snapshot)  # refused here, before Ray and the trainer load
    from league.training.probe import probe

    result = probe(target, minutes=args.minutes, games=args.games, seed=args.seed)
    print(result.format())
    return 0


def _player_path(run_dir: Path, player: str) -> Path:
    """A trainable player's latest weights, or a frozen snapshot by its id."""
    if not run_dir.is_dir():
        raise CliError(f"run dir {str(run_dir)!r} does not exist")
    with _refuse(ValueError):  # module_dir parses the id: a player or a snapshot
        path = RunDir(run_dir).module_dir(player)
    if not path.is_dir():
        raise CliError(f"no player {player!r} in {str(run_dir)!r} (looked in {path})")
    return path


COMMANDS = {
    "export": cmd_export,
    "play": cmd_play,
    "probe": cmd_probe,
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
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("league: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        code = _exit_code(err)
        if code is None or args.debug:
            raise  # not an expected failure: a bug, keep its traceback
        # Our errors already say what and where.
        own = code == EXIT_USAGE or type(err).__name__ in ("OutOfSpaceError", "TrainingFailed")
        shown = _one_line(err) if own else f"{type(err).__name__}: {_one_line(err)}"
        print(f"league: error: {shown}", file=sys.stderr)
        return code


def _exit_code(err: Exception) -> int | None:
    """The exit code of an expected failure: bad usage or input we checked (2),
    input that library code refused (65), a file or device error (74)."""
    from league.store import StoreError

    # An error's class comes from a module already loaded: looked up there, a refusal
    # is classified without importing torch (snapshots) or Ray (the coordinator).
    loaded = [
        getattr(sys.modules.get(module), name, None)
        for module, name in (
            ("league.snapshot", "SnapshotError"),
            ("league.training.coordinator", "CoordinatorNotFound"),
            ("league.training.probe", "ProbeError"),
        )
    ]
    own = (CliError, ConfigError, UnknownGameError, RunDirError, StoreError)
    if isinstance(err, (*own, *(cls for cls in loaded if cls is not None))):
        return EXIT_USAGE
    if isinstance(err, TrainingFailed):
        return EXIT_SOFTWARE
    if isinstance(err, OSError):
        return EXIT_IO
    if isinstance(err, ValueError | OverflowError | RecursionError):
        return EXIT_DATA
    return None


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 500 else text[:497] + "..."


if __name__ == "__main__":
    sys.exit(main())
