"""Any PettingZoo or OpenSpiel game: import paths, spaces, masks in info, new registry games."""

from __future__ import annotations

import json

import numpy as np
import pytest

from envs.adapters import make_rllib_env
from envs.registry import UnknownGameError, game_spaces, get_game, make_game_id, split_game_id
from envs.spaces import ObservationAdapter
from league.cli import main
from league.config import TrainConfig
from league.snapshot import load_policy
from league.tools.evaluation import duplicate_returns, evaluate, play_game
from league.tools.openspiel_exploitability import exploitability, uniform_measure

NIM = "toy_games:nim"
TINY = [
    "--resources.num-env-runners", "1", "--resources.num-envs-per-env-runner", "2",
    "--ppo.train-batch-size", "128", "--ppo.minibatch-size", "64", "--ppo.num-epochs", "1",
    "--model.hidden-sizes", "16", "--evaluation.eval-interval", "1", "--evaluation.eval-games", "2",
    "--run.checkpoint-interval", "1", "--no-run.dashboard", "--league.snapshot-min-steps", "1",
]  # fmt: skip
# Sampling in the driver: a remote runner costs ~5 s to start; the import-path game
# keeps one (its module must import on a remote worker) and test_openspiel_games
# trains OpenSpiel games on remote runners.
ON_DRIVER = ["--resources.num-env-runners", "0"]


def test_game_ids_carry_kwargs_both_ways():
    gid = make_game_id(NIM, {"stones": 9})
    assert gid == 'toy_games:nim{"stones":9}'
    assert split_game_id(gid) == (NIM, {"stones": 9})
    assert split_game_id("tictactoe") == ("tictactoe", {})
    env = get_game(gid).make()
    env.reset()
    obs = env.observe(env.agent_selection)
    # Dict observation flattened (one-hots of stones 0..9 and mover 0..1); mask from info.
    assert obs["observation"].shape == (12,) and obs["observation"].sum() == 2
    assert obs["action_mask"].tolist() == [1, 1, 1]


def test_observation_adapter_detects_mask_and_encodings():
    import gymnasium as gym

    box = ObservationAdapter(gym.spaces.Box(0, 1, (4, 4, 3), bool), 5, "t")
    assert box.space["observation"].dtype == np.int8 and box.space["observation"].shape == (4, 4, 3)
    assert (
        box(np.ones((4, 4, 3), bool), {})["action_mask"].tolist() == [1] * 5
    )  # no mask: all legal
    one_hot = ObservationAdapter(gym.spaces.Discrete(3), 2, "t")
    assert one_hot(2, {"action_mask": [0, 1]})["observation"].tolist() == [0, 0, 1]
    assert one_hot(2, {"action_mask": [0, 1]})["action_mask"].tolist() == [0, 1]
    with pytest.raises(ValueError, match="cannot train on observation space"):
        ObservationAdapter(gym.spaces.Text(5), 2, "game 'x', seat 'p'")


