"""The durable league store: league state, match log and sequence number.

The coordinator writes one ``commit`` per training iteration: the whole league
state (``League.get_state()``), the iteration's matches (``MatchRecord.to_dict()``)
and, derived from the state, queryable current views (players, snapshot
registry, ratings, payoff entries). Every commit bumps a sequence number; an
algorithm checkpoint records the seq it was taken at and ``pin``s it, so a
restarted coordinator can ``rollback`` to exactly that seq and resume with league
state and weights that agree.

Two backends share one contract (``tests/test_store.py`` runs the same suite on
both):

- ``SQLiteStore`` (here): the embedded default, a WAL-mode file in the run
  directory. One connection, ``BEGIN IMMEDIATE`` per write, so a commit is one
  transaction and survives a process kill.
- ``RedisStore`` (``league/store_redis.py``): for a Ray cluster, where the
  coordinator may restart on another node. Writes are MULTI/EXEC under WATCH on
  the seq key; a lost connection is retried with exponential backoff.

Why the whole state on every commit (and not diffs): the state is small next to
an iteration (hundreds of KB at 1000 snapshots, a few ms to write) and a full
copy makes every kept seq self-contained, which is what ``rollback`` and
checkpoint resume need. ``keep_states`` bounds the space.

Use ``open_store(url, run_dir)``; it picks the backend from the URL.
"""

from __future__ import annotations

import abc
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_KEEP_STATES",
    "DEFAULT_NAMESPACE",
    "SUPPORTED_SCHEMES",
    "LeagueStore",
    "RetryPolicy",
    "SQLiteStore",
    "StoreConflictError",
    "StoreError",
    "StoreUnavailableError",
    "StateViews",
    "open_store",
    "state_views",
]

DEFAULT_KEEP_STATES = 20
DEFAULT_NAMESPACE = "league"
SQLITE_FILENAME = "league.sqlite"
SUPPORTED_SCHEMES: tuple[str, ...] = ("sqlite", "redis", "rediss")
SCHEMA_VERSION = 1


class StoreError(ValueError):
    """Base class of store errors: bad input (duplicate episode id, state that
    is not JSON-able, unknown URL scheme, rollback past what is kept) or a
    store the caller cannot use (wrong password)."""


class StoreConflictError(StoreError):
    """The store's seq is not the one the writer expected: another writer
    committed (or rolled back) in between. The writer must reload, not retry."""


class StoreUnavailableError(StoreError):
    """The store cannot be reached (Redis down past the retry bound, SQLite
    file locked or unwritable). Transient from the store's point of view, fatal
    for the operation that raised it."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard a networked store (Redis) tries before raising
    ``StoreUnavailableError``.

    An operation is attempted at most ``retries + 1`` times; after failure
    ``n`` it sleeps ``min(backoff_cap, backoff_base * 2**n)``. Each attempt is
    bounded by the socket timeouts, so the worst case is roughly
    ``(retries + 1) * max(connect_timeout, socket_timeout) + sum(sleeps)``;
    ``max_wait_s()`` computes it. The default rides out a ~10 s Redis restart.
    """

    retries: int = 6
    backoff_base: float = 0.1
    backoff_cap: float = 4.0
    connect_timeout: float = 2.0
    socket_timeout: float = 10.0

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0, got {self.retries}")
        for name in ("backoff_base", "backoff_cap", "connect_timeout", "socket_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")

    def sleeps(self) -> list[float]:
        """The backoff sleeps between attempts, in order."""
        return [min(self.backoff_cap, self.backoff_base * 2**n) for n in range(1, self.retries + 1)]

    def max_wait_s(self) -> float:
        """Upper bound on how long one operation can take before it raises."""
        per_attempt = max(self.connect_timeout, self.socket_timeout)
        return (self.retries + 1) * per_attempt + sum(self.sleeps())


@dataclass(frozen=True)
class StateViews:
    """The queryable current views, derived from one league state."""

    players: dict[str, dict[str, Any]]
    snapshots: dict[str, dict[str, Any]]
    ratings: dict[str, float]
    payoff: list[list[Any]]
    """``[a, b, wins, draws, losses]`` with ``a < b``, as ``PayoffTable.get_state``."""


