"""Contract tests of the league store, run against both backends.

Every contract test runs on SQLite (a file in tmp_path) and on Redis (a real
redis-server with AOF and a password, one per module; each test gets its own
key namespace). Backend-specific tests cover what only one backend can do wrong:
SQLite surviving a SIGKILLed writer, Redis surviving a server restart, riding
out an outage and giving up within its retry bound. No mocks.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis_server import RedisServer, free_port

from league.core.config import LeagueConfig
from league.core.league import League
from league.core.match import MatchRecord
from league.store import (
    LeagueStore,
    RetryPolicy,
    SQLiteStore,
    StoreConflictError,
    StoreError,
    StoreUnavailableError,
    open_store,
)

PASSWORD = "pw-Ünïcode/:@ 9"  # URL-quoted in the URL: auth must survive odd characters
REPO = Path(__file__).resolve().parents[1]
FAST_RETRY = RetryPolicy(
    retries=3, backoff_base=0.05, backoff_cap=0.2, connect_timeout=0.5, socket_timeout=1.0
)


class LeagueRun:
    """A real ``League`` driven through iterations: produces exactly what the
    coordinator commits (``get_state()`` and ``MatchRecord.to_dict()``)."""

    def __init__(self) -> None:
        self.league = League(LeagueConfig())
        self.episodes = 0

    def iteration(
        self, it: int, n_matches: int = 4, snapshot: bool = True
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        if snapshot:
            self.league.take_snapshot("main_0", it)
        opponents = [m for m in self.league.module_ids() if m != "main_0"]
        records = []
        for k in range(n_matches):
            self.episodes += 1
            # Decreasing ids: a store that sorts by id instead of keeping commit
            # order would be caught.
            records.append(
                MatchRecord(
                    episode_id=f"ep{10**6 - self.episodes}",
                    modules={"p0": "main_0", "p1": opponents[k % len(opponents)]},
                    outcomes={"p0": "win", "p1": "loss"} if k % 3 else {"p0": "draw", "p1": "draw"},
                    length=10 + k,
                    iteration=it,
                )
            )
        self.league.record(records)
        return self.league.get_state(), [r.to_dict() for r in records]


def registry_of(state: dict[str, Any]) -> dict[str, Any]:
    """What ``snapshots()`` must return for ``state``: the snapshots by id."""
    return {s["id"]: s for s in sorted(state["snapshots"], key=lambda s: s["id"])}


def kept_seqs(store: LeagueStore) -> list[int]:
    """The seqs whose states the store still keeps (pruning and pins decide)."""
    return [s for s in range(1, store.seq() + 1) if store.state(s) is not None]


def tagged(matches: list[dict[str, Any]], seq: int) -> list[dict[str, Any]]:
    return [{**m, "seq": seq} for m in matches]


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer(password=PASSWORD) as server:
        yield server


Opener = Callable[..., LeagueStore]


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def open_(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Opener]:
    """Opens this test's store (same file / namespace every call, so a second
    call is a reopen or a second writer)."""
    opened: list[LeagueStore] = []
    namespace = f"t-{uuid.uuid4().hex[:8]}"

    def opener(**kwargs: Any) -> LeagueStore:
        if backend == "sqlite":
            store = open_store(None, tmp_path, **kwargs)
        else:
            server = request.getfixturevalue("redis_server")
            store = open_store(server.url(), tmp_path, namespace=namespace, **kwargs)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        store.close()


@pytest.fixture
def store(open_: Opener) -> LeagueStore:
    return open_()


# -- contract ------------------------------------------------------------------


def test_empty_store(store: LeagueStore) -> None:
    assert store.seq() == 0
    assert store.state() is None and store.state(1) is None
    assert store.matches() == [] and store.match_count() == 0
    assert store.snapshots() == {}


def test_commit_read_round_trip(store: LeagueStore) -> None:
    run = LeagueRun()
    state, matches = run.iteration(0)
    assert store.commit(state, matches, expected_seq=0) == 1
    assert store.seq() == 1
    assert store.state() == state and store.state(1) == state
    # What comes back rebuilds the same league.
    assert League.from_state(LeagueConfig(), store.state()).get_state() == state
    assert store.matches() == tagged(matches, 1)
    assert store.match_count() == len(matches) == 4
    assert store.snapshots() == registry_of(state)
    assert set(store.snapshots()) == {"main_0@0"}


def test_seq_increments_and_each_seq_keeps_its_state(store: LeagueStore) -> None:
    run = LeagueRun()
    states = []
    for it in range(3):
        state, matches = run.iteration(it)
        assert store.commit(state, matches, expected_seq=it) == it + 1
        states.append(state)
    assert store.seq() == 3
    assert [store.state(s) for s in (1, 2, 3)] == states
    assert states[0] != states[2]
    assert store.state() == states[2]
    assert store.snapshots() == registry_of(states[2])
    assert list(store.snapshots()) == ["main_0@0", "main_0@1", "main_0@2"]  # sorted by id
    assert [m["seq"] for m in store.matches()] == [1] * 4 + [2] * 4 + [3] * 4


def test_expected_seq_conflict(open_: Opener) -> None:
    writer, zombie = open_(), open_()  # two writers on the same store
    run = LeagueRun()
    s1, m1 = run.iteration(0)
    assert writer.commit(s1, m1, expected_seq=0) == 1
    s2, m2 = run.iteration(1)
    with pytest.raises(StoreConflictError, match="seq 1"):
        zombie.commit(s2, m2, expected_seq=0)
    with pytest.raises(StoreConflictError):
        writer.commit(s2, m2, expected_seq=5)
    assert writer.seq() == zombie.seq() == 1
    assert zombie.state() == s1 and zombie.matches() == tagged(m1, 1)
    assert zombie.commit(s2, m2, expected_seq=1) == 2


def _dup_in_commit(m: list[dict[str, Any]], _old: list[dict[str, Any]]) -> tuple[Any, Any]:
    return None, [*m, dict(m[0])]


def _dup_of_logged(m: list[dict[str, Any]], old: list[dict[str, Any]]) -> tuple[Any, Any]:
    return None, [*m, dict(old[0])]  # last, so earlier matches would be half-written


def _match_not_json(m: list[dict[str, Any]], _old: list[dict[str, Any]]) -> tuple[Any, Any]:
    return None, [*m, {"episode_id": "bad", "modules": {"p0": object()}}]


def _match_without_id(m: list[dict[str, Any]], _old: list[dict[str, Any]]) -> tuple[Any, Any]:
    return None, [*m, {"modules": {}}]


def _state_not_json(_m: list[dict[str, Any]], _old: list[dict[str, Any]]) -> tuple[Any, Any]:
    return {"players": [], "extra": {1, 2}}, None


def _state_nan(_m: list[dict[str, Any]], _old: list[dict[str, Any]]) -> tuple[Any, Any]:
    return {"players": [], "ratings": {"ratings": {"main_0": math.nan}}}, None


def _state_not_a_dict(_m: list[dict[str, Any]], _old: list[dict[str, Any]]) -> tuple[Any, Any]:
    return [{"players": []}], None


@pytest.mark.parametrize(
    "spoil",
    [
        _dup_in_commit,
        _dup_of_logged,
        _match_not_json,
        _match_without_id,
        _state_not_json,
        _state_nan,
        _state_not_a_dict,
    ],
)
def test_failed_commit_writes_nothing(store: LeagueStore, spoil: Callable[..., Any]) -> None:
    run = LeagueRun()
    s1, m1 = run.iteration(0)
    store.commit(s1, m1, expected_seq=0)
    s2, m2 = run.iteration(1)
    bad_state, bad_matches = spoil(m2, m1)
    with pytest.raises(StoreError):
        store.commit(
            bad_state if bad_state is not None else s2,
            bad_matches if bad_matches is not None else m2,
            expected_seq=1,
        )
    assert store.seq() == 1
    assert store.state() == s1 and store.state(2) is None and kept_seqs(store) == [1]
    assert store.matches() == tagged(m1, 1) and store.match_count() == len(m1)
    assert store.snapshots() == registry_of(s1)
    # Not wedged: the good commit goes through, every match counted once.
    assert store.commit(s2, m2, expected_seq=1) == 2
    assert store.match_count() == len(m1) + len(m2)


def test_matches_since_seq_in_commit_order(store: LeagueStore) -> None:
    run = LeagueRun()
    logged = []
    for it, n in enumerate([2, 0, 3]):
        state, matches = run.iteration(it, n_matches=n)
        store.commit(state, matches, expected_seq=it)
        logged.append(tagged(matches, it + 1))
    assert store.matches() == logged[0] + logged[2]
    assert store.matches(0) == store.matches()
    assert store.matches(1) == logged[2]
    assert store.matches(2) == logged[2]
    assert store.matches(3) == []
    ids = [m["episode_id"] for m in store.matches()]
    assert ids == sorted(ids, reverse=True)  # commit order, not id order
    assert store.match_count() == 5


def test_rollback_restores_state_matches_and_seq(store: LeagueStore) -> None:
    run = LeagueRun()
    committed = []
    for it in range(3):
        state, matches = run.iteration(it)
        store.commit(state, matches, expected_seq=it)
        committed.append((state, matches))
    (s1, m1), (_, m2), _ = committed
    store.rollback(1)
    assert store.seq() == 1
    assert store.state() == s1 and store.state(2) is None and store.state(3) is None
    assert store.snapshots() == registry_of(s1) and len(store.snapshots()) == 1
    assert store.matches() == tagged(m1, 1) and store.match_count() == len(m1)
    # The rolled-back matches are gone for good: replaying them is not a duplicate.
    s2b, _ = LeagueRun().iteration(0, n_matches=0)
    assert store.commit(s2b, m2, expected_seq=1) == 2
    assert store.matches(1) == tagged(m2, 2)
    assert store.snapshots() == registry_of(s2b)
    with pytest.raises(StoreError, match="seq 9"):
        store.rollback(9)
    store.rollback(0)
    assert store.seq() == 0 and store.state() is None and store.matches() == []
    assert store.snapshots() == {} and store.match_count() == 0


def test_pruning_keeps_last_states_and_the_pin(open_: Opener) -> None:
    store = open_(keep_states=3)
    run = LeagueRun()
    states = {}
    for it in range(6):
        states[it + 1], matches = run.iteration(it)
        store.commit(states[it + 1], matches, expected_seq=it)
        if it == 0:
            store.pin(1)
    assert kept_seqs(store) == [1, 4, 5, 6]
    assert store.state(1) == states[1] and store.state(2) is None
    with pytest.raises(StoreError, match="pruned"):
        store.rollback(2)
    with pytest.raises(StoreError, match="pin seq 2"):
        store.pin(2)
    store.pin(5)  # replaces the pin: seq 1 is no longer protected
    assert kept_seqs(store) == [4, 5, 6]
    for it in range(6, 9):
        states[it + 1], matches = run.iteration(it)
        store.commit(states[it + 1], matches, expected_seq=it)
    assert kept_seqs(store) == [5, 7, 8, 9]
    assert store.match_count() == 9 * 4  # pruning states never prunes the match log
    store.rollback(5)  # the checkpoint's seq is still reachable, and stays pinned
    assert store.seq() == 5 and store.state() == states[5]
    assert store.snapshots() == registry_of(states[5])
    for it in range(5, 9):
        store.commit(*run.iteration(it), expected_seq=it)
    assert kept_seqs(store) == [5, 7, 8, 9]


def test_rollback_below_pin_clears_it(open_: Opener) -> None:
    store = open_(keep_states=2)
    run = LeagueRun()
    for it in range(3):
        store.commit(*run.iteration(it), expected_seq=it)
    store.pin(3)
    store.rollback(2)
    assert kept_seqs(store) == [2]
    # A new seq 3 is not protected by the old pin at 3: with no pin, only the
    # last two states survive (a kept pin would have kept 3 as well).
    for it in range(2, 5):
        store.commit(*run.iteration(it), expected_seq=it)
    assert kept_seqs(store) == [4, 5]


def test_reopen_keeps_everything(open_: Opener) -> None:
    store = open_()
    run = LeagueRun()
    s1, m1 = run.iteration(0)
    s2, m2 = run.iteration(1)
    store.commit(s1, m1, expected_seq=0)
    store.commit(s2, m2, expected_seq=1)
    store.pin(1)
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.seq()
    with open_(keep_states=1) as again:
        assert again.seq() == 2
        assert again.state(1) == s1 and again.state() == s2
        assert again.matches() == tagged(m1, 1) + tagged(m2, 2)
        assert again.snapshots() == registry_of(s2)
        assert again.commit(*run.iteration(2), expected_seq=2) == 3
        assert kept_seqs(again) == [1, 3]  # the pin at 1 survived the reopen


# -- schema ---------------------------------------------------------------------

# Schema 1 as the previous code wrote it: the tables of today plus four views.
SQLITE_SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER);
CREATE TABLE states (seq INTEGER PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE matches (
    pos INTEGER PRIMARY KEY, episode_id TEXT NOT NULL UNIQUE, seq INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX matches_by_seq ON matches (seq, pos);
CREATE TABLE players (id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE snapshots (id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE ratings (id TEXT PRIMARY KEY, rating REAL NOT NULL);
CREATE TABLE payoff (
    a TEXT NOT NULL, b TEXT NOT NULL, wins REAL NOT NULL, draws REAL NOT NULL,
    losses REAL NOT NULL, PRIMARY KEY (a, b)
);
"""
LEGACY_VIEWS = ("players", "snapshots", "ratings", "payoff")


