"""The league on real Ray: snapshots added and retired at runtime, frozen modules
only on env runners, and every finished episode recorded exactly once."""

from __future__ import annotations

import pytest

from league.config import TrainConfig
from league.core.ids import is_reference_id, is_snapshot_id
from league.training.algorithm import build_ppo_config, trainable_players
from league.training.driver import LeagueDriver, count_metric
from league.training.env_runner import LeagueEnvRunner
from league.training.loop import sweep_retired_snapshots
from league.training.sample_ahead import SAMPLE_AHEAD_TAG


@pytest.fixture(scope="module")
def league_run(ray_session, tmp_path_factory):
    """A tiny league with small budgets, stepped for several iterations."""
    cfg = TrainConfig.from_dict(
        dict(
            env="tictactoe",
            num_env_runners=1,
            num_envs_per_env_runner=4,
            train_batch_size=600,
            minibatch_size=200,
            num_epochs=1,
            hidden_sizes=[32],
            league={
                "snapshot_step_budget": 250,
                "max_snapshots": 3,
                "active_set_size": 2,
            },
        )
    )
    algo = build_ppo_config(cfg).build_algo()
    driver = LeagueDriver(algo, cfg, tmp_path_factory.mktemp("league"), seed=0)
    seeded = driver.seed_league()
    # tictactoe's league brings minimax as a member: always in the active set.
    assert seeded == ("main_0@0",) and driver.active_set == ("ref=minimax", *seeded)
    history = []
    for iteration in range(1, 9):
        result = algo.train()
        report = driver.step(iteration, result)
        history.append(
            {
                "result": result,
                "report": report,
                "runner_modules": runner_module_ids(driver),
                "league_size": len(driver.league.snapshots),
            }
        )
    yield cfg, driver, history, sampled_ahead_tail(algo, driver)
    algo.stop()


def sampled_ahead_tail(algo, driver) -> dict[str, int]:
    """Sampling ahead (the default) drains a batch's matches with the iteration that
    started it and counts its episodes with the next: the batch still in flight
    when the run stops, and its matches drained once more."""
    ahead = algo.env_runner_group.fetch_ready_async_reqs(tags=SAMPLE_AHEAD_TAG, timeout_seconds=60)
    episodes = sum(count_metric(metrics.get("num_episodes")) for _, (_, metrics) in ahead)
    return {"episodes": episodes, "matches": len(driver.drain(0))}


def test_league_grows_and_retires_beyond_budget(league_run):
    cfg, driver, history, _ = league_run
    sizes = [h["league_size"] for h in history]
    new = sum(len(h["report"].new_snapshots) for h in history)
    retired = [s for h in history for s in h["report"].retired]
    assert max(sizes) >= 2 and new > cfg.league.max_snapshots
    assert retired, sizes
    assert all(size <= cfg.league.max_snapshots for size in sizes)
    # Retired snapshots leave the registry at once, and their files at the next
    # checkpoint (the state a resume restores may still name them until then).
    for sid in retired:
        assert sid not in driver.league.snapshots
        assert driver.run.snapshot_dir(sid).exists()
    sweep_retired_snapshots(driver.run, list(driver.league.snapshots), archive=False)
    for sid in retired:
        assert not driver.run.snapshot_dir(sid).exists()
    for sid in driver.league.snapshots:
        assert is_reference_id(sid) or driver.run.snapshot_dir(sid).exists()
    # The latest snapshot of each main is never retired.
    for sid in driver.league.latest_snapshots("main").values():
        assert sid in driver.league.snapshots


def test_frozen_ids_never_in_learner_results(league_run):
    cfg, _, history, _ = league_run
    trainable = set(trainable_players(cfg))
    for h in history:
        learner_ids = set(h["result"]["learners"]) - {"__all_modules__"}
        assert learner_ids <= trainable
        assert not any(is_snapshot_id(m) for m in learner_ids)
    learner_modules = set(driver_learner_modules(league_run[1]))
    assert learner_modules == trainable


def runner_module_ids(driver: LeagueDriver) -> list[list[str]]:
    """Module ids on each remote env runner, as the runners themselves report them."""
    return [
        modules
        for _, modules in driver.algo.env_runner_group.foreach_env_runner(
            LeagueEnvRunner.module_ids, local_env_runner=False
        )
    ]


def driver_learner_modules(driver: LeagueDriver) -> list[str]:
    return list(driver.algo.learner_group.get_weights().keys())


def test_runner_modules_are_trainables_plus_active_set(league_run):
    cfg, _, history, _ = league_run
    trainable = set(trainable_players(cfg))
    saw_frozen = False
    for h in history:
        active = set(h["report"].active_set)
        # References (minimax here) ride outside the K snapshots of the active set.
        assert len({a for a in active if is_snapshot_id(a)}) <= cfg.league.active_set_size
        for runner_modules in h["runner_modules"]:
            assert set(runner_modules) == trainable | active
        saw_frozen |= bool(active)
    assert saw_frozen


