"""`league report`: PNGs from a run dir that real training wrote, clear errors for bad ones.

One short league training run (tictactoe, a few iterations) is made once per
module with the real ``league.training.loop.train``: its ``progress.jsonl`` (one
``IterationRecord`` per line) and its league store are exactly what the report
reads in use. Bad inputs are hand-made files next to it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.image import imread
from redis_server import free_port

from league.config import TrainConfig
from league.core.config import LeagueConfig
from league.core.league import League
from league.run import IterationRecord, RunDir, write_json_atomic
from league.store import open_store
from league.tools.report import (
    DPI,
    ReportError,
    load_league_state,
    payoff_matrix,
    plot_payoff,
    plot_ratings,
    read_records,
    write_report,
)
from league.training.loop import TrainingSummary, train

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ITERATIONS = 6
LEAGUE = LeagueConfig(snapshot_step_budget=150)


@dataclass(frozen=True)
class TrainedRun:
    run: RunDir
    summary: TrainingSummary
    state: dict[str, Any]
    """The latest league state, read from the store after training."""
    seq: int


@pytest.fixture(scope="module")
def trained(ray_session: Any, tmp_path_factory: pytest.TempPathFactory) -> TrainedRun:
    run_dir = tmp_path_factory.mktemp("run")
    cfg = TrainConfig(
        env="tictactoe",
        mode="league",
        run_dir=str(run_dir),
        stop_timesteps=300 * ITERATIONS,
        num_env_runners=0,
        num_envs_per_env_runner=1,
        train_batch_size=300,
        minibatch_size=100,
        num_epochs=1,
        hidden_sizes=[16],
        eval_interval=0,
        checkpoint_interval=0,
        num_cpus=2,
        dashboard=False,
        league=LEAGUE,
    )
    summary = train(cfg, log=lambda _: None)
    with open_store(None, run_dir) as store:
        state, seq = store.state(), store.seq()
    assert state is not None
    return TrainedRun(RunDir(run_dir), summary, state, seq)


def _league(trained: TrainedRun) -> League:
    """The league the store holds (without the driver's own part)."""
    return League.from_state(LEAGUE, {k: v for k, v in trained.state.items() if k != "driver"})


def _check_png(path: Path, width: int | None = None, height: int | None = None) -> np.ndarray:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path.name} is not a PNG"
    assert len(data) > 5_000, f"{path.name} is suspiciously small ({len(data)} bytes)"
    image = imread(path)
    assert image.ndim == 3 and image.shape[2] in (3, 4)
    if width is not None:
        assert image.shape[:2] == (height, width)
    # Something was drawn: not a single flat colour.
    assert float(image[..., :3].std()) > 0.01
    return image


def _progress_only(trained: TrainedRun, tmp_path: Path) -> RunDir:
    """A run dir with the trained run's progress.jsonl and nothing else."""
    copy = RunDir(tmp_path / "copy")
    copy.path.mkdir()
    shutil.copy(trained.run.progress_file, copy.progress_file)
    return copy


def _line(iteration: int, env_steps: int | None = None) -> str:
    steps = 100 * iteration if env_steps is None else env_steps
    return IterationRecord(iteration, steps, seconds=1.0, steps_per_s=100.0).to_json()


# ---- the trained run -------------------------------------------------------------------


def test_report_writes_three_valid_pngs(trained: TrainedRun, tmp_path: Path) -> None:
    messages: list[str] = []
    paths = write_report(trained.run.path, tmp_path / "out", log=messages.append)
    names = ["ratings.png", "league_size.png", "standings.txt", "payoff.png"]
    assert [p.name for p in paths] == names
    assert {p.parent for p in paths} == {tmp_path / "out"}
    _check_png(paths[0], width=10 * DPI, height=6 * DPI)
    _check_png(paths[1], width=10 * DPI, height=5 * DPI)
    _check_png(paths[3])
    # Standings: every rated module once, best first (Elo in a two-player game).
    lines = paths[2].read_text().splitlines()
    assert lines[0].split()[-1] == "Elo" and len(lines) == 1 + len(
        trained.state["ratings"]["ratings"]
    )
    elo = [float(line.split()[2]) for line in lines[1:]]
    assert elo == sorted(elo, reverse=True)
    # The heatmap comes from the store at its latest seq: the seeding commit and
    # one commit per iteration.
    assert trained.seq == trained.summary.iterations + 1
    source = f"league store {trained.run.store_file} (seq {trained.seq})"
    assert f"report: payoff heatmap from {source}" in messages, messages


