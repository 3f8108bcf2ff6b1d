"""Learner-only modules: shared value function and world model (real Ray, tiny runs).

Both must live on learners only, never travel to env runners, train with their
own losses, drive what they are for (advantages, curiosity), and survive a
checkpoint round trip.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from learner_batches import train_batch
from ray.rllib.connectors.learner import GeneralAdvantageEstimation
from ray.rllib.core.columns import Columns
from ray.rllib.evaluation.postprocessing import Postprocessing
from ray.rllib.utils.postprocessing.value_predictions import compute_value_targets

from league.config import ConfigError, TrainConfig
from league.training.algorithm import MAIN_PLAYER, build_ppo_config
from league.training.driver import LeagueDriver
from rlmodules.learner_only_learner import CuriosityReward, SharedValueGAE
from rlmodules.shared_value import GLOBAL_OBS, SHARED_VF_ID
from rlmodules.world_model import EXTRINSIC_REWARDS, WORLD_MODEL_ID

LEARNER_ONLY = {SHARED_VF_ID, WORLD_MODEL_ID}

TINY = dict(
    env="tictactoe",
    encoder="mlp",  # as the registry default for tictactoe
    mode="selfplay",
    num_env_runners=1,
    num_envs_per_env_runner=2,
    train_batch_size=200,
    minibatch_size=100,
    num_epochs=1,
    hidden_sizes=[32],
    lr=1e-3,
    shared_vf=True,
    world_model=True,
    curiosity_coeff=0.05,
)


@pytest.fixture(scope="module")
def cfg() -> TrainConfig:
    return TrainConfig(**TINY)


@pytest.fixture(scope="module")
def algo(ray_session, cfg):
    algo = build_ppo_config(cfg).build_algo()
    yield algo
    algo.stop()


@pytest.fixture(scope="module")
def episodes(algo):
    """One fixed set of sampled episodes (from the remote env runner)."""
    (eps,) = algo.env_runner_group.foreach_env_runner(
        lambda er: er.sample(num_timesteps=200), local_env_runner=False
    )
    return eps


def _learner(algo):
    assert algo.learner_group.is_local  # num_learners=0: the learner is in this process
    return algo.learner_group._learner


def _runner_modules(algo) -> list[dict[str, bool]]:
    """For every env runner (local one included): module id -> has a value net."""
    return algo.env_runner_group.foreach_env_runner(
        lambda er: {mid: hasattr(m, "value_net") for mid, m in er.module.items()},
        local_env_runner=True,
    )


def _perturb(learner, module_id: str, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    state = {k: np.asarray(v) for k, v in learner.module[module_id].get_state().items()}
    noisy = {k: v + rng.normal(0, 0.5, v.shape).astype(v.dtype) for k, v in state.items()}
    learner.module[module_id].set_state(noisy)
    return state


def test_switches_are_checked_without_ray():
    with pytest.raises(ConfigError, match="simultaneous"):
        build_ppo_config(TrainConfig(env="tictactoe", shared_vf=True, centralized_critic=True))
    with pytest.raises(ConfigError, match="needs shared_vf"):
        build_ppo_config(TrainConfig(env="rps", centralized_critic=True))
    with pytest.raises(ConfigError, match="needs world_model"):
        build_ppo_config(TrainConfig(curiosity_coeff=0.1))


def test_modules_live_on_learners_only(algo):
    weights = algo.learner_group.get_weights()
    assert {MAIN_PLAYER, *LEARNER_ONLY} <= set(weights)
    assert weights[SHARED_VF_ID] and weights[WORLD_MODEL_ID]
    runners = _runner_modules(algo)
    assert len(runners) == 2  # local + one remote
    for modules in runners:
        assert modules == {MAIN_PLAYER: False}
    # The policy has no value head on the learner either: values come from shared_vf.
    policy = _learner(algo).module[MAIN_PLAYER]
    assert not hasattr(policy, "value_net")
    assert not any("value" in k for k in weights[MAIN_PLAYER])


def test_sync_payload_to_runners_excludes_them(algo):
    learner = _learner(algo)
    # Exactly what PPO's training_step asks for: every module in the learner
    # results (learner-only ones included), inference-only.
    modules = [MAIN_PLAYER, *LEARNER_ONLY]
    payload = algo.learner_group.get_state(
        components=[f"learner/rl_module/{m}" for m in modules], inference_only=True
    )["learner"]["rl_module"]
    assert set(payload) == {MAIN_PLAYER}
    assert all(k.startswith("policy_net.") for k in payload[MAIN_PLAYER])
    whole = algo.learner_group.get_state(components="learner/rl_module", inference_only=True)
    assert set(whole["learner"]["rl_module"]) == {MAIN_PLAYER}
    # Defence in depth: the modules' own inference-only state is empty.
    for mid in LEARNER_ONLY:
        assert learner.module[mid].get_state(inference_only=True) == {}
    # A real sync leaves the runners with the policy only, with the learner's weights.
    _perturb(learner, MAIN_PLAYER, seed=1)
    algo.env_runner_group.sync_weights(
        from_worker_or_learner_group=algo.learner_group,
        policies=modules,
        inference_only=True,
        timeout_seconds=30,
    )
    (runner_state,) = algo.env_runner_group.foreach_env_runner(
        lambda er: er.module.get_state(), local_env_runner=False
    )
    assert set(runner_state) == {MAIN_PLAYER}
    learner_policy = learner.module[MAIN_PLAYER].get_state()
    for key, value in runner_state[MAIN_PLAYER].items():
        np.testing.assert_allclose(value, learner_policy[key])


def test_pipeline_uses_shared_value_gae_and_curiosity(algo):
    pieces = [type(c) for c in _learner(algo)._learner_connector.connectors]
    assert SharedValueGAE in pieces and GeneralAdvantageEstimation not in pieces
    assert pieces.index(CuriosityReward) < pieces.index(SharedValueGAE)


def test_advantages_come_from_the_shared_value_function(algo, episodes):
    learner = _learner(algo)
    shared_vf = learner.module[SHARED_VF_ID].unwrapped()
    batch = train_batch(learner, episodes)[MAIN_PLAYER]
    # Recompute GAE by hand from the shared value function's values.
    with torch.no_grad():
        values = shared_vf.player_values(batch, MAIN_PLAYER).numpy()
    targets = compute_value_targets(
        values=values,
        rewards=batch[Columns.REWARDS].numpy(),
        terminateds=batch[Columns.TERMINATEDS].numpy(),
        truncateds=batch[Columns.TRUNCATEDS].numpy(),
        gamma=algo.config.gamma,
        lambda_=algo.config.lambda_,
    )
    advantages = targets - values
    advantages = (advantages - advantages.mean()) / max(1e-4, advantages.std())
    np.testing.assert_allclose(batch[Postprocessing.ADVANTAGES].numpy(), advantages, atol=1e-5)
    np.testing.assert_allclose(batch[Postprocessing.VALUE_TARGETS].numpy(), targets, atol=1e-5)
    # Changing only the shared value function changes the advantages ...
    saved = _perturb(learner, SHARED_VF_ID, seed=2)
    try:
        changed = train_batch(learner, episodes)[MAIN_PLAYER][Postprocessing.ADVANTAGES]
    finally:
        learner.module[SHARED_VF_ID].set_state(saved)
    assert not torch.allclose(changed, batch[Postprocessing.ADVANTAGES], atol=1e-3)
    # ... and the policy has no value head that could have mattered.
    policy = learner.module[MAIN_PLAYER].unwrapped()
    assert not hasattr(policy, "value_net")
    with pytest.raises(RuntimeError, match="no value head"):
        policy.compute_values(batch)


def test_curiosity_adds_world_model_error_to_rewards(algo, episodes):
    batch = train_batch(_learner(algo), episodes)[MAIN_PLAYER]
    bonus = batch[Columns.REWARDS] - batch[EXTRINSIC_REWARDS]
    mask = batch[Columns.LOSS_MASK]
    assert torch.all(bonus[mask] > 0)  # every real transition is somewhat surprising
    assert torch.all(bonus[~mask] == 0)  # PPO's bootstrap timestep gets nothing


def test_each_loss_decreases_on_a_fixed_batch(algo, episodes):
    learner = _learner(algo)
    batch = train_batch(learner, episodes)

    def losses() -> dict[str, float]:
        with torch.no_grad():
            fwd = learner.module.forward_train(batch)
            return {
                k: float(v) for k, v in learner.compute_losses(fwd_out=fwd, batch=batch).items()
            }

    # Each learner-only module has its own optimizer; a larger step makes a few
    # steps enough (restored afterwards, the fixture algo trains on).
    optimizers = {mid: learner.get_optimizer(mid) for mid in LEARNER_ONLY}
    old_lr = {mid: opt.param_groups[0]["lr"] for mid, opt in optimizers.items()}
    before = losses()
    assert set(before) == {MAIN_PLAYER, *LEARNER_ONLY}
    try:
        for opt in optimizers.values():
            opt.param_groups[0]["lr"] = 1e-2
        for _ in range(20):
            learner._update(batch)
    finally:
        for mid, opt in optimizers.items():
            opt.param_groups[0]["lr"] = old_lr[mid]
    after = losses()
    for mid in LEARNER_ONLY:
        assert after[mid] < 0.8 * before[mid], (mid, before[mid], after[mid])


def test_checkpoint_round_trips_both_modules(algo, cfg, tmp_path):
    learner = _learner(algo)
    for seed, mid in enumerate(sorted(LEARNER_ONLY)):
        _perturb(learner, mid, seed=10 + seed)
    saved = algo.learner_group.get_weights()
    algo.save_to_path(str(tmp_path / "ckpt"))
    fresh = build_ppo_config(cfg).build_algo()
    try:
        before = fresh.learner_group.get_weights()
        for mid in LEARNER_ONLY:
            assert any(not np.allclose(before[mid][k], v) for k, v in saved[mid].items())
        fresh.restore_from_path(str(tmp_path / "ckpt"))
        restored = fresh.learner_group.get_weights()
        for mid in (MAIN_PLAYER, *LEARNER_ONLY):
            assert set(restored[mid]) == set(saved[mid])
            for key, value in saved[mid].items():
                np.testing.assert_array_equal(restored[mid][key], value)
        for modules in _runner_modules(fresh):
            assert modules == {MAIN_PLAYER: False}
    finally:
        fresh.stop()


def _check_result(result: dict, players: set[str]) -> None:
    learners = result["learners"]
    assert players | LEARNER_ONLY <= set(learners)
    assert np.isfinite(learners[SHARED_VF_ID]["vf_loss"])
    assert np.isfinite(learners[WORLD_MODEL_ID]["world_model_loss"])
    assert learners[WORLD_MODEL_ID]["intrinsic_reward_mean"] > 0
    for player in players:
        # The progress line's per-player vf loss is the shared critic's on its rows.
        assert np.isfinite(learners[player]["vf_loss"]) and learners[player]["vf_loss"] > 0


def test_tiny_iteration_selfplay(algo):
    result = algo.train()
    _check_result(result, {MAIN_PLAYER})
    for modules in _runner_modules(algo):
        assert modules == {MAIN_PLAYER: False}


def test_tiny_iteration_league_with_frozen_opponents(ray_session, tmp_path):
    cfg = TrainConfig(**{**TINY, "mode": "league", "num_env_runners": 0, "run_dir": str(tmp_path)})
    algo = build_ppo_config(cfg).build_algo()
    try:
        driver = LeagueDriver(algo, cfg, tmp_path, seed=0)
        snapshots = driver.seed_league()  # frozen opponents on the runner, not on learners
        result = algo.train()
        driver.step(1, result)
        players = set(driver.players)
        _check_result(result, players)
        assert set(algo.learner_group.get_weights()) == players | LEARNER_ONLY
        (runner,) = _runner_modules(algo)
        assert players | set(snapshots) <= set(runner) and not LEARNER_ONLY & set(runner)
    finally:
        algo.stop()


def test_centralized_critic_on_rps(ray_session):
    cfg = TrainConfig(**{**TINY, "env": "rps", "num_env_runners": 0, "centralized_critic": True})
    algo = build_ppo_config(cfg).build_algo()
    try:
        learner = _learner(algo)
        shared_vf = learner.module[SHARED_VF_ID].unwrapped()
        assert shared_vf.centralized and shared_vf.seats == ["player_0", "player_1"]
        eps = algo.env_runner.sample(num_timesteps=60)
        batch = train_batch(learner, eps)[MAIN_PLAYER]
        own = batch[Columns.OBS]["observation"].float()
        # Own planes first, then the other seat's: the critic sees both players.
        assert batch[GLOBAL_OBS].shape == (own.shape[0], 2 * own.shape[1])
        np.testing.assert_array_equal(batch[GLOBAL_OBS][:, : own.shape[1]], own)
        _check_result(algo.train(), {MAIN_PLAYER})
    finally:
        algo.stop()
