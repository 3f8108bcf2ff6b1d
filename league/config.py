"""A training run's settings: `TrainConfig`, its groups (league.config_groups: game,
run, resources, ppo, model, evaluation; league.core.config: league), loadable from
YAML or TOML with one section per group.

Every field has a default and help text, and may list its allowed values
(`choices`). `league train` turns every field into a flag `--GROUP.FIELD` from this
metadata (league.cli_flags), so the flags, their help and the config keys cannot
drift apart. Each setting's own name is unique across groups: the flat names of
earlier releases still work (keyword arguments as a shorthand; flags and config
files for one release, with a note).

Every way to make a run's settings resolves them in one order (`resolve_config`),
highest first: the values given (keyword arguments, flags), a config file, a resumed
run's stored config.json, the preset named, the game's measured settings
(league/presets.yaml), the field defaults. `TrainConfig(**values)` resolves the same
way: `TrainConfig(env="connect_four")` is connect_four's settings, as a user of the
CLI gets them.
"""

from __future__ import annotations

import dataclasses
import tomllib
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from envs.openspiel import PREFIX as OPENSPIEL_PREFIX
from envs.openspiel import needs_mixed_play
from envs.opponents import make_opponent
from envs.registry import canonical_game, get_game
from league.config_groups import (
    ALGOS,
    ANNEAL_OVER,
    MODES,
    ConfigError,
    EvaluationSettings,
    GameSettings,
    ModelSettings,
    PPOSettings,
    ResourceSettings,
    RunSettings,
    check_choice,
    short_repr,
)
from league.core.config import LeagueConfig
from league.core.config import field_help as _help
from league.core.ids import MAIN, parse_module_id
from league.core.league import check_league_fits_layout
from league.core.seats import SeatLayout
from league.presets import (
    PresetError,
    game_settings,
    kind_settings,
    merge_settings,
    preset_names,
    preset_settings,
)
from league.run import RunDir

__all__ = [
    "ALGOS",
    "ANNEAL_OVER",
    "GROUPS",
    "MODES",
    "ConfigError",
    "TrainConfig",
    "check_choice",
    "resolve_config",
    "short_repr",
]


def _schedule(start: float, final: float | None, steps: int) -> float | list[list[float]]:
    """A constant, or RLlib's piecewise-linear schedule from start to final."""
    return start if final is None else [[0, start], [steps, final]]


GROUPS: dict[str, type] = {
    "game": GameSettings,
    "run": RunSettings,
    "resources": ResourceSettings,
    "ppo": PPOSettings,
    "model": ModelSettings,
    "league": LeagueConfig,
    "evaluation": EvaluationSettings,
}
"""TrainConfig's groups: a config file's sections, the flags' prefixes (`--ppo.lr`)."""

FLAT_NAMES: dict[str, str] = {
    f.name: group
    for group, cls in GROUPS.items()
    if group != "league"
    for f in dataclasses.fields(cls)
}
"""Every setting's own name -> its group. Each name is unique across groups, so
`TrainConfig(lr=1e-3)` is `TrainConfig(ppo={"lr": 1e-3})`; flags and config files
with flat names are deprecated (one release), keyword arguments are a shorthand."""


SHORT_NAMES = (
    *("env", "env_kwargs", "teams", "preset"),
    *("mode", "run_dir", "seed", "store", "stop_minutes", "stop_timesteps"),
)
"""Settings that name the run: a flat key or flag (`env:`, `--run-dir`) is their short
form; every other flat name in a config file or a flag is deprecated (one release)."""


def grouped(values: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`values` with every flat name moved into its group's mapping (a group given as
    an object becomes its mapping), and the flat names found. Unknown keys stay for
    the caller to refuse."""
    out: dict[str, Any] = {}
    flat: list[str] = []
    for key, value in values.items():
        if key in FLAT_NAMES:
            flat.append(key)
            group = out.setdefault(FLAT_NAMES[key], {})
            if isinstance(group, dict):
                group[key] = value
            continue
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = _as_mapping(value)
        if key in GROUPS and isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = {**value, **out[key]}  # a flat name given beside its group wins
        else:
            out[key] = dict(value) if isinstance(value, Mapping) else value
    return out, flat


def _as_mapping(group: Any) -> dict[str, Any]:
    """A group's fields as given (not deep-copied: `to_dict` is for that)."""
    return {f.name: getattr(group, f.name) for f in dataclasses.fields(group)}


