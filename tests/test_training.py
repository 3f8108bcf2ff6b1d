"""Training path: a short run measurably improves; the run dir checkpoints and resumes."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from envs.opponents import RandomPlayer
from league.config import TrainConfig
from league.core.ids import is_snapshot_id
from league.snapshot import load_policy
from league.tools.evaluation import evaluate
from league.training.algorithm import MAIN_PLAYER, build_ppo_config
from league.training.loop import player_policy, train

TINY = dict(
    env="tictactoe",
    encoder="mlp",  # as the registry default for tictactoe
    num_env_runners=1,
    num_envs_per_env_runner=8,
    train_batch_size=2000,
    minibatch_size=250,
    num_epochs=4,
    hidden_sizes=[64, 64],
    lr=1e-3,
)


def _score_vs_random(policy) -> float:
    """Mean (wins - losses) per game over both seats, 200 greedy games per seat."""
    records = evaluate("tictactoe", policy, RandomPlayer(), 200, seed=123)
    return sum(r.wins - r.losses for r in records) / sum(r.games for r in records)


def test_short_self_play_run_improves_against_random(ray_session):
    # With sample-ahead, the default: our training step, not RLlib's PPO step (the one
    # `sample_ahead: false` runs), is the one a learning check has to cover.
    cfg = TrainConfig(**TINY, seed=3, mode="selfplay")
    assert cfg.ppo.sample_ahead
    algo = build_ppo_config(cfg).build_algo()
    try:
        before = _score_vs_random(player_policy(algo, cfg, MAIN_PLAYER)[0])
        for _ in range(8):
            result = algo.train()
        after = _score_vs_random(player_policy(algo, cfg, MAIN_PLAYER)[0])
    finally:
        algo.stop()
    # Frozen ids never appear here; in self-play the only learner module is the main.
    assert set(result["learners"]) - {"__all_modules__"} == {MAIN_PLAYER}
    assert after >= before + 0.1, (before, after)


@pytest.fixture(scope="module", params=["league", "selfplay"])
def short_run(request, ray_session, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run") / "r"
    # The run dir is the point here: sampling on the driver's own env runner builds in
    # 0.1 s against ~5 s with a remote one (this run, its resume and the restore build
    # three times per mode); the remote-runner path is the learning check's.
    cfg = TrainConfig(
        **TINY | {"num_env_runners": 0},
        mode=request.param,
        run_dir=str(run_dir),
        stop_timesteps=4000,
        eval_interval=2,
        eval_games=20,
    )
    lines: list[str] = []
    summary = train(cfg, log=lines.append)
    return cfg, summary, lines


def test_run_prints_progress_and_evaluation(short_run):
    cfg, summary, lines = short_run
    progress = [line for line in lines if line.startswith("iter")]
    assert len(progress) == summary.iterations == 2
    assert "steps/s" in progress[0] and "ep len" in progress[0]
    evals = [line for line in lines if line.startswith("eval")]
    assert evals and "vs random" in evals[0] and "vs minimax" in evals[0]
    assert set(summary.evaluations) == {"random", "minimax"}
    league_lines = [line for line in lines if line.startswith("league:")]
    if cfg.run.mode == "league":
        assert len(league_lines) == summary.iterations
        assert "active" in league_lines[0] and "top" in league_lines[0]
        assert "win rate" in league_lines[0]
    else:
        assert not league_lines


def test_run_writes_checkpoint_snapshot_and_progress(short_run):
    cfg, summary, _ = short_run
    run_dir = cfg.run.run_dir
    latest = json.loads(open(f"{run_dir}/checkpoints/latest.json").read())
    assert latest["iteration"] == 2 and latest["env_steps"] == summary.env_steps >= 4000
    assert summary.checkpoint.endswith(latest["checkpoint"])
    records = [json.loads(line) for line in open(f"{run_dir}/progress.jsonl")]
    assert [r["iteration"] for r in records] == [1, 2]
    policy = load_policy(f"{run_dir}/players/{MAIN_PLAYER}", game="tictactoe")
    assert policy.meta.env_steps == summary.env_steps


def test_resume_continues_from_checkpoint(short_run):
    cfg, summary, _ = short_run
    lines: list[str] = []
    resumed = train(
        cfg.replace(stop_timesteps=summary.env_steps + 2000), resume=True, log=lines.append
    )
    assert any(line.startswith("resumed") for line in lines)
    assert resumed.iterations == summary.iterations + 1
    assert resumed.env_steps >= summary.env_steps + 2000
    records = [json.loads(line) for line in open(f"{cfg.run.run_dir}/progress.jsonl")]
    assert [r["iteration"] for r in records] == [1, 2, 3]


def test_checkpoint_restores_the_trained_weights(short_run, ray_session):
    import numpy as np

    cfg, _, _ = short_run
    # The players/ snapshot and latest.json are written together with the checkpoint.
    saved = load_policy(f"{cfg.run.run_dir}/players/{MAIN_PLAYER}")
    latest = json.loads(open(f"{cfg.run.run_dir}/checkpoints/latest.json").read())
    algo = build_ppo_config(cfg).build_algo()
    try:
        _, fresh = player_policy(algo, cfg, MAIN_PLAYER)
        algo.restore_from_path(f"{cfg.run.run_dir}/checkpoints/{latest['checkpoint']}")
        _, restored = player_policy(algo, cfg, MAIN_PLAYER)
    finally:
        algo.stop()
    first = next(iter(saved.net.state_dict()))
    key = f"policy_net.{first}"
    saved_weights = saved.net.state_dict()[first].numpy()
    assert not np.allclose(fresh[key], saved_weights)
    assert np.allclose(restored[key], saved_weights)


def test_evaluate_command_prints_seats_intervals_and_exploitability(short_run, capsys):
    # In this process (the command needs no Ray); test_layers runs the CLI as a program.
    from league.cli import main

    cfg, _, _ = short_run
    code = main(
        ["evaluate", "--run-dir", cfg.run.run_dir, "--opponent", "minimax", "--games", "30"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "seat player_1" in out and "seat player_2" in out
    assert out.count("[") >= 6  # an interval for each of W/D/L in both seats
    assert "exploitability (greedy)" in out and "exploitability (sampled)" in out
    assert main(["evaluate", "--run-dir", cfg.run.run_dir, "--opponent", "search"]) == 2
    assert "valid opponents" in capsys.readouterr().err


def test_progress_file_holds_one_typed_record_per_iteration(short_run):
    from league.run import RunDir, read_progress

    cfg, summary, _ = short_run
    # (test_resume_continues_from_checkpoint may have appended one more iteration)
    records = read_progress(RunDir(cfg.run.run_dir))[: summary.iterations]
    assert [r.iteration for r in records] == list(range(1, summary.iterations + 1))
    assert records[-1].env_steps == summary.env_steps
    assert all(r.steps_per_s > 0 and r.learners[MAIN_PLAYER] for r in records)
    # The rate covers the whole iteration (league step, commit, evaluation), not
    # algo.train() alone: the run's steps over the iterations' time, exactly.
    assert all(0 < r.train_seconds <= r.seconds for r in records)
    assert records[1].eval_seconds > 0 and records[0].eval_seconds == 0  # it evaluated
    assert records[1].seconds >= records[1].train_seconds + records[1].eval_seconds
    sampled = [b.env_steps - a.env_steps for a, b in zip(records, records[1:], strict=False)]
    assert all(
        abs(n / r.seconds - r.steps_per_s) < 1e-6 * r.steps_per_s
        for n, r in zip(sampled, records[1:], strict=True)
    )
    assert records[1].eval is not None and set(records[1].eval) == {"random", "minimax"}
    if cfg.run.mode == "league":
        assert all(r.league is not None and "main_0" in r.league.ratings for r in records)
        assert all(r.league.step_seconds > 0 and r.league.store_seq > 0 for r in records)
        nash = records[-1].league.nash  # over the frozen snapshots, PSRO's meta-game
        assert sum(nash.values()) == pytest.approx(1.0)
        assert all(is_snapshot_id(m) for m in nash)
    else:
        assert all(r.league is None for r in records)


def test_tensorboard_event_file_has_the_scalars(short_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from league.run import RunDir

    cfg, summary, _ = short_run
    events = EventAccumulator(str(RunDir(cfg.run.run_dir).tensorboard))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    expected = {
        "throughput/env_steps_per_s",
        f"learner/{MAIN_PLAYER}/policy_loss",
        f"learner/{MAIN_PLAYER}/entropy",
        "eval/random/player_1/wins",
        "eval/minimax/player_2/losses",
    }
    if cfg.run.mode == "league":
        expected |= {
            "rating/main_0",
            "league/size",
            "league/active_set_size",
            "league/store_write_seconds",
            "role_win_rate/main",
        }
    assert expected <= tags, expected - tags
    steps = [e.step for e in events.Scalars("throughput/env_steps_per_s")]
    assert steps[: summary.iterations][-1] == summary.env_steps
    assert steps == sorted(steps) and len(steps) >= summary.iterations


def test_a_relative_run_dir_checkpoints(ray_session, tmp_path, monkeypatch):
    """`league train` with the default `runs/default` (relative) must be able to
    checkpoint: RLlib reads a relative checkpoint path as a URI."""
    monkeypatch.chdir(tmp_path)
    cfg = TrainConfig(
        # No remote env runner: the checkpoint path is the point, and one costs ~5 s.
        **{**TINY, "train_batch_size": 500, "minibatch_size": 250, "num_epochs": 1}
        | {"num_env_runners": 0},
        mode="selfplay",
        run_dir="runs/relative",
        stop_timesteps=500,
        eval_interval=0,
    )
    summary = train(cfg, log=lambda line: None)
    assert (tmp_path / "runs/relative/checkpoints/latest.json").is_file()
    assert summary.checkpoint.startswith(str(tmp_path))


class _InterruptOnCollect:
    """Sends this process a SIGINT from a finalizer: Python prints and drops the
    KeyboardInterrupt the handler raises there."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped one
