"""Training hyperparameters: one typed dataclass, loadable from YAML or TOML.

Every field has a default and help text, and may list its allowed values
(`choices`). `league train` turns every field into a flag from this metadata
(league.cli_flags), so the flags, their help and the config keys cannot drift apart.

Every way to make a run's settings resolves them in one order (`resolve_config`),
highest first: the values given (keyword arguments, flags), a config file, a resumed
run's stored config.json, the preset named, the game's measured settings
(league/presets.yaml), the field defaults. `TrainConfig(**values)` resolves the same
way: `TrainConfig(env="connect_four")` is connect_four's settings, as a user of the
CLI gets them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import reprlib
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from envs.opponents import make_opponent
from envs.registry import (
    REGISTRY_NAMES,
    canonical_game,
    game_layout,
    get_game,
    make_game_id,
)
from league.core.config import LeagueConfig
from league.core.config import field_help as _help
from league.core.ids import MAIN, parse_module_id
from league.core.league import check_league_fits_layout
from league.core.seats import SeatLayout
from league.presets import (
    PresetError,
    game_settings,
    merge_settings,
    preset_names,
    preset_settings,
)
from league.run import RunDir
from league.store.base import DEFAULT_KEEP_MATCHES, SUPPORTED_SCHEMES
from rlmodules.network_options import (
    ACTIVATION_NAMES,
    DEFAULT_ACTIVATION,
    DEFAULT_CONV_FILTERS,
    DEFAULT_HIDDEN_SIZES,
    ENCODERS,
    check_conv_filters,
)


class ConfigError(ValueError):
    """A config file or value that cannot be used."""


MODES = ("league", "selfplay")
ALGOS = ("ppo", "appo")


ANNEAL_OVER = ("steps", "run")


def _schedule(start: float, final: float | None, steps: int) -> float | list[list[float]]:
    """A constant, or RLlib's piecewise-linear schedule from start to final."""
    return start if final is None else [[0, start], [steps, final]]


