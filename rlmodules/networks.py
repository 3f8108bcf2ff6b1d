"""Plain torch pieces shared by the RLModules and by Ray-free snapshot loading."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

# The same constant RLlib uses for masked logits (ray.rllib.utils.torch_utils.FLOAT_MIN),
# kept here so that loading a snapshot does not import Ray.
FLOAT_MIN = float(torch.finfo(torch.float32).min)

ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "elu": nn.ELU,
    "silu": nn.SiLU,
}

DEFAULT_HIDDEN_SIZES: tuple[int, ...] = (256, 256)
DEFAULT_ACTIVATION = "relu"


def default_model_config() -> dict[str, Any]:
    """The network every module uses unless the run's config says otherwise."""
    return {"hidden_sizes": list(DEFAULT_HIDDEN_SIZES), "activation": DEFAULT_ACTIVATION}


def build_mlp(
    in_size: int, hidden_sizes: list[int], out_size: int, activation: str
) -> nn.Sequential:
    """An MLP `in -> hidden... -> out` with the named activation between layers."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(ACTIVATIONS)}")
    layers: list[nn.Module] = []
    size = in_size
    for hidden in hidden_sizes:
        layers += [nn.Linear(size, hidden), ACTIVATIONS[activation]()]
        size = hidden
    layers.append(nn.Linear(size, out_size))
    return nn.Sequential(*layers)


def mask_logits(logits: torch.Tensor, action_mask: torch.Tensor) -> torch.Tensor:
    """Replace illegal actions' logits by FLOAT_MIN: their probability becomes exactly 0."""
    return torch.where(action_mask.bool(), logits, torch.full_like(logits, FLOAT_MIN))
