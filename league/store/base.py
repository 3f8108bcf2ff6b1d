"""The durable league store: league state, match log and sequence number.

The coordinator writes one ``commit`` per training iteration: the whole league
state (``LeagueDriver.get_state()``: ``League.get_state()`` plus the driver's
own) and the iteration's matches (``MatchRecord.to_dict()``). Every commit bumps
a sequence number; an algorithm checkpoint records the seq it was taken at and
``pin``s it, so a restarted coordinator can ``rollback`` to exactly that seq and
resume with league state and weights that agree.

Readers (``league report``, ``league snapshots``) take what they need from the
committed state (``state()``): the store keeps no separate per-table views of it.

Two backends share one contract (``tests/test_store.py`` runs the same suite on
both):

- ``SQLiteStore`` (``league/store/sqlite.py``): the embedded default, a WAL-mode file in the run
  directory. One connection, ``BEGIN IMMEDIATE`` per write, so a commit is one
  transaction and survives a process kill.
- ``RedisStore`` (``league/store/redis.py``): for a Ray cluster, where the
  coordinator may restart on another node. Writes are MULTI/EXEC under WATCH on
  the seq key; a lost connection is retried with exponential backoff.

Why the whole state on every commit (and not diffs): the state is small next to
an iteration (hundreds of KB at 1000 snapshots, a few ms to write) and a full
copy makes every kept seq self-contained, which is what ``rollback`` and
checkpoint resume need. ``keep_states`` bounds the space.

The match log is bounded too (``keep_matches``, the ``store_retention`` setting):
past it, the oldest iterations' matches are folded into per-matchup game counts
(``folded_matches()``: the sorted module ids of a match -> games) and deleted. Only
iterations up to the pinned (checkpoint) seq are folded, so a resume's rollback to
its checkpoint never needs a folded match back; a rollback below the folded seqs is
refused. Duplicate episode ids are caught within the kept window (an episode is
committed in the iteration that played it, far inside any window).

Use ``league.store.open_store(url, run_dir)``; it picks the backend from the URL.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

DEFAULT_KEEP_STATES = 20
DEFAULT_KEEP_MATCHES = 10_000
"""About 3 MB of match records (some 300 bytes each on two-player games): the store of
a run stays near this size whatever its length (`store_retention`, 0 = keep all)."""
TRAINING_KEEP_STATES = 3
"""States a training run keeps besides the pinned (checkpoint) one: a resume only ever
rolls back to the pin, and readers want the latest; each state holds the whole league
(hundreds of KB with a full registry), so 20 of them were most of a store."""
DEFAULT_NAMESPACE = "league"
SUPPORTED_SCHEMES: tuple[str, ...] = ("sqlite", "redis", "rediss")
SCHEMA_VERSION = 2
"""Store layout version, recorded in the store (SQLite ``meta``, Redis ``{ns}:schema``).

- 1: also kept the views players / snapshots / ratings / payoff (SQLite tables,
  Redis hashes), rewritten on every commit. Still opened: reads ignore the view
  tables, and the first write (commit, rollback, pin) drops them and records
  schema 2 in the same transaction. A reader alone never changes the store, so
  ``league report`` on a run still trained by older code cannot break it.
- 2: seq, pin, states and the match log only.

Code that knows schema 1 only refuses a schema-2 store at open ("has schema 2,
expected 1"); any schema other than these two is refused here the same way.
"""
LEGACY_SCHEMAS: tuple[int, ...] = (1,)
"""Schemas this code opens and upgrades to ``SCHEMA_VERSION`` at the first write."""


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


def check_commit_args(
    state: Any, matches: Any, expected_seq: int
) -> tuple[Mapping[str, Any], list[Mapping[str, Any]]]:
    """Everything about a commit that can be wrong, checked before any I/O: the
    state must be a JSON object (``state()`` returns a dict; whether it is JSON-able
    is checked by ``dumps``), the matches a list of dicts, the seq an int >= 0.
    Returns the matches as a list (a generator would be spent by later checks)."""
    _check_seq_arg(expected_seq, "expected_seq")
    if not isinstance(state, Mapping):
        raise StoreError(f"state must be a dict, got {type(state).__name__}")
    if isinstance(matches, (str, bytes, Mapping)):
        raise StoreError(f"matches must be a list of dicts, got {type(matches).__name__}")
    return state, list(matches)


def check_schema(schema: int, where: str) -> None:
    """Refuse a store whose layout this code does not know."""
    if schema != SCHEMA_VERSION and schema not in LEGACY_SCHEMAS:
        known = ", ".join(map(str, sorted({SCHEMA_VERSION, *LEGACY_SCHEMAS})))
        newer = " (written by a newer version of this code?)" if schema > SCHEMA_VERSION else ""
        raise StoreError(
            f"{where} has store schema {schema}{newer}; this code reads schemas {known}"
        )


def snapshot_registry(state: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Snapshot id -> snapshot dict from a committed state, sorted by id; empty
    for no state or a state without snapshots."""
    if state is None:
        return {}
    snapshots = state.get("snapshots", [])
    if not isinstance(snapshots, Sequence) or isinstance(snapshots, (str, bytes)):
        raise StoreError(f"stored state: 'snapshots' is not a list: {snapshots!r:.80}")
    out: dict[str, dict[str, Any]] = {}
    for snap in snapshots:
        if not isinstance(snap, Mapping) or not isinstance(snap.get("id"), str):
            raise StoreError(f"stored state: a snapshot without a str 'id': {snap!r:.80}")
        out[snap["id"]] = dict(snap)
    return dict(sorted(out.items()))


# One encoder, reused: ``json.dumps`` with non-default options builds a new
# encoder per call.
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"))


def dumps(value: Any, what: str) -> str:
    """Strict JSON (no NaN, no silent ``default=str``): whatever the store
    writes must read back equal, from any language."""
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as err:
        raise StoreError(f"{what} is not JSON-able: {err}") from err


@dataclass(frozen=True)
class FoldedMatches:
    """Matches folded out of the log: every seq up to ``through``, counted per matchup
    (``matchup_key``: the sorted ids of the modules that met)."""

    through: int
    games: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.games.values())


