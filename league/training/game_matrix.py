"""The compatibility matrix: which installed games the league trains, and why not the others.

`check_game` takes one game reference the way `league train --env` does and, for a
game it accepts, plays one episode by uniformly random legal moves through the
PettingZoo env, then builds the league's env runner for it (in this process, no Ray
actors) and samples a few steps with the network the game would train; for a game it
refuses, it keeps the one-line reason and files it under a group (`REASON_GROUPS`):
each group is a feature the project lacks or a limit of the game itself.
`every_game` lists what is installed: every OpenSpiel game that loads with its
default parameters (two players or more) and every environment of the PettingZoo
families installed (classic, butterfly, sisl, mpe2, magent2).
`scripts/game_matrix.py` writes the matrix to `docs/games.md`.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from envs.registry import REGISTRY_NAMES, UnknownGameError, game_layout, game_spaces, get_game
from league.config import TrainConfig
from rlmodules.network_options import resolve_encoder

PETTINGZOO_FAMILIES = (
    ("pettingzoo.classic", "env"),
    ("pettingzoo.butterfly", "parallel_env"),
    ("pettingzoo.sisl", "parallel_env"),
    ("mpe2", "parallel_env"),
    ("magent2.environments", "parallel_env"),
)
_VERSIONED = re.compile(r"_v[0-9]+$")

REASON_GROUPS: tuple[tuple[str, str], ...] = (
    ("needs package", "needs a package that is not installed (install it to train the game)"),
    ("is not Discrete", "continuous or composite actions: the league trains Discrete actions"),
    ("player(s); a league needs", "one player: a league needs two or more"),
    ("seat(s)", "one seat: a league needs two or more"),
    ("no observation tensor", "the game provides no observation tensor to learn from"),
    ("cannot train on observation space", "observations the league cannot encode (text)"),
    ("cannot load", "OpenSpiel needs parameters to load it (no default game)"),
)
"""(text in the refusal, the group it belongs to), the first match wins."""


@dataclass(frozen=True)
class GameRow:
    reference: str
    family: str
    status: str
    """'trains' or 'refused'."""
    reason: str = ""
    group: str = ""
    kind: str = ""
    seats: int = 0
    sides: int = 0
    teams: int = 0
    observation: str = ""
    encoder: str = ""
    episode_ms: float = 0.0
    episode_steps: int = 0


def reason_group(reason: str) -> str:
    missing = re.search(r"No module named '([A-Za-z0-9_]+)", reason)
    if missing:
        return (
            f"needs the package `{missing.group(1)}`, not installed (install it to train the game)"
        )
    for needle, group in REASON_GROUPS:
        if needle in reason:
            return group
    return "other: " + reason


def check_game(
    reference: str, family: str = "", *, max_steps: int = 20_000, sample_steps: int = 64
) -> GameRow:
    """One row of the matrix (see the module doc); never raises for a game's fault."""
    try:
        game = get_game(reference)
        layout = game_layout(reference)
    except UnknownGameError as err:
        return _refused(reference, family, str(err))
    except ImportError as err:  # an extra package the game imports
        return _refused(reference, family, f"cannot import: No module named '{err.name}'")
    try:
        model = TrainConfig.from_dict({"env": reference}, source=reference).model.network()
        shapes, encoders = [], []
        for side in layout.sides:
            obs_space, _ = game_spaces(reference, side)
            shape = tuple(obs_space["observation"].shape)
            shapes.append("x".join(map(str, shape)))
            encoders.append(resolve_encoder(shape, model))
        millis, steps = _random_episode(reference, max_steps)
        _sample_with_env_runner(reference, sample_steps)
    except Exception as err:  # the game failed when played: a row, not a crash
        text = " ".join(f"{type(err).__name__}: {err}".split())[:300]
        return _refused(reference, family, f"failed when played: {text}")
    return GameRow(
        reference,
        family,
        "trains",
        kind=game.kind,
        seats=len(layout.seats),
        sides=len(layout.sides),
        teams=len(layout.teams),
        observation=" / ".join(dict.fromkeys(shapes)),
        encoder=" / ".join(dict.fromkeys(encoders)),
        episode_ms=millis,
        episode_steps=steps,
    )


def _refused(reference: str, family: str, reason: str) -> GameRow:
    reason = " ".join(reason.split())
    return GameRow(reference, family, "refused", reason=reason, group=reason_group(reason))


def _random_episode(reference: str, max_steps: int) -> tuple[float, int]:
    """Milliseconds and env steps of one game of uniformly random legal moves."""
    from league.tools.evaluation import Episode

    rng = np.random.default_rng(0)
    game = get_game(reference)
    env = game.make()

    def random_legal(obs: Any) -> int:
        return int(rng.choice(np.flatnonzero(obs["action_mask"])))

    choosers = dict.fromkeys(env.possible_agents, random_legal)
    started = time.perf_counter()
    steps = 0
    try:
        for _ in Episode(env, choosers, seed=0, turn_based=game.kind == "turn_based").steps():
            steps += 1
            if steps >= max_steps:
                break
    finally:
        env.close()
    return 1000.0 * (time.perf_counter() - started), steps


def _sample_with_env_runner(reference: str, steps: int) -> None:
    """Build the env runner `league train` would (self-play, in this process) and sample."""
    from league.training.algorithm import build_algorithm_config, env_runner_class

    cfg = TrainConfig.from_dict(
        {
            "env": reference,
            "mode": "selfplay",
            "num_env_runners": 0,
            "num_envs_per_env_runner": 2,
            "train_batch_size": 200,
            "minibatch_size": 100,
            "hidden_sizes": [16],
            "conv_filters": [[4, 3, 2]],
            "eval_interval": 0,
        },
        source=reference,
    )
    runner = env_runner_class(cfg)(config=build_algorithm_config(cfg))
    try:
        runner.sample(num_timesteps=steps)
    finally:
        runner.stop()


def every_game() -> Iterator[tuple[str, str]]:
    """(reference, family) of every game installed: the registry, OpenSpiel's games
    that load with default parameters (two players or more), PettingZoo's families."""
    for name in REGISTRY_NAMES:
        yield name, "registry"
    import pyspiel

    for name in sorted(pyspiel.registered_names()):
        try:
            players = pyspiel.load_game(name).num_players()
        except Exception:  # noqa: BLE001 - pyspiel raises SpielError, IndexError, ...
            yield f"openspiel:{name}", "openspiel"  # refused with OpenSpiel's reason
            continue
        if players >= 2:
            yield f"openspiel:{name}", "openspiel"
    for package, factory in PETTINGZOO_FAMILIES:
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        for info in pkgutil.iter_modules(module.__path__):
            if _VERSIONED.search(info.name):
                yield f"{package}.{info.name}:{factory}", package
