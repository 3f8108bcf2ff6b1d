"""The league store: one contract (base), SQLite (embedded default), Redis (cluster)."""

from pathlib import Path
from urllib.parse import urlsplit

from league.run.dir import RunDir
from league.store.base import (
    DEFAULT_KEEP_MATCHES,
    DEFAULT_KEEP_STATES,
    DEFAULT_NAMESPACE,
    SUPPORTED_SCHEMES,
    FoldedMatches,
    LeagueStore,
    RetryPolicy,
    StoreConflictError,
    StoreError,
    StoreUnavailableError,
    redacted_url,
)
from league.store.secrets import (
    PASSWORD_VARIABLE,
    MissingVariableError,
    expand_env,
    literal_password,
    url_for_files,
)
from league.store.sqlite import SQLiteStore


def open_store(
    url: str | None,
    run_dir: Path | str,
    *,
    namespace: str = DEFAULT_NAMESPACE,
    keep_states: int = DEFAULT_KEEP_STATES,
    keep_matches: int = DEFAULT_KEEP_MATCHES,
    retry: RetryPolicy | None = None,
    read_only: bool = False,
) -> LeagueStore:
    """Open the league store named by ``url``.

    - ``None`` or ``"sqlite"``: ``run_dir/league.sqlite``;
    - ``sqlite:///abs/path.sqlite``: that file (everything after ``sqlite://``
      is the path, so three slashes give an absolute path);
    - ``redis://[user][:password@]host:port/db`` or ``rediss://`` (TLS): Redis,
      the password best given as ``${NAME}``, an environment variable read here
      (``league.store.secrets``), so that no file holds it;
      keys under ``namespace`` (several leagues can share one Redis). Pinged at
      open, so a wrong host fails now with ``StoreUnavailableError`` and a
      wrong password with ``StoreError``, not at the first commit.

    ``keep_matches`` bounds the match log (older matches are folded into per-matchup
    counts, ``LeagueStore.folded_matches``; 0 keeps every match).
    ``retry`` only matters for Redis (SQLite has no network to retry).
    ``read_only`` (the commands that only look: snapshots, report, export) opens an
    SQLite file without creating, converting or writing anything; a missing file is
    an error, not a new store.
    """
    if url is not None:
        try:
            url = expand_env(url)
        except MissingVariableError as err:
            raise StoreError(str(err)) from None
    if url is None or url == "sqlite":
        path = RunDir(run_dir).store_file
        return SQLiteStore(
            path, keep_states=keep_states, keep_matches=keep_matches, read_only=read_only
        )
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme == "sqlite":
        parts = urlsplit(url)
        if parts.netloc:
            raise StoreError(
                f"sqlite URL must be sqlite:///path (no host), got {redacted_url(url)!r}"
            )
        path = Path(parts.path) if parts.path else RunDir(run_dir).store_file
        return SQLiteStore(
            path, keep_states=keep_states, keep_matches=keep_matches, read_only=read_only
        )
    if scheme in ("redis", "rediss"):
        from league.store.redis import RedisStore

        return RedisStore(
            url,
            namespace=namespace,
            keep_states=keep_states,
            keep_matches=keep_matches,
            retry=retry,
            read_only=read_only,
        )
    raise StoreError(
        f"unsupported store URL scheme {scheme or '(none)'!r} in {redacted_url(url)!r}; "
        f"supported: {', '.join(SUPPORTED_SCHEMES)} (or None for the run dir's store file)"
    )


__all__ = [
    "DEFAULT_KEEP_MATCHES",
    "FoldedMatches",
    "PASSWORD_VARIABLE",
    "MissingVariableError",
    "expand_env",
    "literal_password",
    "url_for_files",
    "DEFAULT_KEEP_STATES",
    "DEFAULT_NAMESPACE",
    "SUPPORTED_SCHEMES",
    "LeagueStore",
    "RetryPolicy",
    "SQLiteStore",
    "StoreConflictError",
    "StoreError",
    "StoreUnavailableError",
    "open_store",
    "redacted_url",
]