@dataclass(init=False)
class TrainConfig:
    """Every setting of a training run. One typed field with help text per setting:
    the repetition is deliberate boilerplate, the one source of `league train`'s
    flags, config-file keys and their help.

    Built from keyword arguments only; the values not given come from the preset
    named, then the game's measured settings, then the field defaults (the module
    doc's order). `dataclasses.replace` gives every field, so it keeps the values it
    is given: a replaced `env` keeps the old game's settings.
    """

    env: str = field(
        default="tictactoe",
        metadata=_help(
            "Game: a registry name (" + ", ".join(REGISTRY_NAMES) + "), "
            "package.module:callable returning a PettingZoo env, or "
            "openspiel:GAME(param=value,...)."
        ),
    )
    env_kwargs: dict[str, Any] = field(
        default_factory=dict,
        metadata=_help(
            "Keyword arguments for the game's callable or OpenSpiel parameters "
            "(a JSON object on the command line)."
        ),
    )
    teams: dict[str, list[str]] = field(
        default_factory=dict,
        metadata=_help(
            "Teams: team name -> its seats (names, or patterns such as red_*), a JSON object "
            "on the command line; seats no team names play alone. Empty: the game's own teams "
            "(tiny_bridge_4p's partnerships, simple_tag's predators and prey, battle's red "
            "and blue) or every seat alone. One module plays every seat of its team."
        ),
    )
    preset: str | None = field(
        default=None,
        metadata=_help(
            "Named settings from league/presets.yaml applied over the game's own: board "
            "(the board games' league mix), poker, descent (the league as exploitability "
            "descent, schedules over the run). Works for any game; flags and --config "
            "still win."
        ),
    )
    mode: str = field(
        default="league",
        metadata=_help(
            "league (roles, PFSP, snapshots) or selfplay (the plain baseline).", choices=MODES
        ),
    )
    run_dir: str = field(
        default="runs/default",
        metadata=_help("Directory for checkpoints, player snapshots and logs."),
    )
    stop_timesteps: int | None = field(
        default=None, metadata=_help("Stop after this many env steps (total, across resumes).")
    )
    stop_minutes: float | None = field(
        default=None, metadata=_help("Stop after this many minutes of wall time in this process.")
    )
    default_stop_minutes: float = field(
        default=10.0, metadata=_help("Wall-time budget used when neither stop flag is given.")
    )
    num_env_runners: int = field(
        default=1, metadata=_help("Env-runner actors (0 = sample in the driver process).")
    )
    num_envs_per_env_runner: int = field(
        default=64,
        metadata=_help(
            "Game copies per env runner (the batched runner's forward passes cover them all)."
        ),
    )
    env_runner: str = field(
        default="auto",
        metadata=_help(
            "Env runner: batched (many game copies, one forward pass per module per step; "
            "turn-based and simultaneous-move games), rllib (RLlib's MultiAgentEnvRunner), "
            "auto (batched).",
            choices=("auto", "batched", "rllib"),
        ),
    )
    random_opening_moves: int = field(
        default=0,
        metadata=_help(
            "Turn-based games: start each training episode after 0..N random legal moves "
            "(more diverse positions for self-play; evaluation always starts empty)."
        ),
    )
    num_cpus: int | None = field(
        default=None, metadata=_help("CPUs for a local Ray instance (none = all).")
    )
    # Scaling out: learner actors and where env runners go (docs/cluster.md, "Scaling out")
    num_learners: int = field(
        default=0,
        metadata=_help(
            "Learner actors: 0 = update in the driver (or coordinator) process; 1 = one "
            "remote learner actor (its own process, on any node with its resources, e.g. "
            "a GPU node); 2 or more = data-parallel learners (torch DDP, gloo on CPU; "
            "PPO only), each training on whole games of the iteration's batch."
        ),
    )
    num_cpus_per_learner: float | None = field(
        default=None,
        metadata=_help("CPUs per learner actor (none = RLlib's auto: 1, or 0 with a GPU)."),
    )
    num_gpus_per_learner: float = field(
        default=0.0,
        metadata=_help(
            "GPUs per learner (a fraction < 1 shares a GPU); the learner's modules and "
            "tensors live on it. With num_learners 0 the driver process uses the GPU."
        ),
    )
    env_runner_resources: dict[str, float] = field(
        default_factory=dict,
        metadata=_help(
            "Custom Ray resources each env runner asks for (RLlib's "
            'custom_resources_per_env_runner), e.g. {"runner_node": 1} to place runners on '
            "nodes started with `ray start --resources`."
        ),
    )
    env_runner_probe_timeout_s: float = field(
        default=30.0,
        metadata=_help(
            "Seconds each iteration waits for a failed env runner (e.g. its node died) to "
            "answer after Ray restarted it; training goes on without it meanwhile."
        ),
    )
    verbose: bool = field(
        default=False,
        metadata=_help(
            "Show Ray's and RLlib's own log lines and warnings on the console; off, they go "
            "to RUN_DIR/logs/ray.log (and the actors' logs to RUN_DIR/logs/ray-session)."
        ),
    )
    dashboard: bool = field(
        default=True,
        metadata=_help(
            "Start the Ray dashboard with a local Ray instance and print its address "
            "(actors, logs, metrics); off saves about 1 s of start-up and a few processes."
        ),
    )
    seed: int = field(default=0, metadata=_help("Seed for RLlib, evaluation and matchmaking."))
    algo: str = field(
        default="ppo",
        metadata=_help(
            "ppo (synchronous: runners wait for each update) or appo (asynchronous: runners "
            "keep sampling while the learner updates, V-trace corrects for the lag; "
            "ignores minibatch_size, num_epochs and lambda_).",
            choices=ALGOS,
        ),
    )
    sample_ahead: bool = field(
        default=True,
        metadata=_help(
            "PPO with remote env runners: the runners sample the next train batch while "
            "the learner trains on this one (each batch is played with weights one update "
            "older; PPO's ratio uses the log-probs it was played with). APPO always does; "
            "--no-sample-ahead gives RLlib's PPO step unchanged."
        ),
    )
    # PPO (APPO uses lr, gamma, clip_param, entropy_coeff, vf_loss_coeff, train_batch_size)
    train_batch_size: int = field(default=4000, metadata=_help("Env steps per training iteration."))
    minibatch_size: int = field(default=500, metadata=_help("PPO SGD minibatch size."))
    num_epochs: int = field(default=6, metadata=_help("PPO epochs over each train batch."))
    lr: float = field(default=3e-4, metadata=_help("Adam learning rate."))
    lr_final: float | None = field(
        default=None,
        metadata=_help(
            "Anneal the learning rate linearly from lr to this over anneal_steps env "
            "steps, then keep it (RLlib's lr schedule); none keeps lr constant."
        ),
    )
    gamma: float = field(default=0.99, metadata=_help("Discount factor."))
    lambda_: float = field(default=0.95, metadata=_help("GAE lambda."))
    clip_param: float = field(default=0.2, metadata=_help("PPO clip parameter."))
    entropy_coeff: float = field(default=0.01, metadata=_help("Entropy bonus coefficient."))
    entropy_coeff_final: float | None = field(
        default=None,
        metadata=_help(
            "Anneal the players' entropy bonus (entropy_coeff, or league.entropy_coeff in "
            "league mode) linearly to this over anneal_steps env steps; none keeps it "
            "constant. Exploiters with league.exploiter_entropy_coeff keep theirs."
        ),
    )
    anneal_steps: int = field(
        default=3_000_000,
        metadata=_help(
            "Env steps (all players together, RLlib's lifetime count) over which lr and "
            "the entropy bonus reach lr_final and entropy_coeff_final."
        ),
    )
    anneal_over: str = field(
        default="steps",
        metadata=_help(
            "What the lr and entropy-bonus schedules span: 'steps', anneal_steps env steps "
            "(RLlib's schedule); 'run', the run itself: its stop_minutes of training time "
            "(default_stop_minutes when no stop is given) or else its stop_timesteps, so "
            "a slower machine or a longer run still gets the whole schedule, ending at "
            "the final values as the run stops. A resumed run anneals what is left over "
            "its new budget. Time needs ppo with sample_ahead and env runners; "
            "otherwise the schedules span anneal_steps.",
            choices=ANNEAL_OVER,
            noun="anneal_over value",
        ),
    )
    vf_loss_coeff: float = field(default=0.5, metadata=_help("Value loss coefficient."))
    vf_clip_param: float = field(
        default=10.0,
        metadata=_help(
            "PPO clips each sample's squared value error at this (RLlib's vf_clip_param): "
            "errors beyond it teach the value head nothing, so it must exceed the squared "
            "return scale (poker returns reach 13 chips)."
        ),
    )
    kl_coeff: float = field(
        default=0.2,
        metadata=_help(
            "PPO's initial KL penalty coefficient (RLlib's kl_coeff): each update's "
            "mean KL from the policy that played the batch, times a coefficient RLlib "
            "raises 1.5x when the KL passes twice kl_target and halves below half of "
            "it; 0 turns the KL term off (use_kl_loss False), leaving the clip."
        ),
    )
    kl_target: float = field(
        default=0.01, metadata=_help("The mean KL per update PPO's KL coefficient steers to.")
    )
    magnet_coeff: float = field(
        default=0.0,
        metadata=_help(
            "Add magnet_coeff * KL(policy || magnet) to each player's loss, the magnet a "
            "frozen copy of the player refreshed every magnet_interval iterations "
            "(adaptively perturbed mirror descent: steadies the last iterate); 0 = off."
        ),
    )
    magnet_interval: int = field(
        default=10,
        metadata=_help("Training iterations between refreshes of each player's magnet."),
    )
    # Model
    hidden_sizes: list[int] = field(
        default_factory=lambda: list(DEFAULT_HIDDEN_SIZES),
        metadata=_help("Hidden layer sizes of policy and value MLPs."),
    )
    activation: str = field(
        default=DEFAULT_ACTIVATION,
        metadata=_help("Hidden-layer activation.", choices=sorted(ACTIVATION_NAMES)),
    )
    encoder: str = field(
        default="auto",
        metadata=_help(
            "Observation encoder: auto (conv for H x W x C boards and images, else mlp), "
            "mlp, or conv.",
            choices=ENCODERS,
        ),
    )
    conv_filters: list[list[int]] = field(
        default_factory=lambda: [list(f) for f in DEFAULT_CONV_FILTERS],
        metadata=_help(
            "Conv layers as RLlib's conv_filters: [[out_channels, kernel, stride], ...] "
            "(JSON on the command line)."
        ),
    )
    # Learner-only modules (rlmodules.shared_value, rlmodules.world_model)
    shared_vf: bool = field(
        default=False,
        metadata=_help(
            "One learner-only value function for all trainable players (input: observation "
            "+ player one-hot); PPO's advantages use it and the policies carry no value head."
        ),
    )
    centralized_critic: bool = field(
        default=False,
        metadata=_help(
            "With shared_vf, on simultaneous-move games (rps, battle) only: the critic sees "
            "all seats' observations (MAPPO-style centralized critic), or in a team game "
            "every teammate's (the team's critic; battle's six)."
        ),
    )
    world_model: bool = field(
        default=False,
        metadata=_help(
            "Train a learner-only world model predicting each player's next observation, "
            "reward and game end from observation and action (own loss and optimizer)."
        ),
    )
    curiosity_coeff: float = field(
        default=0.0,
        metadata=_help(
            "With world_model: add this times the world model's next-observation error to "
            "the rewards (ICM-style curiosity); 0 = off."
        ),
    )
    # Evaluation and checkpoints
    eval_interval: int = field(
        default=5,
        metadata=_help("Evaluate against reference opponents every N iterations (0 = never)."),
    )
    eval_games: int = field(
        default=100, metadata=_help("Games per seat and opponent at each evaluation.")
    )
    checkpoint_interval: int = field(
        default=10, metadata=_help("Write a checkpoint every N iterations (and always at the end).")
    )
    store: str | None = field(
        default=None,
        metadata=_help(
            "League store URL: none = SQLite file in the run dir; sqlite:///path; "
            "redis://[:password@]host:port/db or rediss:// (TLS). Name the password as an "
            "environment variable, redis://:${NAME}@host:port/db: no file holds it then."
        ),
    )
    keep_checkpoints: int = field(
        default=2,
        metadata=_help(
            "Checkpoints kept in RUN_DIR/checkpoints, newest first; a checkpoint folder "
            "holding a file named KEEP is never deleted."
        ),
    )
    retired_snapshots: str = field(
        default="delete",
        metadata=_help(
            "What happens to a snapshot's folder once the league retires it (at the next "
            "checkpoint, when nothing refers to it): delete, or archive (moved to "
            "RUN_DIR/archive/snapshots).",
            choices=("delete", "archive"),
            noun="retired_snapshots value",
        ),
    )
    store_retention: int = field(
        default=DEFAULT_KEEP_MATCHES,
        metadata=_help(
            "Match records the league store keeps; older iterations' matches are folded "
            "into per-matchup game counts, so the store stays near a fixed size (about "
            "300 bytes a match on two-player games: 3 MB at the default). 0 = keep every "
            "match."
        ),
    )
    league: LeagueConfig = field(
        default_factory=LeagueConfig,
        metadata=_help("League rules (league.core.config.LeagueConfig); a nested mapping."),
    )
    episodes_to_numpy: bool = field(
        default=False,
        metadata=_help(
            "RLlib's runner (env_runner rllib): its per-step numpy conversion of finished "
            "episodes (slow; off). The batched runners always convert once per game."
        ),
    )

    def __init__(self, **given: Any) -> None:
        values = with_game_defaults(given)
        fields = {f.name: f for f in dataclasses.fields(self)}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise TypeError(f"TrainConfig got unknown settings {unknown}")
        for name, f in fields.items():
            setattr(self, name, values[name] if name in values else field_default(f))
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.env_kwargs, dict):
            raise ConfigError(f"env_kwargs must be a mapping, got {short_repr(self.env_kwargs)}")
        if _node_count(self.env_kwargs, MAX_ENV_KWARGS_NODES) > MAX_ENV_KWARGS_NODES:
            raise ConfigError(f"env_kwargs has more than {MAX_ENV_KWARGS_NODES:,} values")
        try:
            json.dumps(self.env_kwargs, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"env_kwargs must be plain JSON values: {err}") from None
        try:
            check_conv_filters(self.conv_filters)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        # One game, one name: a registry game reached by another reference is named
        # by its registry name (and so gets its teams and defaults).
        self.env, self.env_kwargs = canonical_game(self.env, self.env_kwargs)
        get_game(self.game)  # UnknownGameError, as everywhere a game reference is refused
        for f in dataclasses.fields(self):
            check_choice(f, getattr(self, f.name))
        if isinstance(self.league, dict):
            try:
                self.league = LeagueConfig.from_dict(self.league)
            except ValueError as err:
                raise ConfigError(f"league: {err}") from err
        if not isinstance(self.teams, dict):
            raise ConfigError(f"teams must be a mapping, got {short_repr(self.teams)}")
        layout = self.layout  # UnknownGameError naming a bad `teams`
        try:
            check_league_fits_layout(self.league, layout)
        except ValueError as err:
            raise ConfigError(f"league: {err}") from None
        if self.preset is not None and self.preset not in preset_names():
            raise ConfigError(
                f"unknown preset {self.preset!r}; known presets: {', '.join(preset_names())}"
            )
        self._check_reference_opponents()
        for name in (
            "num_envs_per_env_runner",
            "train_batch_size",
            "minibatch_size",
            "num_epochs",
            "anneal_steps",
            "magnet_interval",
            "keep_checkpoints",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in (
            "num_env_runners",
            "eval_interval",
            "eval_games",
            "checkpoint_interval",
            "store_retention",
            "random_opening_moves",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.stop_timesteps is not None and self.stop_timesteps < 1:
            raise ConfigError(f"stop_timesteps must be >= 1, got {self.stop_timesteps}")
        if self.stop_minutes is not None and self.stop_minutes <= 0:
            raise ConfigError(f"stop_minutes must be > 0, got {self.stop_minutes}")
        if self.algo == "appo" and self.shared_vf:
            raise ConfigError(
                "shared_vf needs algo ppo: APPO's V-trace uses each policy's own value head"
            )
        if self.algo == "ppo" and self.minibatch_size > self.train_batch_size:
            raise ConfigError("minibatch_size must not exceed train_batch_size")
        if not self.hidden_sizes or any(h < 1 for h in self.hidden_sizes):
            raise ConfigError(f"hidden_sizes must be positive ints, got {self.hidden_sizes}")
        self._check_ranges()
        self._check_learner_only_switches()

    def _check_learner_only_switches(self) -> None:
        """Switch combinations that would silently do nothing or cannot work: refused
        here, with the other checks, before a run dir is written or Ray starts."""
        if (self.shared_vf or self.world_model) and self.layout.multi_side:
            raise ConfigError(
                f"shared_vf and world_model read one observation shape; {self.game!r} has "
                f"{len(self.layout.sides)} sides ({', '.join(self.layout.sides)})"
            )
        if self.centralized_critic and not self.shared_vf:
            raise ConfigError("centralized_critic needs shared_vf")
        if self.centralized_critic and get_game(self.game).kind != "simultaneous":
            raise ConfigError(
                f"centralized_critic needs a simultaneous-move game; {self.game!r} is turn-based"
            )
        if self.curiosity_coeff > 0 and not self.world_model:
            raise ConfigError("curiosity_coeff > 0 needs world_model")

    def _check_reference_opponents(self) -> None:
        """Every league reference opponent and the teacher must exist for this game
        (`make_opponent` refuses unknown names; a bot given by import path is built
        once here, so a broken one fails before training)."""
        named = [("league.reference_opponents", n) for n in self.league.reference_opponents]
        if self.league.teacher:
            named.append(("league.teacher", self.league.teacher))
        for field_name, name in named:
            try:
                make_opponent(name, self.game)
            except Exception as err:  # a user's bot: any failure is a config error
                raise ConfigError(f"{field_name}: {err}") from None

    def _check_ranges(self) -> None:
        """Numbers a run cannot use: non-finite floats, values outside their meaning,
        and sizes past any plausible run (so a typo cannot ask for the machine)."""
        floats = (  # name, low, high, low excluded
            ("lr", 0.0, 1.0, True),
            ("lr_final", 0.0, 1.0, True),
            ("gamma", 0.0, 1.0, True),
            ("lambda_", 0.0, 1.0, False),
            ("clip_param", 0.0, 10.0, True),
            ("entropy_coeff", 0.0, 100.0, False),
            ("entropy_coeff_final", 0.0, 100.0, False),
            ("vf_loss_coeff", 0.0, 1000.0, False),
            ("vf_clip_param", 0.0, 1e9, True),
            ("kl_coeff", 0.0, 1000.0, False),
            ("kl_target", 0.0, 10.0, True),
            ("magnet_coeff", 0.0, 1000.0, False),
            ("curiosity_coeff", 0.0, 1000.0, False),
            ("default_stop_minutes", 0.0, None, True),
            ("stop_minutes", 0.0, None, True),
        )
        for name, low, high, open_low in floats:
            value = getattr(self, name)
            if value is None:
                continue
            if not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value}")
            if value < low or (open_low and value == low) or (high is not None and value > high):
                interval = (
                    f"{'(' if open_low else '['}{low}, {high if high is not None else 'inf'}]"
                )
                raise ConfigError(f"{name} must be in {interval}, got {value}")
        ints = (
            ("num_epochs", 1000),
            ("train_batch_size", 10_000_000),
            ("minibatch_size", 10_000_000),
            ("num_env_runners", 1024),
            ("num_envs_per_env_runner", 4096),
            ("eval_games", 1_000_000),
            ("random_opening_moves", 1000),
            ("anneal_steps", 10**12),
            ("magnet_interval", 10**9),
            ("store_retention", 10**9),
            ("keep_checkpoints", 10**6),
        )
        for name, high in ints:
            if getattr(self, name) > high:
                raise ConfigError(f"{name} must be <= {high:,}, got {getattr(self, name):,}")
        if not 0 <= self.seed < 2**32:  # numpy's generators refuse negative seeds
            raise ConfigError(f"seed must be in 0..2**32-1, got {self.seed}")
        if self.num_cpus is not None and not 1 <= self.num_cpus <= 4096:
            raise ConfigError(f"num_cpus must be in 1..4096 (or none), got {self.num_cpus}")
        if not self.sample_ahead and self.algo != "ppo":
            raise ConfigError(
                f"sample_ahead off needs --algo ppo ({self.algo} always samples while it learns)"
            )
        if not 0 <= self.num_learners <= 64:
            raise ConfigError(f"num_learners must be in 0..64, got {self.num_learners}")
        self._check_learner_resources()
        if len(self.hidden_sizes) > 32 or max(self.hidden_sizes) > 65536:
            raise ConfigError(
                f"hidden_sizes allows at most 32 layers of at most 65,536 units, "
                f"got {self.hidden_sizes}"
            )
        if self.store is not None and self.store != "sqlite":
            scheme = self.store.split("://", 1)[0].lower() if "://" in self.store else ""
            if scheme not in SUPPORTED_SCHEMES:
                raise ConfigError(
                    f"store: unsupported URL scheme {scheme or '(none)'!r}; supported: "
                    f"{', '.join(SUPPORTED_SCHEMES)}"
                )

    def _check_learner_resources(self) -> None:
        """Resource requests Ray could never grant, refused before Ray starts."""
        if self.num_cpus_per_learner is not None and not (
            math.isfinite(self.num_cpus_per_learner) and 0 <= self.num_cpus_per_learner <= 1024
        ):
            raise ConfigError(
                f"num_cpus_per_learner must be in [0, 1024] (or none), "
                f"got {self.num_cpus_per_learner}"
            )
        gpus = self.num_gpus_per_learner
        if not (math.isfinite(gpus) and 0 <= gpus <= 64):
            raise ConfigError(f"num_gpus_per_learner must be in [0, 64], got {gpus}")
        if gpus > 1 and gpus != int(gpus):
            raise ConfigError(
                f"num_gpus_per_learner above 1 must be a whole number (Ray), got {gpus}"
            )
        if not isinstance(self.env_runner_resources, dict):
            raise ConfigError(
                f"env_runner_resources must be a mapping, got {short_repr(self.env_runner_resources)}"
            )
        for name, amount in self.env_runner_resources.items():
            if name in ("CPU", "GPU", "memory", "object_store_memory"):
                raise ConfigError(
                    f"env_runner_resources: {name!r} is not a custom resource (Ray sets "
                    "CPUs and GPUs per env runner itself)"
                )
            if (
                isinstance(amount, bool)
                or not isinstance(amount, int | float)
                or not (math.isfinite(amount) and 0 < amount <= 1_000_000)
            ):
                raise ConfigError(
                    f"env_runner_resources: {name!r} must be a number in (0, 1000000], "
                    f"got {short_repr(amount)}"
                )
        timeout = self.env_runner_probe_timeout_s
        if not (math.isfinite(timeout) and 0 < timeout <= 3600):
            raise ConfigError(f"env_runner_probe_timeout_s must be in (0, 3600], got {timeout}")

    @property
    def game(self) -> str:
        """The game id: `env` with its `env_kwargs` (envs.registry.make_game_id)."""
        return make_game_id(self.env, self.env_kwargs)

    @property
    def layout(self) -> SeatLayout:
        """The game's seats as teams and sides (league.core.seats)."""
        return game_layout(self.game, self.teams or None)

    @property
    def model_config(self) -> dict[str, Any]:
        return {
            "hidden_sizes": list(self.hidden_sizes),
            "activation": self.activation,
            "encoder": self.encoder,
            "conv_filters": [list(f) for f in self.conv_filters],
        }

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    def exploiter_overrides(self, players: list[str]) -> dict[str, dict[str, float]]:
        """Per-module algorithm settings of the exploiters (RLlib's
        `algorithm_config_overrides_per_module`): their own entropy bonus, if set."""
        coeff = self.league.exploiter_entropy_coeff
        if self.mode != "league" or coeff is None:
            return {}
        return {p: {"entropy_coeff": coeff} for p in players if parse_module_id(p).role != MAIN}

    def run_minutes(self) -> float | None:
        """The run's wall-time budget in this process (None: it stops by env steps only)."""
        if self.stop_minutes is None and self.stop_timesteps is None:
            return self.default_stop_minutes
        return self.stop_minutes

    def schedule_steps(self) -> int:
        """The schedules' span on RLlib's env-step axis. With anneal_over 'run' and a
        time budget the axis is a clock (`league.training.run_clock`) that reaches it
        as the time runs out; with only a step budget it is that budget."""
        if self.anneal_over == "run" and self.run_minutes() is None:
            assert self.stop_timesteps is not None  # run_minutes is None only then
            return self.stop_timesteps
        return self.anneal_steps

    def lr_schedule(self) -> float | list[list[float]]:
        """RLlib's `lr`: the constant rate, or a piecewise-linear schedule over the
        lifetime env steps sampled when lr_final is set."""
        return _schedule(self.lr, self.lr_final, self.schedule_steps())

    def player_entropy_coeff(self) -> float | list[list[float]]:
        """The players' entropy bonus, as a schedule when it anneals; in league mode
        the league's own start and final values take precedence where set."""
        start, final = self.entropy_coeff, self.entropy_coeff_final
        if self.mode == "league":
            if self.league.entropy_coeff is not None:
                start = self.league.entropy_coeff
            if self.league.entropy_coeff_final is not None:
                final = self.league.entropy_coeff_final
        return _schedule(start, final, self.schedule_steps())

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], source: str = "config") -> TrainConfig:
        """`TrainConfig(**values)` for values read from a file or a store: unknown keys
        and values of the wrong type are one ConfigError naming `source` (the game's
        settings it adds are checked by tests/test_presets.py)."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"{source}: unknown keys {unknown}; known keys: {sorted(known)}")
        hints = typing.get_type_hints(cls)
        for name, value in values.items():
            if name == "league":
                if not isinstance(value, (dict, LeagueConfig)):
                    raise ConfigError(
                        f"{source}: league must be a mapping, got {short_repr(value)}"
                    )
                continue
            if not matches_type(value, hints[name]):
                raise ConfigError(
                    f"{source}: {name} must be {_type_name(hints[name])}, got {short_repr(value)}"
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
) -> TrainConfig:
    """A run's settings, every path's one order (highest first): `values` (keyword
    arguments, flags), the `config_file`, with `resume` the run dir's stored
    config.json, the preset named, the game's measured settings, the field defaults.
    The nested `league` mapping merges key by key at every step. A run dir that
    cannot be resumed, or a resume asking for another algorithm, is a ConfigError or
    RunDirError before anything is written.
    """
    top = merge_settings(load_config_file(config_file) if config_file else {}, values or {})
    source = source or (str(config_file) if config_file else "settings")
    if resume:
        top = merge_settings(stored_settings(top), top)
        source = f"{top['run_dir']}/config.json"
    return TrainConfig.from_dict(top, source=source)


def stored_settings(top: Mapping[str, Any]) -> dict[str, Any]:
    """The stored config.json of the run dir `top` names (or the default one), checked
    resumable: it has a checkpoint, and `top` keeps its algorithm."""
    run_dir = top.get("run_dir") or TrainConfig.run_dir
    run = RunDir(run_dir)
    run.latest_checkpoint()  # refuse early when there is nothing to resume
    stored = run.load_config()
    algo = stored.get("algo", TrainConfig.algo)
    if top.get("algo", algo) != algo:
        # The checkpoint holds one algorithm's learner and optimizer state.
        raise ConfigError(f"run dir {run_dir!r} was trained with --algo {algo}; it resumes only so")
    return {**stored, "run_dir": run_dir}


def with_game_defaults(values: dict[str, Any]) -> dict[str, Any]:
    """`values` over the `--preset` they name over their game's measured settings
    (`league/presets.yaml`; the nested `league` mapping merges key by key)."""
    game = values.get("env", TrainConfig.env)
    kwargs = values.get("env_kwargs", {})
    if not isinstance(game, str) or not isinstance(kwargs, dict):
        return values  # __post_init__ names the problem
    game, _ = canonical_game(game, kwargs)
    defaults = game_settings(game)
    preset = values.get("preset")
    if isinstance(preset, str):
        try:
            defaults = merge_settings(defaults, preset_settings(preset))
        except PresetError as err:
            raise ConfigError(f"preset: {err}") from None
    return merge_settings(defaults, values)


def check_choice(f: dataclasses.Field[Any], value: Any) -> None:
    """Refuse a value outside a field's choices: one message for config files and flags."""
    choices = f.metadata.get("choices")
    if choices is not None and value not in choices:
        noun = f.metadata.get("noun", f.name)
        raise ConfigError(
            f"unknown {noun} {short_repr(value)}; known {noun}s: {', '.join(choices)}"
        )


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


MAX_ENV_KWARGS_NODES = 10_000


def _node_count(value: Any, budget: int) -> int:
    """Values in a nested structure, counting stopped once past `budget`: YAML aliases
    share nodes, so walking (or json.dumps-ing) one fully could take gigabytes."""
    count, stack = 0, [value]
    while stack and count <= budget:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return count


_REPR = reprlib.Repr()  # keyword arguments only from Python 3.12
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 80, 80
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = 8


def short_repr(value: Any) -> str:
    """A bounded repr for error messages: YAML aliases can make a 400-byte file
    expand to gigabytes ("billion laughs"), and a message must not expand them."""
    return _REPR.repr(value)


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
