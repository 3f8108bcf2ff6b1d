"""Shared fixtures: one local Ray instance for the whole session; `--quick` skips the
tests marked `slow` (a multi-node cluster, a kill and resume, minutes of training):
CI (`.ci/run`) runs everything."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("RAY_DEDUP_LOGS", "0")
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray instance with explicit CPUs (never joins a stale cluster)."""
    import ray

    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--quick",
        action="store_true",
        help="skip the tests marked slow (CI runs them: bash .ci/run)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("--quick"):
        return
    skip = pytest.mark.skip(reason="slow: skipped by --quick (CI runs it)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
