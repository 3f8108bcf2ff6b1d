"""Match-log retention (`store_retention`): the log keeps the newest matches, folds
older iterations into per-matchup counts, never past the pinned checkpoint seq, and the
SQLite file stops growing. Same contract on SQLite and a real Redis."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis_server import RedisServer

from league.store import LeagueStore, StoreError, open_store
from league.store.base import fold_through, matchup_key


def match(eid: str, a: str = "main_0", b: str = "main_0@1") -> dict[str, Any]:
    return {
        "episode_id": eid,
        "modules": {"player_0": a, "player_1": b},
        "outcomes": {"player_0": 1, "player_1": -1},
        "length": 5,
        "iteration": 0,
        "returns": {"player_0": 1.0, "player_1": -1.0},
    }


def test_fold_through_keeps_the_newest_and_stops_at_the_pin():
    counts = [(1, 10), (2, 10), (3, 10), (4, 10)]
    assert fold_through(counts, keep=15, pin=4, folded=0) == 2  # 20 kept >= 15
    assert fold_through(counts, keep=15, pin=1, folded=0) == 1  # never past the pin
    assert fold_through(counts, keep=15, pin=None, folded=0) == 0  # no checkpoint yet
    assert fold_through(counts, keep=0, pin=4, folded=0) == 0  # 0 = keep everything
    assert fold_through(counts, keep=40, pin=4, folded=0) == 0
    assert matchup_key(match("e", "b", "a")) == "a b" and matchup_key({}) == "?"


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(params=["sqlite", "redis"])
def opener(request: pytest.FixtureRequest, tmp_path: Path):
    namespace = f"r-{uuid.uuid4().hex[:8]}"
    opened: list[LeagueStore] = []

    def open_(**kwargs: Any) -> LeagueStore:
        if request.param == "sqlite":
            store = open_store(None, tmp_path, **kwargs)
        else:
            url = request.getfixturevalue("redis_server").url()
            store = open_store(url, tmp_path, namespace=namespace, **kwargs)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


def commit_iterations(store: LeagueStore, first: int, count: int, per: int) -> None:
    for it in range(first, first + count):
        matches = [match(f"e{it}-{i}", b=f"main_0@{i % 2}") for i in range(per)]
        store.commit({"iteration": it}, matches, expected_seq=store.seq())


def test_the_log_keeps_the_newest_matches_and_counts_the_rest(opener) -> None:
    store = opener(keep_matches=25)
    commit_iterations(store, 1, 4, per=10)  # seqs 1-4, no pin yet: nothing folds
    assert store.match_count() == 40 and store.folded_matches().total == 0
    store.pin(3)
    commit_iterations(store, 5, 1, per=10)  # seq 5: 50 matches, fold while >= 25 stay
    folded = store.folded_matches()
    assert folded.through == 2  # seq 3 is the pin: seqs 3.. stay (30 matches)
    assert folded.games == {"main_0 main_0@0": 10, "main_0 main_0@1": 10}
    assert store.match_count() == 30
    assert [m["seq"] for m in store.matches()] == [3] * 10 + [4] * 10 + [5] * 10
    assert store.match_count() + folded.total == 50  # nothing lost: counted or kept
    # A rollback to the pin needs no folded match; below the folded seqs is refused.
    store.rollback(3)
    assert store.match_count() == 10 and store.folded_matches().total == 20
    with pytest.raises(StoreError, match="folded into counts"):
        store.rollback(1)
    # Exactly-once inside the kept window still holds.
    with pytest.raises(StoreError, match="duplicate episode_id"):
        store.commit({}, [match("e3-0")], expected_seq=store.seq())


def test_a_reader_sees_the_folded_counts(opener) -> None:
    store = opener(keep_matches=5)
    commit_iterations(store, 1, 3, per=4)
    store.pin(3)
    commit_iterations(store, 4, 1, per=4)
    reader = opener(read_only=True)
    assert reader.folded_matches() == store.folded_matches()
    assert reader.folded_matches().total == 8 and reader.match_count() == 8


def test_zero_keeps_every_match(opener) -> None:
    store = opener(keep_matches=0)
    commit_iterations(store, 1, 3, per=10)
    store.pin(3)
    commit_iterations(store, 4, 1, per=10)
    assert store.match_count() == 40 and store.folded_matches().total == 0


def test_the_sqlite_file_stays_bounded(tmp_path: Path) -> None:
    """A long run's store stops growing once retention folds: the file and its WAL (which
    SQLite checkpoints every 1000 pages) are as large after 60 iterations as after 30."""
    store = open_store(None, tmp_path, keep_matches=2000, keep_states=2)
    path = tmp_path / "league.sqlite"

    def run(first: int, count: int) -> None:
        for it in range(first, first + count):
            commit_iterations(store, it, 1, per=200)
            store.pin(store.seq())

    run(1, 30)
    size_at_window = path.stat().st_size + (tmp_path / "league.sqlite-wal").stat().st_size
    run(31, 30)
    size_after = path.stat().st_size + (tmp_path / "league.sqlite-wal").stat().st_size
    assert store.match_count() <= 2200
    assert size_after <= size_at_window * 1.2, (size_at_window, size_after)
    store.close()


def test_retention_is_a_checked_setting() -> None:
    from league.config import ConfigError, TrainConfig

    assert TrainConfig.from_dict({"env": "tictactoe"}).run.store_retention == 10_000
    with pytest.raises(ConfigError, match="store_retention must be >= 0"):
        TrainConfig.from_dict({"env": "tictactoe", "store_retention": -1})
    with pytest.raises(ValueError, match="keep_matches"):
        open_store(None, Path("/nonexistent"), keep_matches=-5)
