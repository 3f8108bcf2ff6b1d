"""The batched runner for simultaneous-move games against RLlib's own runner and the
league's needs.

Both runners are built in-process from the same PPOConfig (as RLlib builds a local
env runner), share one set of weights, seed their first game of copy i alike and
play greedily, so the same moves must give the same episodes: with seats that leave
mid-game (the toy `leave_early`: one terminated, one truncated), games ending in a
mix of both, a time limit (simple_tag, battle) and many agents per step (battle).
"""

from __future__ import annotations

import numpy as np
import pytest
from episode_data import agent_data
from ray.rllib.core.columns import Columns
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode

from league.config import TrainConfig
from league.core.ids import side_of, snapshot_id
from league.core.match import MatchRecord
from league.core.matchmaking import MatchmakingPlan
from league.run import RunDir, read_progress
from league.store import open_store
from league.training.algorithm import (
    MAIN_PLAYER,
    build_ppo_config,
    env_runner_class,
    snapshot_module_spec,
)
from league.training.env_runner import LeagueEnvRunner, PlanMapping
from league.training.loop import train
from league.training.parallel_env_runner import BatchedSimultaneousEnvRunner

LEAVE_EARLY = "toy_games:leave_early"
# Small conv layers keep battle's 13x13x5 observations cheap in tests.
TINY_NETWORK = {"hidden_sizes": [16], "conv_filters": [[4, 3, 2]]}
SHORT = {"max_cycles": 20}


def _config(game: str, env_kwargs: dict | None = None, **overrides):
    cfg = TrainConfig.from_dict(
        {
            "env": game,
            "env_kwargs": env_kwargs or {},
            "mode": "selfplay",
            "num_env_runners": 0,
            "num_envs_per_env_runner": 3,
            **TINY_NETWORK,
            **overrides,
        }
    )
    return cfg, build_ppo_config(cfg)


def _peek(metrics: dict, key):
    value = metrics[key]
    return value.peek() if hasattr(value, "peek") else value


@pytest.mark.parametrize(
    ("game", "env_kwargs"),
    [
        (LEAVE_EARLY, {}),
        (LEAVE_EARLY, {"cut_at": 6}),  # the last two seats end differently
        ("simple_tag", SHORT),
        ("battle", SHORT),
    ],
)
def test_same_moves_give_the_same_episodes_as_rllibs_runner(ray_session, game, env_kwargs):
    cfg, config = _config(game, env_kwargs)
    ours = BatchedSimultaneousEnvRunner(config=config, worker_index=0)
    theirs = LeagueEnvRunner(config=config)
    theirs.module.set_state(ours.module.get_state())
    copies = cfg.resources.num_envs_per_env_runner
    mine = ours.sample(num_episodes=copies, explore=False)
    reference = [e.to_numpy() for e in theirs.sample(num_episodes=copies, explore=False)]
    # Every copy's game has the same length here: all end in the same step.
    assert len(mine) == len(reference) == copies
    for episode, expected in zip(mine, reference, strict=True):
        assert isinstance(episode, MultiAgentEpisode) and episode.is_done
        assert len(episode) == len(expected) > 1 and episode.env_t_started == 0
        assert episode.is_terminated == expected.is_terminated
        assert episode.is_truncated == expected.is_truncated
        assert agent_data(episode) == agent_data(expected)
        assert episode.get_return() == pytest.approx(expected.get_return())
    if game == LEAVE_EARLY:  # the seats really left when the game says
        seats = mine[0].agent_episodes
        assert len(seats["player_2"]) == 2 and seats["player_2"].is_terminated
        cut = env_kwargs.get("cut_at", 4)
        assert len(seats["player_1"]) == cut and seats["player_1"].is_truncated
        assert len(seats["player_0"]) == 6 and seats["player_0"].is_terminated


def test_exploring_episodes_carry_what_ppo_needs_and_metrics_count_them(ray_session):
    cfg, config = _config(LEAVE_EARLY)
    runner = BatchedSimultaneousEnvRunner(config=config, worker_index=0)
    # Three copies of a six-round game in lockstep: 18 env steps are three whole games.
    episodes = runner.sample(num_timesteps=18)
    metrics = runner.get_metrics()
    assert len(episodes) == 3 and all(e.is_done for e in episodes)
    assert _peek(metrics, "num_env_steps_sampled") == sum(len(e) for e in episodes) == 18
    assert _peek(metrics, "num_episodes") == 3
    assert _peek(metrics, "episode_len_mean") == 6
    seat_steps = {
        seat: sum(len(e.agent_episodes[seat]) for e in episodes)
        for seat in ("player_0", "player_1", "player_2")
    }
    assert seat_steps == {"player_0": 18, "player_1": 12, "player_2": 6}
    assert _peek(metrics, "num_agent_steps_sampled") == seat_steps
    assert _peek(metrics, "num_module_steps_sampled") == {MAIN_PLAYER: 36}
    for episode in episodes:
        for sa in episode.agent_episodes.values():
            logits = np.asarray(sa.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS))
            logp = np.asarray(sa.get_extra_model_outputs(Columns.ACTION_LOGP))
            actions = np.asarray(sa.get_actions())
            masks = np.asarray(sa.get_observations()["action_mask"])[:-1]
            assert masks[np.arange(len(actions)), actions].all()  # every move legal
            # The stored log-prob is the sampling distribution's over legal moves.
            legal_logits = np.where(masks > 0, logits, -np.inf)
            expected = legal_logits[np.arange(len(actions)), actions] - np.logaddexp.reduce(
                legal_logits, axis=1
            )
            np.testing.assert_allclose(logp, expected, rtol=1e-4, atol=1e-5)