def test_frozen_modules_on_runners_are_inference_only(league_run):
    _, driver, _, _ = league_run
    params = driver.algo.env_runner_group.foreach_env_runner(
        lambda er: {m: [n for n, _ in mod.named_parameters()] for m, mod in er.module.items()},
        local_env_runner=False,
    )
    frozen = [(m, names) for p in params for m, names in p.items() if is_snapshot_id(m)]
    assert frozen
    for _, names in frozen:
        assert names and not any(n.startswith("value_net") for n in names)


def test_matches_recorded_equal_episodes_sampled(league_run):
    _, driver, history, tail = league_run
    episodes = sum(int(h["result"]["env_runners"]["num_episodes"]) for h in history)
    matches = sum(h["report"].matches for h in history)
    assert tail["episodes"] > 0
    assert matches + tail["matches"] == episodes + tail["episodes"]
    # Matches against frozen snapshots were played and recorded.
    vs_snapshots = [
        r
        for h in history
        for r in h["report"].records
        if any(map(is_snapshot_id, r.modules.values()))
    ]
    assert vs_snapshots


def test_plan_only_names_modules_on_runners(league_run):
    _, driver, history, _ = league_run
    on_runners = set(history[-1]["runner_modules"][0])
    assert driver.plan.module_ids() <= on_runners


@pytest.mark.parametrize("env_runner", ["rllib", "batched"])
def test_restarted_env_runner_gets_active_set_back(ray_session, tmp_path, env_runner):
    """A killed env runner is restarted by RLlib with the trainable players only; the
    next league step gives it the active set again and training goes on."""
    import ray

    cfg = TrainConfig.from_dict(
        dict(
            env="tictactoe",
            env_runner=env_runner,
            num_env_runners=1,
            num_envs_per_env_runner=2,
            train_batch_size=300,
            minibatch_size=100,
            num_epochs=1,
            hidden_sizes=[16],
            league={"snapshot_step_budget": 100, "active_set_size": 2},
        )
    )
    algo = build_ppo_config(cfg).build_algo()
    try:
        driver = LeagueDriver(algo, cfg, tmp_path, seed=0)
        driver.seed_league()
        result = algo.train()
        recorded = driver.step(1, result).matches
        episodes = count_metric(result["env_runners"].get("num_episodes"))
        assert driver.active_set
        (victim,) = algo.env_runner_group._worker_manager.actors().values()
        ray.kill(victim, no_restart=False)
        for iteration in range(2, 6):
            result = algo.train()
            report = driver.step(iteration, result)
            recorded += report.matches
            episodes += count_metric(result["env_runners"].get("num_episodes"))
        tail = sampled_ahead_tail(algo, driver)
        assert recorded + tail["matches"] == episodes + tail["episodes"] > 0
        expected = set(trainable_players(cfg)) | set(driver.active_set)
        assert all(set(m) == expected for m in runner_module_ids(driver))
    finally:
        algo.stop()


def test_a_main_adopting_its_exploiter_takes_its_weights(ray_session, tmp_path):
    """`main_adopts_exploiter_win_rate`: when the main exploiter snapshots and beats the
    main, the main restarts from the exploiter's weights, on the learner and on the
    env runners, and the exploiter carries on from the same weights."""
    import numpy as np

    cfg = TrainConfig.from_dict(
        dict(
            env="tictactoe",
            num_env_runners=1,
            num_envs_per_env_runner=2,
            train_batch_size=300,
            minibatch_size=100,
            num_epochs=1,
            hidden_sizes=[16],
            league={
                "snapshot_step_budget": 150,
                "snapshot_min_games": 0.0,
                "main_adopts_exploiter_win_rate": 0.0,  # adopt at every exploiter snapshot
            },
        )
    )
    algo = build_ppo_config(cfg).build_algo()
    try:
        driver = LeagueDriver(algo, cfg, tmp_path, seed=0)
        driver.seed_league()
        adopted = 0
        for iteration in range(1, 7):
            report = driver.step(iteration, algo.train())
            if "main_0" not in report.resets:
                continue
            assert "main_exploiter_0" not in report.resets  # it carries on
            learner = driver.learner_weights(["main_0", "main_exploiter_0"])
            main, exploiter = learner["main_0"], learner["main_exploiter_0"]
            assert main.keys() == exploiter.keys()
            assert all(np.array_equal(main[k], exploiter[k]) for k in main)
            on_runner = algo.env_runner_group.foreach_env_runner(
                lambda runner: runner.module["main_0"].get_state(), local_env_runner=False
            )[0]
            assert on_runner and all(
                np.array_equal(np.asarray(on_runner[k]), main[k]) for k in on_runner
            )
            assert driver.league.players["main_0"].parent == "main_exploiter_0"
            adopted += 1
        assert adopted
    finally:
        algo.stop()