def test_an_interrupt_dropped_inside_a_finalizer_still_stops_the_run(ray_session, tmp_path):
    cfg = TrainConfig(
        **{**TINY, "train_batch_size": 500, "minibatch_size": 250, "num_epochs": 1},
        mode="selfplay",
        run_dir=str(tmp_path / "run"),
        stop_timesteps=500 * 40,
        eval_interval=0,
    )
    lines: list[str] = []

    def log(line: str) -> None:
        lines.append(line)
        if line.startswith("iter "):
            _InterruptOnCollect()  # collected at once: the signal arrives in __del__

    # A run started as a background job inherits SIGINT ignored, and leaves it so.
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        summary = train(cfg, log=log)
        after = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, outer)
    # The first iteration's line sent the signal; without the recorded signal the
    # run would have gone on to its 40 iterations.
    assert summary.iterations == 1, lines
    assert any(line.startswith("interrupted: writing a final checkpoint") for line in lines)
    assert (tmp_path / "run/checkpoints/latest.json").is_file()
    assert after is signal.default_int_handler  # the handler in place before is back


def test_stop_signals_leave_an_ignored_signal_ignored_and_restore_the_rest():
    from league.training.loop import StopSignals

    outer_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    outer_term = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        stop_signals = StopSignals()
        stop_signals.install()
        during = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        stop_signals.restore()
        after = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGINT, outer_int)
        signal.signal(signal.SIGTERM, outer_term)
    assert during[0] is signal.SIG_IGN and callable(during[1])  # SIGTERM now handled
    assert after == (signal.SIG_IGN, signal.SIG_DFL)


