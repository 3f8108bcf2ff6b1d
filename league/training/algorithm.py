"""Builds the RLlib algorithm (PPO or APPO, `TrainConfig.algo`) that trains the league's players.

New API stack throughout: a MultiRLModuleSpec of masked actor-critic modules for
the trainable players only, env runners that build them inference-only, and
PettingZoo games from the registry. In league mode the learner drops frozen
opponents' experience, a callback records every finished episode as a match, and
the seat mapping follows the coordinator's matchmaking plan (see league.training.driver).

PPO (`build_ppo_config`) samples a train batch, then updates while the runners
wait. APPO (`build_appo_config`, IMPALA's architecture with PPO's clipped loss)
keeps the runners sampling while the learner updates from a queue of earlier
batches, correcting for the stale policy with V-trace. Everything else (modules,
league, matches, checkpoints) is the same for both: `build_algorithm_config` picks.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.appo import APPOConfig
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from envs.adapters import rllib_env_class
from envs.registry import game_spaces, get_game, import_roots
from league.config import TrainConfig
from league.core.ids import MAIN, is_reference_id, player_id, reference_name, side_of
from league.core.league import League
from league.core.matchmaking import MatchmakingPlan, build_plan
from league.core.seats import SeatLayout
from league.training.batched_env_runner import BatchedLeagueEnvRunner
from league.training.data_parallel import DataParallelAPPOConfig, DataParallelPPOConfig
from league.training.env_runner import LeagueEnvRunner, MatchRecorder, PlanMapping, SelfPlayMapping
from league.training.parallel_env_runner import BatchedSimultaneousEnvRunner
from league.training.sample_ahead import SampleAheadPPO
from rlmodules.league_learner import LeagueAPPOLearner, LeaguePPOLearner
from rlmodules.learner_only_learner import (
    CURIOSITY_COEFF_KEY,
    LearnerOnlyAPPOLearner,
    LearnerOnlyPPOLearner,
)
from rlmodules.magnet import MAGNET_COEFF_KEY, MAGNET_COPIES_KEY, MAGNET_INTERVAL_KEY
from rlmodules.masked_policy import masked_policy_spec
from rlmodules.reference_policy import reference_policy_spec
from rlmodules.shared_value import SHARED_VF_ID, shared_value_spec
from rlmodules.teacher import TEACHER_COEFF_KEY, TEACHER_GAME_KEY, TEACHER_KEY
from rlmodules.world_model import WORLD_MODEL_ID, world_model_spec

MAIN_PLAYER = "main_0"
"""The main player of a game with one side (every two-player game)."""


def main_players(cfg: TrainConfig) -> list[str]:
    """The first main of every side: the players a run ships and evaluates."""
    return [player_id(MAIN, 0, side) for side in cfg.layout.sides]


def trainable_players(cfg: TrainConfig) -> list[str]:
    if cfg.run.mode == "selfplay":
        return main_players(cfg)
    return list(cfg.league.player_ids(None, cfg.layout.sides))


def snapshot_module_spec(cfg: TrainConfig, side: str = "") -> RLModuleSpec:
    """Spec of a frozen opponent on env runners: inference-only, its side's spaces."""
    obs_space, act_space = game_spaces(cfg.game_id, side)
    return masked_policy_spec(obs_space, act_space, cfg.model.network(), inference_only=True)


def frozen_module_spec(cfg: TrainConfig, module_id: str) -> RLModuleSpec:
    """Spec of a frozen league member on env runners: a snapshot's network, or a
    reference opponent's scripted policy (no weights)."""
    if is_reference_id(module_id):
        obs_space, act_space = game_spaces(cfg.game_id)
        return reference_policy_spec(reference_name(module_id), cfg.game_id, obs_space, act_space)
    return snapshot_module_spec(cfg, side_of(module_id))