def state_views(state: Mapping[str, Any]) -> StateViews:
    """Extract the views from a ``League.get_state()`` dict.

    Done by both backends before writing anything, so a malformed state fails
    the commit cleanly. Missing sections give empty views (a store can hold a
    state from an older format without refusing it).
    """
    if not isinstance(state, Mapping):
        raise StoreError(f"state must be a dict, got {type(state).__name__}")
    try:
        players = _by_id(state.get("players", []), "players")
        snapshots = _by_id(state.get("snapshots", []), "snapshots")
        ratings_raw = state.get("ratings", {}).get("ratings", {})
        ratings = {str(k): float(v) for k, v in ratings_raw.items()}
        payoff: list[list[Any]] = []
        for entry in state.get("payoff", {}).get("entries", []):
            a, b, w, d, lo = entry
            payoff.append([str(a), str(b), float(w), float(d), float(lo)])
    except StoreError:
        raise
    except (AttributeError, TypeError, ValueError) as err:
        raise StoreError(f"malformed league state: {err}") from err
    return StateViews(players, snapshots, ratings, payoff)


def _by_id(items: Sequence[Mapping[str, Any]], section: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            raise StoreError(f"state[{section!r}]: every entry needs a str 'id', got {item!r}")
        out[item["id"]] = dict(item)
    return out


# One encoder, reused: ``json.dumps`` with non-default options builds a new
# encoder per call, which dominated the cost of the ~5000 small view rows.
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))


def dumps(value: Any, what: str) -> str:
    """Strict JSON (no NaN, no silent ``default=str``): whatever the store
    writes must read back equal, from any language."""
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as err:
        raise StoreError(f"{what} is not JSON-able: {err}") from err


def match_episode_ids(matches: Sequence[Mapping[str, Any]]) -> list[str]:
    """The episode ids of ``matches``, validated (non-empty str, unique within
    the commit) so a duplicate is an error and is never counted twice."""
    if isinstance(matches, (str, bytes, Mapping)):
        raise StoreError(f"matches must be a list of dicts, got {type(matches).__name__}")
    ids: list[str] = []
    seen: set[str] = set()
    for match in matches:
        eid = match.get("episode_id") if isinstance(match, Mapping) else None
        if not isinstance(eid, str) or not eid:
            raise StoreError(f"every match needs a non-empty str 'episode_id', got {match!r}")
        if eid in seen:
            raise StoreError(f"duplicate episode_id {eid!r} in one commit")
        seen.add(eid)
        ids.append(eid)
    return ids


def prunable(state_seqs: Sequence[int], new_seq: int, keep: int, pin: int | None) -> list[int]:
    """States to delete: older than the last ``keep`` and not the pinned one."""
    return sorted(s for s in state_seqs if s <= new_seq - keep and s != pin)


