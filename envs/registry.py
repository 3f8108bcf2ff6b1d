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
    train_defaults: Mapping[str, Any] = field(default_factory=dict)
    """TrainConfig values that suit this game best (measured; see README's league
    benchmark). They replace the generic defaults, and config files and flags
    replace them; the nested `league` mapping merges key by key."""
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
    train_defaults: Mapping[str, Any] = field(default_factory=dict)
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


# Settings screened on kuhn_poker (3 minutes, OpenSpiel exploitability of main_0):
# an entropy bonus of 0.05 instead of 0.01 took self-play from 0.26 to 0.08 and the
# league from 0.16 to 0.12; the main gets most learning seats and plays the live
# main exploiter (its best-response probe) often; win rates in poker stay near 1/2,
# so snapshots come from the step budget, made small to grow a population.
_POKER_DEFAULTS: dict[str, Any] = {
    "eval_interval": 10,
    "entropy_coeff": 0.05,
    "league": {
        "main_learner_share": 0.8,
        "main_self_play_prob": 0.5,
        "main_pfsp_prob": 0.1,
        "main_forgotten_prob": 0.1,
        "main_exploiter_prob": 0.3,
        "snapshot_step_budget": 20_000,
    },
}

# The board games' league (README, league benchmark, 15 minutes, 2 cores): the
# main gets most games and mostly plays itself; its one exploiter restarts from
# the main after each of its snapshots (every 50k of its steps) and always plays
# it, so it tracks a best response to the current main, and the main plays it in
# 30% of its games. On connect_four the main then scored 0.68 (seed 0) and 0.37
# (seed 1) head to head against the self-play main (0.41 with the previous mix,
# exploiter from scratch and a league exploiter; 0.29 with the generic mix); on
# tictactoe its second seat improved (sampled exploitability 0.200 against 0.235)
# but stayed behind self-play's; both games add a reference opponent as a league
# member (below).
_BOARD_GAME_LEAGUE: dict[str, Any] = {
    "num_league_exploiters": 0,
    "main_learner_share": 0.8,
    "main_self_play_prob": 0.6,
    "main_pfsp_prob": 0.1,
    "main_forgotten_prob": 0.0,
    "main_exploiter_prob": 0.3,
    "main_exploiter_reset_to": "main",
    "main_exploiter_pfsp_prob": 0.0,
    "snapshot_step_budget": 50_000,
}

# Leduc, screened per main snapshot (6-minute leagues, OpenSpiel exploitability):
# at the poker bonus of 0.05 the main swung between 0.5 and 1.1 with no trend; a
# constant 0.1, 0.15 or 0.3 steadied it at about 0.6, 0.53 and 0.7; annealing the
# bonus from 0.2 and the learning rate to 5e-5 together brought it to 0.45-0.52
# (the bonus alone, to 0.02, reached 0.47 and then swung up to 1.08 once it fell
# below about 0.07); lr 1e-4 alone stayed at 0.63-0.83. Returns reach 13 chips,
# so the squared value error is clipped far above RLlib's 10. The schedules span
# a 15-minute run's env steps on 2 cores. A pull toward a moving magnet with the
# bonus annealed to 0.07 instead of 0.05 (15 minutes, seeds 0 / 1): league main
# 0.4243 / 0.4160 against 0.4898 / 0.6313, self-play 0.5670 / 0.2987 against
# 0.7912 / 1.0041. Sampling ahead (the default since) plays ~2.4M env steps in 15
# minutes: over the old 1.5M the bonus reached its floor a third of the way before
# the end and the league main swung up to 0.6271 (seed 0); over 2.4M, 0.3812 (self-play
# 0.4962 -> 0.3116). So the schedules span the run itself (`anneal_over: run`): a
# slower machine still reaches the floor as the run stops, and a 60-minute run does
# not spend 45 minutes at it (main 0.3345 at 15 minutes, 0.4130 at 60 over 2.4M). On
# a machine a third as fast (~0.7M env steps in 15 minutes, seed 0): self-play
# 0.4023 -> 0.3518, league main 0.5777 -> 0.4947 (README).
# The league as exploitability descent (README, session 17, slow machine, seeds 0 / 1):
# the main plays itself (70%) and its one exploiter (30%), never old snapshots (a
# last iterate trained against past weights drifts toward their best response); the
# exploiter restarts from the main at each snapshot, always plays it and keeps a
# small constant bonus, so it is a sharp best response. Main 0.3607 / 0.2864,
# least-exploitable mixture 0.2838 / 0.2666, against self-play 0.2951 / 0.3667 and
# the poker mix's main 0.4804 / 0.5110 in the same session.
_LEDUC_DEFAULTS: dict[str, Any] = {
    **_POKER_DEFAULTS,
    "league": {
        **_POKER_DEFAULTS["league"],
        "num_league_exploiters": 0,
        "main_self_play_prob": 0.7,
        "main_pfsp_prob": 0.0,
        "main_forgotten_prob": 0.0,
        "main_exploiter_prob": 0.3,
        "main_exploiter_reset_to": "main",
        "main_exploiter_pfsp_prob": 0.0,
        "exploiter_entropy_coeff": 0.01,
    },
    "entropy_coeff": 0.2,
    "entropy_coeff_final": 0.07,
    "magnet_coeff": 0.5,
    "lr_final": 5e-5,
    "anneal_over": "run",
    "anneal_steps": 2_400_000,  # the span when time schedules are unavailable (APPO)
    "vf_clip_param": 1000.0,
}

