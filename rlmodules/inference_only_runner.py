"""Env runner that builds every RLModule in its inference-only form.

RLlib 2.60's `MultiAgentEnvRunner.make_module` asks the config for an
inference-only MultiRLModuleSpec, but when the user gave explicit per-module specs
the `inference_only` flag is not set on them, so runners build full modules (value
nets included). This runner sets the flag on every sub-spec before building.
"""

from __future__ import annotations

from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.utils.annotations import override
from ray.rllib.utils.framework import try_import_torch

torch, _ = try_import_torch()


def as_inference_only(spec: MultiRLModuleSpec) -> MultiRLModuleSpec:
    """The same spec with `inference_only=True` on every sub-module spec."""
    for module_spec in spec.rl_module_specs.values():
        module_spec.inference_only = True
    return spec


class InferenceOnlyEnvRunner(MultiAgentEnvRunner):
    """MultiAgentEnvRunner whose modules are all built inference-only."""

    @override(MultiAgentEnvRunner)
    def make_module(self) -> None:
        env = self.env.unwrapped if self.env is not None else None
        spec = self.config.get_multi_rl_module_spec(
            env=env, spaces=self.get_spaces(), inference_only=True
        )
        self.module = as_inference_only(spec).build()
        self.module.foreach_module(lambda _mid, mod: mod.to(self._device))