def test_sigusr1_prints_every_threads_stack_and_the_run_goes_on(capfd):
    from league.training.loop import StopSignals

    stop_signals = StopSignals()
    stop_signals.install()
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(0.1)  # the dump is written from the signal handler
    finally:
        stop_signals.restore()
    err = capfd.readouterr().err
    assert "most recent call first" in err and "test_sigusr1_prints_every_threads_stack" in err


def test_export_mixture_writes_the_leagues_nash_mixture(short_run, tmp_path, capsys):
    from envs.opponents import RandomPlayer
    from league.cli import main
    from league.snapshot import MixturePolicy

    cfg, _, _ = short_run
    out = tmp_path / "mixture"
    code = main(["export", "--mixture", "--run-dir", cfg.run.run_dir, "--out", str(out)])
    err = capsys.readouterr().err
    if cfg.run.mode == "selfplay":  # no league store, no snapshots: one clear line
        assert code == 2 and err.startswith("league: error:"), err
        return
    assert code == 0, err
    mixture = load_policy(out)
    assert isinstance(mixture, MixturePolicy)
    assert sum(mixture.weights) == pytest.approx(1.0)
    assert all(is_snapshot_id(m) for m in mixture.ids)
    records = evaluate("tictactoe", mixture, RandomPlayer(), 10, seed=0)
    assert sum(r.games for r in records) == 20
    distilled = tmp_path / "distilled"
    argv = ["export", "--mixture", "--distill", "--run-dir", cfg.run.run_dir]
    assert main([*argv, "--out", str(distilled)]) == 2  # tictactoe is not an OpenSpiel game
    err = capsys.readouterr().err
    assert err.startswith("league: error:") and "OpenSpiel" in err and err.count("\n") == 1
    assert not distilled.exists()


