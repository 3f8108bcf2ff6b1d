"""Mixture snapshots: the league's Nash mixture exported, loaded and played."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from envs.registry import game_spaces
from league.snapshot import SnapshotError, load_policy, player_metadata, save_snapshot
from league.snapshot.mixture import MIXTURE_FILE, MixturePolicy, load_mixture, save_mixture
from rlmodules.masked_policy import masked_policy_spec


def _member(path, seed: int):
    import torch

    torch.manual_seed(seed)
    obs, act = game_spaces("tictactoe")
    config = {"hidden_sizes": [8], "activation": "relu"}
    module = masked_policy_spec(obs, act, config, inference_only=True).build()
    save_snapshot(path, module.get_state(), player_metadata("tictactoe", config, "main_0", 0))
    return load_policy(path)


@pytest.fixture
def members(tmp_path):
    return {f"main_0@{i}": _member(tmp_path / f"m{i}", seed=i) for i in range(3)}


def test_a_saved_mixture_loads_through_load_policy(tmp_path, members):
    weights = {"main_0@0": 0.5, "main_0@1": 0.3, "main_0@2": 0.2}
    out = save_mixture(tmp_path / "mix", members, weights)
    loaded = load_policy(out)
    assert isinstance(loaded, MixturePolicy) and loaded.game == "tictactoe"
    assert dict(zip(loaded.ids, loaded.weights, strict=True)) == pytest.approx(weights)
    obs, _ = game_spaces("tictactoe")
    sample = {k: np.asarray(v.sample()) for k, v in obs.spaces.items()}
    sample["action_mask"] = np.ones(9, np.int8)
    for member_id, member in members.items():
        loaded.current = member_id
        assert loaded.action_probs(sample) == pytest.approx(member.action_probs(sample))


def test_one_member_per_game_drawn_by_weight(tmp_path, members):
    mixture = load_mixture(
        save_mixture(tmp_path / "mix", members, {"main_0@0": 3, "main_0@1": 1, "main_0@2": 0})
    )
    rng = np.random.default_rng(0)
    counts = Counter(mixture.new_game(rng) for _ in range(4000))
    assert "main_0@2" not in counts
    assert counts["main_0@0"] / 4000 == pytest.approx(0.75, abs=0.03)


def test_evaluation_plays_one_member_per_game(tmp_path, members):
    from envs.opponents import RandomPlayer
    from league.tools.evaluation import evaluate

    mixture = load_mixture(save_mixture(tmp_path / "mix", members, dict.fromkeys(members, 1.0)))
    seen = []
    original = mixture.new_game
    mixture.new_game = lambda rng: seen.append(original(rng)) or seen[-1]
    records = evaluate("tictactoe", mixture, RandomPlayer(), 20, seed=3)
    assert sum(r.games for r in records) == 40 and len(seen) == 40
    assert len(set(seen)) == 3


def test_bad_mixture_files_are_refused(tmp_path, members):
    out = save_mixture(tmp_path / "mix", members, dict.fromkeys(members, 1.0))
    doc = json.loads((out / MIXTURE_FILE).read_text())
    for broken in (
        {**doc, "format_version": 9},
        {**doc, "members": []},
        {**doc, "members": [{"id": "../m0", "weight": 1.0}]},
        {**doc, "members": [{"id": "main_0@0", "weight": "heavy"}]},
        {**doc, "members": [{"id": "main_0@0", "weight": -1.0}]},
    ):
        (out / MIXTURE_FILE).write_text(json.dumps(broken))
        with pytest.raises(SnapshotError):
            load_policy(out)
    (out / MIXTURE_FILE).write_text("{not json")
    with pytest.raises(SnapshotError):
        load_policy(out)


def test_save_mixture_never_replaces_a_foreign_directory(tmp_path, members):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(SnapshotError):
        save_mixture(foreign, members, dict.fromkeys(members, 1.0))
    assert (foreign / "notes.txt").read_text() == "keep me"