def _build_group(name: str, cls: type, value: Any) -> Any:
    """A group from its mapping (`grouped` turned objects into mappings); a bad key or
    value is one ConfigError naming the group."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{name} must be a mapping, got {short_repr(value)}")
    if cls is LeagueConfig:
        try:
            return LeagueConfig.from_dict(dict(value))
        except ValueError as err:
            raise ConfigError(str(err)) from err
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise ConfigError(f"{name}: unknown keys {unknown}; known keys: {sorted(known)}")
    return cls(**value)


def _doc(cls: type) -> str:
    return " ".join((cls.__doc__ or "").split())


@dataclass(init=False)
class TrainConfig:
    """Every setting of a training run, in groups (league.config_groups): the one
    source of `league train`'s flags, the config files' sections and their help.

    Built from keyword arguments only: a group as a mapping or its object
    (`ppo={"lr": 1e-3}`), or a setting by its own name (`lr=1e-3`, the same). The
    values not given come from the preset named, then the game's measured settings (or
    its kind's, outside the registry), then the field defaults (the module doc's
    order). `dataclasses.replace` gives every group, so it keeps the values it is
    given: a replaced `game` keeps the old game's settings.
    """

    game: GameSettings = field(default_factory=GameSettings, metadata=_help(_doc(GameSettings)))
    run: RunSettings = field(default_factory=RunSettings, metadata=_help(_doc(RunSettings)))
    resources: ResourceSettings = field(
        default_factory=ResourceSettings, metadata=_help(_doc(ResourceSettings))
    )
    ppo: PPOSettings = field(default_factory=PPOSettings, metadata=_help(_doc(PPOSettings)))
    model: ModelSettings = field(default_factory=ModelSettings, metadata=_help(_doc(ModelSettings)))
    league: LeagueConfig = field(
        default_factory=LeagueConfig,
        metadata=_help("League rules (league.core.config.LeagueConfig)."),
    )
    evaluation: EvaluationSettings = field(
        default_factory=EvaluationSettings, metadata=_help(_doc(EvaluationSettings))
    )

    def __init__(self, **given: Any) -> None:
        values = with_game_defaults(grouped(given)[0])
        unknown = sorted(set(values) - set(GROUPS))
        if unknown:
            raise TypeError(f"TrainConfig got unknown settings {unknown}")
        for name, cls in GROUPS.items():
            setattr(self, name, _build_group(name, cls, values.get(name, {})))
        self.__post_init__()

    def __getattr__(self, name: str) -> Any:
        # Only reached for a missing attribute: name the group a flat read lives in.
        group = FLAT_NAMES.get(name)
        if group is None or name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"TrainConfig has no {name!r}: it is TrainConfig.{group}.{name}")

    def __post_init__(self) -> None:
        """The checks that read two groups (each group checks its own values)."""
        layout = self.layout  # UnknownGameError naming a bad `teams`
        try:
            check_league_fits_layout(self.league, layout)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        if self.game.preset is not None and self.game.preset not in preset_names():
            raise ConfigError(
                f"unknown preset {self.game.preset!r}; known presets: {', '.join(preset_names())}"
            )
        self._check_reference_opponents()
        if self.ppo.algo == "appo" and self.model.shared_vf:
            raise ConfigError(
                "shared_vf needs algo ppo: APPO's V-trace uses each policy's own value head"
            )
        if (self.model.shared_vf or self.model.world_model) and layout.multi_side:
            raise ConfigError(
                f"shared_vf and world_model read one observation shape; {self.game_id!r} has "
                f"{len(layout.sides)} sides ({', '.join(layout.sides)})"
            )
        if self.model.centralized_critic and get_game(self.game_id).kind != "simultaneous":
            raise ConfigError(
                f"centralized_critic needs a simultaneous-move game; {self.game_id!r} is turn-based"
            )

    def _check_reference_opponents(self) -> None:
        """Every league reference opponent and the teacher must exist for this game
        (`make_opponent` refuses unknown names; a bot given by import path is built
        once here, so a broken one fails before training)."""
        named = [("league.reference_opponents", n) for n in self.league.reference_opponents]
        if self.league.teacher:
            named.append(("league.teacher", self.league.teacher))
        for field_name, name in named:
            try:
                make_opponent(name, self.game_id)
            except Exception as err:  # a user's bot: any failure is a config error
                raise ConfigError(f"{field_name}: {err}") from None

    @property
    def game_id(self) -> str:
        """The game id: `game.env` with its `game.env_kwargs` (envs.registry.make_game_id)."""
        return self.game.game_id

    @property
    def layout(self) -> SeatLayout:
        """The game's seats as teams and sides (league.core.seats)."""
        return self.game.layout

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with `changes` (groups or settings by their own name, as
        `TrainConfig(...)` takes them) over this config's values."""
        given, _ = grouped(changes)
        return TrainConfig(**merge_settings(grouped(_as_mapping(self))[0], given))

    def exploiter_overrides(self, players: list[str]) -> dict[str, dict[str, float]]:
        """Per-module algorithm settings of the exploiters (RLlib's
        `algorithm_config_overrides_per_module`): their own entropy bonus, if set."""
        coeff = self.league.exploiter_entropy_coeff
        if self.run.mode != "league" or coeff is None:
            return {}
        return {p: {"entropy_coeff": coeff} for p in players if parse_module_id(p).role != MAIN}

    def schedule_steps(self) -> int:
        """The schedules' span on RLlib's env-step axis. With anneal_over 'run' and a
        time budget the axis is a clock (`league.training.run_clock`) that reaches it
        as the time runs out; with only a step budget it is that budget."""
        if self.ppo.anneal_over == "run" and self.run.run_minutes() is None:
            assert self.run.stop_timesteps is not None  # run_minutes is None only then
            return self.run.stop_timesteps
        return self.ppo.anneal_steps

    def anneals(self) -> bool:
        """Whether the learning rate or the players' entropy bonus has a schedule."""
        return isinstance(self.lr_schedule(), list) or isinstance(self.player_entropy_coeff(), list)

    def lr_schedule(self) -> float | list[list[float]]:
        """RLlib's `lr`: the constant rate, or a piecewise-linear schedule over the
        lifetime env steps sampled when lr_final is set."""
        return _schedule(self.ppo.lr, self.ppo.lr_final, self.schedule_steps())

    def player_entropy_coeff(self) -> float | list[list[float]]:
        """The players' entropy bonus, as a schedule when it anneals; in league mode
        the league's own start and final values take precedence where set."""
        start, final = self.ppo.entropy_coeff, self.ppo.entropy_coeff_final
        if self.run.mode == "league":
            if self.league.entropy_coeff is not None:
                start = self.league.entropy_coeff
            if self.league.entropy_coeff_final is not None:
                final = self.league.entropy_coeff_final
        return _schedule(start, final, self.schedule_steps())

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], source: str = "config") -> TrainConfig:
        """`TrainConfig(**values)` for values read from a file or a store (groups as
        mappings; flat names are grouped): unknown keys and values of the wrong type are
        one ConfigError naming `source` (the game's settings it adds are checked by
        tests/test_presets.py)."""
        values, _ = grouped(values)
        unknown = sorted(set(values) - set(GROUPS))
        if unknown:
            raise ConfigError(
                f"{source}: unknown keys {unknown}; known groups: {', '.join(GROUPS)}"
            )
        for name, group in values.items():
            if not isinstance(group, Mapping):
                raise ConfigError(f"{source}: {name} must be a mapping, got {short_repr(group)}")
            if name == "league":
                continue  # LeagueConfig.from_dict checks its own keys and values
            cls_ = GROUPS[name]
            hints = typing.get_type_hints(cls_)
            for key, value in group.items():
                if key not in hints:
                    known = sorted(hints)
                    raise ConfigError(f"{source}: {name}: unknown key {key!r}; known keys: {known}")
                if not matches_type(value, hints[key]):
                    raise ConfigError(
                        f"{source}: {name}.{key} must be {_type_name(hints[key])}, "
                        f"got {short_repr(value)}"
                    )
        return cls(**values)


