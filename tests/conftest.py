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


# Seconds each of the longest files took alone (2 cores). Parallel workers take whole
# files in collection order, so these go first: the longest start first and the short
# ones fill in after, instead of one worker starting a long file as the others finish.
LONGEST_FILES = {
    "test_service.py": 95,
    "test_training.py": 90,
    "test_probe.py": 67,
    "test_kill_resume.py": 60,
    "test_cluster.py": 60,
    "test_remote_learner.py": 48,
    "test_games.py": 48,
    "test_league_integration.py": 35,
    "test_full_disk.py": 33,
    "test_appo.py": 29,
    "test_cli.py": 22,
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: -LONGEST_FILES.get(item.path.name, 0))  # stable
    if not config.getoption("--quick"):
        return
    skip = pytest.mark.skip(reason="slow: skipped by --quick (CI runs it)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
