"""A pull toward a scripted teacher's moves: tactics taught, not waited for.

AlphaStar kept every league agent near a supervised policy with a KL term, so that
self-play explored from sound play instead of rediscovering it. A league here has
scripted reference opponents instead of human games: connect-four's search player
(win now, else block, else do not hand over a win) or a user's bot. Fifteen minutes
of self-play leave a connect-four main that takes an immediate win about half the
time and blocks about 60% of due blocks; the search player does both always.

`TeacherRegularized` adds, where the teacher rules moves out (prefers some legal
moves over others), `teacher_coeff * -log pi(teacher's moves)` to each player's
loss: minus the log of the probability the player puts on the set of moves the
teacher would play, averaged over those positions. Where the teacher is indifferent
among all legal moves nothing is added, so the term teaches its tactics without
pulling toward its uniform play between them, and a player whose every move is one
the teacher would play pays nothing (unlike a KL term, which would also ask for the
teacher's probabilities within that set).

The teacher's answers depend on the positions only, so a learner connector piece
(`TeacherTargets`, right after `NumpyToTensor`) computes them once per train batch
as a column (`TEACHER_PROBS_COLUMN`); the minibatches carry their rows of it. Asking
the teacher inside the loss instead redid its search for every minibatch of every
epoch (num_epochs times the work).

Settings travel in `config.learner_config_dict` (`TEACHER_KEY`, `TEACHER_GAME_KEY`,
`TEACHER_COEFF_KEY`); no teacher or a coefficient of 0 adds nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from ray.rllib.connectors.common.numpy_to_tensor import NumpyToTensor
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.learner import Learner
from ray.rllib.utils.annotations import override

from envs.opponents import Policy, make_opponent
from envs.spaces import MASK_KEY, OBS_KEY
from rlmodules.reference_policy import batch_action_probs

TEACHER_KEY = "league_teacher"
"""`config.learner_config_dict` key: the teacher's name (a game's reference opponent
or package.module:callable); empty for none."""

TEACHER_GAME_KEY = "league_teacher_game"
"""`config.learner_config_dict` key: the game the teacher is looked up for."""

TEACHER_COEFF_KEY = "league_teacher_coeff"
"""`config.learner_config_dict` key: weight of -log pi(teacher's moves) in each player's loss."""

TEACHER_PROBS_COLUMN = "league_teacher_probs"
"""Train batch column: the teacher's (N, A) move probabilities at each row (zeros
where the row has no legal move)."""

TEACHER_MASS_KEY = "teacher_mass"
"""Per-module learner metric: mean probability on the teacher's moves where it rules
moves out (last minibatch)."""

TEACHER_ROWS_KEY = "teacher_rows"
"""Per-module learner metric: share of the minibatch's rows where the teacher rules moves out."""


def teacher_mass_log(
    logits: torch.Tensor, legal: torch.Tensor, teacher_probs: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(log of the policy's probability on the teacher's moves, which rows count):
    rows count where the teacher's moves are a strict, non-empty subset of the legal ones."""
    legal = legal.bool()
    support = (teacher_probs > 0) & legal
    informative = support.any(dim=-1) & (support.sum(dim=-1) < legal.sum(dim=-1))
    logp = torch.log_softmax(logits, dim=-1)
    masked = logp.masked_fill(~support, float("-inf"))
    # Rows with an empty support would give -inf; they never count, keep them finite.
    masked = torch.where(informative.unsqueeze(-1), masked, logp)
    return torch.logsumexp(masked, dim=-1), informative


class TeacherTargets(ConnectorV2):
    """Learner connector piece: the teacher's move probabilities as a batch column,
    once per train batch (tensor observations: it goes after `NumpyToTensor`)."""

    def __init__(self, teacher: Policy, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.teacher = teacher

    def __call__(self, *, rl_module: Any, batch: dict[str, Any], **kwargs: Any) -> Any:
        for module_batch in batch.values():
            obs = module_batch.get(Columns.OBS)
            if not isinstance(obs, Mapping) or MASK_KEY not in obs or OBS_KEY not in obs:
                continue
            mask = obs[MASK_KEY]
            # Rows with a move to make: not the final observations RLlib adds for
            # bootstrapping (often with no legal move, which a teacher refuses).
            rows = (mask > 0).any(dim=-1)
            probs = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
            if bool(rows.any()):
                answers = batch_action_probs(
                    self.teacher, {OBS_KEY: obs[OBS_KEY][rows], MASK_KEY: mask[rows]}
                )
                probs[rows] = torch.as_tensor(answers, dtype=torch.float32, device=mask.device)
            module_batch[TEACHER_PROBS_COLUMN] = probs
        return batch


class TeacherRegularized:
    """Mixed in before an RLlib torch learner (PPO or APPO): `super()` is that learner."""

    @property
    def teacher_coeff(self) -> float:
        return float(self.config.learner_config_dict.get(TEACHER_COEFF_KEY, 0.0))

    @override(Learner)
    def build(self) -> None:
        super().build()
        name = self.config.learner_config_dict.get(TEACHER_KEY) or ""
        game = self.config.learner_config_dict.get(TEACHER_GAME_KEY) or ""
        self._league_teacher = (
            make_opponent(name, game) if name and self.teacher_coeff > 0 else None
        )
        if self._league_teacher is None:
            return
        connector = self._learner_connector
        if connector is None or not any(
            isinstance(piece, NumpyToTensor) for piece in connector.connectors
        ):
            raise ValueError(
                "league.teacher needs RLlib's default learner connector pipeline "
                "(add_default_connectors_to_learner_pipeline)"
            )
        connector.insert_after(NumpyToTensor, TeacherTargets(self._league_teacher))

    @override(Learner)
    def compute_loss_for_module(
        self, *, module_id: str, config: Any, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> Any:
        loss = super().compute_loss_for_module(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        if self._league_teacher is None or TEACHER_PROBS_COLUMN not in batch:
            return loss
        if Columns.ACTION_DIST_INPUTS not in fwd_out:
            return loss
        teacher_probs = batch[TEACHER_PROBS_COLUMN]
        legal = batch[Columns.OBS][MASK_KEY] > 0
        # Positions with a move to make, inside the loss mask (not RLlib's padding).
        rows = legal.any(dim=-1)
        if Columns.LOSS_MASK in batch:
            rows = rows & batch[Columns.LOSS_MASK].bool()
        if not bool(rows.any()):
            return loss
        logits = fwd_out[Columns.ACTION_DIST_INPUTS][rows]
        log_mass, informative = teacher_mass_log(logits, legal[rows], teacher_probs[rows])
        self.metrics.log_value(
            (module_id, TEACHER_ROWS_KEY), informative.float().mean().detach(), window=1
        )
        if not bool(informative.any()):
            return loss
        log_mass = log_mass[informative]
        self.metrics.log_value(
            (module_id, TEACHER_MASS_KEY), log_mass.exp().mean().detach(), window=1
        )
        return loss - self.teacher_coeff * log_mass.mean()
