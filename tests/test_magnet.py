"""The magnet pull (rlmodules.magnet): KL toward a refreshed frozen copy of each player."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ray.rllib.core.columns import Columns

from league.config import TrainConfig
from league.training.algorithm import MAIN_PLAYER, build_algorithm_config, build_ppo_config
from rlmodules.magnet import MAGNET_KL_KEY

TINY = dict(
    env="tictactoe",
    encoder="mlp",
    mode="selfplay",
    num_env_runners=1,
    num_envs_per_env_runner=8,
    train_batch_size=1000,
    minibatch_size=250,
    num_epochs=4,
    hidden_sizes=[32, 32],
    lr=3e-3,
    seed=5,
    eval_interval=0,
)


def _weights(module: torch.nn.Module) -> list[np.ndarray]:
    return [p.detach().cpu().numpy().copy() for p in module.parameters()]


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def _train_magnet_kl(
    coeff: float, iterations: int, interval: int, copies: int = 1
) -> tuple[float, object]:
    # The magnet lives on the learner: no remote env runner (~5 s to start each).
    cfg = TrainConfig(
        **TINY | {"num_env_runners": 0},
        magnet_coeff=coeff,
        magnet_interval=interval,
        magnet_copies=copies,
    )
    algo = build_ppo_config(cfg).build_algo()
    for _ in range(iterations):
        result = algo.train()
    return float(result["learners"][MAIN_PLAYER][MAGNET_KL_KEY]), algo


def test_magnet_refreshes_on_its_interval_and_when_weights_are_written(ray_session):
    _, algo = _train_magnet_kl(0.5, iterations=1, interval=2)
    try:
        learner = algo.learner_group._learner  # the driver's own learner (num_learners 0)
        player = learner.module[MAIN_PLAYER].unwrapped()
        # One iteration in: the magnet is the player as it was before that update.
        assert not _same(_weights(learner._league_magnets[MAIN_PLAYER][-1]), _weights(player))
        algo.train()  # the second iteration refreshes it
        assert _same(_weights(learner._league_magnets[MAIN_PLAYER][-1]), _weights(player))
        algo.train()
        assert not _same(_weights(learner._league_magnets[MAIN_PLAYER][-1]), _weights(player))
        # A league reset or restore writes weights: the magnet follows them at once.
        written = {
            name: np.zeros_like(value)
            for name, value in learner.module[MAIN_PLAYER].get_state().items()
        }
        algo.learner_group.set_weights({MAIN_PLAYER: written})
        magnet = _weights(learner._league_magnets[MAIN_PLAYER][-1])
        assert _same(magnet, _weights(player))
        assert all(not w.any() for w in magnet)
        assert not any(
            p.requires_grad for p in learner._league_magnets[MAIN_PLAYER][-1].parameters()
        )
    finally:
        algo.stop()


def test_a_magnet_of_several_copies_is_their_average_policy(ray_session):
    _, algo = _train_magnet_kl(0.5, iterations=4, interval=1, copies=3)
    try:
        learner = algo.learner_group._learner
        copies = learner._league_magnets[MAIN_PLAYER]
        assert len(copies) == 3  # four refreshes, the oldest dropped
        assert not _same(_weights(copies[0]), _weights(copies[-1]))
        space = learner.module[MAIN_PLAYER].unwrapped().observation_space
        observations = [space.sample() for _ in range(64)]
        batch = {
            Columns.OBS: {
                key: torch.as_tensor(np.stack([o[key] for o in observations]), dtype=torch.float32)
                for key in observations[0]
            }
        }
        with torch.no_grad():
            probs = [
                torch.softmax(c.forward_train(batch)[Columns.ACTION_DIST_INPUTS], dim=-1)
                for c in copies
            ]
        average = torch.softmax(learner.magnet_logits(MAIN_PLAYER, batch), dim=-1)
        assert torch.allclose(average, torch.stack(probs).mean(dim=0), atol=1e-6)
        assert not torch.allclose(average, probs[-1], atol=1e-3)
        # Weights written from outside: the average starts again from them alone.
        algo.learner_group.set_weights({MAIN_PLAYER: learner.module[MAIN_PLAYER].get_state()})
        assert len(learner._league_magnets[MAIN_PLAYER]) == 1
    finally:
        algo.stop()


def test_a_mains_magnet_can_be_the_leagues_latest_snapshots(ray_session, tmp_path):
    """`magnet_league_snapshots` N: the driver sends the main's learner the league's
    latest N snapshots of its side; the magnet's policy is their average, equal to the
    mean of the snapshots' policies as their files load without Ray."""
    from league.snapshot import load_snapshot
    from league.training.driver import LeagueDriver

    cfg = TrainConfig.from_dict(
        TINY
        | dict(
            mode="league",
            num_env_runners=0,
            train_batch_size=300,
            minibatch_size=100,
            num_epochs=1,
            magnet_coeff=0.5,
            magnet_league_snapshots=2,
            league={"snapshot_step_budget": 100, "snapshot_min_games": 0.0},
        )
    )
    algo = build_ppo_config(cfg).build_algo()
    try:
        driver = LeagueDriver(algo, cfg, tmp_path, seed=0)
        driver.seed_league()
        learner = algo.learner_group._learner
        assert len(learner._league_magnets[MAIN_PLAYER]) == 1  # the seeded snapshot alone
        for iteration in range(1, 5):
            driver.step(iteration, algo.train())
        snapshots = sorted(driver.league.snapshots.values(), key=lambda s: (s.iteration, s.step))
        members = driver._magnet_members[MAIN_PLAYER]
        assert len(snapshots) > 2 and members == tuple(s.id for s in snapshots[-2:])
        assert set(driver._magnet_weights) == set(members)  # older members' weights let go
        copies = learner._league_magnets[MAIN_PLAYER]
        assert len(copies) == 2  # its own copies would be one: no refresh in 4 of 10 iterations
        policies = [load_snapshot(tmp_path / "snapshots" / sid, "tictactoe") for sid in members]
        space = learner.module[MAIN_PLAYER].unwrapped().observation_space
        observations = [space.sample() for _ in range(64)]
        for o in observations:
            o["action_mask"][0] = 1  # at least one legal move
        stacked = {key: np.stack([o[key] for o in observations]) for key in observations[0]}
        batch = {
            Columns.OBS: {k: torch.as_tensor(v, dtype=torch.float32) for k, v in stacked.items()}
        }
        expected = np.mean(
            [
                p.action_probs_batch(stacked["observation"], stacked["action_mask"])
                for p in policies
            ],
            axis=0,
        )
        magnet = torch.softmax(learner.magnet_logits(MAIN_PLAYER, batch), dim=-1).numpy()
        assert np.allclose(magnet, expected, atol=1e-5)
        own = torch.softmax(
            learner.module[MAIN_PLAYER]
            .unwrapped()
            .forward_train(batch)[Columns.ACTION_DIST_INPUTS],
            dim=-1,
        )
        assert not np.allclose(magnet, own.detach().numpy(), atol=1e-3)
    finally:
        algo.stop()


