"""Redis backend of the league store, for runs on a Ray cluster.

On a cluster the coordinator actor can be rescheduled onto another node, so the
league state cannot live in a file next to it; a Redis (with AOF persistence)
that every node reaches is the shared durable place. Contract and semantics are
those of ``league.store.LeagueStore``; this module only maps them onto Redis.

Keys, all under the hash tag ``{<namespace>}`` (so several leagues share one
Redis, and a Redis Cluster proxy keeps every key of a league on one slot, which
MULTI/EXEC needs):

- ``{ns}:schema``: the store layout version (``base.SCHEMA_VERSION``);
- ``{ns}:seq``, ``{ns}:pin``: integers; ``{ns}:token``: id of the last commit;
- ``{ns}:states``: hash seq -> state JSON (the last ``keep_states`` + the pin);
- ``{ns}:matches:<seq>``: list of match JSON committed at that seq, in order;
- ``{ns}:match_ids``: hash episode_id -> seq (dedupe and ``match_count``);
- ``{ns}:match_totals``: hash matchup -> games folded out of the log, and
  ``{ns}:folded_through``: the last folded seq (retention, ``keep_matches``).

Schema 1 also kept view hashes ``{ns}:players`` / ``snapshots`` / ``ratings`` /
``payoff``; a schema-1 namespace opens, and the first write deletes them and
sets ``{ns}:schema`` to 2 in its MULTI/EXEC.

Writes read what they need under ``WATCH {ns}:seq`` and then apply everything in
one MULTI/EXEC: another writer's commit changes the seq and aborts ours, and a
dropped connection aborts it before anything is applied. Every operation is
retried with exponential backoff (``RetryPolicy``) on connection loss; a commit
whose EXEC went through but whose reply was lost is recognised on retry by its
token, so it is neither applied twice nor reported as a conflict.

Durability is Redis's: run it with ``appendonly yes`` (warned about at open
otherwise) and preferably ``appendfsync always`` -- one fsync per iteration is
cheap, and under the default ``everysec`` a crash can lose the last second or
two of acknowledged commits, leaving the store's seq behind a checkpoint's.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.exceptions import (
    AuthenticationError,
    BusyLoadingError,
    ConnectionError,
    ReadOnlyError,
    RedisError,
    TimeoutError,
    WatchError,
)
from redis.retry import Retry

from league.store.base import (
    DEFAULT_KEEP_MATCHES,
    DEFAULT_KEEP_STATES,
    DEFAULT_NAMESPACE,
    SCHEMA_VERSION,
    FoldedMatches,
    LeagueStore,
    RetryPolicy,
    StoreConflictError,
    StoreError,
    StoreUnavailableError,
    _check_seq_arg,
    check_commit_args,
    check_rollback_above_folded,
    check_schema,
    dumps,
    fold_through,
    match_episode_ids,
    matchup_key,
    prunable,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

# Errors worth another attempt: the connection (or the server) went away, the
# server is still loading its AOF after a restart, a failover left us on a
# replica for a moment, or WATCH was broken (by a dropped connection -- a real
# conflict is re-detected by the next attempt's seq check).
_RETRYABLE: tuple[type[Exception], ...] = (
    ConnectionError,
    TimeoutError,
    BusyLoadingError,
    ReadOnlyError,
    WatchError,
)
_READ_CHUNK = 1000


def redis_location(url: str) -> str:
    """``scheme://host:port/db`` of a Redis URL, never the password: what
    error messages and logs may show."""
    parts = urlsplit(url)
    db = parts.path.strip("/") or "0"
    try:
        port = parts.port or 6379
    except ValueError:
        port = "?"
    return f"{parts.scheme}://{parts.hostname or 'localhost'}:{port}/{db}"


class RedisStore(LeagueStore):
    """League store on Redis; see the module docstring for the key layout."""

    def __init__(
        self,
        url: str,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        keep_states: int = DEFAULT_KEEP_STATES,
        keep_matches: int = DEFAULT_KEEP_MATCHES,
        retry: RetryPolicy | None = None,
        read_only: bool = False,
    ) -> None:
        super().__init__(keep_states, keep_matches)
        self.read_only = read_only
        if not namespace or any(c in namespace for c in "{}") or namespace != namespace.strip():
            raise StoreError(
                f"namespace must be non-empty, without braces or spaces: {namespace!r}"
            )
        self.namespace = namespace
        self.location = redis_location(url)
        self.policy = retry if retry is not None else RetryPolicy()
        self._retry = Retry(
            ExponentialBackoff(cap=self.policy.backoff_cap, base=self.policy.backoff_base),
            self.policy.retries,
            supported_errors=_RETRYABLE,
        )
        self._closed = False
        p = f"{{{namespace}}}:"
        self._k_seq, self._k_pin, self._k_token = p + "seq", p + "pin", p + "token"
        self._k_schema, self._k_states, self._k_ids = p + "schema", p + "states", p + "match_ids"
        self._k_matches = p + "matches:"
        self._k_totals, self._k_folded = p + "match_totals", p + "folded_through"
        self._k_legacy_views = [p + name for name in ("players", "snapshots", "ratings", "payoff")]
        try:
            # The client itself never retries (retries=0): our loop retries whole
            # operations, which is what keeps WATCH/MULTI/EXEC meaningful.
            self._r = redis.Redis.from_url(
                url,
                decode_responses=True,
                socket_connect_timeout=self.policy.connect_timeout,
                socket_timeout=self.policy.socket_timeout,
                retry=Retry(NoBackoff(), 0),
            )
        except ValueError as err:
            raise StoreError(f"bad redis URL {self.location}: {err}") from err
        self._open_check()

    def __repr__(self) -> str:
        return f"RedisStore({self.location!r}, namespace={self.namespace!r})"

    def _open_check(self) -> None:
        """Fail at open, fast and clearly, not at the first commit an
        iteration later: one PING with the connect timeout, no retries."""
        try:
            self._r.ping()
            if self.read_only:  # look, never write: not even the schema mark
                found = self._r.get(self._k_schema)
                if found is None and not self._r.exists(self._k_seq):
                    self._r.close()
                    raise StoreError(
                        f"no league store at redis {self.location} namespace {self.namespace!r}"
                    )
            else:
                self._r.setnx(self._k_schema, SCHEMA_VERSION)
            schema = int(self._r.get(self._k_schema) or SCHEMA_VERSION)
        except AuthenticationError as err:
            self._r.close()
            raise StoreError(
                f"redis at {self.location} rejected the credentials: wrong or missing "
                f"password in the store URL ({type(err).__name__})"
            ) from None
        except (ConnectionError, TimeoutError) as err:
            self._r.close()
            raise StoreUnavailableError(
                f"cannot connect to redis at {self.location} "
                f"(timeout {self.policy.connect_timeout}s): {err}"
            ) from err
        except RedisError as err:
            self._r.close()
            raise StoreError(f"redis at {self.location} refused the store: {err}") from err
        except TypeError as err:  # connections are made lazily: bad URL options land here
            self._r.close()
            raise StoreError(f"bad option in redis URL for {self.location}: {err}") from None
        try:
            check_schema(schema, f"redis at {self.location} namespace {self.namespace!r}")
        except StoreError:
            self._r.close()
            raise
        try:
            aof = self._r.config_get("appendonly").get("appendonly")
        except RedisError:  # CONFIG is often disabled on managed Redis: nothing to say
            aof = None
        if aof == "no":
            log.warning(
                "redis at %s runs without AOF (appendonly no): a Redis restart can lose "
                "league state committed since its last RDB save",
                self.location,
            )

    # -- plumbing -----------------------------------------------------------

    def _check_writable(self) -> None:
        if self.read_only:
            raise StoreError(f"redis store {self.location} is open read-only")

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` under the retry policy; translate what is left into the
        store's errors."""
        if self._closed:
            raise StoreError(f"redis store {self.location} is closed")
        start = time.monotonic()
        attempts = 0

        def attempt() -> T:
            nonlocal attempts
            attempts += 1
            return fn()

        try:
            return self._retry.call_with_retry(
                attempt,
                lambda _err: None,  # redis-py already dropped the broken connection
                is_retryable=lambda err: not isinstance(err, AuthenticationError),
            )
        except AuthenticationError as err:
            raise StoreError(
                f"redis at {self.location} rejected the credentials during {what} "
                f"({type(err).__name__}): check the password in the store URL"
            ) from None
        except _RETRYABLE as err:
            raise StoreUnavailableError(
                f"redis at {self.location} unavailable: {what} failed {attempts} times "
                f"over {time.monotonic() - start:.1f}s (retries={self.policy.retries}, "
                f"backoff {self.policy.backoff_base}s..{self.policy.backoff_cap}s): {err}"
            ) from err
        except RedisError as err:  # e.g. OOM, NOPERM: retrying will not help
            raise StoreError(f"redis at {self.location} refused {what}: {err}") from err

    def _queue_upgrade(self, pipe: Any, schema: str | None) -> None:
        """Schema 1 -> 2 inside the caller's MULTI: drop the view hashes (derived
        data, nothing is lost). ``schema`` was read before MULTI."""
        if schema is not None and int(schema) == SCHEMA_VERSION:
            return
        check_schema(int(schema or SCHEMA_VERSION), f"redis namespace {self.namespace!r}")
        pipe.delete(*self._k_legacy_views)
        pipe.set(self._k_schema, SCHEMA_VERSION)

    def _per_iteration(self, command: str, seqs: Sequence[int], *args: Any) -> list[Any]:
        """One Redis list command (`llen`, `lrange`) on each of ``seqs``' match lists,
        batched in pipelines."""
        out: list[Any] = []
        for i in range(0, len(seqs), _READ_CHUNK):
            pipe = self._r.pipeline(transaction=False)
            for s in seqs[i : i + _READ_CHUNK]:
                getattr(pipe, command)(f"{self._k_matches}{s}", *args)
            out.extend(pipe.execute())
        return out

    def _list_lengths(self, seqs: Sequence[int]) -> list[int]:
        return [int(n) for n in self._per_iteration("llen", seqs)]

    def _read_lists(self, seqs: Sequence[int]) -> list[list[str]]:
        return self._per_iteration("lrange", seqs, 0, -1)

    # -- writes -------------------------------------------------------------

    def commit(
        self, state: Mapping[str, Any], matches: Sequence[Mapping[str, Any]], *, expected_seq: int
    ) -> int:
        self._check_writable()
        state, matches = check_commit_args(state, matches, expected_seq)
        ids = match_episode_ids(matches)
        state_json = dumps(state, "state")
        match_jsons = [
            dumps(dict(m), f"match {eid!r}") for eid, m in zip(ids, matches, strict=True)
        ]
        token = uuid.uuid4().hex
        new = expected_seq + 1

        def attempt() -> int:
            with self._r.pipeline(transaction=True) as pipe:
                pipe.watch(self._k_seq)
                current = int(pipe.get(self._k_seq) or 0)
                if current != expected_seq:
                    if current == new and pipe.get(self._k_token) == token:
                        return new  # our EXEC went through, only its reply was lost
                    raise StoreConflictError(
                        f"redis store {self.location} namespace {self.namespace!r} is at seq "
                        f"{current}, writer expected {expected_seq}: another writer "
                        f"committed; reload before writing"
                    )
                if ids:
                    known = [
                        e
                        for e, s in zip(ids, pipe.hmget(self._k_ids, ids), strict=True)
                        if s is not None
                    ]
                    if known:
                        raise StoreError(
                            f"duplicate episode_id {known[0]!r}: already in the match log "
                            f"({len(known)} of this commit's matches are)"
                        )
                kept = [int(s) for s in pipe.hkeys(self._k_states)]
                pin = pipe.get(self._k_pin)
                schema = pipe.get(self._k_schema)
                folding = self._plan_fold(pipe, current, len(ids), int(pin) if pin else None)
                pipe.multi()
                self._queue_upgrade(pipe, schema)
                pipe.hset(self._k_states, str(new), state_json)
                if ids:
                    pipe.rpush(f"{self._k_matches}{new}", *match_jsons)
                    pipe.hset(self._k_ids, mapping=dict.fromkeys(ids, new))
                pipe.set(self._k_seq, new)
                pipe.set(self._k_token, token)
                old = prunable([*kept, new], new, self.keep_states, int(pin) if pin else None)
                if old:
                    pipe.hdel(self._k_states, *map(str, old))
                if folding is not None:  # planned before MULTI, under the same WATCH
                    through, games, folded_ids, folded_seqs = folding
                    for key, n in games.items():
                        pipe.hincrby(self._k_totals, key, n)
                    pipe.delete(*(f"{self._k_matches}{s}" for s in folded_seqs))
                    if folded_ids:
                        pipe.hdel(self._k_ids, *folded_ids)
                    pipe.set(self._k_folded, through)
                pipe.execute()
            return new

        return self._call("commit", attempt)

    def _plan_fold(
        self, pipe: Any, current: int, adding: int, pin: int | None
    ) -> tuple[int, dict[str, int], list[str], list[int]] | None:
        """What a commit of ``adding`` matches folds out of the log (read under its
        WATCH): the last folded seq, games per matchup, the episode ids and seqs to
        delete; None: nothing."""
        if self.keep_matches <= 0 or pin is None:
            return None
        folded = int(pipe.get(self._k_folded) or 0)
        if int(pipe.hlen(self._k_ids)) + adding <= self.keep_matches:
            return None
        # Lengths first (one LLEN per iteration): the kept window's records are read
        # only for the iterations that fold, not on every commit past the window.
        seqs = list(range(folded + 1, current + 1))
        counts = list(zip(seqs, self._list_lengths(seqs), strict=True))
        through = fold_through([*counts, (current + 1, adding)], self.keep_matches, pin, folded)
        if through <= folded:
            return None
        games: dict[str, int] = {}
        ids: list[str] = []
        for records in self._read_lists(list(range(folded + 1, through + 1))):
            for raw in records:
                match = json.loads(raw)
                ids.append(match["episode_id"])
                key = matchup_key(match)
                games[key] = games.get(key, 0) + 1
        return through, games, ids, list(range(folded + 1, through + 1))

    def rollback(self, to_seq: int) -> None:
        self._check_writable()
        _check_seq_arg(to_seq, "to_seq")

        def attempt() -> None:
            with self._r.pipeline(transaction=True) as pipe:
                pipe.watch(self._k_seq)
                current = int(pipe.get(self._k_seq) or 0)
                if to_seq > current:
                    raise StoreError(f"cannot roll back to seq {to_seq}: store is at seq {current}")
                if to_seq != 0 and not pipe.hexists(self._k_states, str(to_seq)):
                    kept = sorted(int(s) for s in pipe.hkeys(self._k_states))
                    raise StoreError(
                        f"cannot roll back to seq {to_seq}: its state was pruned "
                        f"(kept: {kept}); pin checkpoint seqs"
                    )
                folded = int(pipe.get(self._k_folded) or 0)
                check_rollback_above_folded(to_seq, folded, f"redis store {self.location}")
                newer = list(range(to_seq + 1, current + 1))
                eids = [json.loads(m)["episode_id"] for ms in self._read_lists(newer) for m in ms]
                drop_states = [s for s in pipe.hkeys(self._k_states) if int(s) > to_seq]
                pin = pipe.get(self._k_pin)
                schema = pipe.get(self._k_schema)
                pipe.multi()
                self._queue_upgrade(pipe, schema)
                if newer:
                    pipe.delete(*(f"{self._k_matches}{s}" for s in newer))
                if eids:
                    pipe.hdel(self._k_ids, *eids)
                if drop_states:
                    pipe.hdel(self._k_states, *drop_states)
                pipe.set(self._k_seq, to_seq)
                pipe.delete(self._k_token)
                if pin is not None and int(pin) > to_seq:
                    pipe.delete(self._k_pin)
                pipe.execute()

        self._call("rollback", attempt)

    def pin(self, seq: int) -> None:
        self._check_writable()
        _check_seq_arg(seq, "seq")

        def attempt() -> None:
            with self._r.pipeline(transaction=True) as pipe:
                pipe.watch(self._k_seq)
                current = int(pipe.get(self._k_seq) or 0)
                kept = [int(s) for s in pipe.hkeys(self._k_states)]
                if seq not in kept:
                    raise StoreError(f"cannot pin seq {seq}: no state kept at that seq")
                schema = pipe.get(self._k_schema)
                pipe.multi()
                self._queue_upgrade(pipe, schema)
                pipe.set(self._k_pin, seq)
                old = prunable(kept, current, self.keep_states, seq)
                if old:
                    pipe.hdel(self._k_states, *map(str, old))
                pipe.execute()

        self._call("pin", attempt)

    # -- reads --------------------------------------------------------------

    def seq(self) -> int:
        return self._call("seq", lambda: int(self._r.get(self._k_seq) or 0))

    def state(self, seq: int | None = None) -> dict[str, Any] | None:
        if seq is not None:
            _check_seq_arg(seq, "seq")

        def read() -> dict[str, Any] | None:
            at = seq if seq is not None else int(self._r.get(self._k_seq) or 0)
            raw = self._r.hget(self._k_states, str(at)) if at > 0 else None
            return None if raw is None else json.loads(raw)

        return self._call("state", read)

    def matches(self, since_seq: int = 0) -> list[dict[str, Any]]:
        _check_seq_arg(since_seq, "since_seq")

        def read() -> list[dict[str, Any]]:
            current = int(self._r.get(self._k_seq) or 0)
            folded = int(self._r.get(self._k_folded) or 0)
            seqs = list(range(max(since_seq, folded) + 1, current + 1))
            return [
                {**json.loads(m), "seq": s}
                for s, ms in zip(seqs, self._read_lists(seqs), strict=True)
                for m in ms
            ]

        return self._call("matches", read)

    def match_count(self) -> int:
        return self._call("match_count", lambda: int(self._r.hlen(self._k_ids)))

    def folded_matches(self) -> FoldedMatches:
        def read() -> FoldedMatches:
            games = {k: int(v) for k, v in sorted(self._r.hgetall(self._k_totals).items())}
            return FoldedMatches(int(self._r.get(self._k_folded) or 0), games)

        return self._call("folded_matches", read)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._r.close()