def env_runner_class(cfg: TrainConfig) -> type[LeagueEnvRunner]:
    """The runner for `cfg.resources.env_runner`: RLlib's (`rllib`), else the batched runner
    for the game's kind (`batched`, `auto`): turn-based or simultaneous moves."""
    if cfg.resources.env_runner == "rllib":
        return LeagueEnvRunner
    if get_game(cfg.game_id).kind == "turn_based":
        return BatchedLeagueEnvRunner
    return BatchedSimultaneousEnvRunner


def critic_groups(layout: SeatLayout) -> dict[str, list[str]]:
    """Whose observations each seat's centralized critic reads, its own first: its team
    in a team game (the team's critic), every seat when each team is one seat."""
    if all(len(team.seats) == 1 for team in layout.teams):
        return {seat: [seat, *(s for s in layout.seats if s != seat)] for seat in layout.seats}
    return {
        seat: [seat, *(s for s in layout.team_of(seat).seats if s != seat)] for seat in layout.seats
    }


def learner_only_specs(cfg: TrainConfig, players: list[str]) -> dict[str, Any]:
    """Specs of the learner-only modules switched on in `cfg` (explicit spaces)."""
    specs: dict[str, Any] = {}
    if not (cfg.model.shared_vf or cfg.model.world_model):
        return specs
    obs_space, act_space = game_spaces(cfg.game_id)
    if cfg.model.shared_vf:
        specs[SHARED_VF_ID] = shared_value_spec(
            obs_space,
            act_space,
            players,
            cfg.model.network(),
            centralized=cfg.model.centralized_critic,
            seats=list(cfg.layout.seats),
            critic_groups=critic_groups(cfg.layout),
        )
    if cfg.model.world_model:
        specs[WORLD_MODEL_ID] = world_model_spec(obs_space, act_space, cfg.model.network())
    return specs


def build_algorithm_config(
    cfg: TrainConfig, plan: MatchmakingPlan | None = None
) -> AlgorithmConfig:
    """The algorithm config of a run: PPO or APPO as `cfg.ppo.algo` says."""
    if cfg.ppo.algo == "appo":
        return build_appo_config(cfg, plan)
    return build_ppo_config(cfg, plan)


def league_settings(
    config: AlgorithmConfig, cfg: TrainConfig, plan: MatchmakingPlan | None
) -> AlgorithmConfig:
    """What PPO and APPO share: the game, the env runners, the modules (trainable
    players plus learner-only ones), the seat mapping and match recording."""
    players = trainable_players(cfg)
    extra = learner_only_specs(cfg, players)
    # With the shared value function the policies have no value head at all.
    policy_model_config = {
        **cfg.model.network(),
        **({"value_head": False} if cfg.model.shared_vf else {}),
    }
    layout = cfg.layout
    if cfg.run.mode == "league":
        plan = plan or build_plan(League(cfg.league, layout), ())
        mapping: Any = PlanMapping(plan, layout.seats)
    else:
        mapping = SelfPlayMapping(layout)
    config = (
        config.environment(
            rllib_env_class(cfg.game_id),
            env_config={
                "game": cfg.game_id,
                "import_paths": import_roots(cfg.game_id),
                "random_opening_moves": cfg.game.random_opening_moves,
            },
            # RLlib's check steps a random action from the action space, illegal in most
            # states of many games (OpenSpiel raises on it); the registry has already
            # built and checked the env's spaces, and every move the league plays is legal.
            disable_env_checking=True,
        )
        .framework("torch")
        .env_runners(
            num_env_runners=cfg.resources.num_env_runners,
            num_envs_per_env_runner=cfg.resources.num_envs_per_env_runner,
            env_runner_cls=env_runner_class(cfg),
            episodes_to_numpy=cfg.resources.episodes_to_numpy,
            custom_resources_per_env_runner=dict(cfg.resources.env_runner_resources),
            # The runners' connectors hold no state to merge (no observation filters);
            # RLlib's per-iteration merge is a blocking call on every runner, which
            # would wait for a batch sampled ahead (sample_ahead.py).
            merge_env_runner_states=False,
        )
        .fault_tolerance(
            # RLlib's default, stated because the league relies on it: a runner whose
            # node dies is restarted by Ray wherever its resources are; LeagueDriver.push
            # gives it the active set again and its lost, unfinished episodes never
            # reach the league.
            restart_failed_env_runners=True,
            env_runner_health_probe_timeout_s=cfg.resources.env_runner_probe_timeout_s,
        )
        .multi_agent(
            policies=set(players) | set(extra),
            policy_mapping_fn=mapping,
            policies_to_train=players + list(extra),
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    **{
                        pid: masked_policy_spec(
                            *game_spaces(cfg.game_id, side_of(pid)),
                            model_config=policy_model_config,
                        )
                        for pid in players
                    },
                    **extra,
                }
            ),
            algorithm_config_overrides_per_module=cfg.exploiter_overrides(players),
        )
        .learners(
            num_learners=cfg.resources.num_learners,
            num_cpus_per_learner=(
                "auto"
                if cfg.resources.num_cpus_per_learner is None
                else cfg.resources.num_cpus_per_learner
            ),
            num_gpus_per_learner=cfg.resources.num_gpus_per_learner,
            learner_config_dict={
                CURIOSITY_COEFF_KEY: cfg.model.curiosity_coeff,
                MAGNET_COEFF_KEY: cfg.ppo.magnet_coeff,
                MAGNET_INTERVAL_KEY: cfg.ppo.magnet_interval,
                MAGNET_COPIES_KEY: cfg.ppo.magnet_copies,
                **teacher_settings(cfg),
            },
        )
        .debugging(seed=cfg.run.seed)
    )
    if cfg.run.mode == "league":
        config.callbacks(MatchRecorder)
    return config


