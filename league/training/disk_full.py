"""A full disk (or a store that refuses to grow) stops training cleanly.

A write can fail for want of space anywhere in an iteration: the league store's commit
(SQLite: "database or disk is full"; Redis at `maxmemory` with `noeviction`: "OOM"),
a checkpoint (torch: "file write failed"), a snapshot, progress.jsonl. None of them
leaves anything half-done that a resume would read: the store's commit is one
transaction, snapshots and latest.json are written beside their place and renamed,
and a checkpoint counts only once latest.json names it. So the loop stops where it is
(no final checkpoint, which would need the space that is missing) and says, in one
line, where the last good checkpoint is and how to go on.
"""

from __future__ import annotations

import errno

NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
NO_SPACE_PHRASES = (
    "database or disk is full",  # SQLite's SQLITE_FULL
    "disk i/o error",  # SQLite's SQLITE_IOERR: what a file-size limit (EFBIG) gives
    "no space left on device",
    "file too large",  # EFBIG, e.g. a file-size limit (RLIMIT_FSIZE)
    "disk quota exceeded",
    "file write failed",  # torch's serializer, which drops the errno
    "command not allowed when used memory",  # Redis at maxmemory with noeviction
)


class OutOfSpaceError(OSError):
    """Training stopped because a write found no space (or the disk failed a write);
    everything saved is intact."""


def out_of_space(err: BaseException) -> bool:
    """Whether `err`, or an error it was raised from, is a write that found no space."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in NO_SPACE_ERRNOS:
            return True
        text = str(current).lower()
        if any(phrase in text for phrase in NO_SPACE_PHRASES):
            return True
        current = current.__cause__ or current.__context__
    return False


def stopped_message(err: BaseException, checkpoint: str | None, run_dir: str) -> str:
    where = f"the last good checkpoint is {checkpoint}" if checkpoint else "no checkpoint yet"
    first = " ".join(str(err).split())[:200]
    return (
        f"out of space or a failed disk write ({type(err).__name__}: {first}): training "
        f"stopped; {where}, and the "
        f"league store and snapshots are as they were. Free space (or raise the store's "
        f"limit), then: league train --resume --run-dir {run_dir}"
    )
