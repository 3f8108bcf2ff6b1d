"""Shared fixtures: one local Ray instance for the whole session; `--quick` skips the
tests marked `slow` (a multi-node cluster, a kill and resume, minutes of training):
CI (`.ci/run`) runs everything. The longest files are collected first (`LONGEST_FIRST`)."""

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


LONGEST_FIRST = (
    "test_service.py",
    "test_remote_learner.py",
    "test_kill_resume.py",
    "test_cluster.py",
    "test_full_disk.py",
    "test_probe.py",
    "test_training.py",
    "test_league_integration.py",
    "test_data_parallel.py",
)
"""The files that take longest on a fresh clone (2 cores, three workers: 70-150 s
each, most of it Ray clusters and actors starting). scripts/test.sh hands files to
workers in collection order (`--dist loadfile --no-loadscope-reorder`; xdist would
otherwise start the files with the most tests first, and these have few): started
first, the short files fill the end of the run instead of waiting before them."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files keep order
    if not config.getoption("--quick"):
        return
    skip = pytest.mark.skip(reason="slow: skipped by --quick (CI runs it)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
