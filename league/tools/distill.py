"""A mixture distilled into one network (`league export --mixture --distill`).

A mixture is played by drawing one member per game. With perfect recall the same
play is one behaviour strategy (Kuhn's theorem): at each information state, the
members' action probabilities weighted by each member's weight times its own
probability of reaching that state (`mixture_behaviour`, what OpenSpiel's
`PolicyAggregator` builds). This module fits one network of the members'
architecture to it on every information state of the game, so the league's mixture
exports as a single snapshot (ONNX, any loader, `league evaluate`) that plays as the
mixture does, up to the fit's error (reported, and measured exactly by `league
evaluate`). NFSP's average-policy network (Heinrich & Silver 2016) learns the same
target from sampled play.

OpenSpiel games only: their information states are enumerated; the fit starts from
the heaviest member's weights.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from league.snapshot import POLICY_PREFIX, SnapshotPolicy
from league.snapshot.mixture import MixturePolicy
from league.tools.least_exploitable import MAX_TABLE_ENTRIES, TooManyHistoriesError

DISTILL_STEPS = 3000
"""Adam steps of the fit (each over at most BATCH information states). The whole
distillation on 2 cores: kuhn_poker_3p (48 states, 66 members) 3.6-4.9 s,
goofspiel(num_cards=4) (6,056 states, 14-17 members) 40-50 s."""
BATCH = 4096
LEARNING_RATE = 1e-3


@dataclass(frozen=True)
class Fit:
    """How closely the network plays the mixture: total variation between the two
    action distributions, mean and worst over the game's information states."""

    states: int
    mean_tv: float
    max_tv: float
    seconds: float

    def format(self) -> str:
        return (
            f"fitted on {self.states:,} information states in {self.seconds:.1f} s: "
            f"total variation from the mixture mean {self.mean_tv:.4f}, worst {self.max_tv:.4f}"
        )


def distill_mixture(
    mixture: MixturePolicy,
    *,
    steps: int = DISTILL_STEPS,
    seed: int = 0,
    log: Callable[[str], None] = lambda line: None,
) -> tuple[SnapshotPolicy, Fit]:
    """One network that plays `mixture`'s behaviour strategy on its game (an
    OpenSpiel game), and how closely it fits. NotAnOpenSpielGameError for another
    game, GameTooLargeError or TooManyHistoriesError for one too large to enumerate."""
    from open_spiel.python import policy as os_policy

    from league.tools.openspiel_exploitability import (
        MAX_HISTORIES,
        GameTooLargeError,
        NotAnOpenSpielGameError,
        game_tree_size,
        info_state_inputs,
        mixture_behaviour,
        openspiel_game,
    )

    start = time.perf_counter()
    game_id = mixture.game
    try:
        game = openspiel_game(game_id)
    except NotAnOpenSpielGameError:
        raise NotAnOpenSpielGameError(
            f"game {game_id!r} does not come from OpenSpiel; distilling a mixture fits the "
            "network on every information state, which only OpenSpiel games enumerate"
        ) from None
    if game_tree_size(game_id) is None:
        raise GameTooLargeError(
            f"{game_id}: the game tree has more than {MAX_HISTORIES:,} histories; its "
            "information states cannot be enumerated to distill the mixture"
        )
    template = os_policy.TabularPolicy(game)
    states, actions = template.action_probability_array.shape
    if len(mixture.ids) * states * actions > MAX_TABLE_ENTRIES:
        raise TooManyHistoriesError(
            f"{game_id}: {len(mixture.ids)} members x {states:,} information states x "
            f"{actions} actions is past {MAX_TABLE_ENTRIES:,} table entries; the mixture "
            f"cannot be distilled on this game"
        )
    log(f"distilling {len(mixture.ids)} members over {states:,} information states of {game_id}")
    observations, masks = info_state_inputs(game, template)
    behaviour = mixture_behaviour(game, mixture, template, (observations, masks))
    targets = behaviour.action_probability_array

    heaviest_id = mixture.ids[int(np.argmax(mixture.weights))]
    heaviest = mixture.members[heaviest_id]
    net = copy.deepcopy(heaviest.net)
    fit_network(net, observations, masks, targets, steps=steps, seed=seed)
    meta = replace(
        heaviest.meta,
        version=None,
        parent=heaviest_id,
        rating=None,
        weights_sha256=None,
        extra={
            "distilled_from": {
                m: float(w) for m, w in zip(mixture.ids, mixture.weights, strict=True)
            }
        },
    )
    weights = {POLICY_PREFIX + k: v.numpy() for k, v in net.state_dict().items()}
    policy = SnapshotPolicy(meta, weights, source=f"the mixture distilled on {game_id}")
    probs = policy.action_probs_batch(observations, masks)
    tv = 0.5 * np.abs(probs * masks - targets).sum(axis=1)
    fit = Fit(states, float(tv.mean()), float(tv.max()), time.perf_counter() - start)
    log(f"  {fit.format()}")
    return policy, fit


def fit_network(
    net: torch.nn.Module,
    observations: np.ndarray,
    masks: np.ndarray,
    targets: np.ndarray,
    *,
    steps: int,
    seed: int = 0,
) -> None:
    """Fit `net`'s masked softmax to `targets` (rows of action probabilities) by
    cross-entropy, every row weighted alike: a best response may visit any of them."""
    from rlmodules.networks import mask_logits

    generator = torch.Generator().manual_seed(seed)
    obs = torch.as_tensor(observations, dtype=torch.float32)
    legal = torch.as_tensor(masks)
    target = torch.as_tensor(targets, dtype=torch.float32)
    optimizer = torch.optim.Adam(net.parameters(), lr=LEARNING_RATE)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: 0.5 * (1.0 + math.cos(math.pi * step / steps))
    )
    net.train()
    rows = obs.shape[0]
    for _ in range(steps):
        batch = torch.randint(rows, (BATCH,), generator=generator) if rows > BATCH else slice(None)
        logits = mask_logits(net(obs[batch]), legal[batch])
        # Illegal actions have target 0; their log-probabilities (about -inf) are masked
        # out of the product.
        log_probs = torch.log_softmax(logits, dim=-1).masked_fill(legal[batch] == 0, 0.0)
        loss = -(target[batch] * log_probs).sum(dim=-1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    net.eval()
