"""More than two seats on real Ray: a 3-player free-for-all (kuhn_poker_3p), a 2v2
team game (tiny_bridge_4p) and a game of two sides (simple_tag: predators and prey)
each train a few league iterations; every finished episode becomes one match record
whose teams are each played by one module of the team's side; the snapshots load
without Ray and play every seat of their side."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_run import TINY_IN_PROCESS

from envs.registry import game_layout
from league.config import TrainConfig
from league.core.ids import side_of
from league.core.match import MatchRecord
from league.run import RunDir, read_progress
from league.snapshot import load_policy
from league.store import open_store
from league.tools.evaluation import evaluate
from league.training.loop import train

GAMES = ("kuhn_poker_3p", "tiny_bridge_4p", "simple_tag")


@pytest.fixture(scope="module", params=GAMES)
def nseat_run(request, ray_session, tmp_path_factory):
    game = request.param
    cfg = TrainConfig.from_dict(
        {
            "env": game,
            "run_dir": str(tmp_path_factory.mktemp(game) / "run"),
            "num_env_runners": 0,
            "num_envs_per_env_runner": 4,
            "train_batch_size": 300,
            "minibatch_size": 100,
            "num_epochs": 1,
            "hidden_sizes": [16],
            "stop_timesteps": 900,
            "eval_interval": 3,
            "eval_games": 2,
            "checkpoint_interval": 3,
            "dashboard": False,
            # simple_tag: cross-side matches ranked within sides (one side elsewhere).
            "league": {"snapshot_step_budget": 150, "cross_side_outcome": "within_side"},
        }
    )
    summary = train(cfg, log=lambda _line: None)
    return cfg, summary


def test_match_records_equal_episodes_and_fill_every_team(nseat_run):
    cfg, summary = nseat_run
    layout = cfg.layout
    run = RunDir(cfg.run.run_dir)
    records = read_progress(run)
    assert summary.iterations == len(records) >= 3
    episodes = sum(r.episodes for r in records)
    with open_store(cfg.run.store, run.path, read_only=True) as store:
        matches = [MatchRecord.from_dict(m) for m in store.matches()]
    # No env runner: nothing is sampled ahead, so every episode is exactly one record.
    assert len(matches) == episodes > 0
    assert len({m.episode_id for m in matches}) == len(matches)
    for match in matches:
        assert set(match.modules) == set(layout.seats)
        for team in layout.teams:
            (module,) = {match.modules[s] for s in team.seats}
            assert side_of(module) == team.side
            assert {match.teams[s] for s in team.seats} == {team.name}
    # Every side's main learned (it sat in matches) and snapshots were taken.
    for side in layout.sides:
        assert any(side_of(m) == side for match in matches for m in match.modules.values())
    assert records[-1].league is not None and records[-1].league.size >= len(layout.sides)
    assert records[-1].eval is not None
    if layout.multi_side:
        # Ranked by raw return simple_tag's prey never wins (the predators never score
        # below 0, the prey never above); ranked within sides it wins its good games.
        prey_won = [m for m in matches if m.outcomes["agent_0"] == "win"]
        assert prey_won and all(m.returns["agent_0"] <= 0 for m in prey_won)


def test_ratings_follow_the_game(nseat_run):
    cfg, _ = nseat_run
    run = RunDir(cfg.run.run_dir)
    with open_store(cfg.run.store, run.path, read_only=True) as store:
        state = store.state()
    # More than two seats or teams of several: the skill rating over rankings.
    assert state["ratings"]["kind"] == "skill"
    for mu, sigma in state["ratings"]["skills"].values():
        assert np.isfinite(mu) and 0 < sigma


def test_snapshots_load_without_ray_and_play_every_seat(nseat_run):
    cfg, _ = nseat_run
    run = RunDir(cfg.run.run_dir)
    layout = game_layout(cfg.game_id)
    snapshots = [load_policy(path) for path in run.snapshot_dirs()]
    by_side = {
        side: [p for p in snapshots if side_of(p.meta.player) == side] for side in layout.sides
    }
    assert all(by_side.values()), {s: len(p) for s, p in by_side.items()}
    for side, policies in by_side.items():
        records = evaluate(cfg.game_id, policies[-1], _Random(), 2, greedy=False, seed=3)
        assert [r.seat for r in records] == [
            t.seats[0] if len(t.seats) == 1 else t.name for t in layout.teams_of_side(side)
        ]
        assert all(r.games == 2 for r in records)


class _Random:
    """Uniform over the legal actions of whatever seat it plays."""

    def action_probs(self, obs):
        mask = np.asarray(obs["action_mask"], dtype=np.float64)
        return mask / mask.sum()


def test_tools_speak_n_seats(nseat_run, tmp_path, capsys):
    """`league evaluate` per team (and NashConv where OpenSpiel computes it), the
    standings with each skill's uncertainty, the league's mixture per side."""
    from league.cli import main
    from league.tools.report import standings_lines

    cfg, _ = nseat_run
    layout = cfg.layout
    main_id = "main_0" if not layout.multi_side else f"{layout.sides[0]}.main_0"
    argv = ["evaluate", "--run-dir", cfg.run.run_dir, "--player", main_id, "--opponent", "random"]
    assert main([*argv, "--games", "2", "--sample"]) == 0
    out = capsys.readouterr().out
    team_lines = [line for line in out.splitlines() if line.strip().startswith("seat ")]
    assert len(team_lines) == len(layout.teams_of_side(layout.sides[0]))
    if cfg.game_id == "kuhn_poker_3p":  # three players: NashConv, never NashConv/2
        (line,) = [x for x in out.splitlines() if "NashConv (OpenSpiel" in x]
        assert 0.0 <= float(line.split(":")[1].split()[0]) < 2.0625 + 2.0
    with open_store(cfg.run.store, RunDir(cfg.run.run_dir).path, read_only=True) as store:
        lines = standings_lines(store.state())
    assert "mu - 3 sigma" in lines[0] and len(lines) > 2
    if layout.multi_side:  # each side ranked on its own, under its name
        heads = [i for i, line in enumerate(lines) if line.startswith("side ")]
        assert [lines[i] for i in heads] == [f"side {s}:" for s in sorted(layout.sides)]
        assert all(lines[i + 1].split()[0] == "1" for i in heads)
    side_args = ["--side", layout.sides[-1]] if layout.multi_side else []
    out_dir = tmp_path / "mix"
    code = main(
        ["export", "--mixture", "--run-dir", cfg.run.run_dir, "--out", str(out_dir), *side_args]
    )
    assert code == 0
    printed = capsys.readouterr().out
    if cfg.game_id == "kuhn_poker_3p":  # an OpenSpiel game small enough to weigh members on
        expected = "least-NashConv mixture"
    else:
        expected = "Nash mixture" if len(layout.teams) == 2 else "alpha-rank mixture"
    assert expected in printed
    mixture = load_policy(out_dir)
    assert all(side_of(m) == layout.sides[-1] for m in mixture.ids)
    if layout.multi_side:  # which side's mixture must be said
        assert (
            main(
                ["export", "--mixture", "--run-dir", cfg.run.run_dir, "--out", str(tmp_path / "x")]
            )
            == 2
        )
        assert "say which one's mixture (--side)" in capsys.readouterr().err
    else:  # --side in a game of one side: said plainly, nothing written
        argv = ["export", "--mixture", "--run-dir", cfg.run.run_dir, "--side", "red"]
        assert main([*argv, "--out", str(tmp_path / "y")]) == 2
        assert "has one side (every seat's spaces alike)" in capsys.readouterr().err
        assert not (tmp_path / "y").exists()


def test_a_game_of_two_sides_resumes_with_its_skill_ratings(ray_session, tmp_path):
    settings = {
        "env": "simple_tag",
        "run_dir": str(tmp_path / "run"),
        "num_env_runners": 0,
        "num_envs_per_env_runner": 2,
        "train_batch_size": 100,
        "minibatch_size": 50,
        "num_epochs": 1,
        "hidden_sizes": [16],
        "eval_interval": 0,
        "checkpoint_interval": 1,
        "dashboard": False,
        "league": {"snapshot_step_budget": 50},
    }
    first = train(TrainConfig.from_dict({**settings, "stop_timesteps": 200}), log=lambda _: None)
    run = RunDir(settings["run_dir"])
    with open_store(None, run.path, read_only=True) as store:
        before = store.state()
    lines: list[str] = []
    again = train(
        TrainConfig.from_dict({**settings, "stop_timesteps": 400}), resume=True, log=lines.append
    )
    assert any(line.startswith("resumed") for line in lines), lines
    assert again.iterations > first.iterations and again.env_steps >= 400
    with open_store(None, run.path, read_only=True) as store:
        after = store.state()
    assert before["ratings"]["kind"] == after["ratings"]["kind"] == "skill"
    sides = {side_of(s["id"]) for s in after["snapshots"]}
    assert sides == {"adversary", "agent"}
    assert len(after["snapshots"]) > len(before["snapshots"])


def test_the_next_steps_a_finished_run_prints_all_work(nseat_run, tmp_path, monkeypatch, capsys):
    """Every `league` command the run's closing lines suggest runs as printed (in a game
    of two sides: each side's main and mixture by name); without --player, `evaluate`
    plays every side's main and `export` asks which."""
    import shlex

    from league.cli import main
    from league.training.loop import next_steps

    cfg, _ = nseat_run
    monkeypatch.chdir(tmp_path)  # `export --out main_0.snapshot` writes where it is run
    commands = [
        shlex.split(line.split("   #")[0].split("  # ")[0])
        for line in next_steps(cfg, RunDir(cfg.run.run_dir))
        if line.strip().startswith("league ")
    ]
    assert len(commands) >= 4
    for argv in commands:
        argv = argv[1:] + (["--games", "2"] if argv[1] == "evaluate" else [])
        assert main(argv) == 0, (argv, capsys.readouterr().err)
    out = capsys.readouterr().out
    mains = [f"{side}.main_0" if side else "main_0" for side in cfg.layout.sides]
    for player in mains:
        assert f"exported {player} " in out
        assert f"{player} (greedy) vs random" in out  # evaluate's default: every side's main
    exports = ["export", "--run-dir", cfg.run.run_dir, "--out", str(tmp_path / "x.snapshot")]
    if cfg.layout.multi_side:
        assert main(exports) == 2
        assert "--player adversary.main_0 or --player agent.main_0" in capsys.readouterr().err
        assert not (tmp_path / "x.snapshot").exists()
    else:
        assert main(exports) == 0