def teacher_settings(cfg: TrainConfig) -> dict[str, Any]:
    """The learners' teacher settings: the league's teacher, in league mode only."""
    if cfg.run.mode != "league" or not cfg.league.teacher or cfg.league.teacher_coeff <= 0:
        return {}
    return {
        TEACHER_KEY: cfg.league.teacher,
        TEACHER_GAME_KEY: cfg.game_id,
        TEACHER_COEFF_KEY: cfg.league.teacher_coeff,
    }


def build_ppo_config(cfg: TrainConfig, plan: MatchmakingPlan | None = None) -> PPOConfig:
    """The PPOConfig of a run; learner-only modules join learners only (see rlmodules)."""
    # Two or more learners train data-parallel on whole games (data_parallel.py).
    algo_class = SampleAheadPPO if cfg.ppo.sample_ahead else None  # None: RLlib's PPO
    if cfg.resources.num_learners >= 2:
        base = DataParallelPPOConfig(algo_class=algo_class)
    else:
        base = PPOConfig(algo_class=algo_class)
    config = league_settings(base, cfg, plan).training(
        # train_batch_size counts env steps per iteration over all learners.
        train_batch_size_per_learner=-(
            -cfg.ppo.train_batch_size // max(1, cfg.resources.num_learners)
        ),
        minibatch_size=cfg.ppo.minibatch_size,
        num_epochs=cfg.ppo.num_epochs,
        lr=cfg.lr_schedule(),
        gamma=cfg.ppo.gamma,
        lambda_=cfg.ppo.lambda_,
        clip_param=cfg.ppo.clip_param,
        entropy_coeff=cfg.player_entropy_coeff(),
        vf_loss_coeff=cfg.ppo.vf_loss_coeff,
        vf_clip_param=cfg.ppo.vf_clip_param,
        use_kl_loss=cfg.ppo.kl_coeff > 0,
        kl_coeff=cfg.ppo.kl_coeff,
        kl_target=cfg.ppo.kl_target,
        # Policies without a value head have no value loss; the shared one has its own.
        use_critic=not cfg.model.shared_vf,
    )
    if cfg.ppo.sample_ahead:
        # Each step's weight sync is queued on a runner behind the sample in flight.
        # RLlib allows one request in flight per tag and drops the next silently: when
        # the last step's sync has not returned yet (a loaded machine), this step's
        # would be lost and the runner would sample a whole batch with old weights.
        config.env_runners(max_requests_in_flight_per_env_runner=2)
    if cfg.model.shared_vf or cfg.model.world_model:
        # Subclass of LeaguePPOLearner: also right for selfplay, where nothing is dropped.
        config.learners(learner_class=LearnerOnlyPPOLearner)
    elif cfg.run.mode == "league" or cfg.resources.num_learners >= 2 or cfg.ppo.magnet_coeff > 0:
        # Per-module epochs; with data-parallel learners, the same steps on each; the
        # magnet's pull. Plain self-play keeps RLlib's own learner.
        config.learners(learner_class=LeaguePPOLearner)
    return config


