"""A KL pull toward a periodically refreshed copy of each player: last-iterate stability.

Policy-gradient self-play in two-player zero-sum games cycles around the Nash
equilibrium instead of settling on it: the last iterate, which is what a league
exports, swings while the average would not. Mirror-descent methods with a
perturbation toward a reference policy converge in the last iterate: magnetic
mirror descent (Sokota et al., 2023, uniform magnet = an entropy bonus) converges
to a regularized equilibrium, and adaptively perturbed mirror descent (Abe et al.,
2024) to the exact one by moving the reference (the "slingshot") to the current
policy every so often.

`MagnetRegularized` adds that perturbation to any RLlib learner's per-module loss:
`magnet_coeff * KL(pi || magnet)` over the minibatch's rows, where the magnet is a
frozen copy of the player taken every `magnet_interval` training iterations (and
whenever the player's weights are written from outside: a league reset, a resumed
checkpoint). With `magnet_copies` K > 1 the learner keeps the last K copies and the
magnet is their average policy (the mean of their action probabilities in each
state): a pull toward the player's recent average, as fictitious play's average
strategy, for games where the last iterate cycles among near-pure strategies whose
mixture is far less exploitable than any of them. Copies live on the learner only
and are not saved: a restored run starts with the restored weights as its magnet.

In a league, a main's magnet can instead be the league's own recent players
(`set_league_magnet`, sent by the league driver with `magnet_league_snapshots` N): the
average policy of the latest N snapshots on the main's side, its own and its
exploiters' (approximate best responses to it), as fictitious play averages best
responses. It is kept until the driver sends the next set (interval refreshes and
weight writes leave it alone).

Settings travel in `config.learner_config_dict` (`MAGNET_COEFF_KEY`,
`MAGNET_INTERVAL_KEY`, `MAGNET_COPIES_KEY`); a coefficient of 0 adds nothing.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from ray.rllib.core import COMPONENT_RL_MODULE
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override

MAGNET_COEFF_KEY = "league_magnet_coeff"
"""`config.learner_config_dict` key: weight of KL(pi || magnet) in each player's loss."""

MAGNET_INTERVAL_KEY = "league_magnet_interval"
"""`config.learner_config_dict` key: training iterations between magnet refreshes."""

MAGNET_COPIES_KEY = "league_magnet_copies"
"""`config.learner_config_dict` key: how many of the latest copies the magnet averages."""

MAGNET_KL_KEY = "magnet_kl"
"""Per-module learner metric: mean KL(pi || magnet) over the last minibatch."""


class MagnetRegularized:
    """Mixed in before an RLlib torch learner (PPO or APPO): `super()` is that learner."""

    @property
    def magnet_coeff(self) -> float:
        return float(self.config.learner_config_dict.get(MAGNET_COEFF_KEY, 0.0))

    @property
    def magnet_interval(self) -> int:
        return int(self.config.learner_config_dict.get(MAGNET_INTERVAL_KEY, 1))

    @property
    def magnet_copies(self) -> int:
        return int(self.config.learner_config_dict.get(MAGNET_COPIES_KEY, 1))

    @override(Learner)
    def build(self) -> None:
        super().build()
        # Magnets are made per player on its first loss: players join the league at runtime.
        # Each player's copies, oldest first.
        self._league_magnets: dict[str, list[Any]] = {}
        self._league_magnet_age: dict[str, int] = {}
        # Players whose magnet is a set of league members (`set_league_magnet`).
        self._league_member_magnets: set[str] = set()

    def refresh_magnet(self, module_id: str, *, forget: bool = False) -> None:
        """Add a frozen copy of `module_id`'s current weights to its magnet, dropping the
        oldest beyond `magnet_copies`; `forget` drops every older copy first (weights
        written from outside: the average must not mix in the player they replaced)."""
        magnet = copy.deepcopy(self.module[module_id].unwrapped())
        magnet.requires_grad_(False)
        copies = [] if forget else self._league_magnets.get(module_id, [])
        self._league_magnets[module_id] = [*copies, magnet][-self.magnet_copies :]
        self._league_magnet_age[module_id] = 0

    def set_league_magnet(self, module_id: str, members: Sequence[Mapping[str, Any]]) -> None:
        """Make `module_id`'s magnet the average policy of `members` (policy weights, by
        the player's own parameter names, as league snapshots hold them) until the next
        call."""
        player = self.module[module_id].unwrapped()
        copies = []
        for weights in members:
            member = copy.deepcopy(player)
            state = {name: torch.as_tensor(np.asarray(v)) for name, v in weights.items()}
            loaded = member.load_state_dict(state, strict=False)
            if loaded.unexpected_keys or not state:
                raise ValueError(
                    f"magnet member for {module_id}: weights {loaded.unexpected_keys[:3]} "
                    "are not the player's parameters"
                )
            member.requires_grad_(False)
            copies.append(member)
        self._league_magnets[module_id] = copies
        self._league_magnet_age[module_id] = 0
        self._league_member_magnets.add(module_id)

    def magnet_logits(self, module_id: str, batch: dict[str, Any]) -> torch.Tensor:
        """Logits of the magnet's policy on `batch`: with several copies, the log of
        their mean action probabilities (masked moves stay at ~zero probability)."""
        with torch.no_grad():
            logits = [
                copy_.forward_train(batch)[Columns.ACTION_DIST_INPUTS]
                for copy_ in self._league_magnets[module_id]
            ]
            if len(logits) == 1:
                return logits[0]
            log_probs = torch.stack([torch.log_softmax(x, dim=-1) for x in logits])
            return torch.logsumexp(log_probs, dim=0) - math.log(len(logits))

    @override(Learner)
    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> Any:
        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        coeff = self.magnet_coeff
        if coeff <= 0 or Columns.ACTION_DIST_INPUTS not in fwd_out:
            return loss
        if module_id not in self._league_magnets:
            self.refresh_magnet(module_id)
        magnet_logits = self.magnet_logits(module_id, batch)
        dist_cls = self.module[module_id].unwrapped().get_train_action_dist_cls()
        current = dist_cls.from_logits(fwd_out[Columns.ACTION_DIST_INPUTS])
        kl = current.kl(dist_cls.from_logits(magnet_logits))
        if Columns.LOSS_MASK in batch:
            mask = batch[Columns.LOSS_MASK].bool()
            mean_kl = kl[mask].sum() / mask.sum().clamp(min=1)
        else:
            mean_kl = kl.mean()
        self.metrics.log_value((module_id, MAGNET_KL_KEY), mean_kl.detach(), window=1)
        return loss + coeff * mean_kl

    @override(Learner)
    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        super().after_gradient_based_update(timesteps=timesteps)
        if self.magnet_coeff <= 0:
            return
        for module_id in list(self._league_magnets):
            if module_id not in self.module:  # the player left the learner
                del self._league_magnets[module_id]
                del self._league_magnet_age[module_id]
                self._league_member_magnets.discard(module_id)
                continue
            self._league_magnet_age[module_id] += 1
            if module_id in self._league_member_magnets:
                continue
            if self._league_magnet_age[module_id] >= self.magnet_interval:
                self.refresh_magnet(module_id)

    @override(Learner)
    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        # Weights written from outside (league resets, restores): the pull must be
        # toward the new player, not the one it replaced.
        written = state.get(COMPONENT_RL_MODULE, {})
        for module_id in list(self._league_magnets):
            if module_id in written and module_id not in self._league_member_magnets:
                self.refresh_magnet(module_id, forget=True)
