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
from pathlib import Path
from types import TracebackType

LIBRARY_LOGGERS = ("ray", "py.warnings")
LOG_FILE = "ray.log"


class LibraryLogs:
    """Context manager: the library loggers write to `log_dir/ray.log` only."""

    def __init__(self, log_dir: Path, verbose: bool = False) -> None:
        self.log_dir = log_dir
        self.verbose = verbose
        self._saved: list[tuple[logging.Logger, list[logging.Handler], bool]] = []
        self._handler: logging.Handler | None = None

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
        for name in LIBRARY_LOGGERS:
            logger = logging.getLogger(name)
            self._saved.append((logger, list(logger.handlers), logger.propagate))
            logger.handlers = [self._handler]
            logger.propagate = False
        logging.captureWarnings(True)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._handler is None:
            return
        logging.captureWarnings(False)
        for logger, handlers, propagate in self._saved:
            logger.handlers = handlers
            logger.propagate = propagate
        self._saved.clear()
        self._handler.close()
        self._handler = None


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