def test_a_stronger_magnet_keeps_the_player_closer(ray_session):
    """Same seed and data path; only the coefficient differs. A magnet that is never
    refreshed within the run measures how far the player moved from where it began."""
    weak, algo = _train_magnet_kl(1e-6, iterations=3, interval=1000)
    algo.stop()
    strong, algo = _train_magnet_kl(20.0, iterations=3, interval=1000)
    algo.stop()
    assert weak > 0
    assert strong < 0.5 * weak, (strong, weak)


def test_magnet_settings_are_checked():
    assert build_ppo_config(TrainConfig(**TINY)).learner_config_dict["league_magnet_coeff"] == 0
    with pytest.raises(ValueError, match="magnet_interval must be >= 1"):
        TrainConfig(**TINY, magnet_interval=0)
    with pytest.raises(ValueError, match="magnet_coeff must be in"):
        TrainConfig(**TINY, magnet_coeff=-1.0)
    with pytest.raises(ValueError, match="magnet_copies must be"):
        TrainConfig(**TINY, magnet_copies=0)
    with pytest.raises(ValueError, match="magnet_league_snapshots needs magnet_coeff"):
        TrainConfig(**TINY, magnet_league_snapshots=3)


def test_appo_players_feel_the_magnet_too(ray_session):
    appo_league = dict(
        algo="appo",
        mode="league",
        num_envs_per_env_runner=2,
        train_batch_size=200,
        hidden_sizes=[16],
    )
    cfg = TrainConfig(**{**TINY, **appo_league}, magnet_coeff=0.5, magnet_interval=1000)
    algo = build_algorithm_config(cfg).build_algo()
    try:
        kls = []
        for _ in range(12):  # asynchronous: a result may carry no update yet
            stats = algo.train().get("learners", {}).get(MAIN_PLAYER, {})
            if MAGNET_KL_KEY in stats:
                kls.append(float(stats[MAGNET_KL_KEY]))
            if len(kls) >= 2:
                break
    finally:
        algo.stop()
    # The never-refreshed magnet is where the player began; it has moved away since.
    assert len(kls) >= 2 and kls[-1] > 0, kls