def test_learning_rate_and_entropy_bonus_anneal_to_their_final_values(ray_session):
    """`lr_final` and `entropy_coeff_final` reach RLlib as schedules over lifetime env
    steps: after `anneal_steps` the players train at the final values, while an
    exploiter with its own bonus keeps it."""
    tiny = {**TINY, "train_batch_size": 400, "minibatch_size": 200, "num_epochs": 1}
    cfg = TrainConfig(
        # The schedules live on the learner: no remote env runner needed (~5 s each).
        **tiny | {"num_env_runners": 0}, seed=0, mode="league", entropy_coeff=0.05, entropy_coeff_final=0.01,
        lr_final=1e-5, anneal_steps=400, anneal_over="steps",
        # None: not tictactoe's own league value, so the run's final value applies.
        league={"exploiter_entropy_coeff": 0.002, "entropy_coeff_final": None},
    )  # fmt: skip
    assert cfg.lr_schedule() == [[0, 1e-3], [400, 1e-5]]
    assert cfg.player_entropy_coeff() == [[0, 0.05], [400, 0.01]]
    algo = build_ppo_config(cfg).build_algo()
    try:
        first, second = (algo.train()["learners"] for _ in range(2))
    finally:
        algo.stop()
    rate, bonus = "default_optimizer_learning_rate", "curr_entropy_coeff"
    assert first[MAIN_PLAYER][rate] < 1e-3 and first[MAIN_PLAYER][bonus] < 0.05, first
    assert second[MAIN_PLAYER][rate] == pytest.approx(1e-5)
    assert second[MAIN_PLAYER][bonus] == pytest.approx(0.01)
    assert second["main_exploiter_0"][bonus] == pytest.approx(0.002)
    unset = TrainConfig(**tiny, mode="selfplay")  # constants (tictactoe's league anneals)
    assert unset.lr_schedule() == 1e-3 and unset.player_entropy_coeff() == unset.ppo.entropy_coeff
    with pytest.raises(ValueError, match="lr_final must be in"):
        TrainConfig(**tiny, lr_final=0.0)
    with pytest.raises(ValueError, match="entropy_coeff_final must be in"):
        TrainConfig(**tiny, entropy_coeff_final=-0.1)
    with pytest.raises(ValueError, match="anneal_steps must be >= 1"):
        TrainConfig(**tiny, lr_final=1e-4, anneal_steps=0)