def test_records_are_the_iterations_training_wrote(trained: TrainedRun) -> None:
    records = read_records(trained.run)
    assert all(isinstance(r, IterationRecord) for r in records)
    assert [r.iteration for r in records] == list(range(1, trained.summary.iterations + 1))
    assert records[-1].env_steps == trained.summary.env_steps >= 300 * ITERATIONS
    assert all(r.league is not None for r in records)
    last = records[-1].league
    assert last is not None and last.store_seq == trained.seq
    # The curves are drawn from what the store ended with.
    assert last.size == len(trained.state["snapshots"]) >= 2
    assert last.ratings == trained.state["ratings"]["ratings"]
    assert sum(len(r.league.new_snapshots) for r in records if r.league) >= 1


def test_default_out_dir_and_no_store(trained: TrainedRun, tmp_path: Path) -> None:
    copy = _progress_only(trained, tmp_path)
    messages: list[str] = []
    paths = write_report(copy.path, log=messages.append)
    assert {p.parent for p in paths} == {copy.report}
    # No store: the heatmap is skipped with a message, the curves are not.
    assert [p.name for p in paths] == ["ratings.png", "league_size.png"]
    assert any("payoff.png skipped" in m for m in messages), messages
    # Looking for the store did not create one.
    assert not copy.store_file.exists()


def test_league_state_comes_from_the_store(trained: TrainedRun) -> None:
    loaded = load_league_state(trained.run.path, log=lambda _: None)
    assert loaded is not None
    state, source = loaded
    assert state == trained.state and f"seq {trained.seq}" in source
    assert not list(trained.run.path.rglob("league_state.json"))  # training never writes one


def test_store_named_in_config_json_is_read(trained: TrainedRun, tmp_path: Path) -> None:
    """A run trained with --store elsewhere: its config.json says where the store is."""
    copy = _progress_only(trained, tmp_path)
    moved = tmp_path / "elsewhere" / "league.sqlite"
    moved.parent.mkdir()
    shutil.copy(trained.run.store_file, moved)
    write_json_atomic(copy.config_file, {"store": f"sqlite://{moved}"})
    messages: list[str] = []
    paths = write_report(copy.path, tmp_path / "out", log=messages.append)
    assert tmp_path / "out" / "payoff.png" in paths
    assert any(f"league store {moved} (seq {trained.seq})" in m for m in messages), messages
    # An explicit store_url wins over config.json (and reading creates no store).
    assert load_league_state(copy.path, f"sqlite://{tmp_path}/none.sqlite") is None
    assert not (tmp_path / "none.sqlite").exists()


def test_unreadable_stores_skip_the_heatmap(trained: TrainedRun, tmp_path: Path) -> None:
    copy = _progress_only(trained, tmp_path)
    copy.store_file.write_bytes(b"not a sqlite file" * 100)
    messages: list[str] = []
    paths = write_report(copy.path, tmp_path / "out", log=messages.append)
    assert [p.name for p in paths] == ["ratings.png", "league_size.png"]
    assert any("cannot read the league store" in m for m in messages), messages
    # A Redis store nobody listens on: said without its password, fast.
    url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
    messages.clear()
    assert load_league_state(copy.path, url, log=messages.append) is None
    assert len(messages) == 1 and "cannot read the league store" in messages[0]
    assert "hunter2" not in messages[0] and "127.0.0.1" in messages[0]


def test_payoff_matrix_top_n_and_values(trained: TrainedRun) -> None:
    league = _league(trained)
    ratings = league.ratings.as_dict()
    assert len(ratings) >= 5
    modules, rate, games, total = payoff_matrix(trained.state, top_n=4)
    assert total == len(league.module_ids())
    assert modules == sorted(ratings, key=lambda m: (-ratings[m], m))[:4]
    assert rate.shape == games.shape == (4, 4)
    modules, rate, games, total = payoff_matrix(trained.state, top_n=100)
    assert len(modules) == total
    met = games > 0
    assert met.sum() >= 4  # the league did play
    # Row vs column and column vs row are complementary; never-met cells are NaN.
    assert np.allclose((rate + rate.T)[met], 1.0)
    assert np.isnan(rate[~met]).all()
    for i, a in enumerate(modules):
        for j, b in enumerate(modules):
            if met[i, j]:
                w, d, lo = league.payoff.wdl(a, b)
                assert rate[i, j] == pytest.approx((w + d / 2) / (w + d + lo))
                assert games[i, j] == pytest.approx(w + d + lo)


def test_heatmap_is_limited_to_top_n(tmp_path: Path) -> None:
    # A round robin of 12 modules, so that any top-N has games to show.
    modules = [f"main_0@{v}" for v in range(12)]
    state = {
        "ratings": {"ratings": {m: 1000.0 + 10 * i for i, m in enumerate(modules)}},
        "payoff": {
            "entries": [
                [a, b, 3.0, 1.0, 2.0] for i, a in enumerate(modules) for b in modules[i + 1 :]
            ]
        },
    }
    small = plot_payoff(state, tmp_path / "small.png", top_n=3)
    big = plot_payoff(state, tmp_path / "big.png", top_n=30)
    assert small is not None and big is not None
    # The figure grows with the number of modules shown; 3 stays the minimum size.
    assert _check_png(small).shape[0] < _check_png(big).shape[0]
    assert payoff_matrix(state, top_n=3)[0] == modules[::-1][:3]


