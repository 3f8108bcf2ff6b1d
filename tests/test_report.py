"""`league.report`: PNGs from a realistic run dir, and clear errors for bad ones.

The run dir is made by driving the real ``league.roles.League`` (roles pick
opponents, snapshots are decided and retired, matches are recorded), so the
progress lines and the league state have exactly the shapes training writes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.image import imread

from league.core.config import LeagueConfig
from league.core.league import League
from league.core.match import MatchRecord
from league.core.matchmaking import choose_active_set
from league.core.retirement import retirements
from league.tools.report import (
    DPI,
    ReportError,
    _drop_superseded,
    load_league_state,
    payoff_matrix,
    plot_payoff,
    read_progress,
    write_report,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SEATS = ("player_1", "player_2")


def _outcomes(rng: np.random.Generator, skill_a: float, skill_b: float) -> tuple[str, str]:
    """A game whose odds follow a hidden skill gap (10% draws)."""
    if rng.random() < 0.1:
        return "draw", "draw"
    p_a = 1.0 / (1.0 + math.exp(-(skill_a - skill_b)))
    return ("win", "loss") if rng.random() < p_a else ("loss", "win")


def simulate_run(run_dir: Path, iterations: int = 14, seed: int = 0, store: bool = False) -> League:
    """A small league run written the way `league train` writes it.

    Each player's hidden skill grows with its steps, a snapshot keeps the skill
    it was taken at, so ratings spread as they do in a learning league.
    """
    cfg = LeagueConfig(max_snapshots=6, active_set_size=4, snapshot_step_budget=2_000)
    league = League(cfg)
    rng = np.random.default_rng(seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    frozen: dict[str, float] = {}
    steps_per_iteration = 600

    def skill(module: str) -> float:
        if module in frozen:
            return frozen[module]
        return league.players[module].steps / 1_000

    for pid in cfg.player_ids("main"):
        sid = league.take_snapshot(pid, iteration=0)
        frozen[sid] = 0.0
    active = choose_active_set(league, rng, ())
    opened = None
    seq = 0
    if store:
        from league.store import open_store

        opened = open_store(None, run_dir)
    lines = []
    for iteration in range(1, iterations + 1):
        league.add_steps({p: steps_per_iteration for p in league.players})
        view = league.view(active)
        matches = []
        for pid in league.players:
            for game in range(12):
                opponent = league.role(pid).choose_opponent(view, rng)
                a, b = (pid, opponent) if game % 2 == 0 else (opponent, pid)
                out_a, out_b = _outcomes(rng, skill(a), skill(b))
                matches.append(
                    MatchRecord(
                        episode_id=f"it{iteration}-{pid}-{game}",
                        modules={SEATS[0]: a, SEATS[1]: b},
                        outcomes={SEATS[0]: out_a, SEATS[1]: out_b},
                        length=7,
                        iteration=iteration,
                    )
                )
        used = league.record(matches)
        decision = league.decide(rng)
        new_ids = league.apply(decision, iteration)
        for sid in new_ids:
            frozen[sid] = skill(league.snapshots[sid].player)
        retired = retirements(league)
        league.retire(retired)
        active = choose_active_set(league, rng, active)
        lines.append(
            {
                "iteration": iteration,
                "env_steps": iteration * steps_per_iteration * len(league.players),
                "seconds": 1.5,
                "episode_len_mean": 7.0,
                "league": {
                    "size": len(league.snapshots),
                    "active_set": list(active),
                    "matches": used,
                    "new_snapshots": list(new_ids),
                    "retired": list(retired),
                    "ratings": league.ratings.as_dict(),
                    "role_scores": {"main": 0.5},
                },
            }
        )
        if iteration % 5 == 0:
            ckpt = run_dir / "checkpoints" / f"iter_{iteration:06d}"
            ckpt.mkdir(parents=True)
            driver_state = {"league": league.get_state(), "active_set": list(active), "rng": {}}
            (ckpt / "league_state.json").write_text(json.dumps(driver_state))
        if opened is not None:
            seq = opened.commit(
                league.get_state(), [m.to_dict() for m in matches], expected_seq=seq
            )
    if opened is not None:
        opened.close()
    (run_dir / "progress.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return league


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


@pytest.fixture(scope="module")
def league_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, League]:
    run_dir = tmp_path_factory.mktemp("run")
    return run_dir, simulate_run(run_dir)


def test_report_writes_three_valid_pngs(league_run: tuple[Path, League], tmp_path: Path) -> None:
    run_dir, league = league_run
    messages: list[str] = []
    paths = write_report(run_dir, tmp_path / "out", log=messages.append)
    assert [p.name for p in paths] == ["ratings.png", "league_size.png", "payoff.png"]
    _check_png(paths[0], width=10 * DPI, height=6 * DPI)
    _check_png(paths[1], width=10 * DPI, height=5 * DPI)
    _check_png(paths[2])
    # The newest checkpoint (iteration 10 of 14) is the heatmap's source here.
    assert any("iter_000010" in m and "payoff heatmap" in m for m in messages), messages
    assert league.snapshots, "the simulated league should hold snapshots"


def test_report_defaults_to_run_dir_report(league_run: tuple[Path, League], tmp_path: Path) -> None:
    run_dir, _ = league_run
    copy = tmp_path / "run"
    copy.mkdir()
    (copy / "progress.jsonl").write_text((run_dir / "progress.jsonl").read_text())
    paths = write_report(copy, log=lambda _: None)
    assert {p.parent for p in paths} == {copy / "report"}
    # No store and no checkpoint: the heatmap is skipped, the curves are not.
    assert [p.name for p in paths] == ["ratings.png", "league_size.png"]


def test_store_state_is_preferred_over_checkpoints(tmp_path: Path) -> None:
    pytest.importorskip("league.store")
    run_dir = tmp_path / "run"
    league = simulate_run(run_dir, iterations=6, store=True)
    state, source = load_league_state(run_dir, log=lambda _: None)
    assert "league store" in source and "seq 6" in source
    assert state == json.loads(json.dumps(league.get_state()))
    messages: list[str] = []
    paths = write_report(run_dir, tmp_path / "out", log=messages.append)
    assert (tmp_path / "out" / "payoff.png") in paths
    assert any("league store" in m for m in messages)


def test_no_store_file_is_created_by_reading(league_run: tuple[Path, League]) -> None:
    run_dir, _ = league_run
    load_league_state(run_dir, log=lambda _: None)
    assert not (run_dir / "league.sqlite").exists()


def test_payoff_matrix_top_n_and_values(league_run: tuple[Path, League]) -> None:
    _, league = league_run
    state = league.get_state()
    ratings = league.ratings.as_dict()
    modules, rate, games, total = payoff_matrix(state, top_n=4)
    assert total == len(league.module_ids())
    assert modules == sorted(ratings, key=lambda m: -ratings[m])[:4]
    assert rate.shape == games.shape == (4, 4)
    met = games > 0
    # Row vs column and column vs row are complementary; never-met cells are NaN.
    assert np.allclose((rate + rate.T)[met], 1.0)
    assert np.isnan(rate[~met]).all()
    for i, a in enumerate(modules):
        for j, b in enumerate(modules):
            if met[i, j]:
                w, d, lo = league.payoff.wdl(a, b)
                assert rate[i, j] == pytest.approx((w + d / 2) / (w + d + lo))


def test_heatmap_is_limited_to_top_n(league_run: tuple[Path, League], tmp_path: Path) -> None:
    _, league = league_run
    state = league.get_state()
    assert len(league.module_ids()) > 3
    small = plot_payoff(state, tmp_path / "small.png", top_n=3)
    big = plot_payoff(state, tmp_path / "big.png", top_n=30)
    assert small is not None and big is not None
    # The figure grows with the number of modules shown; 3 stays the minimum size.
    assert _check_png(small).shape[0] < _check_png(big).shape[0]


def test_selfplay_run_without_league_skips_with_messages(tmp_path: Path) -> None:
    run_dir = tmp_path / "selfplay"
    run_dir.mkdir()
    lines = [{"iteration": i, "env_steps": 100 * i, "seconds": 1.0} for i in range(1, 4)]
    (run_dir / "progress.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    messages: list[str] = []
    assert write_report(run_dir, log=messages.append) == []
    text = "\n".join(messages)
    assert "no league records" in text and "ratings.png" in text
    assert "payoff.png skipped" in text


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: None, "does not exist"),
        (lambda d: d.mkdir(), "has no progress.jsonl"),
        (lambda d: (d.mkdir(), (d / "progress.jsonl").write_text("\n")), "no iteration records"),
        (
            lambda d: (
                d.mkdir(),
                (d / "progress.jsonl").write_text('{"iteration": 1}\nnot json\n{"iteration": 3}\n'),
            ),
            "progress.jsonl:2: not a JSON line",
        ),
        (
            lambda d: (d.mkdir(), (d / "progress.jsonl").write_text('{"iteration": "one"}\n')),
            "int 'iteration'",
        ),
    ],
)
def test_bad_run_dirs_raise_report_error(setup: Any, message: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    setup(run_dir)
    with pytest.raises(ReportError, match=message):
        write_report(run_dir, tmp_path / "out", log=lambda _: None)
    assert issubclass(ReportError, ValueError)


def test_bad_top_n_raises(league_run: tuple[Path, League], tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="top_n"):
        write_report(league_run[0], tmp_path, top_n=0)


def test_half_written_last_line_is_skipped(tmp_path: Path) -> None:
    run_dir = tmp_path / "live"
    run_dir.mkdir()
    (run_dir / "progress.jsonl").write_text('{"iteration": 1}\n{"iteration": 2}\n{"itera')
    assert [r["iteration"] for r in read_progress(run_dir)] == [1, 2]


def test_resumed_iterations_replace_the_abandoned_ones() -> None:
    its = [1, 2, 3, 4, 3, 4, 5]  # crashed after 4, resumed from the checkpoint at 2
    records = [{"iteration": i, "n": n} for n, i in enumerate(its)]
    kept = _drop_superseded(records)
    assert [r["iteration"] for r in kept] == [1, 2, 3, 4, 5]
    assert [r["n"] for r in kept] == [0, 1, 4, 5, 6]
