"""Plain torch pieces shared by the RLModules and by Ray-free snapshot loading."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from rlmodules.network_options import (
    ACTIVATION_NAMES,
    DEFAULT_CONV_FILTERS,
    check_conv_filters,
    resolve_encoder,
)

# The same constant RLlib uses for masked logits (ray.rllib.utils.torch_utils.FLOAT_MIN),
# kept here so that loading a snapshot does not import Ray.
FLOAT_MIN = float(torch.finfo(torch.float32).min)

ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "elu": nn.ELU,
    "silu": nn.SiLU,
}
assert tuple(ACTIVATIONS) == ACTIVATION_NAMES  # the torch-free list names the same ones


class FlatMLP(nn.Sequential):
    """An MLP over the flattened observation (parameter names as nn.Sequential's)."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return super().forward(obs.reshape(obs.shape[0], -1).float())


class ConvNet(nn.Module):
    """Conv layers over an H x W x C observation, then an MLP to the outputs."""

    def __init__(
        self,
        obs_shape: tuple[int, int, int],
        filters: list[list[int]],
        hidden_sizes: list[int],
        out_size: int,
        activation: str,
    ):
        super().__init__()
        height, width, channels = obs_shape
        layers: list[nn.Module] = []
        for out_channels, kernel, stride in filters:
            layers += [
                nn.Conv2d(channels, out_channels, kernel, stride, padding=kernel // 2),
                ACTIVATIONS[activation](),
            ]
            channels = out_channels
            height = (height + 2 * (kernel // 2) - kernel) // stride + 1
            width = (width + 2 * (kernel // 2) - kernel) // stride + 1
        if height < 1 or width < 1:
            raise ValueError(f"conv_filters {filters} shrink a {obs_shape} observation to nothing")
        self.encoder = nn.Sequential(*layers)
        self.head = build_mlp(channels * height * width, hidden_sizes, out_size, activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        features = self.encoder(obs.float().permute(0, 3, 1, 2))
        return self.head(features.flatten(start_dim=1))


def parameter_count(obs_shape: tuple[int, ...], out_size: int, config: dict[str, Any]) -> int:
    """How many parameters `build_policy_network` would allocate: plain arithmetic, so a
    hostile model_config can be refused before any memory is taken."""
    hidden = [int(h) for h in config["hidden_sizes"]]

    def mlp(size: int) -> int:
        total = 0
        for width in [*hidden, out_size]:
            total += (size + 1) * width
            size = width
        return total

    if resolve_encoder(tuple(obs_shape), config) == "conv":
        height, width, channels = (int(d) for d in obs_shape)
        total = 0
        for out_channels, kernel, stride in check_conv_filters(
            config.get("conv_filters", DEFAULT_CONV_FILTERS)
        ):
            total += (channels * kernel * kernel + 1) * out_channels
            channels = out_channels
            height = (height + 2 * (kernel // 2) - kernel) // stride + 1
            width = (width + 2 * (kernel // 2) - kernel) // stride + 1
        return total + mlp(channels * max(height, 0) * max(width, 0))
    size = 1
    for dim in obs_shape:
        size *= int(dim)
    return mlp(size)


def build_policy_network(
    obs_shape: tuple[int, ...], out_size: int, config: dict[str, Any]
) -> nn.Module:
    """The network from observations (batch, *obs_shape) to `out_size` outputs that
    `config` describes: an MLP, or conv layers then an MLP (`resolve_encoder`)."""
    hidden = list(config["hidden_sizes"])
    activation = config["activation"]
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation {activation!r}; choose one of {sorted(ACTIVATIONS)}")
    if resolve_encoder(tuple(obs_shape), config) == "conv":
        filters = check_conv_filters(config.get("conv_filters", DEFAULT_CONV_FILTERS))
        return ConvNet(tuple(obs_shape), filters, hidden, out_size, activation)  # type: ignore[arg-type]
    size = 1
    for dim in obs_shape:
        size *= int(dim)
    return FlatMLP(*build_mlp(size, hidden, out_size, activation))


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