_REGISTRY: dict[str, _Entry] = {
    "tictactoe": _Entry(
        tictactoe_v3.env,
        "tictactoe_v3: 3x3, two players",
        aliases=("pettingzoo.classic.tictactoe_v3:env",),
        # Random openings and a higher entropy bonus keep self-play off a single
        # deterministic line (plain self-play left the second seat exploitable).
        train_defaults={
            # Measured with MLPs over the board planes (conv encoders untried here).
            "encoder": "mlp",
            "hidden_sizes": [128, 128],
            "lr": 5e-4,
            # 15 minutes, 2 cores (README, league benchmark), exploitability sampled
            # first / second seat: at 0.03 the league main turned deterministic
            # (entropy 0.01; 0.000 / 0.805, greedy second seat lost) and self-play
            # reached 0.005 / 0.303; at 0.06 the league 0.015 / 0.235, self-play
            # 0.038 / 0.112, both greedy 0 / 0.
            "entropy_coeff": 0.06,
            # The league anneals it (below); self-play keeps it constant: annealed to
            # 0.01, self-play's sampled second seat went from 0.112 to 0.385 (seed 0)
            # and from 0.179 to 0.994 (seed 1).
            "anneal_steps": 3_000_000,
            "random_opening_moves": 3,
            "num_epochs": 8,
            "minibatch_size": 500,
            "eval_interval": 10,
            "eval_games": 200,
            # Minimax (uniform over its optimal moves) as a league member in 40% of the
            # main's games: it punishes every blunder on the lines a best response
            # would steer into, which self-play and the exploiter rarely reach. With
            # the annealed bonus, the main's last 10 snapshots' sampled second seat
            # was 0.012 on average (max 0.020) on seed 0 and 0.129 on seed 1, against
            # 0.31 without either and 0.24 with minimax in 20% of games (seed 0;
            # README, league benchmark).
            "league": {
                **_BOARD_GAME_LEAGUE,
                # Annealed to 0.03 over a 15-minute run's env steps: greedy 0 / 0 and
                # sampled at most 0.002 / 0.047 on seeds 0, 1 and 2. To 0.01, seed 0
                # was as sharp but seed 1 lost greedy as second seat and seed 2 as
                # first (its late snapshots' first seat mean 0.157; README).
                "entropy_coeff_final": 0.03,
                "reference_opponents": ["minimax"],
                "main_reference_prob": 0.4,
                "main_self_play_prob": 0.3,
                "main_pfsp_prob": 0.1,
                "main_exploiter_prob": 0.2,
            },
        },
    ),
    "connect_four": _Entry(
        connect_four_v3.env,
        "connect_four_v3: 6x7",
        aliases=("pettingzoo.classic.connect_four_v3:env",),
        train_defaults={
            # One conv layer of 16 4x4 filters (a connect-four line fits one) and a
            # 128-128 head: with the defaults below, head to head against self-play
            # 0.648 (seeds 0 / 1) and 5-minute probe BR wins 0.923 / 0.951 against
            # self-play's 0.981 / 0.982; the 256-256 MLP of earlier sessions left head
            # to head at 0.53-0.57 and 5-minute probes at 0.98-1.00 (README). It
            # sampled 1.6-1.8M env steps in 15 minutes, the MLP 2.2-3.4M (other sessions).
            "encoder": "conv",
            "conv_filters": [[16, 4, 1]],
            "hidden_sizes": [128, 128],
            "random_opening_moves": 2,
            "eval_interval": 10,
            # The two-ply search player as a league member, in a fifth of the main's
            # games (from self-play): head to head against the self-play main 0.72
            # (seed 0) and 0.49 (seed 1), against 0.68 and 0.37 without it (README).
            "league": {
                **_BOARD_GAME_LEAGUE,
                "reference_opponents": ["search"],
                "main_reference_prob": 0.2,
                "main_self_play_prob": 0.4,
                # The search player also teaches every player its tactics (win, block,
                # do not hand over a win; rlmodules/teacher.py): head to head against
                # self-play mean 0.555 over seeds 0 / 1 and 0.566 over seeds 2 / 3
                # (0.37-0.52 without), 1-minute probe BR wins 0.72 / 0.87 / 0.73 / 0.95
                # against self-play's 0.99 / 0.94 / 0.99 / 0.87 (README).
                "teacher": "search",
                "teacher_coeff": 0.5,
            },
        },
    ),
    "rps": _Entry(
        rps_v2.parallel_env,
        "rps_v2: 15 simultaneous rounds",
        aliases=("pettingzoo.classic.rps_v2:parallel_env",),
        # Strategies cycle: a strong entropy bonus (a uniform magnet, as in magnetic
        # mirror descent) damps the cycle, and games against the live main
        # exploiter push the main down its exploitability (3-minute screening:
        # league 0.03-0.06 per round, self-play 0.12-0.21; 15 minutes with the
        # current defaults: league 0.030, self-play 0.056; see README).
        train_defaults={
            "entropy_coeff": 0.3,
            "league": {
                "main_self_play_prob": 0.2,
                "main_pfsp_prob": 0.35,
                "main_forgotten_prob": 0.15,
                "main_exploiter_prob": 0.3,
            },
        },
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
        train_defaults={"eval_interval": 10, "eval_games": 20},
    ),
    "kuhn_poker": _Entry(
        _openspiel("kuhn_poker"),
        "OpenSpiel kuhn_poker through shimmy: exact exploitability",
        train_defaults=_POKER_DEFAULTS,
        openspiel="kuhn_poker",
    ),
    "leduc_poker": _Entry(
        _openspiel("leduc_poker"),
        "OpenSpiel leduc_poker through shimmy: exact exploitability",
        train_defaults=_LEDUC_DEFAULTS,
        openspiel="leduc_poker",
    ),
    # More than two seats.
    # Three players take leduc's exploitability descent: screened on kuhn_poker_3p over
    # 1.5M env steps (a loaded machine, so steps, not minutes), the main's NashConv was
    # 0.18-0.19 at 430k steps and falling, against 0.38-0.45 with the poker mix above
    # and 0.32 for plain self-play at 490k.
    "kuhn_poker_3p": _Entry(
        _openspiel("kuhn_poker", players=3),
        "OpenSpiel kuhn_poker for 3 players: free-for-all, exact NashConv",
        train_defaults=_LEDUC_DEFAULTS,
        openspiel="kuhn_poker(players=3)",
    ),
    "leduc_poker_3p": _Entry(
        _openspiel("leduc_poker", players=3),
        "OpenSpiel leduc_poker for 3 players: free-for-all, exact NashConv",
        train_defaults=_LEDUC_DEFAULTS,
        openspiel="leduc_poker(players=3)",
    ),
    "texas_holdem_4p": _Entry(
        functools.partial(_texas_holdem, num_players=4),
        "texas_holdem_v4 for 4 players: limit hold'em free-for-all (PettingZoo, rlcard)",
        train_defaults=_POKER_DEFAULTS,
        aliases=('pettingzoo.classic.texas_holdem_v4:env{"num_players":4}',),
    ),
    "tiny_bridge_4p": _Entry(
        _openspiel("tiny_bridge_4p"),
        "OpenSpiel tiny_bridge_4p: two partnerships (0 and 2 against 1 and 3), exact NashConv",
        train_defaults=_POKER_DEFAULTS,
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
        train_defaults=entry.train_defaults if entry else {},
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


def registry_defaults(game_id: str) -> Mapping[str, Any]:
    """A registry game's measured `train_defaults`, without creating its env."""
    reference, _ = split_game_id(game_id)
    entry = _REGISTRY.get(reference)
    return entry.train_defaults if entry else {}


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
    text = str(game)
    return text[:-2] if text.endswith("()") else text


def _openspiel_canonical(name: str, params: Mapping[str, Any]) -> str | None:
    return _openspiel_canonical_cached(name, json.dumps(dict(params), sort_keys=True))
