"""Games by reference. `get_game` is the one place a game reference is resolved
(and refused).

A game reference is one of
- a registry name (`tictactoe`, `leduc_poker`, ...: `REGISTRY_NAMES`);
- `package.module:callable`: any importable function or class returning a
  PettingZoo AEC (turn-based) or Parallel (simultaneous-move) env;
- `openspiel:GAME` or `openspiel:GAME(param=value,...)`: a turn-based OpenSpiel
  game of two or more players through shimmy (chance nodes included).

A registry game reached by another reference (`openspiel:kuhn_poker(players=3)`
for `kuhn_poker_3p`, `pettingzoo.classic.tictactoe_v3:env` for `tictactoe`) is
the same game: `canonical_game` names it by its registry name, so it gets the
registry's defaults and teams.

Seats, teams and sides (`league.core.seats`): `game_layout(game_id, teams)` groups a
game's seats into sides by their spaces and into teams by `teams` (or the
registry's default teams for the game; else every seat alone).
Keyword arguments for the callable (or OpenSpiel parameters) travel with the
reference in a *game id*, `make_game_id(reference, kwargs)`: the reference, then
the kwargs as compact JSON. The run config, snapshot metadata and every tool
record and reuse that one string.

`Game.make()` returns the PettingZoo env with the league's observation shape
(`{"observation", "action_mask"}` for every seat, envs.spaces): AEC for
turn-based games, Parallel for simultaneous-move games.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium as gym
from pettingzoo.classic import connect_four_v3, go_v5, rps_v2, tictactoe_v3
from pettingzoo.utils.env import AECEnv, ParallelEnv

from envs.openspiel import PREFIX as OPENSPIEL_PREFIX
from envs.openspiel import OpenSpielGameError, make_openspiel_env
from envs.spaces import GameSpaceError, space_key
from envs.wrappers import LeagueObservations, ParallelLeagueObservations
from league.core.seats import SeatLayout, SeatLayoutError


class UnknownGameError(ValueError):
    """A game reference that does not resolve to a game the league can train on."""


@dataclass(frozen=True)
class Game:
    name: str
    """The game id: the reference, plus its kwargs as JSON when there are any."""
    kind: Literal["turn_based", "simultaneous"]
    make: Callable[[], Any]
    description: str
    openspiel: str | None = None
    """The OpenSpiel game string (`kuhn_poker`, `leduc_poker(players=2)`) when the
    game comes from OpenSpiel: its exact exploitability can then be computed."""
    seats: tuple[str, ...] = ()
    """The game's agent names (PettingZoo's `possible_agents`)."""
    space_keys: Mapping[str, str] = field(default_factory=dict)
    """Per seat, a key equal for seats with equal spaces (their side)."""
    teams: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The game's own teams (team -> seats or fnmatch patterns); empty: every seat alone."""


@dataclass(frozen=True)
class _Entry:
    """A registry entry: a factory of the raw PettingZoo env plus what we know of it."""

    factory: Callable[..., Any]
    description: str
    openspiel: str | None = None
    teams: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()
    """Other game ids (import path plus kwargs) that name this same game."""


def _openspiel(name: str, **params: Any) -> Callable[..., Any]:
    return functools.partial(make_openspiel_env, name, **params)


def _leduc_holdem(**kwargs: Any) -> Any:
    from pettingzoo.classic import leduc_holdem_v4  # needs rlcard: import on use

    return leduc_holdem_v4.env(**kwargs)


def _texas_holdem(**kwargs: Any) -> Any:
    from pettingzoo.classic import texas_holdem_v4

    return texas_holdem_v4.env(**kwargs)


def _go9(**kwargs: Any) -> Any:
    return go_v5.env(**{"board_size": 9, **kwargs})


def _simple_tag(**kwargs: Any) -> Any:
    from mpe2 import simple_tag_v3  # the mpe2 package: imported on use

    return simple_tag_v3.parallel_env(**kwargs)


# Battle on a small map: 6 against 6 on 16x16, at most 150 steps a game.
_BATTLE_KWARGS: dict[str, Any] = {"map_size": 16, "max_cycles": 150}


