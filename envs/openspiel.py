"""OpenSpiel games as PettingZoo AEC envs, through shimmy's compatibility env.

`OpenSpielEnv` is shimmy's `OpenSpielCompatibilityV0` with three fixes measured
here (shimmy 2.0.1): its `reset` reloads the game by short name, dropping the
parameters of `leduc_poker(players=2)`-style games, and it counts chance nodes
against `max_game_length()` (which excludes them), so kuhn_poker was truncated
after its first move; its end-of-game steps counted one seat's final reward twice
or not at all, so PettingZoo's own `_was_dead_step` takes them. Chance outcomes are
drawn by `play_chance` (shimmy's draw cost more than the rest of a poker step), from
the generator `reset` seeds, as shimmy's. Everything else (masks in `info`, rewards,
seat order) is shimmy's.

Shimmy gives a seat the game's `observation_tensor` when the game has one. For
imperfect-information games that is often not a perfect-recall view (Leduc's
leaves out the betting history), so `InformationStateObservations` gives each
seat its `information_state_tensor` instead whenever the game provides one: what
OpenSpiel's own RL examples learn from and what its exact `exploitability`
assumes a policy conditions on. `observation_for(state, player)` computes the
same tensor from a bare OpenSpiel state, for exact exploitability.

pyspiel is imported lazily: games that don't come from OpenSpiel never load it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from pettingzoo.utils.wrappers import BaseWrapper

PREFIX = "openspiel:"


class OpenSpielGameError(ValueError):
    """An OpenSpiel game that does not exist or that the league cannot play."""


def load_openspiel_game(name: str, params: dict[str, Any] | None = None) -> Any:
    """`pyspiel.load_game` for a game of two or more players, with one-line errors; a
    simultaneous-move game comes back turn-based (`pyspiel.convert_to_turn_based`).

    `name` may carry parameters in OpenSpiel's own syntax: `leduc_poker(players=2)`.
    """
    import pyspiel

    try:
        game = pyspiel.load_game(name, params) if params else pyspiel.load_game(name)
    except (pyspiel.SpielError, RuntimeError, TypeError, IndexError, KeyError, ValueError) as err:
        raise OpenSpielGameError(
            f"OpenSpiel cannot load {name!r}{f' with {params}' if params else ''}: "
            f"{str(err).strip().splitlines()[0] if str(err).strip() else err!r} "
            f"(pyspiel.registered_names() lists the games)"
        ) from None
    kind = game.get_type()
    if kind.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        # OpenSpiel's own conversion: the seats move one after another, each unseen by
        # the others until all have moved (hidden moves), so exact measures still apply.
        game = pyspiel.convert_to_turn_based(game)
        kind = game.get_type()
    if game.num_players() < 2:
        raise OpenSpielGameError(
            f"OpenSpiel game {name!r} has {game.num_players()} player(s); a league needs two "
            f"or more"
        )
    if kind.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        raise OpenSpielGameError(
            f"OpenSpiel game {name!r} is {kind.dynamics}; the league plays sequential "
            f"(turn-based) OpenSpiel games"
        )
    if not (kind.provides_information_state_tensor or kind.provides_observation_tensor):
        raise OpenSpielGameError(
            f"OpenSpiel game {name!r} provides no observation tensor to learn from"
        )
    return game


@functools.lru_cache(maxsize=64)
def _needs_mixed_play(name: str, params_json: str) -> bool | None:
    import pyspiel

    try:
        kind = load_openspiel_game(name, json.loads(params_json)).get_type()
    except OpenSpielGameError:
        return None
    return kind.information != pyspiel.GameType.Information.PERFECT_INFORMATION


def needs_mixed_play(name: str, params: Mapping[str, Any] | None = None) -> bool | None:
    """Whether an OpenSpiel game, as the league plays it, may need mixed play at
    equilibrium: it hides something from a seat (imperfect information; a
    simultaneous game's turn-based conversion hides the moves made at once). A
    sequential game of perfect information has a pure equilibrium (Zermelo); these
    may not, so the league's defaults keep their policies stochastic. None: no game.
    Cached: config resolution asks on every `TrainConfig`."""
    return _needs_mixed_play(name, json.dumps(dict(params or {}), sort_keys=True))


def play_chance(state: Any, rng: np.random.Generator) -> None:
    """Applies chance outcomes, each drawn by its probability, until a seat is to move
    (or the game ends). One uniform number per draw against the running sum of the
    probabilities: numpy's `choice(..., p=...)` validates `p` on every call, about
    6 us each, and a poker deal is several draws every few steps."""
    while state.is_chance_node():
        outcomes = state.chance_outcomes()
        threshold, total = rng.random(), 0.0
        action = outcomes[-1][0]  # if rounding left the sum short of the draw
        for candidate, probability in outcomes:
            total += probability
            if threshold < total:
                action = candidate
                break
        state.apply_action(action)


def _uses_information_state(game: Any) -> bool:
    return bool(game.get_type().provides_information_state_tensor)


def observation_for(game: Any, state: Any, player: int) -> np.ndarray:
    """What `make_openspiel_env`'s env shows `player` in `state` (float32 tensor)."""
    if _uses_information_state(game):
        return np.asarray(state.information_state_tensor(player), np.float32)
    return np.asarray(state.observation_tensor(player), np.float32).reshape(
        game.observation_tensor_shape()
    )


class InformationStateObservations(BaseWrapper):
    """Seats observe `observation_for(game, state, seat)` (see the module doc)."""

    def __init__(self, env: Any, game: Any):
        super().__init__(env)
        self._game = game
        shape = (
            tuple(game.information_state_tensor_shape())
            if _uses_information_state(game)
            else tuple(game.observation_tensor_shape())
        )
        self._space = gym.spaces.Box(-np.inf, np.inf, shape, np.float32)
        self._players = {agent: i for i, agent in enumerate(env.possible_agents)}

    def observation_space(self, agent: str) -> gym.Space:
        return self._space

    def observe(self, agent: str) -> np.ndarray:
        state = self.env.unwrapped.game_state
        if state.is_terminal():  # never acted on; the tensor may be undefined there
            return np.zeros(self._space.shape, np.float32)
        return observation_for(self._game, state, self._players[agent])


def _openspiel_env_class() -> type:
    from gymnasium.utils import seeding
    from shimmy import OpenSpielCompatibilityV0

    class OpenSpielEnv(OpenSpielCompatibilityV0):
        """Shimmy's env on the very game object given (see the module doc)."""

        def __init__(self, game: Any):
            super().__init__(env=game)
            self._game = game

        def reset(self, seed: int | None = None, options: dict | None = None) -> None:
            self.np_random, self.np_seed = seeding.np_random(seed)
            self._env = self._game
            self.agents = self.possible_agents[:]
            self._cumulative_rewards = {a: 0.0 for a in self.agents}
            self.rewards = {a: 0.0 for a in self.agents}
            self.terminations = {a: False for a in self.agents}
            self.truncations = {a: False for a in self.agents}
            self.infos = {a: {} for a in self.agents}
            self.game_length = 0  # decisions only, as max_game_length() counts them
            self.game_state = self._game.new_initial_state()
            self.simultaneous_actions = {}
            self._execute_chance_node()
            self._update_action_masks()
            self._update_observations()
            self._choose_next_agent()

        def step(self, action: Any) -> None:
            agent = self.agent_selection
            if self.terminations[agent] or self.truncations[agent]:
                self._was_dead_step(action)
                return
            super().step(action)

        def _execute_chance_node(self) -> None:
            play_chance(self.game_state, self.np_random)

    return OpenSpielEnv


def make_openspiel_env(name: str, **params: Any) -> Any:
    """A PettingZoo AEC env for the OpenSpiel game `name` (parameters as keywords)."""
    game = load_openspiel_game(name, params or None)
    return InformationStateObservations(_openspiel_env_class()(game), game)
