"""The groups of a training run's settings, one small typed dataclass each, in the
spirit of RLlib's `AlgorithmConfig.environment()/env_runners()/training()`: `game`,
`run`, `resources`, `ppo`, `model`, `evaluation` (and `league`, the league's rules in
league.core.config). Each field has a default and help text, and may list its allowed
values; `league train`'s flags (`--ppo.lr`, `--model.hidden-sizes`), the config
files' sections and the Configuration page are generated from them.

Each group checks its own values on construction; checks that read two groups (an
algorithm against a model switch, a league against the game's seats) are
`TrainConfig`'s (league.config).
"""

from __future__ import annotations

import dataclasses
import json
import math
import reprlib
from dataclasses import dataclass, field
from typing import Any

from envs.registry import REGISTRY_NAMES, canonical_game, game_layout, get_game, make_game_id
from league.core.config import field_help as _help
from league.core.seats import SeatLayout
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
MAX_ENV_KWARGS_NODES = 10_000

_REPR = reprlib.Repr()  # keyword arguments only from Python 3.12
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 80, 80
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = 8


def short_repr(value: Any) -> str:
    """A bounded repr for error messages: YAML aliases can make a 400-byte file
    expand to gigabytes ("billion laughs"), and a message must not expand them."""
    return _REPR.repr(value)


def check_choice(f: dataclasses.Field[Any], value: Any) -> None:
    """Refuse a value outside a field's choices: one message for config files and flags."""
    choices = f.metadata.get("choices")
    if choices is not None and value not in choices:
        noun = f.metadata.get("noun", f.name)
        raise ConfigError(
            f"unknown {noun} {short_repr(value)}; known {noun}s: {', '.join(choices)}"
        )


def _check_fields(
    group: Any,
    floats: tuple[tuple[str, float, float | None, bool], ...] = (),
    ints: tuple[tuple[str, int, int], ...] = (),
) -> None:
    """A group's choices, and its numbers a run cannot use: non-finite floats, values
    outside their meaning, and sizes past any plausible run (so a typo cannot ask for
    the machine). `floats`: (name, low, high, low excluded); `ints`: (name, low, high)."""
    for f in dataclasses.fields(group):
        check_choice(f, getattr(group, f.name))
    for name, low, high, open_low in floats:
        value = getattr(group, name)
        if value is None:
            continue
        if not math.isfinite(value):
            raise ConfigError(f"{name} must be a finite number, got {value}")
        if value < low or (open_low and value == low) or (high is not None and value > high):
            interval = f"{'(' if open_low else '['}{low}, {high if high is not None else 'inf'}]"
            raise ConfigError(f"{name} must be in {interval}, got {value}")
    for name, low, high in ints:
        value = getattr(group, name)
        if value is None:
            continue
        if value < low:
            raise ConfigError(f"{name} must be >= {low}, got {value}")
        if value > high:
            raise ConfigError(f"{name} must be <= {high:,}, got {value:,}")


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


@dataclass(frozen=True)
class GameSettings:
    """The game and its seats."""

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
    random_opening_moves: int = field(
        default=0,
        metadata=_help(
            "Turn-based games: start each training episode after 0..N random legal moves "
            "(more diverse positions for self-play; evaluation always starts empty)."
        ),
    )

    def __post_init__(self) -> None:
        if not isinstance(self.env_kwargs, dict):
            raise ConfigError(f"env_kwargs must be a mapping, got {short_repr(self.env_kwargs)}")
        if _node_count(self.env_kwargs, MAX_ENV_KWARGS_NODES) > MAX_ENV_KWARGS_NODES:
            raise ConfigError(f"env_kwargs has more than {MAX_ENV_KWARGS_NODES:,} values")
        try:
            json.dumps(self.env_kwargs, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"env_kwargs must be plain JSON values: {err}") from None
        if not isinstance(self.teams, dict):
            raise ConfigError(f"teams must be a mapping, got {short_repr(self.teams)}")
        # One game, one name: a registry game reached by another reference is named
        # by its registry name (and so gets its teams and defaults).
        env, kwargs = canonical_game(self.env, self.env_kwargs)
        object.__setattr__(self, "env", env)
        object.__setattr__(self, "env_kwargs", kwargs)
        get_game(self.game_id)  # UnknownGameError, as everywhere a game reference is refused
        _check_fields(self, ints=(("random_opening_moves", 0, 1000),))

    @property
    def game_id(self) -> str:
        """The game id: `env` with its `env_kwargs` (envs.registry.make_game_id)."""
        return make_game_id(self.env, self.env_kwargs)

    @property
    def layout(self) -> SeatLayout:
        """The game's seats as teams and sides (league.core.seats); UnknownGameError
        names a bad `teams`."""
        return game_layout(self.game_id, self.teams or None)