def field_default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def resolve_config(
    values: Mapping[str, Any] | None = None,
    *,
    config_file: str | Path | None = None,
    resume: bool = False,
    source: str | None = None,
    note: Callable[[str], None] | None = None,
) -> TrainConfig:
    """A run's settings, every path's one order (highest first): `values` (keyword
    arguments, flags), the `config_file`, with `resume` the run dir's stored
    config.json, the preset named, the game's measured settings, the field defaults.
    Groups merge key by key at every step. A config file's flat names (deprecated) are
    grouped, and `note` hears of them. A run dir that cannot be resumed, or a resume
    asking for another algorithm, is a ConfigError or RunDirError before anything is
    written.
    """
    from_file: dict[str, Any] = {}
    if config_file:
        from_file, flat = grouped(load_config_file(config_file))
        flat = [name for name in flat if name not in SHORT_NAMES]
        if flat and note is not None:
            renames = [(name, f"{FLAT_NAMES[name]}.{name}") for name in flat]
            note(deprecation_note(str(config_file), renames))
    top = merge_settings(from_file, grouped(values or {})[0])
    source = source or (str(config_file) if config_file else "settings")
    if resume:
        top = merge_settings(stored_settings(top), top)
        source = f"{top['run']['run_dir']}/config.json"
    return TrainConfig.from_dict(top, source=source)


