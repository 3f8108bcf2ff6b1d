"""`league train`'s flags from the TrainConfig dataclass: names, types, choices, defaults
and help, so flags and config keys cannot drift apart; and the flags, a --config file and
a resumed run's stored config resolved into one TrainConfig."""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from league.config import (
    FLAT_NAMES,
    SHORT_NAMES,
    ConfigError,
    TrainConfig,
    check_choice,
    deprecation_note,
    field_default,
    matches_type,
    resolve_config,
)

FieldPath = tuple[str, ...]
"""A TrainConfig field's keys, as nested in a config file: ("lr",), ("league", "pfsp_p")."""

_METAVARS: dict[type, str] = {int: "INT", float: "FLOAT", str: "TEXT"}


def leaf_fields(
    cls: type, prefix: FieldPath = ()
) -> Iterator[tuple[FieldPath, dataclasses.Field[Any], Any]]:
    """(path, field, type hint) of every plain field; nested dataclasses are walked into."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        path = (*prefix, f.name)
        if dataclasses.is_dataclass(hints[f.name]):
            yield from leaf_fields(hints[f.name], path)
        else:
            yield path, f, hints[f.name]


def flag_dest(path: FieldPath) -> str:
    return ".".join(path)


def flag_name(path: FieldPath) -> str:
    # `lambda_` only dodges the Python keyword; users type --lambda.
    return "--" + flag_dest(path).rstrip("_").replace("_", "-")


def show_value(value: Any) -> str:
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


def help_text(f: dataclasses.Field[Any]) -> str:
    return f.metadata["help"].replace("%", "%%")  # argparse %-formats help strings


def field_help_text(f: dataclasses.Field[Any]) -> str:
    return f"{help_text(f)} (default: {show_value(field_default(f))})"


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
        "game.env": "registry name, package.module:callable or openspiel:GAME(k=v)",
        "game.env_kwargs": "the game's keyword arguments",
        "game.teams": "team -> its seats; {}: the game's own",
        "game.preset": "board, poker, descent: for any game",
    },
    "run": {
        "run.mode": "league or selfplay",
        "run.run_dir": "checkpoints, snapshots, logs",
        "run.stop_minutes": "wall-clock budget",
        "run.seed": "random seed",
        "run.store": "store URL; none: SQLite in the run dir",
        "run.verbose": "Ray's and RLlib's logs on the console",
    },
    "resources": {
        "resources.num_env_runners": "env-runner actors",
        "resources.num_learners": "learner actors (0 = in this process)",
        "resources.num_gpus_per_learner": "GPUs per learner",
    },
    "ppo": {
        "ppo.algo": "ppo or appo",
        "ppo.lr": "learning rate",
        "ppo.entropy_coeff": "entropy bonus",
    },
    "model": {"model.hidden_sizes": "MLP layer sizes", "model.encoder": "auto, mlp or conv"},
    "league": {
        "league.opponent_sampling": "pfsp, nash or alpharank",
        "league.ratings": "elo, skill (rankings) or auto",
    },
    "evaluation": {"evaluation.eval_interval": "evaluate every N iterations"},
}


def brief_help(key: str, f: dataclasses.Field[Any]) -> str:
    text = next(helps[key] for helps in MAIN_FLAGS.values() if key in helps)
    return f"{text} ({show_value(field_default(f))})".replace("%", "%%")


class FlagsFormatter(argparse.HelpFormatter):
    """`--game.env, --env TEXT`: a setting's flag and its short form share one metavar
    (argparse repeats it per option string); a wider flag column, so most fit beside
    their help."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=34)

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings or action.nargs == 0:
            return super()._format_action_invocation(action)
        metavar = self._format_args(action, self._get_default_metavar_for_optional(action))
        return f"{', '.join(action.option_strings)} {metavar}"


class HelpAllAction(argparse.Action):
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


DEPRECATED = "deprecated:"
"""The dest prefix of a flat flag (`--lr` for `--ppo.lr`): it works for one release."""


def add_field_flags(p: argparse.ArgumentParser) -> None:
    """One flag per TrainConfig field, `--GROUP.FIELD`. --help lists the main ones in
    MAIN_FLAGS' groups; the rest keep their full help for --help-all, in their group's
    section. SHORT_NAMES also answer to their flat name; every other setting's flat flag
    (`--lr`) still works, hidden, with a deprecation note."""
    main = {name: group for group, helps in MAIN_FLAGS.items() for name in helps}
    shown = {group: p.add_argument_group(f"{group} flags") for group in MAIN_FLAGS}
    sections = {f.name: f for f in dataclasses.fields(TrainConfig)}
    groups: dict[str, argparse._ArgumentGroup] = {}
    for path, f, hint in leaf_fields(TrainConfig):
        key = ".".join(path)
        if key in main:
            container = shown[main[key]]
        else:
            if path[0] not in groups:
                groups[path[0]] = section_group(p, sections[path[0]])
            container = groups[path[0]]
        flat = len(path) == 2 and path[0] != "league"
        names = [flag_name(path)]
        if flat and path[1] in SHORT_NAMES:
            names.append(flag_name(path[1:]))
        action = container.add_argument(
            *names,
            dest=flag_dest(path),
            # Absent flags stay absent, so they never mask the config file or a resumed run.
            default=argparse.SUPPRESS,
            help=brief_help(key, f) if key in main else argparse.SUPPRESS,
            **_parse_options(f, hint),
        )
        action.full_help = field_help_text(f)  # type: ignore[attr-defined]
        if flat and path[1] not in SHORT_NAMES:
            p.add_argument(
                flag_name(path[1:]),
                dest=DEPRECATED + flag_dest(path),
                default=argparse.SUPPRESS,
                help=argparse.SUPPRESS,
                **_parse_options(f, hint),
            )


def section_group(p: argparse.ArgumentParser, f: dataclasses.Field[Any]) -> argparse._ArgumentGroup:
    group = p.add_argument_group(f"{f.name} flags (all)")
    # Shown by --help-all only: under --help the group has no visible flag.
    group.full_description = (  # type: ignore[attr-defined]
        f"{help_text(f)} Also settable as the `{f.name}:` mapping of --config; each flag "
        "overrides one key of it."
    )
    return group


def given_values(args: argparse.Namespace) -> dict[str, Any]:
    """The field flags given on the command line, nested like a config file (a
    grouped flag wins over its deprecated flat one)."""
    values: dict[str, Any] = {}
    for path, _, _ in leaf_fields(TrainConfig):
        for dest in (DEPRECATED + flag_dest(path), flag_dest(path)):
            if hasattr(args, dest):
                node = values
                for key in path[:-1]:
                    node = node.setdefault(key, {})
                node[path[-1]] = getattr(args, dest)
    return values


def deprecated_flags(args: argparse.Namespace) -> list[str]:
    """The flat names of the deprecated flags given."""
    return [dest.rsplit(".", 1)[1] for dest in vars(args) if dest.startswith(DEPRECATED)]


def train_config_from_args(
    args: argparse.Namespace, note: Callable[[str], None] | None = None
) -> TrainConfig:
    """The flags given over the --config file over a resumed run's stored config
    (`league.config.resolve_config`'s one order); `note` hears of deprecated names."""
    flat = deprecated_flags(args)
    if flat and note is not None:
        renames = [(flag_name((name,)), flag_name((FLAT_NAMES[name], name))) for name in flat]
        note(deprecation_note("flags", renames))
    return resolve_config(
        given_values(args),
        config_file=args.config,
        resume=args.resume,
        source=args.config or "command line",
        note=note,
    )
