"""RunClock and `anneal_over`: schedules that span the run's time budget, resumed runs
included (the Ray run is in tests/test_training.py)."""

from __future__ import annotations

import pytest

from league.config import ConfigError, TrainConfig
from league.run import RunDir, RunDirError
from league.training.loop import recorded_progress, run_clock
from league.training.run_clock import RunClock


class _FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_clock_crosses_the_schedule_span_as_the_budget_runs_out():
    time = _FakeTime()
    clock = RunClock(span_steps=1000, budget_seconds=60.0, now=time)
    assert clock.progress() == 0.0 and clock() == 0
    time.now += 15.0
    assert clock.progress() == pytest.approx(0.25) and clock() == 250
    time.now += 45.0
    assert clock() == 1000
    time.now += 1000.0  # past the deadline (the last iteration overruns): stays at the end
    assert clock.progress() == 1.0 and clock() == 1000


def test_a_resumed_clock_anneals_what_is_left_over_its_new_budget():
    time = _FakeTime()
    clock = RunClock(span_steps=1000, budget_seconds=100.0, start_progress=0.6, now=time)
    assert clock() == 600  # where the checkpoint left the schedules, not back at 0
    time.now += 50.0
    assert clock.progress() == pytest.approx(0.8)
    time.now += 50.0
    assert clock.progress() == pytest.approx(1.0)


def test_rounds_that_each_anneal_over_what_is_left_of_the_whole_budget_end_on_time():
    # league tune's rounds: round k of 3 resumes at the progress the last one recorded
    # and spans the trial's remaining minutes (run.anneal_minutes), not its own.
    time, rounds, round_s, progress = _FakeTime(), 3, 60.0, 0.0
    for k in range(rounds):
        clock = RunClock(
            1000, budget_seconds=(rounds - k) * round_s, start_progress=progress, now=time
        )
        time.now += round_s
        progress = clock.progress()
        assert progress == pytest.approx((k + 1) / rounds)
    assert TrainConfig(env="tictactoe", anneal_minutes=3.0).run.anneal_minutes == 3.0
    with pytest.raises(ConfigError, match="anneal_minutes"):
        TrainConfig(env="tictactoe", anneal_minutes=0.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"span_steps": 0}, "span_steps must be >= 1"),
        ({"budget_seconds": 0.0}, "budget_seconds must be a positive number"),
        ({"budget_seconds": float("inf")}, "budget_seconds must be a positive number"),
        ({"start_progress": 1.5}, r"start_progress must be in \[0, 1\]"),
        ({"start_progress": float("nan")}, r"start_progress must be in \[0, 1\]"),
    ],
)
def test_the_clock_refuses_what_it_cannot_run(kwargs, message):
    args = {"span_steps": 10, "budget_seconds": 1.0, **kwargs}
    with pytest.raises(ValueError, match=message):
        RunClock(**args)


def test_anneal_over_run_spans_the_step_budget_when_the_run_stops_by_steps():
    base = {"env": "tictactoe", "lr": 3e-4, "lr_final": 1e-5, "anneal_steps": 5000}
    by_steps = TrainConfig(**base, anneal_over="run", stop_timesteps=8000)
    assert by_steps.run.run_minutes() is None
    assert by_steps.lr_schedule() == [[0, 3e-4], [8000, 1e-5]]
    # A time budget (given, or the default when no stop is given) keeps anneal_steps
    # as the axis: the run clock crosses it.
    by_time = TrainConfig(**base, anneal_over="run", stop_minutes=30.0)
    assert by_time.run.run_minutes() == 30.0 and by_time.schedule_steps() == 5000
    unbounded = TrainConfig(**base, anneal_over="run")
    assert unbounded.run.run_minutes() == unbounded.run.default_stop_minutes
    plain = TrainConfig(**base, anneal_over="steps", stop_timesteps=8000)  # anneal_steps
    assert plain.lr_schedule() == [[0, 3e-4], [5000, 1e-5]]
    message = "unknown anneal_over value 'time'; known anneal_over values: steps, run"
    with pytest.raises(ConfigError, match=message):
        TrainConfig(**base, anneal_over="time")


def test_every_games_schedules_span_the_run_by_default():
    cfg = TrainConfig.from_dict({"env": "leduc_poker"})
    assert cfg.ppo.anneal_over == "run" and cfg.ppo.lr_final is not None
    # tictactoe anneals its league's bonus: over a 15-minute run it ends at its final
    # value however many env steps the machine makes in that time.
    ttt = TrainConfig.from_dict({"env": "tictactoe", "mode": "league", "stop_minutes": 15})
    assert ttt.ppo.anneal_over == "run" and ttt.anneals()
    assert ttt.player_entropy_coeff() == [[0, 0.06], [ttt.ppo.anneal_steps, 0.03]]
    # Self-play keeps tictactoe's bonus constant: nothing anneals, no clock.
    assert not TrainConfig.from_dict({"env": "tictactoe", "mode": "selfplay"}).anneals()


def test_the_run_clock_only_where_something_anneals():
    """`run` is every game's default; a run with constant rates gets no clock and no
    word about time schedules, one that anneals without sampling ahead is told."""
    lines: list[str] = []
    constant = TrainConfig.from_dict({"env": "tictactoe", "mode": "selfplay", "algo": "appo"})
    assert run_clock(object(), constant, 0.0, lines.append) is None and lines == []
    annealing = constant.replace(lr_final=1e-5)
    assert run_clock(object(), annealing, 0.0, lines.append) is None
    assert len(lines) == 1 and "schedules over time need ppo with sample_ahead" in lines[0]


@pytest.mark.parametrize("value", ["0.5", 1.5, -0.1, True, None, float("nan")])
def test_a_hand_broken_recorded_progress_is_named(tmp_path, value):
    run = RunDir(tmp_path)
    with pytest.raises(RunDirError, match=r"latest.json: schedule_progress must be in \[0, 1\]"):
        recorded_progress(run, {"schedule_progress": value})
    assert recorded_progress(run, {"schedule_progress": 0.25}) == 0.25
    assert recorded_progress(run, {}) == 0.0 and recorded_progress(run, None) == 0.0
