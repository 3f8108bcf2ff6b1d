"""Errors of the `league` command: one `league: error:` line and an exit code each."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from envs.registry import UnknownGameError
from league.config import ConfigError
from league.run import RunDirError

EXIT_USAGE = 2
EXIT_DATA = 65  # sysexits EX_DATAERR: input that parses but cannot be used
EXIT_IO = 74  # sysexits EX_IOERR
EXIT_SOFTWARE = 70  # sysexits EX_SOFTWARE: the run failed inside; traceback in its logs
EXIT_INTERRUPTED = 130  # the shell's code for a process ended by Ctrl-C


class CliError(Exception):
    """An error worth one clear line to the user, not a traceback."""


@contextlib.contextmanager
def refuse(*errors: type[Exception]) -> Iterator[None]:
    """Report these errors of a library call as one `league: error:` line."""
    try:
        yield
    except errors as err:
        raise CliError(str(err)) from err


class TrainingFailed(Exception):
    """A training run failed for a reason League did not check for; the traceback is
    in the run's logs."""


def from_ray(err: BaseException) -> bool:
    """An error Ray passed on from an actor or task (RayTaskError also subclasses the
    original's class, so a ValueError in an env runner is still one of these)."""
    exceptions = sys.modules.get("ray.exceptions")
    return exceptions is not None and isinstance(err, exceptions.RayError)


def root_cause(err: BaseException) -> str:
    """The innermost error's type and first line: what went wrong, not where Ray
    passed it on (RayTaskError keeps the original as `cause`)."""
    seen: set[int] = set()
    while id(err) not in seen:
        seen.add(id(err))
        inner = getattr(err, "cause", None) or err.__cause__
        if not isinstance(inner, BaseException):
            break
        err = inner
    lines = [line for line in str(err).splitlines() if line.strip()]
    first = lines[0].strip() if lines else ""
    return f"{type(err).__name__}: {first[:300]}" if first else type(err).__name__


def write_traceback(log_dir: Path, err: BaseException) -> Path:
    import traceback

    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / "error.log"
    with path.open("a") as f:
        f.write(time.strftime("%Y-%m-%d %H:%M:%S ") + "league train failed\n")
        f.write("".join(traceback.format_exception(err)) + "\n")
    return path


def exit_code(err: Exception) -> int | None:
    """The exit code of an expected failure: bad usage or input we checked (2),
    input that library code refused (65), a file or device error (74)."""
    from league.store import StoreError

    # An error's class comes from a module already loaded: looked up there, a refusal
    # is classified without importing torch (snapshots) or Ray (the coordinator).
    loaded = [
        getattr(sys.modules.get(module), name, None)
        for module, name in (
            ("league.snapshot", "SnapshotError"),
            ("league.training.coordinator", "CoordinatorNotFound"),
            ("league.training.probe", "ProbeError"),
        )
    ]
    own = (CliError, ConfigError, UnknownGameError, RunDirError, StoreError)
    if isinstance(err, (*own, *(cls for cls in loaded if cls is not None))):
        return EXIT_USAGE
    if isinstance(err, TrainingFailed):
        return EXIT_SOFTWARE
    if isinstance(err, OSError):
        return EXIT_IO
    if isinstance(err, ValueError | OverflowError | RecursionError):
        return EXIT_DATA
    return None


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 500 else text[:497] + "..."