def test_payoff_of_two_sides_shows_the_best_of_each_so_that_they_met(tmp_path: Path) -> None:
    # simple_tag: every predator outrates every prey, and predators never meet.
    predators = [f"adversary.main_0@{v}" for v in range(20)]
    prey = [f"agent.main_0@{v}" for v in range(5)]
    state = {
        "ratings": {
            "ratings": {
                **{m: 2000.0 + i for i, m in enumerate(predators)},
                **{m: 500.0 + i for i, m in enumerate(prey)},
            }
        },
        "payoff": {"entries": [[a, b, 9.0, 0.0, 1.0] for a in predators for b in prey]},
    }
    modules, rate, games, total = payoff_matrix(state, top_n=6)
    assert modules == predators[::-1][:3] + prey[::-1][:3] and total == 25
    assert games[0, 3] == 10 and rate[0, 3] == pytest.approx(0.9)
    assert np.isnan(rate[0, 1])  # two predators: never met
    assert plot_payoff(state, tmp_path / "payoff.png", top_n=6) is not None


def test_heatmap_of_modules_that_never_met_is_skipped(trained: TrainedRun, tmp_path: Path) -> None:
    ratings = trained.state["ratings"]["ratings"]
    never_met = {"ratings": {"ratings": ratings}, "payoff": {"entries": []}}
    assert plot_payoff(never_met, tmp_path / "none.png", top_n=30) is None
    assert not (tmp_path / "none.png").exists()
    assert plot_payoff(trained.state, tmp_path / "all.png", top_n=30) is not None


def test_half_written_last_line_is_skipped(trained: TrainedRun, tmp_path: Path) -> None:
    copy = _progress_only(trained, tmp_path)
    with copy.progress_file.open("a") as f:
        f.write(_line(99)[:25])  # training is writing it right now
    iterations = [r.iteration for r in read_records(copy)]
    assert iterations == list(range(1, trained.summary.iterations + 1))
    assert len(write_report(copy.path, tmp_path / "out", log=lambda _: None)) == 2


def test_resumed_iterations_replace_the_abandoned_ones(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "resumed")
    run.path.mkdir()
    # Crashed after 4, resumed from the checkpoint at 2: the replayed 3 and 4 win.
    its = [1, 2, 3, 4, 3, 4, 5]
    lines = [_line(i, env_steps=1000 * n) for n, i in enumerate(its)]
    run.progress_file.write_text("".join(line + "\n" for line in lines))
    records = read_records(run)
    assert [r.iteration for r in records] == [1, 2, 3, 4, 5]
    assert [r.env_steps for r in records] == [0, 1000, 4000, 5000, 6000]


# ---- runs without a league, and bad input --------------------------------------------


def test_selfplay_run_without_league_skips_with_messages(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "selfplay")
    run.path.mkdir()
    run.progress_file.write_text("".join(_line(i) + "\n" for i in range(1, 4)))
    messages: list[str] = []
    assert write_report(run.path, log=messages.append) == []
    text = "\n".join(messages)
    assert "no league records" in text and "ratings.png" in text
    assert "payoff.png skipped" in text
    assert plot_ratings(read_records(run), tmp_path / "r.png", 5) is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        ("", "has no progress.jsonl"),
        ("\n", "no iteration records"),
        (f"{_line(1)}\nnot json\n{_line(3)}\n", r"progress.jsonl:2: not a JSON line"),
        ('{"iteration": "one"}\n', "int 'iteration'"),
        (f'{_line(1)}\n{{"iteration": 2}}\n{_line(3)}\n', r"progress.jsonl:2: not an iteration"),
    ],
    ids=["missing-dir", "no-progress", "empty", "damaged-line", "bad-iteration", "not-a-record"],
)
def test_bad_run_dirs_raise_report_error(content: str | None, message: str, tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    if content is not None:
        run.path.mkdir()
        if content:
            run.progress_file.write_text(content)
    with pytest.raises(ReportError, match=message):
        write_report(run.path, tmp_path / "out", log=lambda _: None)
    assert not (tmp_path / "out").exists()  # failed before writing anything
    assert issubclass(ReportError, ValueError)


@pytest.mark.parametrize("top_n", [0, -3, True, 2.5])
def test_bad_top_n_raises(top_n: Any, tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.progress_file.write_text(_line(1) + "\n")
    with pytest.raises(ReportError, match="top_n"):
        write_report(run.path, tmp_path / "out", top_n=top_n)