def test_probe_trains_a_best_response_in_one_team_against_the_snapshot_elsewhere(nseat_run):
    """`league probe` on N seats: the best response plays each team of its side in turn
    (the other side's, in a game of two sides), the snapshot every other seat; in a
    free-for-all its headline says what an even share of wins is."""
    from league.training.probe import best_response_side, probe

    cfg, _ = nseat_run
    layout = cfg.layout
    snapshot = RunDir(cfg.run.run_dir).snapshot_dirs()[-1]
    target = load_policy(snapshot)
    result = probe(target, minutes=0.05, games=4, seed=0, log=lambda _line: None)
    side = best_response_side(layout, side_of(target.meta.player))
    assert side != side_of(target.meta.player) or not layout.multi_side
    assert result.env_steps > 0 and result.teams == len(layout.teams)
    assert len(result.seats) == len(layout.teams_of_side(side))
    assert all(s.games == 2 for s in result.seats)
    text = result.format()
    even = f"(an even share with {len(layout.teams)} teams: {1 / len(layout.teams):.3f})"
    assert (even in text) == (len(layout.teams) > 2), text


def test_snapshots_are_listed_side_by_side(nseat_run, capsys):
    """`league snapshots` lists the best rated first within each side: ratings of
    predators and prey are not compared."""
    from league.cli import main

    cfg, _ = nseat_run
    assert main(["snapshots", "--run-dir", cfg.run.run_dir]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    sides = [side_of(row[0]) for row in rows]
    assert sides == sorted(sides) and set(sides) == set(cfg.layout.sides)
    for side in set(sides):
        ratings = [float(row[4]) for row in rows if side_of(row[0]) == side]
        assert ratings == sorted(ratings, reverse=True)


def test_a_run_with_its_own_teams_is_evaluated_by_them(ray_session, tmp_path, capsys):
    """`--teams` pairs texas_holdem_4p's seats into partnerships: the run's match
    records carry them, and `league evaluate` on the run plays and ranks per team
    (a snapshot does not carry the teams; the run's config.json does)."""
    from league.cli import main

    teams = {"ns": ["player_0", "player_2"], "ew": ["player_1", "player_3"]}
    cfg = TrainConfig.from_dict(
        TINY_IN_PROCESS
        | {"env": "texas_holdem_4p", "teams": teams, "run_dir": str(tmp_path / "run")}
        | {"num_env_runners": 0}
    )
    train(cfg, log=lambda _line: None)
    with open_store(cfg.run.store, RunDir(cfg.run.run_dir).path, read_only=True) as store:
        matches = [MatchRecord.from_dict(m) for m in store.matches()]
    expected = {s: t for t, seats in teams.items() for s in seats}
    assert matches and [m.teams for m in matches] == [expected] * len(matches)
    argv = ["evaluate", "--run-dir", cfg.run.run_dir, "--games", "4", "--sample"]
    assert main(argv) == 0
    lines = [x.split()[1] for x in capsys.readouterr().out.splitlines() if "seat " in x]
    assert lines == ["ns:", "ew:"]