@pytest.mark.parametrize(
    ("reference", "kwargs", "expected"),
    [
        ("no_such_module:make", {}, "cannot import module 'no_such_module'"),
        ("toy_games:nothing", {}, "has no 'nothing'"),
        ("toy_games:NOT_CALLABLE", {}, "is not callable"),
        ("toy_games:not_an_env", {}, "returned dict, not a PettingZoo AECEnv or ParallelEnv"),
        ("openspiel:no_such_game", {}, "OpenSpiel cannot load 'no_such_game'"),
        ("toy_games:continuous_nim", {}, "seat 'player_0': action space Box"),
        ("toy_games:one_seat_nim", {}, "a league needs at least two"),
        (NIM, {"pebbles": 3}, "rejected env_kwargs {'pebbles': 3}"),
        ("chess", {}, "known games: tictactoe"),
    ],
)
def test_bad_game_references_end_in_one_line_and_exit_2(
    tmp_path, capsys, reference, kwargs, expected
):
    with pytest.raises(UnknownGameError, match=expected.replace("(", r"\(").replace("{", r"\{")):
        get_game(make_game_id(reference, kwargs))
    argv = ["train", "--env", reference, "--run-dir", str(tmp_path / "r")]
    if kwargs:
        argv += ["--env-kwargs", json.dumps(kwargs)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("league: error:") and expected in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()


def test_masks_in_info_are_honoured_on_leduc_poker():
    """1,000 sampled steps by a policy that puts weight on every action: none illegal."""
    env = make_rllib_env("leduc_poker")
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    steps = 0
    while steps < 1000:
        (agent,) = obs
        mask = obs[agent]["action_mask"]
        assert mask.any()
        action = int(rng.choice(np.flatnonzero(mask)))
        obs, rewards, terminated, _, _ = env.step({agent: action})  # pyspiel raises if illegal
        steps += 1
        if terminated["__all__"]:
            assert sum(rewards.values()) == pytest.approx(0.0)  # zero-sum chips
            obs, _ = env.reset()


@pytest.mark.parametrize(("game", "uniform"), [("kuhn_poker", 0.458333), ("leduc_poker", 2.373611)])
def test_uniform_measure_is_openspiels(game, uniform):
    """A network whose output is flat plays uniformly: its exploitability is OpenSpiel's."""
    import torch

    from league.snapshot import POLICY_PREFIX, SnapshotPolicy, player_metadata
    from rlmodules.networks import build_policy_network

    obs, act = game_spaces(game)
    model = {"hidden_sizes": [8], "activation": "relu"}
    net = build_policy_network(obs["observation"].shape, act.n, model)
    for p in net.parameters():
        torch.nn.init.zeros_(p)
    weights = {POLICY_PREFIX + k: v for k, v in net.state_dict().items()}
    policy = SnapshotPolicy(player_metadata(game, model, "main_0", 0), weights)
    assert exploitability(game, policy) == pytest.approx(uniform_measure(game), abs=1e-9)
    assert uniform_measure(game) == pytest.approx(uniform, abs=1e-5)


def test_import_path_game_trains_in_league_mode_and_exports(ray_session, tmp_path, capsys):
    run = tmp_path / "nim"
    argv = ["train", "--env", NIM, "--env-kwargs", '{"stones": 9}', "--run-dir", str(run)]
    assert main([*argv, *TINY, "--stop-timesteps", "256"]) == 0
    assert capsys.readouterr().out.count("eval (greedy") >= 1  # evaluated against random
    progress = [json.loads(line) for line in (run / "progress.jsonl").read_text().splitlines()]
    assert len(progress) == 2 and progress[-1]["eval"]["random"]
    config = json.loads((run / "config.json").read_text())
    assert config["game"]["env"] == NIM and config["game"]["env_kwargs"] == {"stones": 9}
    assert (
        main(["export", "--run-dir", str(run), "--player", "main_0", "--out", str(tmp_path / "x")])
        == 0
    )
    policy = load_policy(tmp_path / "x")
    assert policy.meta.game == 'toy_games:nim{"stones":9}'
    # The Ray-free policy takes the raw observation and the mask from info, as the env gives them.
    from toy_games import nim

    env = nim(stones=9)
    env.reset()
    for _ in range(50):
        agent = env.agent_selection
        if env.terminations[agent]:
            env.reset()
            continue
        mask = env.infos[agent]["action_mask"]
        action = policy.act(env.observe(agent), greedy=False, action_mask=mask)
        assert mask[action] == 1
        env.step(action)


REGISTRY_RUNS = ["kuhn_poker", "leduc_poker", "leduc_holdem", "texas_holdem", "go9"]


@pytest.mark.parametrize("game", REGISTRY_RUNS)
def test_each_new_registry_game_trains_evaluates_and_exports(ray_session, tmp_path, capsys, game):
    run = tmp_path / game
    steps = "128" if game == "go9" else "256"
    extra = ["--ppo.train-batch-size", "64", "--ppo.minibatch-size", "64"] if game == "go9" else []
    argv = ["train", "--env", game, "--run-dir", str(run), *TINY, *ON_DRIVER, *extra]
    argv += ["--stop-timesteps", steps]
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "eval (greedy" in out and "vs random" in out  # past its first evaluation
    # The closing hints offer the mixture as one network on OpenSpiel games only.
    assert ("--mixture --distill" in out) == (game in ("kuhn_poker", "leduc_poker"))
    games = "2" if game == "go9" else "20"
    assert main(["evaluate", "--run-dir", str(run), "--games", games]) == 0
    out = capsys.readouterr().out
    assert f"seat {get_game(game).make().possible_agents[0]}" in out and "mean return" in out
    if game in ("kuhn_poker", "leduc_poker"):
        line = next(line for line in out.splitlines() if "OpenSpiel" in line)
        assert 0.0 <= float(line.split(":")[1].split()[0]) < 5.0
    if game in ("kuhn_poker", "leduc_poker"):  # the league's mixtures, exact
        nash, least = tmp_path / "nash", tmp_path / "least"
        argv = ["export", "--mixture", "--run-dir", str(run)]
        assert main([*argv, "--solver", "nash", "--out", str(nash)]) == 0
        assert "Nash mixture (exact payoffs)" in capsys.readouterr().out
        assert main([*argv, "--out", str(least)]) == 0  # the default on OpenSpiel games
        assert "least-exploitable mixture" in capsys.readouterr().out
        nash_ex = exploitability(game, load_policy(nash))
        least_ex = exploitability(game, load_policy(least))
        assert 0.0 <= nash_ex < uniform_measure(game) + 1.0
        assert least_ex <= nash_ex + 1e-3  # same members, weighed against every opponent
    if game == "kuhn_poker":  # the mixture as one network, a snapshot or ONNX
        distilled, onnx_out = tmp_path / "distilled", tmp_path / "distilled.onnx"
        assert main([*argv, "--distill", "--out", str(distilled)]) == 0
        assert "distilled into one network" in capsys.readouterr().out
        assert exploitability(game, load_policy(distilled)) == pytest.approx(least_ex, abs=0.01)
        assert main([*argv, "--distill", "--format", "onnx", "--out", str(onnx_out)]) == 0
        assert onnx_out.stat().st_size > 0
    dest = tmp_path / "export"
    assert main(["export", "--run-dir", str(run), "--player", "main_0", "--out", str(dest)]) == 0
    policy = load_policy(dest)
    env = get_game(game).make()
    env.reset(seed=1)
    agent = env.agent_selection
    probs = policy.action_probs(env.observe(agent))
    assert probs.shape == (game_spaces(game)[1].n,) and probs.sum() == pytest.approx(1.0)
    assert np.all(probs[env.observe(agent)["action_mask"] == 0] == 0)
    env.close()
    if game == "go9":  # image observations: conv encoder, ONNX export like an MLP's
        assert type(policy.net).__name__ == "ConvNet"
        onnx_out = tmp_path / "go9.onnx"
        assert main(["export", "--run-dir", str(run), "--player", "main_0", "--format", "onnx",
                     "--out", str(onnx_out)]) == 0  # fmt: skip
        assert onnx_out.stat().st_size > 0


def test_rps_trains_past_its_first_evaluation(ray_session, tmp_path, capsys):
    """`league train --env rps` used to stop at its first evaluation."""
    run = tmp_path / "rps"
    assert (
        main(
            ["train", "--env", "rps", "--run-dir", str(run), *TINY, *ON_DRIVER]
            + ["--stop-timesteps", "256"]
        )
        == 0
    )
    assert "vs random" in capsys.readouterr().out


def test_scored_games_are_won_by_the_higher_return():
    """Games with scores: outcome by the sign of the return difference, chips in the record."""
    from envs.opponents import RandomPlayer

    records = evaluate("leduc_poker", RandomPlayer(), RandomPlayer(), 200, seed=0)
    for record in records:
        assert record.games == 200 and record.wins + record.losses > 150
        assert abs(record.mean_return) < 2.0  # chips; random vs random is even


def test_duplicate_deals_give_every_seat_the_same_cards():
    """One policy against itself in every rotation of a deal plays the same hand each
    time (one game seed: the same cards and the same draws), so its chips over the
    rotations are the game's zero sum exactly; a deal dealt afresh per rotation would
    not net to zero."""
    from envs.opponents import RandomPlayer

    policy = RandomPlayer()
    assert duplicate_returns("texas_holdem_4p", policy, policy, deals=5) == [0.0] * 5
    seats = dict.fromkeys(("player_0", "player_1", "player_2", "player_3"), policy)
    greedy = dict.fromkeys(seats, False)
    hands = [
        play_game("texas_holdem_4p", seats, np.random.default_rng([6, d]), greedy) for d in range(5)
    ]
    assert any(any(chips != 0 for chips in hand.values()) for hand in hands)
    # The same rotations, each dealt afresh (its own seed): the chips no longer cancel.
    afresh = [
        sum(
            play_game("texas_holdem_4p", seats, np.random.default_rng([7, d, r]), greedy)[seat]
            for r, seat in enumerate(seats)
        )
        for d in range(5)
    ]
    assert any(total != 0 for total in afresh)


@pytest.mark.parametrize(
    ("reference", "kwargs", "name"),
    [
        ("openspiel:kuhn_poker(players=3)", None, "kuhn_poker_3p"),
        ("openspiel:kuhn_poker", {"players": 3}, "kuhn_poker_3p"),
        ("openspiel:leduc_poker(players=2)", None, "leduc_poker"),  # a default spelled out
        ("pettingzoo.classic.texas_holdem_v4:env", {"num_players": 4}, "texas_holdem_4p"),
        ("openspiel:leduc_poker(players=4)", None, "openspiel:leduc_poker(players=4)"),
    ],
)
def test_a_registry_game_reached_another_way_gets_its_registry_name(reference, kwargs, name):
    from envs.registry import canonical_game

    assert canonical_game(reference, kwargs)[0] == name


def test_train_config_records_the_game_id():
    cfg = TrainConfig.from_dict({"env": "go9", "env_kwargs": {"komi": 5.5}})
    assert cfg.game_id == 'go9{"komi":5.5}'
    assert cfg.model.network()["encoder"] == "auto"
    with pytest.raises(ValueError, match="env_kwargs must be plain JSON"):
        TrainConfig.from_dict({"env": "go9", "env_kwargs": {"komi": float("nan")}})


def test_conv_policy_loads_in_rllib_and_onnx_with_the_same_outputs(tmp_path):
    """go9's conv policy: RLModule.from_checkpoint and ONNX give load_policy's numbers."""
    import onnxruntime as ort
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModule

    from league.snapshot import player_metadata, save_snapshot
    from league.snapshot.onnx import export_onnx
    from league.snapshot.rllib_export import export_rllib_checkpoint
    from rlmodules.masked_policy import masked_policy_spec

    model = {"hidden_sizes": [16], "activation": "relu", "encoder": "auto"}
    model["conv_filters"] = [[4, 3, 1], [8, 3, 2]]
    obs_space, act_space = game_spaces("go9")
    torch.manual_seed(0)
    module = masked_policy_spec(obs_space, act_space, model).build()
    path = tmp_path / "snap"
    save_snapshot(path, module.get_state(), player_metadata("go9", model, "main_0", 1))
    policy = load_policy(path)
    assert type(policy.net).__name__ == "ConvNet"
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 2, (16, 9, 9, 17)).astype(np.int8)
    masks = rng.integers(0, 2, (16, 82)).astype(np.int8)
    masks[:, 81] = 1
    rllib = RLModule.from_checkpoint(export_rllib_checkpoint(path, tmp_path / "rllib"))
    batch = {
        Columns.OBS: {"observation": torch.as_tensor(obs), "action_mask": torch.as_tensor(masks)}
    }
    with torch.no_grad():
        logits = rllib.forward_inference(batch)[Columns.ACTION_DIST_INPUTS].numpy()
    np.testing.assert_allclose(logits, policy.logits_batch(obs, masks), atol=1e-5)
    export_onnx(path, tmp_path / "go9.onnx")
    session = ort.InferenceSession(str(tmp_path / "go9.onnx"), providers=["CPUExecutionProvider"])
    feed = {"observation": obs.astype(np.float32), "action_mask": masks.astype(np.float32)}
    (probs,) = session.run(None, feed)
    np.testing.assert_allclose(probs, policy.action_probs_batch(obs, masks), atol=1e-5)