class LegacyStore:
    """Writes and inspects a store at the byte level, below the store code: a
    schema-1 store with one commit, as the previous code left it."""

    def __init__(self, backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.backend = backend
        self.path = tmp_path / "league.sqlite"
        self.ns = f"legacy-{uuid.uuid4().hex[:8]}"
        self.url = None if backend == "sqlite" else request.getfixturevalue("redis_server").url()

    def write(self, state: dict[str, Any], matches: list[dict[str, Any]], schema: int) -> None:
        data, stale = json.dumps(state), json.dumps({"id": "stale@0"})
        if self.backend == "sqlite":
            conn = sqlite3.connect(self.path)
            conn.executescript(SQLITE_SCHEMA_1)
            conn.executemany(
                "INSERT INTO meta VALUES (?, ?)", [("schema", schema), ("seq", 1), ("pin", 1)]
            )
            conn.execute("INSERT INTO states VALUES (1, ?)", (data,))
            conn.executemany(
                "INSERT INTO matches (episode_id, seq, data) VALUES (?, 1, ?)",
                [(m["episode_id"], json.dumps(m)) for m in matches],
            )
            conn.execute("INSERT INTO players VALUES ('stale', ?)", (stale,))
            conn.execute("INSERT INTO snapshots VALUES ('stale@0', ?)", (stale,))
            conn.execute("INSERT INTO ratings VALUES ('stale@0', 1.0)")
            conn.execute("INSERT INTO payoff VALUES ('stale', 'stale@0', 1, 0, 0)")
            conn.commit()
            conn.close()
        else:
            r, p = redis.Redis.from_url(self.url), f"{{{self.ns}}}:"
            r.mset({p + "schema": schema, p + "seq": 1, p + "pin": 1})
            r.hset(p + "states", "1", data)
            r.rpush(p + "matches:1", *[json.dumps(m) for m in matches])
            r.hset(p + "match_ids", mapping={m["episode_id"]: 1 for m in matches})
            r.hset(p + "players", "stale", stale)
            r.hset(p + "snapshots", "stale@0", stale)
            r.hset(p + "ratings", "stale@0", "1.0")
            r.hset(p + "payoff", "stale\tstale@0", '["stale","stale@0",1.0,0.0,0.0]')
            r.close()

    def open(self, **kwargs: Any) -> LeagueStore:
        if self.backend == "sqlite":
            return open_store(f"sqlite://{self.path}", self.path.parent, **kwargs)
        return open_store(self.url, self.path.parent, namespace=self.ns, **kwargs)

    def layout(self) -> tuple[int, list[str]]:
        """(recorded schema, legacy view tables / keys still present)."""
        if self.backend == "sqlite":
            conn = sqlite3.connect(self.path)
            schema = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0]
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            conn.close()
            return int(schema), [v for v in LEGACY_VIEWS if v in tables]
        r, p = redis.Redis.from_url(self.url), f"{{{self.ns}}}:"
        schema, present = int(r.get(p + "schema")), [v for v in LEGACY_VIEWS if r.exists(p + v)]
        r.close()
        return schema, present


