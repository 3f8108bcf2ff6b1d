"""A quiet console (league.training.library_logs): library loggers and Python warnings
go to RUN_DIR/logs/ray.log during a run and are put back after."""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

from league.training.library_logs import LibraryLogs, link_session_logs


def test_library_lines_go_to_the_file_and_not_the_console(tmp_path: Path, capfd) -> None:
    ray_logger = logging.getLogger("ray")
    before = (list(ray_logger.handlers), ray_logger.propagate)
    # RLlib's own logger: a console handler of its own and no propagation.
    rllib = logging.getLogger("ray.rllib")
    own_handler = logging.StreamHandler()
    rllib_before = (list(rllib.handlers), rllib.propagate)
    rllib.addHandler(own_handler)
    rllib.propagate = False
    rllib_handlers = list(rllib.handlers)
    with LibraryLogs(tmp_path / "logs") as logs:
        logging.getLogger("ray.rllib.algorithms.algorithm_config").warning(
            "You are running PPO on the new API stack!"
        )
        os.write(2, b"[E core_worker.cc] a C++ notice\n")
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("a library's deprecation", DeprecationWarning, stacklevel=1)
    text = logs.file.read_text()
    assert "new API stack" in text and "a library's deprecation" in text
    captured = capfd.readouterr()
    assert "new API stack" not in captured.err + captured.out
    assert "C++ notice" not in captured.err
    assert "C++ notice" in (tmp_path / "logs" / "stderr.log").read_text()
    assert (list(ray_logger.handlers), ray_logger.propagate) == before  # put back
    assert rllib.handlers == rllib_handlers and own_handler in rllib.handlers
    os.write(2, b"after the run\n")
    assert "after the run" in capfd.readouterr().err  # stderr is the console again
    rllib.handlers, rllib.propagate = rllib_before


def test_verbose_changes_nothing(tmp_path: Path) -> None:
    ray_logger = logging.getLogger("ray")
    before = list(ray_logger.handlers)
    with LibraryLogs(tmp_path / "logs", verbose=True):
        assert list(ray_logger.handlers) == before
    assert not (tmp_path / "logs").exists()


def test_session_logs_are_linked(tmp_path: Path) -> None:
    session = tmp_path / "session"
    (session / "logs").mkdir(parents=True)
    link_session_logs(tmp_path / "logs", str(session))
    link_session_logs(tmp_path / "logs", str(session))  # a resume links again
    assert (tmp_path / "logs" / "ray-session").resolve() == (session / "logs").resolve()
    link_session_logs(tmp_path / "other", None)
    assert not (tmp_path / "other").exists()
