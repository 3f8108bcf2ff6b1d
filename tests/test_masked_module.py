"""Masked actor-critic module: masking, inference-only form, and runners' modules."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns

from envs.registry import game_spaces
from league.config import TrainConfig
from league.training.algorithm import MAIN_PLAYER, build_ppo_config
from rlmodules.masked_policy import MaskedActorCriticModule, masked_policy_spec


def _module(game: str = "connect_four", inference_only: bool = False) -> MaskedActorCriticModule:
    obs_space, act_space = game_spaces(game)
    spec = masked_policy_spec(obs_space, act_space, {"hidden_sizes": [32]}, inference_only)
    return spec.build()


def _random_masked_batch(game: str, n: int, rng: np.random.Generator) -> dict:
    obs_space, act_space = game_spaces(game)
    planes = rng.integers(0, 2, (n, *obs_space["observation"].shape)).astype(np.int8)
    masks = rng.integers(0, 2, (n, act_space.n)).astype(np.int8)
    masks[np.arange(n), rng.integers(0, act_space.n, n)] = 1  # at least one legal action
    return {
        Columns.OBS: {
            "observation": torch.as_tensor(planes),
            "action_mask": torch.as_tensor(masks),
        }
    }


@pytest.mark.parametrize("method", ["forward_inference", "forward_exploration", "forward_train"])
def test_illegal_actions_get_probability_exactly_zero(method):
    module = _module()
    batch = _random_masked_batch("connect_four", 512, np.random.default_rng(0))
    with torch.no_grad():
        logits = getattr(module, method)(batch)[Columns.ACTION_DIST_INPUTS]
    probs = torch.softmax(logits, -1)
    illegal = batch[Columns.OBS]["action_mask"] == 0
    assert illegal.any()
    assert torch.all(probs[illegal] == 0.0)
    assert torch.allclose(probs.sum(-1), torch.ones(512))
    dist = module.get_exploration_action_dist_cls().from_logits(logits)
    actions = torch.stack([dist.sample() for _ in range(50)])
    legal_taken = batch[Columns.OBS]["action_mask"].gather(1, actions.T.long())
    assert torch.all(legal_taken == 1)


def test_inference_only_module_has_no_value_net():
    full = _module()
    light = _module(inference_only=True)
    assert hasattr(full, "value_net") and not hasattr(light, "value_net")
    state = full.get_state(inference_only=True)
    assert state and not any(k.startswith("value_net") for k in state)
    assert any(k.startswith("value_net") for k in full.get_state())
    light.set_state(state)  # the stripped state is exactly what the light module needs
    batch = _random_masked_batch("connect_four", 8, np.random.default_rng(1))
    with torch.no_grad():
        a = full.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        b = light.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
    assert torch.equal(a, b)


def test_values_come_from_value_net():
    module = _module("tictactoe")
    batch = _random_masked_batch("tictactoe", 16, np.random.default_rng(2))
    values = module.compute_values(batch)
    assert values.shape == (16,)
    with torch.no_grad():
        module.value_net[-1].bias.add_(1.0)
    assert torch.allclose(module.compute_values(batch), values + 1.0)


def test_bad_spaces_are_refused():
    obs_space, act_space = game_spaces("tictactoe")
    with pytest.raises(ValueError, match="Dict observation space"):
        masked_policy_spec(obs_space["observation"], act_space).build()
    _, c4_actions = game_spaces("connect_four")
    with pytest.raises(ValueError, match="does not match"):
        masked_policy_spec(obs_space, c4_actions).build()


@pytest.fixture(scope="module")
def tiny_algo(ray_session):
    cfg = TrainConfig(
        env="tictactoe",
        num_env_runners=1,
        num_envs_per_env_runner=4,
        train_batch_size=400,
        minibatch_size=100,
        num_epochs=1,
        hidden_sizes=[32],
    )
    algo = build_ppo_config(cfg).build_algo()
    yield algo
    algo.stop()


def test_runner_modules_have_no_value_head(tiny_algo):
    params = tiny_algo.env_runner_group.foreach_env_runner(
        lambda er: {mid: [n for n, _ in m.named_parameters()] for mid, m in er.module.items()}
    )
    assert len(params) == 2  # the local runner and one remote runner
    for per_runner in params:
        names = per_runner[MAIN_PLAYER]
        assert any(n.startswith("policy_net") for n in names)
        assert not any(n.startswith("value_net") for n in names)
    learner_state = tiny_algo.learner_group.get_weights(module_ids=[MAIN_PLAYER])[MAIN_PLAYER]
    assert any(k.startswith("value_net") for k in learner_state)


def _sampled_actions_are_legal(episodes) -> tuple[int, set[str]]:
    checked, agents = 0, set()
    for episode in episodes:
        for agent_id, sa_episode in episode.agent_episodes.items():
            observations = sa_episode.get_observations()
            if isinstance(observations, dict):  # a numpy episode: one array per key
                masks = list(observations["action_mask"])
            else:
                masks = [obs["action_mask"] for obs in observations]
            actions = sa_episode.get_actions()
            for mask, action in zip(masks, actions, strict=False):
                assert mask[int(action)] == 1, (agent_id, mask, action)
                checked += 1
            agents.add(agent_id)
    return checked, agents


def test_no_illegal_action_over_many_sampled_steps_in_both_seats(tiny_algo):
    results = tiny_algo.env_runner_group.foreach_env_runner(
        lambda er: er.sample(num_timesteps=3000, random_actions=False),
        local_env_runner=False,
    )
    checked, agents = 0, set()
    for episodes in results:
        n, seen = _sampled_actions_are_legal(episodes)
        checked, agents = checked + n, agents | seen
    assert checked >= 2500
    assert agents == {"player_1", "player_2"}
