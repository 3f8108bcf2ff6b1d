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


# The test files that take longest, longest first (seconds on 2 cores with three
# xdist workers, from a timed run of the suite: test_cluster ~95, test_training 106,
# test_service 100, test_kill_resume 97, test_remote_learner 94, test_probe 74, ...).
# `--dist loadfile` hands files out in collection order as workers run low, so the
# long ones go first and the short ones fill the gaps at the end (longest processing
# time first); in alphabetical order the last worker ran ~130 s past the first. A
# file missing here only runs later; a stale order costs time, never a test.
LONGEST_FIRST = (
    "test_training.py",
    "test_service.py",
    "test_cluster.py",
    "test_kill_resume.py",
    "test_remote_learner.py",
    "test_probe.py",
    "test_league_integration.py",
    "test_appo.py",
    "test_full_disk.py",
    "test_games.py",
    "test_data_parallel.py",
    "test_openspiel_games.py",
    "test_sample_ahead.py",
    "test_tune.py",
    "test_learner_only.py",
    "test_nseat_training.py",
    "test_parallel_env_runner.py",
    "test_magnet.py",
    "test_reference_opponents.py",
    "test_cli.py",
    "test_report.py",
    "test_masked_module.py",
    "test_least_exploitable.py",
    "test_cli_tools.py",
    "test_game_matrix.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: file order kept
    if not config.getoption("--quick"):
        return
    skip = pytest.mark.skip(reason="slow: skipped by --quick (CI runs it)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
