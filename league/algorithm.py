"""Builds the RLlib PPO algorithm that trains the league's players.

New API stack throughout: a MultiRLModuleSpec of masked actor-critic modules, env
runners that build them inference-only, and PettingZoo games from the registry.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec

from envs.adapters import rllib_env_class
from league.config import TrainConfig
from rlmodules.inference_only_runner import InferenceOnlyEnvRunner
from rlmodules.masked_policy import masked_policy_spec

MAIN_PLAYER = "main_0"


def self_play_mapping(agent_id: Any, episode: Any, **kwargs: Any) -> str:
    """Plain self-play: every seat is played by the one main player."""
    return MAIN_PLAYER


def build_ppo_config(cfg: TrainConfig) -> PPOConfig:
    players = [MAIN_PLAYER]
    return (
        PPOConfig()
        .environment(rllib_env_class(cfg.env), env_config={"game": cfg.env})
        .framework("torch")
        .env_runners(
            num_env_runners=cfg.num_env_runners,
            num_envs_per_env_runner=cfg.num_envs_per_env_runner,
            env_runner_cls=InferenceOnlyEnvRunner,
            episodes_to_numpy=cfg.episodes_to_numpy,
        )
        .multi_agent(
            policies=set(players),
            policy_mapping_fn=self_play_mapping,
            policies_to_train=players,
        )
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    pid: masked_policy_spec(model_config=cfg.model_config) for pid in players
                }
            )
        )
        .training(
            train_batch_size_per_learner=cfg.train_batch_size,
            minibatch_size=cfg.minibatch_size,
            num_epochs=cfg.num_epochs,
            lr=cfg.lr,
            gamma=cfg.gamma,
            lambda_=cfg.lambda_,
            clip_param=cfg.clip_param,
            entropy_coeff=cfg.entropy_coeff,
            vf_loss_coeff=cfg.vf_loss_coeff,
        )
        .debugging(seed=cfg.seed)
    )