def _battle(**kwargs: Any) -> Any:
    from magent2.environments import battle_v4  # the magent2 package: imported on use

    return battle_v4.parallel_env(**{**_BATTLE_KWARGS, **kwargs})


# Games only: how to make them, their seats and teams. What each was measured to
# train best with is data, in league/presets.yaml.
_REGISTRY: dict[str, _Entry] = {
    "tictactoe": _Entry(
        tictactoe_v3.env,
        "tictactoe_v3: 3x3, two players",
        aliases=("pettingzoo.classic.tictactoe_v3:env",),
    ),
    "connect_four": _Entry(
        connect_four_v3.env,
        "connect_four_v3: 6x7",
        aliases=("pettingzoo.classic.connect_four_v3:env",),
    ),
    "rps": _Entry(
        rps_v2.parallel_env,
        "rps_v2: 15 simultaneous rounds",
        aliases=("pettingzoo.classic.rps_v2:parallel_env",),
    ),
    "leduc_holdem": _Entry(
        _leduc_holdem, "leduc_holdem_v4: Leduc hold'em, hidden cards (PettingZoo, rlcard)"
    ),
    "texas_holdem": _Entry(
        _texas_holdem, "texas_holdem_v4: limit Texas hold'em, hidden cards (PettingZoo, rlcard)"
    ),
    "go9": _Entry(
        _go9,
        "go_v5 on a 9x9 board: image observations (9x9x17) for a convolutional encoder",
    ),
    "kuhn_poker": _Entry(
        _openspiel("kuhn_poker"),
        "OpenSpiel kuhn_poker through shimmy: exact exploitability",
        openspiel="kuhn_poker",
    ),
    "leduc_poker": _Entry(
        _openspiel("leduc_poker"),
        "OpenSpiel leduc_poker through shimmy: exact exploitability",
        openspiel="leduc_poker",
    ),
    # More than two seats.
    "kuhn_poker_3p": _Entry(
        _openspiel("kuhn_poker", players=3),
        "OpenSpiel kuhn_poker for 3 players: free-for-all, exact NashConv",
        openspiel="kuhn_poker(players=3)",
    ),
    "leduc_poker_3p": _Entry(
        _openspiel("leduc_poker", players=3),
        "OpenSpiel leduc_poker for 3 players: free-for-all, exact NashConv",
        openspiel="leduc_poker(players=3)",
    ),
    "texas_holdem_4p": _Entry(
        functools.partial(_texas_holdem, num_players=4),
        "texas_holdem_v4 for 4 players: limit hold'em free-for-all (PettingZoo, rlcard)",
        aliases=('pettingzoo.classic.texas_holdem_v4:env{"num_players":4}',),
    ),
    "tiny_bridge_4p": _Entry(
        _openspiel("tiny_bridge_4p"),
        "OpenSpiel tiny_bridge_4p: two partnerships (0 and 2 against 1 and 3), exact NashConv",
        openspiel="tiny_bridge_4p",
        teams={"north_south": ("player_0", "player_2"), "east_west": ("player_1", "player_3")},
    ),
    "simple_tag": _Entry(
        _simple_tag,
        "mpe2 simple_tag: 3 predators (one team) chase 1 prey; two sides, simultaneous moves",
        teams={"predators": ("adversary_*",), "prey": ("agent_*",)},
        aliases=("mpe2.simple_tag_v3:parallel_env",),
    ),
    "battle": _Entry(
        _battle,
        "magent2 battle on a 16x16 map: 6 red against 6 blue, simultaneous moves",
        teams={"red": ("red_*",), "blue": ("blue_*",)},
        aliases=('magent2.environments.battle_v4:parallel_env{"map_size":16,"max_cycles":150}',),
    ),
}

REGISTRY_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def make_game_id(reference: str, kwargs: Mapping[str, Any] | None = None) -> str:
    """The one string naming a game and its kwargs (see the module doc)."""
    if not kwargs:
        return reference
    return reference + json.dumps(dict(kwargs), sort_keys=True, separators=(",", ":"))


