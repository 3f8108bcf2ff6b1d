"""What a network may be, without torch: option names, defaults and the checks a
config or a snapshot's model_config goes through before any network is built.

Kept apart from `rlmodules.networks` so that the CLI and config validation do not
import torch (a second of start-up for every `league` command)."""

from __future__ import annotations

from typing import Any

ACTIVATION_NAMES: tuple[str, ...] = ("relu", "tanh", "elu", "silu")
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