def matchup_key(match: Mapping[str, Any]) -> str:
    """The modules that met in a match, sorted and joined: a folded match's counter."""
    modules = match.get("modules")
    names = sorted({str(m) for m in modules.values()}) if isinstance(modules, Mapping) else []
    return " ".join(names) or "?"


def fold_through(
    seq_counts: Sequence[tuple[int, int]], keep: int, pin: int | None, folded: int
) -> int:
    """The last seq to fold: iterations (seq, matches), oldest first, are folded while
    the newer ones still hold ``keep`` matches, never past the pinned seq (a rollback
    to it must find the log after it whole). ``folded`` if there is nothing to do."""
    if keep <= 0 or pin is None:
        return folded
    remaining = sum(n for _, n in seq_counts)
    through = folded
    for seq, count in seq_counts:
        if seq > pin or remaining - count < keep:
            break
        remaining -= count
        through = seq
    return through


def check_rollback_above_folded(to_seq: int, folded: int, where: str) -> None:
    if to_seq < folded:
        raise StoreError(
            f"cannot roll back {where} to seq {to_seq}: the matches up to seq {folded} "
            "were folded into counts (store_retention); roll back to a later checkpoint"
        )


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
    keep_matches: int

    def __init__(
        self, keep_states: int = DEFAULT_KEEP_STATES, keep_matches: int = DEFAULT_KEEP_MATCHES
    ) -> None:
        if isinstance(keep_states, bool) or not isinstance(keep_states, int) or keep_states < 1:
            raise ValueError(f"keep_states must be an int >= 1, got {keep_states!r}")
        if isinstance(keep_matches, bool) or not isinstance(keep_matches, int) or keep_matches < 0:
            raise ValueError(f"keep_matches must be an int >= 0 (0: all), got {keep_matches!r}")
        self.keep_states = keep_states
        self.keep_matches = keep_matches

    @abc.abstractmethod
    def commit(
        self, state: Mapping[str, Any], matches: Sequence[Mapping[str, Any]], *, expected_seq: int
    ) -> int:
        """Atomically write ``state`` under seq ``expected_seq + 1``, append
        ``matches`` tagged with it and prune old states.

        Raises ``StoreConflictError`` if the store is not at ``expected_seq``,
        ``StoreError`` for a duplicate episode id, a state that is not a dict or
        a non-JSON-able value; in every failure case nothing is written.
        Returns the new seq.
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
        matches) and restore the seq to ``to_seq``. ``to_seq`` must be 0
        (empty store) or a seq whose state is still kept."""

    @abc.abstractmethod
    def pin(self, seq: int) -> None:
        """Protect the state at ``seq`` from pruning (the seq of the latest
        algorithm checkpoint). Replaces the previous pin; a rollback below the
        pinned seq clears it."""

    @abc.abstractmethod
    def matches(self, since_seq: int = 0) -> list[dict[str, Any]]:
        """Matches committed after ``since_seq``, in commit order, each with a
        ``"seq"`` key added: the only reader of the match log."""

    @abc.abstractmethod
    def match_count(self) -> int:
        """Number of matches in the log (the kept ones; see ``folded_matches``)."""

    @abc.abstractmethod
    def folded_matches(self) -> FoldedMatches:
        """What the match log no longer holds: games per matchup, through which seq."""

    def snapshots(self) -> dict[str, dict[str, Any]]:
        """The snapshot registry of the latest state: snapshot id -> snapshot
        dict (``rating`` is its current rating), sorted by id."""
        return snapshot_registry(self.state())

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


def redacted_url(url: str) -> str:
    """``url`` without its password, for error messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()