def deprecation_note(where: str, renames: list[tuple[str, str]]) -> str:
    """One line: these flat names still work, for one release; (old, new) each."""
    pairs = [f"{old} -> {new}" for old, new in renames]
    more = f" (and {len(pairs) - 4} more)" if len(pairs) > 4 else ""
    return (
        f"{where}: flat setting names are deprecated and go in the next release: "
        f"{', '.join(pairs[:4])}{more}"
    )


def stored_settings(top: Mapping[str, Any]) -> dict[str, Any]:
    """The stored config.json of the run dir `top` names (or the default one), grouped
    (a run stored before the groups has flat names), checked resumable: it has a
    checkpoint, and `top` keeps its algorithm."""
    run_dir = top.get("run", {}).get("run_dir") or RunSettings.run_dir
    run = RunDir(run_dir)
    run.latest_checkpoint()  # refuse early when there is nothing to resume
    stored, _ = grouped(run.load_config())
    algo = stored.get("ppo", {}).get("algo", PPOSettings.algo)
    if top.get("ppo", {}).get("algo", algo) != algo:
        # The checkpoint holds one algorithm's learner and optimizer state.
        raise ConfigError(
            f"run dir {run_dir!r} was trained with --ppo.algo {algo}; it resumes only so"
        )
    return merge_settings(stored, {"run": {"run_dir": run_dir}})


def game_kind(game: str, kwargs: Mapping[str, Any]) -> str:
    """The kind of a game outside the registry (league/presets.yaml, `kinds`), or ''
    (not an OpenSpiel game, or no such game: loading it names the problem)."""
    if not game.startswith(OPENSPIEL_PREFIX):
        return ""
    mixed = needs_mixed_play(game[len(OPENSPIEL_PREFIX) :], kwargs)
    if mixed is None:
        return ""
    return "mixed_play" if mixed else "pure_play"


def with_game_defaults(values: dict[str, Any]) -> dict[str, Any]:
    """Grouped `values` over the `--preset` they name over their game's measured
    settings (`league/presets.yaml`); groups merge key by key."""
    game_group = values.get("game", {})
    if not isinstance(game_group, Mapping):
        return values  # _build_group names the problem
    game = game_group.get("env", GameSettings.env)
    kwargs = game_group.get("env_kwargs", {})
    if not isinstance(game, str) or not isinstance(kwargs, dict):
        return values  # GameSettings names the problem
    game, kwargs = canonical_game(game, kwargs)
    # presets.yaml is grouped (tests/test_presets.py)
    defaults = game_settings(game) or kind_settings(game_kind(game, kwargs))
    preset = game_group.get("preset")
    if isinstance(preset, str):
        try:
            defaults = merge_settings(defaults, preset_settings(preset))
        except PresetError as err:
            raise ConfigError(f"preset: {err}") from None
    return merge_settings(defaults, values)


def matches_type(value: Any, hint: Any) -> bool:
    """Whether a value parsed from YAML/TOML fits a field's type hint."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return any(matches_type(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(matches_type(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if hint is Any:
        return True
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint)


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML (.yaml/.yml) or TOML (.toml) file into a dict of TrainConfig fields."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    text = path.read_text()
    try:
        if path.suffix == ".toml":
            values = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            values = yaml.safe_load(text) or {}
        else:
            raise ConfigError(f"config file {str(path)!r}: use a .yaml, .yml or .toml file")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"config file {str(path)!r} is malformed: {err}") from err
    if not isinstance(values, dict):
        raise ConfigError(f"config file {str(path)!r} must hold a mapping of keys to values")
    return values