class LeagueStore(abc.ABC):
    """League state + match log + seq, with atomic per-iteration commits.

    Single writer by design (the coordinator); ``expected_seq`` turns a second
    writer (a zombie coordinator after a restart) into ``StoreConflictError``
    instead of silently interleaved state.
    """

    keep_states: int

    def __init__(self, keep_states: int = DEFAULT_KEEP_STATES) -> None:
        if isinstance(keep_states, bool) or not isinstance(keep_states, int) or keep_states < 1:
            raise ValueError(f"keep_states must be an int >= 1, got {keep_states!r}")
        self.keep_states = keep_states

    @abc.abstractmethod
    def commit(
        self, state: Mapping[str, Any], matches: Sequence[Mapping[str, Any]], *, expected_seq: int
    ) -> int:
        """Atomically write ``state`` under seq ``expected_seq + 1``, append
        ``matches`` tagged with it, refresh the views and prune old states.

        Raises ``StoreConflictError`` if the store is not at ``expected_seq``,
        ``StoreError`` for a duplicate episode id or a non-JSON-able value; in
        every failure case nothing is written. Returns the new seq.
        """

    @abc.abstractmethod
    def seq(self) -> int:
        """The latest committed seq (0 for an empty store)."""

    @abc.abstractmethod
    def state(self, seq: int | None = None) -> dict[str, Any] | None:
        """The state at ``seq`` (latest by default); None if never written,
        pruned or the store is empty."""

    @abc.abstractmethod
    def rollback(self, to_seq: int) -> None:
        """Atomically delete everything newer than ``to_seq`` (states,
        matches) and restore the views and seq to ``to_seq``. ``to_seq`` must
        be 0 (empty store) or a seq whose state is still kept."""

    @abc.abstractmethod
    def pin(self, seq: int) -> None:
        """Protect the state at ``seq`` from pruning (the seq of the latest
        algorithm checkpoint). Replaces the previous pin."""

    @abc.abstractmethod
    def pinned(self) -> int | None:
        """The pinned seq, if any."""

    @abc.abstractmethod
    def state_seqs(self) -> list[int]:
        """The seqs whose states are kept, ascending."""

    @abc.abstractmethod
    def matches(self, since_seq: int = 0) -> list[dict[str, Any]]:
        """Matches committed after ``since_seq``, in commit order, each with a
        ``"seq"`` key added."""

    @abc.abstractmethod
    def match_count(self) -> int:
        """Number of matches in the log."""

    @abc.abstractmethod
    def ratings(self) -> dict[str, float]:
        """Current rating per module id."""

    @abc.abstractmethod
    def snapshots(self) -> dict[str, dict[str, Any]]:
        """Current snapshot registry: snapshot id -> snapshot dict."""

    @abc.abstractmethod
    def players(self) -> dict[str, dict[str, Any]]:
        """Current trainable players: player id -> player dict."""

    @abc.abstractmethod
    def payoff(self) -> list[list[Any]]:
        """Current payoff entries ``[a, b, wins, draws, losses]``, sorted."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection; idempotent."""

    def __enter__(self) -> LeagueStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _check_seq_arg(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StoreError(f"{name} must be an int >= 0, got {value!r}")
    return value


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
CREATE TABLE IF NOT EXISTS players (id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ratings (id TEXT PRIMARY KEY, rating REAL NOT NULL);
CREATE TABLE IF NOT EXISTS payoff (
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    wins REAL NOT NULL,
    draws REAL NOT NULL,
    losses REAL NOT NULL,
    PRIMARY KEY (a, b)
);
"""


class SQLiteStore(LeagueStore):
    """The embedded store: one SQLite file in WAL mode.

    WAL lets readers (a dashboard, ``sqlite3`` on the command line) look while
    the coordinator writes; ``synchronous=FULL`` makes a returned commit
    durable even across power loss, at one fsync per iteration. Every write is
    ``BEGIN IMMEDIATE``: the write lock is taken before the seq is read, so the
    ``expected_seq`` check is a true compare-and-swap even against another
    process on the same file.
    """

    def __init__(self, path: Path | str, *, keep_states: int = DEFAULT_KEEP_STATES) -> None:
        super().__init__(keep_states)
        self.path = Path(path)
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: no implicit transactions, we issue BEGIN ourselves.
            conn = sqlite3.connect(
                str(self.path), timeout=10.0, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as err:
            raise StoreUnavailableError(f"cannot open SQLite store {self.path}: {err}") from err
        self._conn: sqlite3.Connection | None = conn
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreUnavailableError(f"SQLite store {self.path}: WAL mode refused ({mode})")
            conn.execute("PRAGMA synchronous=FULL")
            with self._write():
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
                if row is None:
                    conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                elif row[0] != SCHEMA_VERSION:
                    raise StoreError(
                        f"SQLite store {self.path} has schema {row[0]}, expected {SCHEMA_VERSION}"
                    )
        except sqlite3.Error as err:
            conn.close()
            self._conn = None
            raise StoreUnavailableError(f"cannot use SQLite store {self.path}: {err}") from err
        except BaseException:
            conn.close()
            self._conn = None
            raise

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r}, keep_states={self.keep_states})"

    # -- plumbing -----------------------------------------------------------

    def _c(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"SQLite store {self.path} is closed")
        return self._conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction: committed if the block returns,
        rolled back (nothing written) if it raises anything."""
        with self._lock:
            conn = self._c()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as err:
                raise StoreUnavailableError(f"SQLite store {self.path}: {err}") from err
            try:
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

    @staticmethod
    def _write_views(conn: sqlite3.Connection, views: StateViews) -> None:
        for table in ("players", "snapshots", "ratings", "payoff"):
            conn.execute(f"DELETE FROM {table}")
        conn.executemany(
            "INSERT INTO players VALUES (?, ?)",
            [(k, dumps(v, f"player {k!r}")) for k, v in views.players.items()],
        )
        conn.executemany(
            "INSERT INTO snapshots VALUES (?, ?)",
            [(k, dumps(v, f"snapshot {k!r}")) for k, v in views.snapshots.items()],
        )
        conn.executemany("INSERT INTO ratings VALUES (?, ?)", list(views.ratings.items()))
        try:
            conn.executemany("INSERT INTO payoff VALUES (?, ?, ?, ?, ?)", views.payoff)
        except sqlite3.IntegrityError as err:
            raise StoreError(f"duplicate payoff pair in state: {err}") from err

    def _prune(self, conn: sqlite3.Connection, new_seq: int) -> None:
        seqs = [r[0] for r in conn.execute("SELECT seq FROM states")]
        old = prunable(seqs, new_seq, self.keep_states, self._meta(conn, "pin"))
        conn.executemany("DELETE FROM states WHERE seq = ?", [(s,) for s in old])

    # -- writes -------------------------------------------------------------

    def commit(
        self, state: Mapping[str, Any], matches: Sequence[Mapping[str, Any]], *, expected_seq: int
    ) -> int:
        _check_seq_arg(expected_seq, "expected_seq")
        views = state_views(state)
        if isinstance(matches, (str, bytes, Mapping)):
            raise StoreError(f"matches must be a list of dicts, got {type(matches).__name__}")
        matches = list(matches)
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
            self._write_views(conn, views)
            self._set_meta(conn, "seq", new)
            self._prune(conn, new)
        return new

    def rollback(self, to_seq: int) -> None:
        _check_seq_arg(to_seq, "to_seq")
        with self._write() as conn:
            current = self._meta(conn, "seq") or 0
            if to_seq > current:
                raise StoreError(f"cannot roll back to seq {to_seq}: store is at seq {current}")
            if to_seq == 0:
                views = StateViews({}, {}, {}, [])
            else:
                row = conn.execute("SELECT state FROM states WHERE seq = ?", (to_seq,)).fetchone()
                if row is None:
                    raise StoreError(
                        f"cannot roll back to seq {to_seq}: its state was pruned "
                        f"(kept: {self._state_seqs(conn)}); pin checkpoint seqs"
                    )
                views = state_views(json.loads(row[0]))
            conn.execute("DELETE FROM states WHERE seq > ?", (to_seq,))
            conn.execute("DELETE FROM matches WHERE seq > ?", (to_seq,))
            self._write_views(conn, views)
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

    def pinned(self) -> int | None:
        return self._read(lambda c: self._meta(c, "pin"))

    def state_seqs(self) -> list[int]:
        return self._read(self._state_seqs)

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

    def ratings(self) -> dict[str, float]:
        rows = self._read(
            lambda c: c.execute("SELECT id, rating FROM ratings ORDER BY id").fetchall()
        )
        return dict(rows)

    def snapshots(self) -> dict[str, dict[str, Any]]:
        rows = self._read(
            lambda c: c.execute("SELECT id, data FROM snapshots ORDER BY id").fetchall()
        )
        return {k: json.loads(v) for k, v in rows}

    def players(self) -> dict[str, dict[str, Any]]:
        rows = self._read(
            lambda c: c.execute("SELECT id, data FROM players ORDER BY id").fetchall()
        )
        return {k: json.loads(v) for k, v in rows}

    def payoff(self) -> list[list[Any]]:
        rows = self._read(lambda c: c.execute("SELECT * FROM payoff ORDER BY a, b").fetchall())
        return [list(r) for r in rows]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _redacted(url: str) -> str:
    """``url`` without its password, for error messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()


def open_store(
    url: str | None,
    run_dir: Path | str,
    *,
    namespace: str = DEFAULT_NAMESPACE,
    keep_states: int = DEFAULT_KEEP_STATES,
    retry: RetryPolicy | None = None,
) -> LeagueStore:
    """Open the league store named by ``url``.

    - ``None`` or ``"sqlite"``: ``run_dir/league.sqlite``;
    - ``sqlite:///abs/path.sqlite``: that file (everything after ``sqlite://``
      is the path, so three slashes give an absolute path);
    - ``redis://[user][:password@]host:port/db`` or ``rediss://`` (TLS): Redis,
      keys under ``namespace`` (several leagues can share one Redis). Pinged at
      open, so a wrong host fails now with ``StoreUnavailableError`` and a
      wrong password with ``StoreError``, not at the first commit.

    ``retry`` only matters for Redis (SQLite has no network to retry).
    """
    if url is None or url == "sqlite":
        return SQLiteStore(Path(run_dir) / SQLITE_FILENAME, keep_states=keep_states)
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme == "sqlite":
        parts = urlsplit(url)
        if parts.netloc:
            raise StoreError(f"sqlite URL must be sqlite:///path (no host), got {_redacted(url)!r}")
        path = Path(parts.path) if parts.path else Path(run_dir) / SQLITE_FILENAME
        return SQLiteStore(path, keep_states=keep_states)
    if scheme in ("redis", "rediss"):
        from league.store_redis import RedisStore

        return RedisStore(url, namespace=namespace, keep_states=keep_states, retry=retry)
    raise StoreError(
        f"unsupported store URL scheme {scheme or '(none)'!r} in {_redacted(url)!r}; "
        f"supported: {', '.join(SUPPORTED_SCHEMES)} (or None for run_dir/{SQLITE_FILENAME})"
    )
