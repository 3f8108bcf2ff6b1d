"""SQLiteStore: the embedded league store, a WAL-mode file in the run directory."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from league.store.base import (
    DEFAULT_KEEP_MATCHES,
    DEFAULT_KEEP_STATES,
    SCHEMA_VERSION,
    FoldedMatches,
    LeagueStore,
    StoreConflictError,
    StoreError,
    StoreUnavailableError,
    _check_seq_arg,
    check_commit_args,
    check_rollback_above_folded,
    check_schema,
    dumps,
    fold_through,
    matchup_key,
    prunable,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER);
CREATE TABLE IF NOT EXISTS states (seq INTEGER PRIMARY KEY, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS matches (
    pos INTEGER PRIMARY KEY,
    episode_id TEXT NOT NULL UNIQUE,
    seq INTEGER NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS matches_by_seq ON matches (seq, pos);
CREATE TABLE IF NOT EXISTS match_totals (matchup TEXT PRIMARY KEY, games INTEGER NOT NULL);
"""
_LEGACY_VIEW_TABLES = ("players", "snapshots", "ratings", "payoff")
"""Schema 1's views, dropped at the first write (``base.SCHEMA_VERSION``)."""


class SQLiteStore(LeagueStore):
    """The embedded store: one SQLite file in WAL mode.

    WAL lets readers (a dashboard, ``sqlite3`` on the command line) look while
    the coordinator writes; ``synchronous=FULL`` makes a returned commit
    durable even across power loss, at one fsync per iteration. Every write is
    ``BEGIN IMMEDIATE``: the write lock is taken before the seq is read, so the
    ``expected_seq`` check is a true compare-and-swap even against another
    process on the same file.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        keep_states: int = DEFAULT_KEEP_STATES,
        keep_matches: int = DEFAULT_KEEP_MATCHES,
        read_only: bool = False,
    ) -> None:
        super().__init__(keep_states, keep_matches)
        self.path = Path(path)
        self.read_only = read_only
        self._lock = threading.RLock()
        if read_only:
            self._conn: sqlite3.Connection | None = self._open_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: no implicit transactions, we issue BEGIN ourselves.
            conn = sqlite3.connect(
                str(self.path), timeout=10.0, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as err:
            raise StoreUnavailableError(f"cannot open SQLite store {self.path}: {err}") from err
        self._conn = conn
        try:
            # Before any table exists (a new file): pages freed by folding the match log
            # go back to the file system bit by bit (`incremental_vacuum` per commit).
            # An older file keeps its mode; SQLite reuses its free pages instead.
            conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreUnavailableError(f"SQLite store {self.path}: WAL mode refused ({mode})")
            conn.execute("PRAGMA synchronous=FULL")
            # A small WAL: checkpointed every 256 pages (1 MB) and cut back to 2 MB after
            # a checkpoint, instead of growing to the largest commit and staying there.
            conn.execute("PRAGMA wal_autocheckpoint=256")
            conn.execute("PRAGMA journal_size_limit=2097152")
            with self._write(upgrade=False):
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                schema = self._meta(conn, "schema")
                if schema is None:
                    self._set_meta(conn, "schema", SCHEMA_VERSION)
                else:
                    check_schema(schema, f"SQLite store {self.path}")
        except sqlite3.Error as err:
            conn.close()
            self._conn = None
            raise StoreUnavailableError(f"cannot use SQLite store {self.path}: {err}") from err
        except BaseException:
            conn.close()
            self._conn = None
            raise

    def _open_read_only(self) -> sqlite3.Connection:
        """Open for reading only: nothing is created, converted or written, so another
        user's database and a read-only copy of a run stay exactly as they were."""
        if not self.path.is_file():
            raise StoreError(f"no league store at {self.path}")
        uri = self.path.resolve().as_uri()
        last: sqlite3.Error | None = None
        # mode=ro still needs a writable -shm beside a WAL database; a copy on a
        # read-only medium has none, and immutable=1 (no concurrent writer) reads it.
        for params in ("mode=ro", "mode=ro&immutable=1"):
            try:
                conn = sqlite3.connect(
                    f"{uri}?{params}",
                    uri=True,
                    timeout=10.0,
                    isolation_level=None,
                    check_same_thread=False,
                )
                tables = {
                    row[0]
                    for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
                }
            except sqlite3.Error as err:
                last = err
                continue
            if not {"meta", "states"} <= tables:
                conn.close()
                raise StoreError(f"{self.path} is not a league store (no league tables)")
            try:
                schema = self._meta(conn, "schema")
            except sqlite3.Error as err:
                conn.close()
                raise StoreError(f"{self.path} is not a league store: {err}") from err
            if schema is not None:
                check_schema(schema, f"SQLite store {self.path}")
            return conn
        raise StoreUnavailableError(f"cannot open SQLite store {self.path} read-only: {last}")

    def __repr__(self) -> str:
        return (
            f"SQLiteStore({str(self.path)!r}, keep_states={self.keep_states}, "
            f"keep_matches={self.keep_matches})"
        )

    # -- plumbing -----------------------------------------------------------

    def _c(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"SQLite store {self.path} is closed")
        return self._conn

    @contextmanager
    def _write(self, upgrade: bool = True) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed if the block returns,
        rolled back (nothing written) if it raises anything. ``upgrade``: bring
        an older schema up to date first, in the same transaction."""
        with self._lock:
            conn = self._c()
            if self.read_only:
                raise StoreError(f"SQLite store {self.path} is open read-only")
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as err:
                raise StoreUnavailableError(f"SQLite store {self.path}: {err}") from err
            try:
                if upgrade:
                    self._upgrade(conn)
                yield conn
                conn.execute("COMMIT")
            except BaseException as err:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(err, sqlite3.OperationalError):  # disk full, I/O error, locked
                    raise StoreUnavailableError(f"SQLite store {self.path}: {err}") from err
                raise

    def _read(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        with self._lock:
            try:
                return fn(self._c())
            except sqlite3.OperationalError as err:
                raise StoreUnavailableError(f"SQLite store {self.path}: {err}") from err

    @staticmethod
    def _meta(conn: sqlite3.Connection, key: str) -> int | None:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else int(row[0])

    @staticmethod
    def _set_meta(conn: sqlite3.Connection, key: str, value: int | None) -> None:
        if value is None:
            conn.execute("DELETE FROM meta WHERE key = ?", (key,))
        else:
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def _upgrade(self, conn: sqlite3.Connection) -> None:
        """Schema 1 -> 2: drop the view tables (derived data, nothing is lost)."""
        schema = self._meta(conn, "schema")
        if schema == SCHEMA_VERSION:
            return
        check_schema(schema or 0, f"SQLite store {self.path}")
        for table in _LEGACY_VIEW_TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        self._set_meta(conn, "schema", SCHEMA_VERSION)

    def _prune(self, conn: sqlite3.Connection, new_seq: int) -> None:
        seqs = [r[0] for r in conn.execute("SELECT seq FROM states")]
        old = prunable(seqs, new_seq, self.keep_states, self._meta(conn, "pin"))
        conn.executemany("DELETE FROM states WHERE seq = ?", [(s,) for s in old])
        self._fold(conn)

    def _fold(self, conn: sqlite3.Connection) -> None:
        """Fold the oldest iterations' matches past ``keep_matches`` into counts."""
        folded = self._meta(conn, "folded_through") or 0
        counts = conn.execute(
            "SELECT seq, COUNT(*) FROM matches WHERE seq > ? GROUP BY seq ORDER BY seq", (folded,)
        ).fetchall()
        through = fold_through(counts, self.keep_matches, self._meta(conn, "pin"), folded)
        if through <= folded:
            return
        games: dict[str, int] = {}
        for (data,) in conn.execute("SELECT data FROM matches WHERE seq <= ?", (through,)):
            key = matchup_key(json.loads(data))
            games[key] = games.get(key, 0) + 1
        conn.executemany(
            "INSERT INTO match_totals VALUES (?, ?) "
            "ON CONFLICT(matchup) DO UPDATE SET games = games + excluded.games",
            sorted(games.items()),
        )
        conn.execute("DELETE FROM matches WHERE seq <= ?", (through,))
        self._set_meta(conn, "folded_through", through)

    # -- writes -------------------------------------------------------------

    def commit(
        self, state: Mapping[str, Any], matches: Sequence[Mapping[str, Any]], *, expected_seq: int
    ) -> int:
        state, matches = check_commit_args(state, matches, expected_seq)
        with self._write() as conn:
            current = self._meta(conn, "seq") or 0
            if current != expected_seq:
                raise StoreConflictError(
                    f"SQLite store {self.path} is at seq {current}, writer expected "
                    f"{expected_seq}: another writer committed; reload before writing"
                )
            new = current + 1
            conn.execute("INSERT INTO states VALUES (?, ?)", (new, dumps(state, "state")))
            # Matches go in one by one inside the transaction: the UNIQUE
            # episode_id constraint is what rejects duplicates (within this
            # commit or against the log), and the rollback undoes the rest.
            for match in matches:
                eid = match.get("episode_id") if isinstance(match, Mapping) else None
                if not isinstance(eid, str) or not eid:
                    raise StoreError(
                        f"every match needs a non-empty str 'episode_id', got {match!r}"
                    )
                try:
                    conn.execute(
                        "INSERT INTO matches (episode_id, seq, data) VALUES (?, ?, ?)",
                        (eid, new, dumps(dict(match), f"match {eid!r}")),
                    )
                except sqlite3.IntegrityError as err:
                    raise StoreError(
                        f"duplicate episode_id {eid!r}: already in the match log or "
                        f"twice in this commit"
                    ) from err
            self._set_meta(conn, "seq", new)
            self._prune(conn, new)
        self._reclaim()
        return new

    def _reclaim(self) -> None:
        """Give the pages freed by pruning back to the file system (new files only)."""
        with self._lock:
            try:
                self._c().execute("PRAGMA incremental_vacuum").fetchall()
            except sqlite3.OperationalError:
                pass  # a busy or full disk: the pages stay free inside the file, reused

    def rollback(self, to_seq: int) -> None:
        _check_seq_arg(to_seq, "to_seq")
        with self._write() as conn:
            current = self._meta(conn, "seq") or 0
            if to_seq > current:
                raise StoreError(f"cannot roll back to seq {to_seq}: store is at seq {current}")
            kept = conn.execute("SELECT 1 FROM states WHERE seq = ?", (to_seq,)).fetchone()
            if to_seq != 0 and kept is None:
                raise StoreError(
                    f"cannot roll back to seq {to_seq}: its state was pruned "
                    f"(kept: {self._state_seqs(conn)}); pin checkpoint seqs"
                )
            folded = self._meta(conn, "folded_through") or 0
            check_rollback_above_folded(to_seq, folded, f"SQLite store {self.path}")
            conn.execute("DELETE FROM states WHERE seq > ?", (to_seq,))
            conn.execute("DELETE FROM matches WHERE seq > ?", (to_seq,))
            self._set_meta(conn, "seq", to_seq)
            pin = self._meta(conn, "pin")
            if pin is not None and pin > to_seq:
                self._set_meta(conn, "pin", None)

    def pin(self, seq: int) -> None:
        _check_seq_arg(seq, "seq")
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM states WHERE seq = ?", (seq,)).fetchone() is None:
                raise StoreError(f"cannot pin seq {seq}: no state kept at that seq")
            self._set_meta(conn, "pin", seq)
            self._prune(conn, self._meta(conn, "seq") or 0)

    # -- reads --------------------------------------------------------------

    @staticmethod
    def _state_seqs(conn: sqlite3.Connection) -> list[int]:
        return [r[0] for r in conn.execute("SELECT seq FROM states ORDER BY seq")]

    def seq(self) -> int:
        return self._read(lambda c: self._meta(c, "seq") or 0)

    def state(self, seq: int | None = None) -> dict[str, Any] | None:
        if seq is not None:
            _check_seq_arg(seq, "seq")

        def read(conn: sqlite3.Connection) -> dict[str, Any] | None:
            if seq is None:
                row = conn.execute("SELECT state FROM states ORDER BY seq DESC LIMIT 1").fetchone()
            else:
                row = conn.execute("SELECT state FROM states WHERE seq = ?", (seq,)).fetchone()
            return None if row is None else json.loads(row[0])

        return self._read(read)

    def matches(self, since_seq: int = 0) -> list[dict[str, Any]]:
        _check_seq_arg(since_seq, "since_seq")
        rows = self._read(
            lambda c: c.execute(
                "SELECT seq, data FROM matches WHERE seq > ? ORDER BY seq, pos", (since_seq,)
            ).fetchall()
        )
        return [{**json.loads(data), "seq": seq} for seq, data in rows]

    def match_count(self) -> int:
        return self._read(lambda c: c.execute("SELECT COUNT(*) FROM matches").fetchone()[0])

    def folded_matches(self) -> FoldedMatches:
        def read(conn: sqlite3.Connection) -> FoldedMatches:
            try:
                rows = conn.execute("SELECT matchup, games FROM match_totals ORDER BY matchup")
                totals = dict(rows.fetchall())
            except sqlite3.OperationalError:  # a store from before retention, read-only
                totals = {}
            return FoldedMatches(self._meta(conn, "folded_through") or 0, totals)

        return self._read(read)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
