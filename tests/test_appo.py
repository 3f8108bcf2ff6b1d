"""`--algo appo`: asynchronous sampling with V-trace, on the same league machinery.

Real Ray, tiny runs on tictactoe: the league with frozen snapshots on env runners
only, every finished episode recorded once (also across the runner's in-flight
sample), inference-only runner modules, the learner-only world model, the
training loop with store commits, checkpoints and `--resume`, and refused combos.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from ray.rllib.algorithms.appo import APPO

from league.config import ConfigError, TrainConfig, resolve_config
from league.core.ids import is_snapshot_id
from league.run import RunDir, read_progress
from league.store import open_store
from league.training.algorithm import MAIN_PLAYER, build_algorithm_config, trainable_players
from league.training.driver import LeagueDriver
from league.training.env_runner import LeagueEnvRunner
from league.training.loop import train
from rlmodules.masked_policy import TARGET_POLICY_NET
from rlmodules.world_model import WORLD_MODEL_ID

TINY = dict(
    env="tictactoe",
    algo="appo",
    num_env_runners=1,
    num_envs_per_env_runner=2,
    train_batch_size=200,
    hidden_sizes=[16],
    eval_interval=0,
)
LEAGUE = {"snapshot_step_budget": 150, "max_snapshots": 3, "active_set_size": 2}
ITERATIONS = 6


@pytest.fixture(scope="module")
def appo_league(ray_session, tmp_path_factory):
    """A tiny APPO league stepped by the driver, then the runner's last in-flight
    sample waited for and its matches drained (counted separately)."""
    cfg = TrainConfig.from_dict({**TINY, "league": LEAGUE})
    algo = build_algorithm_config(cfg).build_algo()
    driver = LeagueDriver(algo, cfg, tmp_path_factory.mktemp("appo_league"), seed=0)
    driver.seed_league()
    history = []
    for iteration in range(1, ITERATIONS + 1):
        result = algo.train()
        report = driver.step(iteration, result)
        history.append({"result": result, "report": report, "runners": runner_modules(driver)})
    # Sampling is asynchronous: a sample() may still be running. Wait for it (its
    # episodes were never counted in a result) and take its matches too.
    in_flight = algo.env_runner_group.fetch_ready_async_reqs(timeout_seconds=120)
    late_episodes = sum(
        int(result[2]["num_episodes"].peek())
        for _, result in in_flight
        if isinstance(result, tuple) and "num_episodes" in result[2]
    )
    late = driver.drain(ITERATIONS + 1)
    yield cfg, algo, driver, history, {"late_episodes": late_episodes, "late": late}
    algo.stop()


def runner_modules(driver: LeagueDriver) -> list[list[str]]:
    return [
        m
        for _, m in driver.algo.env_runner_group.foreach_env_runner(
            LeagueEnvRunner.module_ids, local_env_runner=False
        )
    ]


def test_appo_league_trains_with_its_own_loss(appo_league):
    cfg, algo, _, history, _ = appo_league
    assert isinstance(algo, APPO)
    for h in history:
        assert h["result"]["env_runners"]["num_env_steps_sampled"] >= cfg.ppo.train_batch_size
    stats = history[-1]["result"]["learners"][MAIN_PLAYER]
    # APPO's importance-sampling statistics: V-trace's, which PPO does not report.
    assert {"policy_loss", "vf_loss", "entropy", "mean_IS"} <= set(stats)


def test_learner_holds_only_trainable_players(appo_league):
    cfg, algo, _, history, _ = appo_league
    trainable = set(trainable_players(cfg))
    assert set(algo.learner_group.get_weights()) == trainable
    for h in history:
        learner_ids = set(h["result"]["learners"]) - {"__all_modules__"}
        assert learner_ids <= trainable and not any(map(is_snapshot_id, learner_ids))


def test_snapshots_are_taken_and_frozen_on_runners_only(appo_league):
    cfg, _, driver, history, _ = appo_league
    trainable = set(trainable_players(cfg))
    assert sum(len(h["report"].new_snapshots) for h in history) >= 2
    saw_frozen = False
    for h in history:
        active = set(h["report"].active_set)
        for modules in h["runners"]:
            assert set(modules) == trainable | active
        saw_frozen |= bool(active)
    assert saw_frozen
    vs_snapshots = [
        r
        for h in history
        for r in h["report"].records
        if any(map(is_snapshot_id, r.modules.values()))
    ]
    assert vs_snapshots


def test_runner_modules_are_inference_only_and_learner_has_target_nets(appo_league):
    _, algo, _, _, _ = appo_league
    runner_params = algo.env_runner_group.foreach_env_runner(
        lambda er: {m: [n for n, _ in mod.named_parameters()] for m, mod in er.module.items()},
        local_env_runner=False,
    )
    names = [n for p in runner_params for module in p.values() for n in module]
    assert names and any(is_snapshot_id(m) for p in runner_params for m in p)
    assert not any(n.startswith(("value_net", TARGET_POLICY_NET)) for n in names)
    learner_state = algo.learner_group.get_weights()[MAIN_PLAYER]
    assert any(k.startswith(TARGET_POLICY_NET) for k in learner_state)
    assert any(k.startswith("value_net") for k in learner_state)


def test_every_finished_episode_recorded_exactly_once(appo_league):
    _, _, _, history, tail = appo_league
    records = [r for h in history for r in h["report"].records] + tail["late"]
    ids = [r.episode_id for r in records]
    assert len(ids) == len(set(ids)) > 0
    # RLlib's own episode counts (the iterations' results plus the sample that was
    # still running at the end) say how many episodes finished: each is one match.
    reported = sum(int(h["result"]["env_runners"]["num_episodes"]) for h in history)
    assert reported + tail["late_episodes"] == len(records)
    # Per iteration the two differ: matches of a sample are drained as soon as it
    # ends, its metrics arrive with the next fetch (the runners never wait).


def test_selfplay_with_learner_only_world_model(ray_session):
    """Selfplay, sampling on the driver's own runner (IMPALA's local path), with the
    world model and curiosity: the model trains with its own loss on learners only."""
    cfg = TrainConfig.from_dict(
        {
            **TINY,
            "mode": "selfplay",
            "num_env_runners": 0,
            "world_model": True,
            "curiosity_coeff": 0.05,
        }
    )
    algo = build_algorithm_config(cfg).build_algo()
    try:
        before = algo.learner_group.get_weights(module_ids=[WORLD_MODEL_ID])[WORLD_MODEL_ID]
        results = [algo.train() for _ in range(3)]
        after = algo.learner_group.get_weights(module_ids=[WORLD_MODEL_ID])[WORLD_MODEL_ID]
        runner_modules = set(algo.env_runner_group.local_env_runner.module.keys())
    finally:
        algo.stop()
    world = results[-1]["learners"][WORLD_MODEL_ID]
    assert world["world_model_loss"] > 0 and "intrinsic_reward_mean" in world
    assert any(not (before[k] == after[k]).all() for k in before)
    assert runner_modules == {MAIN_PLAYER}
    assert "mean_IS" in results[-1]["learners"][MAIN_PLAYER]


def test_training_loop_commits_checkpoints_and_resumes(ray_session, tmp_path):
    """`league train --ppo.algo appo` in-process: store commits, a checkpoint, --resume."""
    run_dir = str(tmp_path / "run")
    cfg = TrainConfig.from_dict(
        {**TINY, "league": LEAGUE, "run_dir": run_dir, "stop_timesteps": 600}
        | {"checkpoint_interval": 2}
    )
    first = train(cfg, log=lambda line: None)
    assert first.iterations >= 3 and first.checkpoint
    lines: list[str] = []
    resumed_cfg = resolve_config({"run_dir": run_dir, "stop_timesteps": 1200}, resume=True)
    assert resumed_cfg.ppo.algo == "appo"
    second = train(resumed_cfg, resume=True, log=lines.append)
    assert any(line.startswith("resumed") for line in lines)
    assert second.iterations > first.iterations and second.env_steps >= 1200
    records = read_progress(RunDir(run_dir))
    assert [r.iteration for r in records] == list(range(1, second.iterations + 1))
    assert all(r.learners[MAIN_PLAYER] and r.league is not None for r in records)
    store = open_store(None, RunDir(run_dir).path)
    try:
        ids = [m["episode_id"] for m in store.matches()]
        assert len(ids) == len(set(ids)) == store.match_count() > 0
        assert store.match_count() == sum(r.league.matches for r in records)
    finally:
        store.close()
    # A run resumes with the algorithm it was trained with, nothing else.
    with pytest.raises(ConfigError, match="trained with --ppo.algo appo"):
        resolve_config({"run_dir": run_dir, "algo": "ppo"}, resume=True)


def test_bad_combinations_are_refused_with_one_line(tmp_path):
    with pytest.raises(ConfigError, match="shared_vf needs algo ppo"):
        TrainConfig(algo="appo", shared_vf=True)
    with pytest.raises(ConfigError, match="unknown algo"):
        TrainConfig(algo="impala")
    # PPO's minibatch limit does not apply to APPO, which has no minibatches.
    assert TrainConfig(algo="appo", train_batch_size=100, minibatch_size=500).ppo.algo == "appo"
    proc = subprocess.run(
        [sys.executable, "-m", "league.cli", "train", "--ppo.algo", "appo", "--model.shared-vf"]
        + ["--run-dir", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "shared_vf" in proc.stderr
    assert not (tmp_path / "run").exists()


def test_weights_written_between_iterations_never_break_an_update(ray_session):
    """League resets write learner weights while APPO's learner thread may be in the
    middle of an update (it goes on training from its buffer after `train()`
    returns). Unguarded, autograd fails on the changed parameter and the thread
    dies, after which the next `train()` waits forever."""
    cfg = TrainConfig.from_dict({**TINY, "mode": "selfplay", "num_env_runners": 0})
    algo = build_algorithm_config(cfg).build_algo()
    try:
        initial = algo.learner_group.get_weights(module_ids=[MAIN_PLAYER])
        thread = algo.learner_group._learner._learner_thread  # RLlib's, read only
        for _ in range(12):
            algo.train()
            for _ in range(20):
                algo.learner_group.set_weights(initial)
            thread.join(timeout=0.3)  # returns at once if it died
            assert thread.is_alive()
    finally:
        algo.stop()
