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
ENCODERS: tuple[str, ...] = ("auto", "mlp", "conv")
# RLlib's DefaultModelConfig `conv_filters` format: [out_channels, kernel, stride] per
# layer. Two 3x3 layers see a 5x5 neighbourhood: enough for local board shapes.
DEFAULT_CONV_FILTERS: tuple[tuple[int, int, int], ...] = ((32, 3, 1), (64, 3, 1))


def default_model_config() -> dict[str, Any]:
    """The network every module uses unless the run's config says otherwise. Without
    an `encoder` key a module is an MLP (as every snapshot made before conv encoders);
    training always writes the run's `encoder` (default auto) into the config."""
    return {"hidden_sizes": list(DEFAULT_HIDDEN_SIZES), "activation": DEFAULT_ACTIVATION}


def resolve_encoder(obs_shape: tuple[int, ...], config: dict[str, Any]) -> str:
    """`mlp` or `conv` for an observation shape: `auto` means conv for H x W x C
    observations (boards, images), an MLP over the flattened vector otherwise. A
    model_config without `encoder` (snapshots made before conv encoders) is an MLP."""
    encoder = config.get("encoder", "mlp")
    if encoder not in ENCODERS:
        raise ValueError(f"unknown encoder {encoder!r}; choose one of {list(ENCODERS)}")
    if encoder == "conv" and len(obs_shape) != 3:
        raise ValueError(f"a conv encoder needs H x W x C observations, got shape {obs_shape}")
    if encoder == "auto":
        return "conv" if len(obs_shape) == 3 else "mlp"
    return encoder


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


def check_conv_filters(filters: Any) -> list[list[int]]:
    """`conv_filters` as a list of [out_channels, kernel, stride] positive ints."""
    if not isinstance(filters, list | tuple) or not filters:
        raise ValueError(f"conv_filters must be a non-empty list, got {filters!r}")
    checked = []
    for layer in filters:
        if (
            not isinstance(layer, list | tuple)
            or len(layer) != 3
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in layer)
        ):
            raise ValueError(
                f"each conv_filters entry must be [out_channels, kernel, stride] of positive "
                f"ints, got {layer!r}"
            )
        checked.append([int(v) for v in layer])
    return checked


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