def test_schedules_over_the_run_end_at_their_final_values_as_time_runs_out(ray_session, tmp_path):
    """`anneal_over: run` with a time budget: the learners' schedules follow the run
    clock, so lr is at lr_final as the run stops although `anneal_steps` (the axis) is
    far beyond the steps played; a resumed run continues from the recorded progress
    instead of restarting the schedule; without env runners to sample ahead on, the
    run says it falls back to env steps."""
    tiny = {**TINY, "train_batch_size": 500, "minibatch_size": 250, "num_epochs": 1}
    cfg = TrainConfig(
        **tiny, mode="selfplay", run_dir=str(tmp_path / "run"), stop_minutes=0.25,
        eval_interval=0, lr_final=1e-5, anneal_over="run", anneal_steps=10**9,
    )  # fmt: skip
    rate = "default_optimizer_learning_rate"
    summary = train(cfg, log=lambda line: None)
    latest = json.loads((tmp_path / "run/checkpoints/latest.json").read_text())
    records = [
        json.loads(line) for line in (tmp_path / "run/progress.jsonl").read_text().splitlines()
    ]
    rates = [r["learners"][MAIN_PLAYER][rate] for r in records]
    # Over env steps (anneal_steps 1e9) the rate would have stayed at ~1e-3; the clock
    # moves it down every iteration to near lr_final as the 15 seconds run out.
    assert summary.iterations >= 2 and rates[0] > 1.5 * rates[-1], rates
    assert rates == sorted(rates, reverse=True) and rates[-1] < 2e-4, rates
    assert 0.8 <= latest["schedule_progress"] <= 1.0, latest
    train(cfg.replace(stop_minutes=0.1), resume=True, log=lambda line: None)  # what is left
    resumed = [
        json.loads(line) for line in (tmp_path / "run/progress.jsonl").read_text().splitlines()
    ]
    after = [r["learners"][MAIN_PLAYER][rate] for r in resumed[len(records) :]]
    assert after and max(after) <= rates[-1] + 1e-9, (rates[-1], after)  # not back at 1e-3
    lines: list[str] = []
    # Without env runners to sample ahead on, the run falls back (and builds in 0.1 s).
    fallback = cfg.replace(run_dir=str(tmp_path / "sync"), num_env_runners=0, stop_minutes=0.05)
    train(fallback, log=lines.append)
    assert any("schedules over time need ppo with sample_ahead" in line for line in lines), lines


def test_league_anneals_its_own_bonus_while_self_play_keeps_the_runs():
    """`league.entropy_coeff_final` anneals the players in league mode only; the run's
    `entropy_coeff_final` stays self-play's (constant when unset)."""
    both = {**TINY, "entropy_coeff": 0.06, "league": {"entropy_coeff_final": 0.01}}
    league = TrainConfig(**both, mode="league", anneal_steps=1000)
    assert league.player_entropy_coeff() == [[0, 0.06], [1000, 0.01]]
    assert TrainConfig(**both, mode="selfplay").player_entropy_coeff() == 0.06
    overridden = TrainConfig(**both, mode="league", entropy_coeff_final=0.03)
    assert overridden.player_entropy_coeff() == [[0, 0.06], [3_000_000, 0.01]]
    assert TrainConfig(**{**both, "entropy_coeff_final": 0.03}, mode="selfplay").player_entropy_coeff() == [
        [0, 0.06], [3_000_000, 0.03]
    ]  # fmt: skip
    with pytest.raises(ValueError, match="entropy_coeff_final"):
        TrainConfig(**TINY, league={"entropy_coeff_final": -1.0})


def test_value_error_clip_reaches_ppo():
    """`vf_clip_param` is RLlib's: large returns (poker) need it above their square."""
    assert build_ppo_config(TrainConfig(**TINY, vf_clip_param=500.0)).vf_clip_param == 500.0
    with pytest.raises(ValueError, match="vf_clip_param must be in"):
        TrainConfig(**TINY, vf_clip_param=0.0)


def test_kl_settings_reach_ppo():
    """`kl_coeff` and `kl_target` are RLlib's; a coefficient of 0 switches the KL term off."""
    default = build_ppo_config(TrainConfig(**TINY))
    assert (default.use_kl_loss, default.kl_coeff, default.kl_target) == (True, 0.2, 0.01)
    off = build_ppo_config(TrainConfig(**TINY, kl_coeff=0.0, kl_target=0.05))
    assert (off.use_kl_loss, off.kl_coeff, off.kl_target) == (False, 0.0, 0.05)
    with pytest.raises(ValueError, match="kl_target must be in"):
        TrainConfig(**TINY, kl_target=0.0)
    with pytest.raises(ValueError, match="kl_coeff must be in"):
        TrainConfig(**TINY, kl_coeff=-0.1)
