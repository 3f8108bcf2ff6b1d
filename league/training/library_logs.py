"""A quiet console: Ray's and RLlib's own log lines go to RUN_DIR/logs/, not the screen.

Ray configures its `ray` logger with a console handler when it is imported, RLlib logs
its deprecation and new-API-stack notices through it, and every actor's output is
forwarded to the driver. A user of `league train` wants League's lines: the iteration
lines, the league lines, evaluations and errors. `LibraryLogs` sends the library
loggers (and Python warnings) to `RUN_DIR/logs/ray.log` for the length of a run and
puts them back after; `start_ray` keeps actor output off the driver and links Ray's
session logs into `RUN_DIR/logs/ray-session`. `verbose` leaves everything as it was.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from types import TracebackType

LIBRARY_LOGGERS = ("ray", "py.warnings")
"""Loggers routed to the file, with every logger under them that has handlers of its
own (RLlib gives `ray.rllib` a console handler and stops propagation)."""
LOG_FILE = "ray.log"
STDERR_FILE = "stderr.log"


class LibraryLogs:
    """Context manager: the library loggers write to `log_dir/ray.log` only."""

    def __init__(self, log_dir: Path, verbose: bool = False) -> None:
        self.log_dir = log_dir
        self.verbose = verbose
        self._saved: list[tuple[logging.Logger, list[logging.Handler], bool]] = []
        self._handler: logging.Handler | None = None
        self._stderr_fd: int | None = None

    @property
    def file(self) -> Path:
        return self.log_dir / LOG_FILE

    def __enter__(self) -> LibraryLogs:
        if self.verbose:
            return self
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._handler = logging.FileHandler(self.file, encoding="utf-8")
        self._handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
        )
        for logger in _library_loggers():
            self._saved.append((logger, list(logger.handlers), logger.propagate))
            logger.handlers = [self._handler]
            logger.propagate = False
        logging.captureWarnings(True)
        # Ray's C++ core worker logs errors straight to this process's stderr (fd 2),
        # e.g. a notice about actor constructor arguments: the fd goes to a file too.
        sys.stderr.flush()
        self._stderr_fd = os.dup(2)
        with open(self.log_dir / STDERR_FILE, "ab") as target:
            os.dup2(target.fileno(), 2)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._handler is None:
            return
        sys.stderr.flush()
        if self._stderr_fd is not None:
            os.dup2(self._stderr_fd, 2)
            os.close(self._stderr_fd)
            self._stderr_fd = None
        logging.captureWarnings(False)
        for logger, handlers, propagate in self._saved:
            logger.handlers = handlers
            logger.propagate = propagate
        self._saved.clear()
        self._handler.close()
        self._handler = None


def _library_loggers() -> list[logging.Logger]:
    roots = [logging.getLogger(name) for name in LIBRARY_LOGGERS]
    own = [
        logger
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
        and logger.handlers
        and any(name.startswith(root + ".") for root in LIBRARY_LOGGERS)
    ]
    return roots + own


def link_session_logs(log_dir: Path, session_dir: str | None) -> None:
    """`log_dir/ray-session` -> this Ray instance's log folder (actors' output)."""
    if not session_dir:
        return
    target = Path(session_dir) / "logs"
    link = log_dir / "ray-session"
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)
    except OSError:
        pass  # a file system without links: the logs stay where Ray put them