@dataclass(frozen=True)
class RunSettings:
    """What the run is, where it writes, and when it stops."""

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
    anneal_minutes: float | None = field(
        default=None,
        metadata=_help(
            "With anneal_over run: the minutes what is left of the schedules spans from this "
            "start (none = this run's budget). league tune's rounds set it to their trial's "
            "remaining minutes, so a round anneals only its part."
        ),
    )
    seed: int = field(default=0, metadata=_help("Seed for RLlib, evaluation and matchmaking."))
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
    checkpoint_interval: int = field(
        default=10, metadata=_help("Write a checkpoint every N iterations (and always at the end).")
    )
    keep_checkpoints: int = field(
        default=2,
        metadata=_help(
            "Checkpoints kept in RUN_DIR/checkpoints, newest first; a checkpoint folder "
            "holding a file named KEEP is never deleted."
        ),
    )
    store: str | None = field(
        default=None,
        metadata=_help(
            "League store URL: none = SQLite file in the run dir; sqlite:///path; "
            "redis://[:password@]host:port/db or rediss:// (TLS). Name the password as an "
            "environment variable, redis://:${NAME}@host:port/db: no file holds it then."
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

    def __post_init__(self) -> None:
        _check_fields(
            self,
            floats=(
                ("default_stop_minutes", 0.0, None, True),
                ("stop_minutes", 0.0, None, True),
                ("anneal_minutes", 0.0, None, True),
            ),
            ints=(
                ("stop_timesteps", 1, 10**15),
                ("checkpoint_interval", 0, 10**9),
                ("keep_checkpoints", 1, 10**6),
                ("store_retention", 0, 10**9),
            ),
        )
        if not 0 <= self.seed < 2**32:  # numpy's generators refuse negative seeds
            raise ConfigError(f"seed must be in 0..2**32-1, got {self.seed}")
        if self.store is not None and self.store != "sqlite":
            scheme = self.store.split("://", 1)[0].lower() if "://" in self.store else ""
            if scheme not in SUPPORTED_SCHEMES:
                raise ConfigError(
                    f"store: unsupported URL scheme {scheme or '(none)'!r}; supported: "
                    f"{', '.join(SUPPORTED_SCHEMES)}"
                )

    def run_minutes(self) -> float | None:
        """The run's wall-time budget in this process (None: it stops by env steps only)."""
        if self.stop_minutes is None and self.stop_timesteps is None:
            return self.default_stop_minutes
        return self.stop_minutes


@dataclass(frozen=True)
class ResourceSettings:
    """Processes, CPUs and GPUs: env runners, learners, and where they go
    (docs/cluster.md, "Scaling out")."""

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
    num_cpus: int | None = field(
        default=None, metadata=_help("CPUs for a local Ray instance (none = all).")
    )
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
    episodes_to_numpy: bool = field(
        default=False,
        metadata=_help(
            "RLlib's runner (env_runner rllib): its per-step numpy conversion of finished "
            "episodes (slow; off). The batched runners always convert once per game."
        ),
    )

    def __post_init__(self) -> None:
        _check_fields(
            self,
            ints=(
                ("num_env_runners", 0, 1024),
                ("num_envs_per_env_runner", 1, 4096),
            ),
        )
        if self.num_cpus is not None and not 1 <= self.num_cpus <= 4096:
            raise ConfigError(f"num_cpus must be in 1..4096 (or none), got {self.num_cpus}")
        if not 0 <= self.num_learners <= 64:
            raise ConfigError(f"num_learners must be in 0..64, got {self.num_learners}")
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
        self._check_env_runner_resources()
        timeout = self.env_runner_probe_timeout_s
        if not (math.isfinite(timeout) and 0 < timeout <= 3600):
            raise ConfigError(f"env_runner_probe_timeout_s must be in (0, 3600], got {timeout}")

    def _check_env_runner_resources(self) -> None:
        """Resource requests Ray could never grant, refused before Ray starts."""
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


@dataclass(frozen=True)
class PPOSettings:
    """The algorithm (PPO, or APPO: asynchronous PPO) and its schedules. APPO uses lr,
    gamma, clip_param, entropy_coeff, vf_loss_coeff and train_batch_size."""

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
            "--no-ppo.sample-ahead gives RLlib's PPO step unchanged."
        ),
    )
    train_batch_size: int = field(default=4000, metadata=_help("Env steps per training iteration."))
    minibatch_size: int = field(default=500, metadata=_help("PPO SGD minibatch size."))
    num_epochs: int = field(default=6, metadata=_help("PPO epochs over each train batch."))
    lr: float = field(default=3e-4, metadata=_help("Adam learning rate."))
    lr_final: float | None = field(
        default=None,
        metadata=_help(
            "Anneal the learning rate linearly from lr to this over the schedules' span "
            "(anneal_over), then keep it (RLlib's lr schedule); none keeps lr constant."
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
            "league mode) linearly to this over the schedules' span (anneal_over); none "
            "keeps it constant. Exploiters with league.exploiter_entropy_coeff keep theirs."
        ),
    )
    anneal_steps: int = field(
        default=3_000_000,
        metadata=_help(
            "Env steps (all players together, RLlib's lifetime count) over which lr and "
            "the entropy bonus reach lr_final and entropy_coeff_final with anneal_over "
            "steps, or where time schedules are unavailable."
        ),
    )
    # Measured: leduc_poker on a machine a third as fast (~0.7M env steps in 15 minutes),
    # self-play 0.4023 -> 0.3518 and league main 0.5777 -> 0.4947 with the schedules over
    # the run instead of 2.4M env steps (docs/results/history.jsonl, "a slower machine").
    anneal_over: str = field(
        default="run",
        metadata=_help(
            "What the lr and entropy-bonus schedules span: 'run', the run itself: its "
            "stop_minutes of training time (default_stop_minutes when no stop is given) or else its stop_timesteps, so "
            "a slower machine or a longer run still gets the whole schedule, ending at "
            "the final values as the run stops. A resumed run anneals what is left over "
            "its new budget. Time needs ppo with sample_ahead and env runners; "
            "otherwise the schedules span anneal_steps. 'steps': anneal_steps env steps "
            "(RLlib's schedule), whatever the run's budget.",
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
    magnet_copies: int = field(
        default=1,
        metadata=_help(
            "How many of the player's latest magnet copies (one per magnet_interval) the "
            "magnet averages: the pull is toward the mean of their action probabilities, "
            "the player's recent average policy; 1 = the latest copy alone."
        ),
    )
    magnet_league_snapshots: int = field(
        default=0,
        metadata=_help(
            "League mode: each main's magnet is the average policy of the league's latest N "
            "snapshots on its side (its own and its exploiters', best responses to it), "
            "as fictitious play averages best responses, in place of copies of the main; "
            "0 = copies of the main (magnet_copies). Needs magnet_coeff > 0."
        ),
    )

    def __post_init__(self) -> None:
        _check_fields(
            self,
            floats=(
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
            ),
            ints=(
                ("train_batch_size", 1, 10_000_000),
                ("minibatch_size", 1, 10_000_000),
                ("num_epochs", 1, 1000),
                ("anneal_steps", 1, 10**12),
                ("magnet_interval", 1, 10**9),
                ("magnet_copies", 1, 100),
                ("magnet_league_snapshots", 0, 100),
            ),
        )
        if self.magnet_league_snapshots and not self.magnet_coeff:
            raise ConfigError(
                "magnet_league_snapshots needs magnet_coeff > 0 (the pull toward them)"
            )
        if self.algo == "ppo" and self.minibatch_size > self.train_batch_size:
            raise ConfigError("minibatch_size must not exceed train_batch_size")
        if not self.sample_ahead and self.algo != "ppo":
            raise ConfigError(
                f"sample_ahead off needs --ppo.algo ppo ({self.algo} always samples while it learns)"
            )


@dataclass(frozen=True)
class ModelSettings:
    """The players' network, and the learner-only modules (rlmodules.shared_value,
    rlmodules.world_model)."""

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

    def __post_init__(self) -> None:
        _check_fields(self, floats=(("curiosity_coeff", 0.0, 1000.0, False),))
        try:
            check_conv_filters(self.conv_filters)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        if not self.hidden_sizes or any(h < 1 for h in self.hidden_sizes):
            raise ConfigError(f"hidden_sizes must be positive ints, got {self.hidden_sizes}")
        if len(self.hidden_sizes) > 32 or max(self.hidden_sizes) > 65536:
            raise ConfigError(
                f"hidden_sizes allows at most 32 layers of at most 65,536 units, "
                f"got {self.hidden_sizes}"
            )
        if self.centralized_critic and not self.shared_vf:
            raise ConfigError("centralized_critic needs shared_vf")
        if self.curiosity_coeff > 0 and not self.world_model:
            raise ConfigError("curiosity_coeff > 0 needs world_model")

    def network(self) -> dict[str, Any]:
        """The players' network options, as the RLModules read them."""
        return {
            "hidden_sizes": list(self.hidden_sizes),
            "activation": self.activation,
            "encoder": self.encoder,
            "conv_filters": [list(f) for f in self.conv_filters],
        }


@dataclass(frozen=True)
class EvaluationSettings:
    """Evaluation against the game's reference opponents during training."""

    eval_interval: int = field(
        default=5,
        metadata=_help("Evaluate against reference opponents every N iterations (0 = never)."),
    )
    eval_games: int = field(
        default=100, metadata=_help("Games per seat and opponent at each evaluation.")
    )

    def __post_init__(self) -> None:
        _check_fields(self, ints=(("eval_interval", 0, 10**9), ("eval_games", 0, 1_000_000)))