def test_teams_share_a_forward_pass_and_each_game_is_one_match_record(ray_session):
    cfg, config = _config("battle", SHORT, mode="league")
    runner = BatchedSimultaneousEnvRunner(config=config, worker_index=0)
    frozen = snapshot_id(MAIN_PLAYER, 3)
    spec = snapshot_module_spec(cfg)
    layout = cfg.layout
    plan = MatchmakingPlan(
        learners=(MAIN_PLAYER,),
        learner_probs=(1.0,),
        opponents=((frozen,),),
        opponent_probs=((1.0,),),
        active_set=(frozen,),
        layout=layout,
    )
    runner.update_league(
        add={frozen: (spec, spec.build().get_state())},
        remove=[],
        mapping=PlanMapping(plan, layout.seats),
    )
    episodes = runner.sample(num_timesteps=60)
    assert len(episodes) == cfg.resources.num_envs_per_env_runner
    metrics = runner.get_metrics()
    module_steps = _peek(metrics, "num_module_steps_sampled")
    assert set(module_steps) == {MAIN_PLAYER, frozen}
    matches = {m["episode_id"]: m for m in runner.drain_matches()}
    assert sorted(matches) == sorted(e.id_ for e in episodes)
    assert runner.drain_matches() == []  # each match leaves the runner once
    for episode in episodes:
        match = matches[episode.id_]
        assert match["length"] == len(episode)
        assert match["teams"] == {seat: seat.split("_")[0] for seat in layout.seats}
        # One module plays a whole team; the main and the snapshot meet.
        red = {match["modules"][s] for s in layout.seats if s.startswith("red")}
        blue = {match["modules"][s] for s in layout.seats if s.startswith("blue")}
        assert len(red) == len(blue) == 1 and red | blue == {MAIN_PLAYER, frozen}
        for seat, sa in episode.agent_episodes.items():
            assert sa.module_id == match["modules"][seat]
            assert match["returns"][seat] == pytest.approx(sa.get_return())


def test_runner_choice():
    for game in ("rps", "battle", "simple_tag"):
        cfg = TrainConfig.from_dict({"env": game})
        assert env_runner_class(cfg) is BatchedSimultaneousEnvRunner  # the default: auto
        assert env_runner_class(cfg.replace(env_runner="batched")) is BatchedSimultaneousEnvRunner
        assert env_runner_class(cfg.replace(env_runner="rllib")) is LeagueEnvRunner


@pytest.mark.parametrize(
    ("game", "num_env_runners"),
    [("simple_tag", 0), ("simple_tag", 1), ("battle", 0), ("battle", 1)],
)
def test_a_tiny_league_trains(ray_session, tmp_path, game, num_env_runners):
    cfg = TrainConfig.from_dict(
        {
            "env": game,
            "env_kwargs": SHORT,
            "run_dir": str(tmp_path / "run"),
            "num_env_runners": num_env_runners,
            "num_envs_per_env_runner": 4,
            "train_batch_size": 80,
            "minibatch_size": 40,
            "num_epochs": 1,
            "stop_timesteps": 160,
            "eval_interval": 0,
            "checkpoint_interval": 0,
            "dashboard": False,
            **TINY_NETWORK,
        }
    )
    summary = train(cfg, log=lambda _line: None)
    run = RunDir(cfg.run.run_dir)
    records = read_progress(run)
    assert summary.iterations == len(records) >= 2 and summary.env_steps >= 160
    with open_store(cfg.run.store, run.path, read_only=True) as store:
        matches = [MatchRecord.from_dict(m) for m in store.matches()]
    assert matches and len({m.episode_id for m in matches}) == len(matches)
    if num_env_runners == 0:  # nothing sampled ahead: every episode is one record
        assert len(matches) == sum(r.episodes for r in records)
    layout = cfg.layout
    for match in matches:
        assert match.length == SHORT["max_cycles"]
        for team in layout.teams:
            (module,) = {match.modules[s] for s in team.seats}
            assert side_of(module) == team.side
            assert {match.teams[s] for s in team.seats} == {team.name}
    # Every side's players trained: a learner result per side's main.
    trained = set().union(*(r.learners for r in records))
    assert {side_of(m) for m in trained} == set(layout.sides)
