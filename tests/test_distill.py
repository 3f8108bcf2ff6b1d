"""A mixture distilled into one network plays as the mixture does (no Ray)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyspiel")

from envs.registry import game_spaces  # noqa: E402
from league.snapshot import load_policy, player_metadata, save_snapshot  # noqa: E402
from league.snapshot.mixture import MixturePolicy  # noqa: E402
from league.tools.distill import distill_mixture, fit_network  # noqa: E402
from league.tools.openspiel_exploitability import (  # noqa: E402
    NotAnOpenSpielGameError,
    exact_measure,
)
from rlmodules.masked_policy import masked_policy_spec  # noqa: E402


def _members(tmp_path, game: str, count: int) -> dict:
    import torch

    obs, act = game_spaces(game)
    config = {"hidden_sizes": [32, 32], "activation": "relu"}
    members = {}
    for i in range(count):
        torch.manual_seed(i)
        module = masked_policy_spec(obs, act, config, inference_only=True).build()
        # Sharper members than a fresh network's near-uniform play, so that the
        # mixture differs from each of them.
        with torch.no_grad():
            for p in module.parameters():
                p.mul_(4.0)
        path = tmp_path / f"m{i}"
        save_snapshot(path, module.get_state(), player_metadata(game, config, "main_0", i))
        members[f"main_0@{i}"] = load_policy(path)
    return members


@pytest.mark.parametrize("game", ["kuhn_poker", "kuhn_poker_3p"])
def test_the_distilled_network_is_as_exploitable_as_the_mixture(tmp_path, game):
    members = _members(tmp_path, game, 3)
    mixture = MixturePolicy(members, {"main_0@0": 0.5, "main_0@1": 0.3, "main_0@2": 0.2})
    lines: list[str] = []
    distilled, fit = distill_mixture(mixture, log=lines.append)
    name, mixture_value = exact_measure(game, mixture)
    _, distilled_value = exact_measure(game, distilled)
    member_values = [exact_measure(game, m)[1] for m in members.values()]
    assert fit.mean_tv < 0.01 and fit.states > 0
    assert distilled_value == pytest.approx(mixture_value, abs=0.01), name
    # It plays the mixture, not its heaviest member: the members are measurably apart.
    assert min(abs(mixture_value - v) for v in member_values) > 0.02
    assert distilled.meta.extra["distilled_from"]["main_0@0"] == pytest.approx(0.5)
    assert distilled.meta.parent == "main_0@0" and distilled.meta.version is None
    assert any("information states" in line for line in lines)


def test_fit_network_matches_a_table_of_targets():
    import torch

    rng = np.random.default_rng(0)
    observations = rng.normal(size=(40, 6)).astype(np.float32)
    masks = (rng.random((40, 4)) < 0.7).astype(np.int8)
    masks[:, 0] = 1
    targets = rng.dirichlet(np.ones(4), size=40) * masks
    targets /= targets.sum(axis=1, keepdims=True)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    fit_network(net, observations, masks, targets, steps=1500)
    with torch.no_grad():
        logits = net(torch.as_tensor(observations)).masked_fill(torch.as_tensor(masks) == 0, -1e9)
        probs = torch.softmax(logits, dim=-1).numpy()
    assert 0.5 * np.abs(probs - targets).sum(axis=1).max() < 0.05


def test_a_game_not_from_openspiel_is_refused(tmp_path):
    import torch

    obs, act = game_spaces("tictactoe")
    config = {"hidden_sizes": [8], "activation": "relu"}
    torch.manual_seed(0)
    module = masked_policy_spec(obs, act, config, inference_only=True).build()
    save_snapshot(
        tmp_path / "m", module.get_state(), player_metadata("tictactoe", config, "main_0", 0)
    )
    mixture = MixturePolicy({"main_0@0": load_policy(tmp_path / "m")}, {"main_0@0": 1.0})
    with pytest.raises(NotAnOpenSpielGameError, match="OpenSpiel"):
        distill_mixture(mixture)


# goofspiel's information states name the hands, not the order of the bids: the
# histories of one state differ in their own reach, and both sum them alike.
@pytest.mark.parametrize(
    "game", ["kuhn_poker_3p", "leduc_poker", "openspiel:goofspiel(num_cards=4)"]
)
def test_the_mixtures_behaviour_is_openspiels_aggregate(tmp_path, game):
    """`mixture_behaviour` (one walk, every member at once) equals OpenSpiel's
    PolicyAggregator (history by history) on every information state."""
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms.policy_aggregator import PolicyAggregator

    from league.tools.openspiel_exploitability import (
        mixture_behaviour,
        openspiel_game,
        tabular_policies,
    )

    spiel_game = openspiel_game(game)
    members = _members(tmp_path, game, 3)
    mixture = MixturePolicy(members, {"main_0@0": 0.6, "main_0@1": 0.3, "main_0@2": 0.1})
    template = os_policy.TabularPolicy(spiel_game)
    ours = mixture_behaviour(spiel_game, mixture, template)
    tables = tabular_policies(spiel_game, list(members.values()), template)
    players = list(range(spiel_game.num_players()))
    weights = [0.6, 0.3, 0.1]
    theirs = PolicyAggregator(spiel_game).aggregate(
        players, [tables for _ in players], [weights for _ in players]
    )
    # Members of full support (softmax) reach every state: all of them compare.
    for row, state in enumerate(template.states):
        for action, probability in theirs.action_probabilities(state).items():
            assert ours.action_probability_array[row, action] == pytest.approx(
                probability, abs=1e-9
            )