def split_game_id(game_id: str) -> tuple[str, dict[str, Any]]:
    """(reference, kwargs) of a game id; the inverse of `make_game_id`."""
    if not isinstance(game_id, str) or not game_id.strip():
        raise UnknownGameError(f"a game reference must be a non-empty string, got {game_id!r}")
    brace = game_id.find("{")
    if brace < 0:
        return game_id, {}
    try:
        kwargs = json.loads(game_id[brace:])
    except ValueError as err:
        raise UnknownGameError(f"malformed kwargs in game id {game_id!r}: {err}") from None
    if not isinstance(kwargs, dict):
        raise UnknownGameError(f"kwargs in game id {game_id!r} must be a JSON object")
    return game_id[:brace], kwargs


def import_callable(reference: str, what: str = "game reference") -> Callable[..., Any]:
    """The callable named by ``package.module:attr`` (``what`` names it in errors)."""
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise UnknownGameError(f"{what} {reference!r} must look like package.module:callable")
    # Like `python -m`, uvicorn and gunicorn: the working directory is importable.
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # any import failure is the user's module's
        raise UnknownGameError(
            f"{what} {reference!r}: cannot import module {module_name!r}: "
            f"{type(err).__name__}: {err}"
        ) from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise UnknownGameError(f"{what} {reference!r}: module {module_name!r} has no {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise UnknownGameError(f"{what} {reference!r}: {attr!r} is not callable")
    return target


def import_roots(game_id: str) -> list[str]:
    """Directories a process must have on `sys.path` to import the game's module: Ray
    workers on this machine get them through the env config (envs.adapters); on other
    nodes ship the code with a Ray runtime_env (working_dir or py_modules)."""
    reference, _ = split_game_id(game_id)
    if reference in _REGISTRY or reference.startswith(OPENSPIEL_PREFIX) or ":" not in reference:
        return []
    module_name = reference.partition(":")[0]
    import_callable(reference)
    module = sys.modules[module_name]
    path = getattr(module, "__file__", None)
    if not path:
        return []
    root = os.path.dirname(os.path.abspath(path))
    depth = module_name.count(".") + (1 if os.path.basename(path) == "__init__.py" else 0)
    for _ in range(depth):
        root = os.path.dirname(root)
    return [root]


def add_import_roots(roots: list[str]) -> None:
    """Make a game's module importable here (the other half of `import_roots`)."""
    for root in roots:
        if root not in sys.path:
            sys.path.append(root)


def _factory(reference: str) -> tuple[Callable[..., Any], _Entry | None]:
    if reference in _REGISTRY:
        entry = _REGISTRY[reference]
        return entry.factory, entry
    if reference.startswith(OPENSPIEL_PREFIX):
        name = reference[len(OPENSPIEL_PREFIX) :]
        if not name:
            raise UnknownGameError("game reference 'openspiel:' names no OpenSpiel game")
        return _openspiel(name), _Entry(_openspiel(name), f"OpenSpiel {name}", openspiel=name)
    if ":" in reference:
        return import_callable(reference), None
    known = ", ".join(REGISTRY_NAMES)
    raise UnknownGameError(
        f"unknown game {reference!r}; known games: {known} "
        f"(or package.module:callable, or openspiel:GAME)"
    )


def _wrap(raw: Any, game_id: str) -> tuple[Any, Literal["turn_based", "simultaneous"]]:
    if isinstance(raw, AECEnv):
        return LeagueObservations(raw, game_id), "turn_based"
    if isinstance(raw, ParallelEnv):
        return ParallelLeagueObservations(raw, game_id), "simultaneous"
    raise UnknownGameError(
        f"game {game_id!r}: the callable returned {type(raw).__name__}, "
        f"not a PettingZoo AECEnv or ParallelEnv"
    )


@functools.lru_cache(maxsize=64)
def _resolve(game_id: str) -> Game:
    reference, kwargs = split_game_id(game_id)
    factory, entry = _factory(reference)

    def make_raw() -> Any:
        try:
            return factory(**kwargs)
        except (UnknownGameError, OpenSpielGameError):
            raise
        except TypeError as err:
            if kwargs:
                raise UnknownGameError(
                    f"game {reference!r} rejected env_kwargs {kwargs}: {err}"
                ) from None
            raise UnknownGameError(f"game {reference!r} could not be created: {err}") from None

    try:
        env, kind = _wrap(make_raw(), game_id)
    except (OpenSpielGameError, GameSpaceError) as err:
        raise UnknownGameError(str(err)) from None
    seats = tuple(env.possible_agents)
    space_keys = {seat: space_key(env.adapters[seat]) for seat in seats}
    env.close()

    def make() -> Any:
        return _wrap(make_raw(), game_id)[0]

    return Game(
        name=game_id,
        kind=kind,
        make=make,
        description=entry.description if entry else f"{reference} (imported)",
        openspiel=(entry.openspiel if entry else None)
        and _openspiel_string(entry.openspiel, kwargs),
        seats=seats,
        space_keys=space_keys,
        teams=dict(entry.teams) if entry else {},
    )


def _openspiel_string(name: str | None, kwargs: Mapping[str, Any]) -> str | None:
    if name is None or not kwargs:
        return name
    params = ",".join(f"{k}={v}" for k, v in sorted(kwargs.items()))
    return f"{name}({params})" if "(" not in name else name


def get_game(game_id: str) -> Game:
    """The game a game id (or plain reference) names; UnknownGameError otherwise."""
    return _resolve(game_id)


def game_layout(game_id: str, teams: Mapping[str, Any] | None = None) -> SeatLayout:
    """The game's seats as teams and sides: `teams` (team -> seats or patterns) or
    else the game's own teams; UnknownGameError naming what is wrong with them."""
    game = get_game(game_id)
    try:
        return SeatLayout.from_game(game.seats, game.space_keys, teams or game.teams)
    except SeatLayoutError as err:
        raise UnknownGameError(f"game {game_id!r}: {err}") from None


@functools.lru_cache(maxsize=64)
def game_spaces(game_id: str, side: str = "") -> tuple[gym.Space, gym.Space]:
    """(observation space, action space) of the seats of one side (the only side,
    "", in a game whose seats share their spaces)."""
    layout = game_layout(game_id)
    if side not in layout.sides:
        raise UnknownGameError(
            f"game {game_id!r} has no side {side!r} (sides: {', '.join(layout.sides)})"
        )
    env = get_game(game_id).make()
    agent = layout.seats_of_side(side)[0]
    spaces = env.observation_space(agent), env.action_space(agent)
    env.close()
    return spaces


def canonical_game(reference: str, kwargs: Mapping[str, Any] | None = None) -> tuple[str, dict]:
    """(reference, kwargs) of a game under its registry name when it is a registry
    game reached another way (an `openspiel:` string or an import path), else as given."""
    kwargs = dict(kwargs or {})
    if reference in _REGISTRY:
        return reference, kwargs
    game_id = make_game_id(reference, kwargs)
    for name, entry in _REGISTRY.items():
        if game_id in entry.aliases:
            return name, {}
    if reference.startswith(OPENSPIEL_PREFIX):
        canonical = _openspiel_canonical(reference[len(OPENSPIEL_PREFIX) :], kwargs)
        if canonical is not None:
            for name, entry in _REGISTRY.items():
                if entry.openspiel and _openspiel_canonical(entry.openspiel, {}) == canonical:
                    return name, {}
    return reference, kwargs


@functools.lru_cache(maxsize=256)
def _openspiel_canonical_cached(name: str, params: str) -> str | None:
    import pyspiel

    try:
        game = (
            pyspiel.load_game(name, json.loads(params))
            if params != "{}"
            else pyspiel.load_game(name)
        )
    except (pyspiel.SpielError, RuntimeError, TypeError, ValueError):
        return None  # not a game: resolving it later names the problem
    # Every parameter, defaults filled in: leduc_poker(players=2) is leduc_poker.
    return json.dumps([game.get_type().short_name, game.get_parameters()], sort_keys=True)


def _openspiel_canonical(name: str, params: Mapping[str, Any]) -> str | None:
    return _openspiel_canonical_cached(name, json.dumps(dict(params), sort_keys=True))