@pytest.fixture
def legacy(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> LegacyStore:
    return LegacyStore(backend, tmp_path, request)


def test_new_store_records_schema_2_without_views(legacy: LegacyStore) -> None:
    with legacy.open() as store:
        store.commit(*LeagueRun().iteration(0), expected_seq=0)
    assert legacy.layout() == (2, [])


def test_schema_1_store_opens_reads_and_upgrades_at_first_write(legacy: LegacyStore) -> None:
    run = LeagueRun()
    s1, m1 = run.iteration(0)
    legacy.write(s1, m1, schema=1)
    with legacy.open(keep_states=1) as store:
        assert store.seq() == 1 and store.state() == s1
        assert store.matches() == tagged(m1, 1) and store.match_count() == len(m1)
        assert store.snapshots() == registry_of(s1)  # from the state, not the stale view
        # Reading changes nothing: older code still writing this store keeps working.
        assert legacy.layout() == (1, list(LEGACY_VIEWS))
        s2, m2 = run.iteration(1)
        with pytest.raises(StoreError, match="duplicate"):
            store.commit(s2, [*m2, m1[0]], expected_seq=1)
        assert legacy.layout() == (1, list(LEGACY_VIEWS))  # a failed write upgrades nothing
        assert store.commit(s2, m2, expected_seq=1) == 2
        assert legacy.layout() == (2, [])
        assert store.state(1) == s1  # the schema-1 pin still protects seq 1
        assert store.matches(1) == tagged(m2, 2)
    with legacy.open() as again:
        assert again.seq() == 2 and again.state() == s2


def test_unknown_schema_is_refused_at_open(legacy: LegacyStore) -> None:
    legacy.write(*LeagueRun().iteration(0), schema=3)
    with pytest.raises(StoreError, match="store schema 3 .written by a newer version") as err:
        legacy.open()
    assert "reads schemas 1, 2" in str(err.value)
    assert legacy.layout()[0] == 3


# -- open_store -----------------------------------------------------------------


def test_open_store_sqlite_locations(tmp_path: Path) -> None:
    with open_store(None, tmp_path) as a:
        assert isinstance(a, SQLiteStore) and a.path == tmp_path / "league.sqlite"
        a.commit({"players": []}, [], expected_seq=0)
    with open_store("sqlite", tmp_path) as b:
        assert b.seq() == 1  # same default file
    custom = tmp_path / "sub" / "custom.sqlite"
    with open_store(f"sqlite://{custom}", tmp_path) as c:
        assert c.seq() == 0
    assert custom.exists()
    with pytest.raises(StoreError, match="sqlite:///path"):
        open_store("sqlite://somehost/x.sqlite", tmp_path)


def test_open_store_unknown_scheme(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as err:
        open_store("mongodb://user:hunter2@db:27017/league", tmp_path)
    msg = str(err.value)
    assert "'mongodb'" in msg and "sqlite, redis, rediss" in msg and "hunter2" not in msg


def test_open_store_unreachable_redis_fails_fast(tmp_path: Path) -> None:
    port = free_port()
    start = time.monotonic()
    with pytest.raises(StoreUnavailableError) as err:
        open_store(f"redis://:hunter2@127.0.0.1:{port}/0", tmp_path)
    assert time.monotonic() - start < 3.0
    assert f"127.0.0.1:{port}" in str(err.value) and "hunter2" not in str(err.value)


@pytest.mark.parametrize("password", ["wrong-password", None])
def test_open_store_bad_redis_password(
    redis_server: RedisServer, tmp_path: Path, password: str | None
) -> None:
    with pytest.raises(StoreError) as err:
        open_store(redis_server.url(password=password), tmp_path)
    msg = str(err.value)
    assert not isinstance(err.value, StoreUnavailableError)  # retrying will not help
    assert "password" in msg and f"127.0.0.1:{redis_server.port}" in msg
    assert "wrong-password" not in msg


# -- Redis only -------------------------------------------------------------------


def test_redis_password_from_url(redis_server: RedisServer, tmp_path: Path) -> None:
    plain = redis.Redis(host="127.0.0.1", port=redis_server.port, retry=Retry(NoBackoff(), 0))
    with pytest.raises(redis.exceptions.AuthenticationError):
        plain.ping()  # the server really requires the password
    plain.close()
    assert "%" in redis_server.url()  # quoted in the URL, unquoted by the client
    with open_store(redis_server.url(), tmp_path, namespace=f"auth-{uuid.uuid4().hex}") as store:
        assert store.commit({"players": []}, [{"episode_id": "e"}], expected_seq=0) == 1
        assert store.matches() == [{"episode_id": "e", "seq": 1}]


def test_redis_tls_from_url(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis", password="hunter2", tls=True) as server:
        url = server.url()
        assert url.startswith("rediss://")
        with open_store(url, tmp_path) as store:
            assert store.commit(*LeagueRun().iteration(0), expected_seq=0) == 1
            assert store.match_count() == 4
        # Plain redis:// to the TLS port, and TLS without trusting the
        # self-signed certificate, both fail at open -- TLS is really verified.
        plain, untrusted = url.split("?")[0].replace("rediss://", "redis://"), url.split("?")[0]
        for bad in (plain, untrusted):
            with pytest.raises(StoreUnavailableError) as err:
                open_store(bad, tmp_path)
            assert f"127.0.0.1:{server.port}" in str(err.value)
            assert "hunter2" not in str(err.value)
        with pytest.raises(StoreError, match="bad option"):  # ssl options on redis://
            open_store(url.replace("rediss://", "redis://"), tmp_path)


def test_redis_namespaces_are_separate(redis_server: RedisServer, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:8]
    with (
        open_store(redis_server.url(), tmp_path, namespace=f"a-{tag}") as a,
        open_store(redis_server.url(), tmp_path, namespace=f"b-{tag}") as b,
    ):
        a.commit(*LeagueRun().iteration(0), expected_seq=0)
        assert a.seq() == 1 and a.match_count() == 4
        assert b.seq() == 0 and b.match_count() == 0 and b.snapshots() == {}


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_redis_data_survives_server_restart(tmp_path: Path, how: str) -> None:
    """AOF: a graceful restart and a SIGKILL both keep every acknowledged commit."""
    with RedisServer(tmp_path / "redis", password="pw") as server:
        run = LeagueRun()
        s1, m1 = run.iteration(0)
        s2, m2 = run.iteration(1)
        with open_store(server.url(), tmp_path) as store:
            store.commit(s1, m1, expected_seq=0)
            store.commit(s2, m2, expected_seq=1)
            store.pin(1)
        old_pid = server.pid
        server.stop() if how == "stop" else server.kill()
        server.start()
        assert server.pid != old_pid
        with open_store(server.url(), tmp_path, keep_states=1) as store:
            assert store.seq() == 2
            assert store.state(1) == s1 and store.state() == s2
            assert store.matches() == tagged(m1, 1) + tagged(m2, 2)
            assert store.snapshots() == registry_of(s2)
            store.commit(*run.iteration(2), expected_seq=2)
            assert kept_seqs(store) == [1, 3]  # the pin survived the restart


def test_redis_down_mid_run_retries_then_raises(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis", password="hunter2") as server:
        store = open_store(server.url(), tmp_path, retry=FAST_RETRY)
        run = LeagueRun()
        s1, m1 = run.iteration(0)
        store.commit(s1, m1, expected_seq=0)
        s2, m2 = run.iteration(1)
        server.kill()
        start = time.monotonic()
        with pytest.raises(StoreUnavailableError) as err:
            store.commit(s2, m2, expected_seq=1)
        elapsed = time.monotonic() - start
        # It did back off (all the sleeps) and it did give up within the bound.
        assert sum(FAST_RETRY.sleeps()) <= elapsed < FAST_RETRY.max_wait_s()
        msg = str(err.value)
        assert f"127.0.0.1:{server.port}" in msg and "4 times" in msg and "hunter2" not in msg
        with pytest.raises(StoreUnavailableError):
            store.matches()
        server.start()
        # Nothing partial was written; the store picks up where it was.
        assert store.seq() == 1 and store.state() == s1 and store.matches() == tagged(m1, 1)
        assert store.commit(s2, m2, expected_seq=1) == 2
        store.close()


def test_redis_short_outage_is_ridden_out(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis") as server:
        patient = RetryPolicy(
            retries=8, backoff_base=0.05, backoff_cap=0.2, connect_timeout=0.5, socket_timeout=1
        )
        store = open_store(server.url(), tmp_path, retry=patient)
        run = LeagueRun()
        store.commit(*run.iteration(0), expected_seq=0)
        server.kill()
        restarter = threading.Timer(0.3, server.start)
        restarter.start()
        try:
            s2, m2 = run.iteration(1)
            assert store.commit(s2, m2, expected_seq=1) == 2
        finally:
            restarter.join()
        assert store.state() == s2 and store.match_count() == 8
        store.close()


class DropExecReplyProxy:
    """A real TCP proxy in front of redis-server that forwards the first
    MULTI/EXEC to the server and then cuts the connection before the reply
    gets back: the commit is applied, but the client cannot know it."""

    EXEC = b"*1\r\n$4\r\nEXEC\r\n"

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.dropped = 0
        self._threads: list[threading.Thread] = []
        self._spawn(self._accept)

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            cut = threading.Event()
            self._spawn(self._to_server, client, upstream, cut)
            self._spawn(self._to_client, upstream, client, cut)

    def _to_server(
        self, client: socket.socket, upstream: socket.socket, cut: threading.Event
    ) -> None:
        tail = b""
        while chunk := _recv(client):
            seen = self.EXEC in tail + chunk
            if seen and self.dropped == 0:
                cut.set()  # before forwarding: no byte of the reply may pass
            upstream.sendall(chunk)
            if cut.is_set():
                time.sleep(0.2)  # let the server apply it
                self.dropped += 1
                for sock in (client, upstream):
                    sock.shutdown(socket.SHUT_RDWR)
                    sock.close()
                return
            tail = (tail + chunk)[-len(self.EXEC) :]

    def _to_client(
        self, upstream: socket.socket, client: socket.socket, cut: threading.Event
    ) -> None:
        while (chunk := _recv(upstream)) and not cut.is_set():
            client.sendall(chunk)

    def close(self) -> None:
        self.listener.close()


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def test_redis_lost_exec_reply_is_neither_doubled_nor_a_conflict(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    proxy = DropExecReplyProxy(redis_server.port)
    url = redis_server.url().replace(f":{redis_server.port}/", f":{proxy.port}/")
    namespace = f"lost-{uuid.uuid4().hex[:8]}"
    try:
        with open_store(url, tmp_path, namespace=namespace, retry=FAST_RETRY) as store:
            state, matches = LeagueRun().iteration(0)
            assert store.commit(state, matches, expected_seq=0) == 1
            assert proxy.dropped == 1  # the reply really was lost
            assert store.seq() == 1 and store.match_count() == len(matches)
            assert store.matches() == tagged(matches, 1)
    finally:
        proxy.close()


# -- SQLite only ------------------------------------------------------------------


def test_sqlite_commit_survives_sigkill_of_writer(tmp_path: Path) -> None:
    state, matches = LeagueRun().iteration(0)
    code = (
        "import json, os, signal, sys\n"
        "from league.store import open_store\n"
        "store = open_store(None, sys.argv[1])\n"
        "store.commit(json.loads(sys.argv[2]), json.loads(sys.argv[3]), expected_seq=0)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), json.dumps(state), json.dumps(matches)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    with open_store(None, tmp_path) as store:
        assert store.seq() == 1 and store.state() == state
        assert store.matches() == tagged(matches, 1)
        assert store.snapshots() == registry_of(state)