APPO_FRAGMENT_STEPS = 50
"""Env steps per env in one APPO sample call (RLlib's default rollout fragment),
fewer when the train batch is smaller than one fragment per env."""
APPO_POLL_SECONDS = 0.01


def build_appo_config(cfg: TrainConfig, plan: MatchmakingPlan | None = None) -> APPOConfig:
    """The APPOConfig of a run: asynchronous sampling, V-trace, a clipped surrogate.

    Maps from TrainConfig: lr, gamma, clip_param, entropy_coeff, vf_loss_coeff and
    train_batch_size (env steps per learner update). `minibatch_size`, `num_epochs`
    and `lambda_` have no APPO meaning: each update takes one whole train batch,
    which RLlib's circular buffer may reuse (8 batches, each up to 2 times; with 2+
    learners a plain queue gives each batch once: see below), and V-trace replaces
    GAE. One league iteration (`algo.train()`) returns once at least
    `train_batch_size` env steps were sampled, as with PPO.
    """
    fragment = max(
        1,
        min(APPO_FRAGMENT_STEPS, cfg.ppo.train_batch_size // cfg.resources.num_envs_per_env_runner),
    )
    # Two or more learners train data-parallel on whole games, in step (data_parallel.py).
    base = DataParallelAPPOConfig() if cfg.resources.num_learners >= 2 else APPOConfig()
    config = (
        league_settings(base, cfg, plan)
        .training(
            # train_batch_size counts env steps per update over all learners.
            train_batch_size_per_learner=-(
                -cfg.ppo.train_batch_size // max(1, cfg.resources.num_learners)
            ),
            lr=cfg.lr_schedule(),
            gamma=cfg.ppo.gamma,
            clip_param=cfg.ppo.clip_param,
            entropy_coeff=cfg.player_entropy_coeff(),
            vf_loss_coeff=cfg.ppo.vf_loss_coeff,
            # RLlib polls the runners without waiting (0 s): the driver then spins a
            # core that the runners and the learner thread need. Wait up to 10 ms.
            timeout_s_sampler_manager=APPO_POLL_SECONDS,
        )
        .env_runners(rollout_fragment_length=fragment)
        # IMPALA's default iteration lasts at least 10 s; ours is one train batch.
        .reporting(
            min_time_s_per_iteration=0,
            min_sample_timesteps_per_iteration=cfg.ppo.train_batch_size,
        )
    )
    if cfg.resources.num_learners >= 2:
        # Each learner's circular buffer samples its batches at random and reuses them
        # while its thread is free: the learners then update a different number of
        # times between two weight writes (a league reset lands at different steps,
        # and their weights part for good). A first-in-first-out queue trains on every
        # batch once, in order, so `wait_for_queued_updates` leaves them in step.
        config.training(use_circular_buffer=False)
    if cfg.model.world_model:
        config.learners(learner_class=LearnerOnlyAPPOLearner)
    else:
        # Also for selfplay: it guards weight reads and writes against its learner thread.
        config.learners(learner_class=LeagueAPPOLearner)
    return config