def test_play_kuhn_poker_in_the_terminal_without_seeing_hidden_cards():
    from envs.opponents import RandomPlayer
    from league.tools.play import play

    lines: list[str] = []
    answers = iter(["7", "0", "0", "0"])

    def answer(prompt: str) -> str:
        lines.append(prompt)
        return next(answers)

    totals = play(RandomPlayer(), "kuhn_poker", "player_0", answer, lines.append)
    text = "\n".join(lines)
    assert "you are player_0" in text and "You see:" in text
    assert "[0 (Pass), 1 (Bet)]" in text  # OpenSpiel names the legal actions
    assert "7" in lines[lines.index(next(x for x in lines if x.startswith("Your move"))) + 1]
    assert sum(totals.values()) == pytest.approx(0.0)


def test_exact_meta_game_matches_played_games():
    """exact_meta_game's expected returns agree with 8,000 sampled kuhn_poker games."""
    import pyspiel
    import torch
    from open_spiel.python import policy as os_policy

    from league.snapshot import POLICY_PREFIX, SnapshotPolicy, player_metadata
    from league.tools.openspiel_exploitability import (
        exact_meta_game,
        openspiel_game,
        tabular_policies,
    )
    from rlmodules.networks import build_policy_network

    obs, act = game_spaces("kuhn_poker")
    model = {"hidden_sizes": [8], "activation": "tanh"}
    policies = {}
    for seed in range(3):
        torch.manual_seed(seed)
        net = build_policy_network(obs["observation"].shape, act.n, model)
        for p in net.parameters():
            torch.nn.init.normal_(p, std=1.5)  # far from uniform: distinct strategies
        weights = {POLICY_PREFIX + k: v for k, v in net.state_dict().items()}
        policies[f"p{seed}"] = SnapshotPolicy(
            player_metadata("kuhn_poker", model, "main_0", 0), weights
        )
    matrix = exact_meta_game("kuhn_poker", policies)
    np.testing.assert_allclose(matrix, -matrix.T, atol=1e-9)  # zero-sum, seats averaged
    # OpenSpiel's own expected returns, pair by pair and seat by seat, agree exactly.
    game = openspiel_game("kuhn_poker")
    compiled = [
        os_policy.python_policy_to_pyspiel_policy(table)
        for table in tabular_policies(game, list(policies.values()))
    ]
    for i, j in [(0, 1), (1, 0), (0, 2), (2, 1)]:
        root = game.new_initial_state()
        as_first = pyspiel.expected_returns(root, [compiled[i], compiled[j]], -1, True)[0]
        as_second = pyspiel.expected_returns(root, [compiled[j], compiled[i]], -1, True)[1]
        assert matrix[i, j] == pytest.approx((as_first + as_second) / 2, abs=1e-9)
    # The pair that differs most: a seat or sign mistake moves its value by 2|m|.
    first, second = np.unravel_index(np.abs(matrix).argmax(), matrix.shape)
    assert abs(matrix[first, second]) > 0.15  # the strategies differ
    records = evaluate(
        "kuhn_poker", policies[f"p{first}"], policies[f"p{second}"], 4_000, greedy=False, seed=3
    )
    played = sum(r.total_return for r in records) / sum(r.games for r in records)
    # A kuhn return has a standard deviation under 1.5: the standard error is under 0.017.
    assert played == pytest.approx(matrix[first, second], abs=0.06)


def test_leducs_league_is_exploitability_descent_by_default():
    """Leduc's registry league: the main plays itself and its exploiter, which restarts
    from it and keeps a small bonus; kuhn keeps the generic poker mix."""
    from league.config import TrainConfig

    leduc = TrainConfig.from_dict({"env": "leduc_poker", "mode": "league"})
    league = leduc.league
    assert (league.main_self_play_prob, league.main_exploiter_prob) == (0.7, 0.3)
    assert league.main_pfsp_prob == league.main_forgotten_prob == 0.0
    assert (league.num_league_exploiters, league.main_exploiter_reset_to) == (0, "main")
    assert leduc.exploiter_overrides(["main_0", "main_exploiter_0"]) == {
        "main_exploiter_0": {"entropy_coeff": 0.01}
    }
    kuhn = TrainConfig.from_dict({"env": "kuhn_poker", "mode": "league"}).league
    assert (kuhn.num_league_exploiters, kuhn.main_pfsp_prob) == (1, 0.1)
