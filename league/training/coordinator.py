"""The league as a Ray service: a named, detached coordinator actor.

`league train --address ...` creates the actor `league-coordinator` in namespace
`league`; it owns the Algorithm and the league and runs the same training loop as
a local `league train` (league.training.loop.train) in a thread, so that status queries,
pause/resume and stop are served while it trains. Other processes reach it by
name (`league status`, `standings`, `snapshots`, `pause`, `resume`, `stop`).

If the actor dies (its process killed, its node lost), Ray restarts it (up to
`COORDINATOR_MAX_RESTARTS` times, on any node with room): the new instance resumes
the run from its last checkpoint exactly as `league train --resume` does, rolling
the league store back to the checkpoint's sequence number, and keeps training.

League metrics are exported through `ray.util.metrics` (Prometheus) from the
actor, so the Ray dashboard and any Prometheus scraping Ray's metrics port show
them.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import traceback
from collections import deque
from typing import Any
from urllib.parse import urlsplit

import ray

COORDINATOR_NAME = "league-coordinator"
NAMESPACE = "league"
LOG_LINES_KEPT = 2000
COORDINATOR_MAX_RESTARTS = 5
"""Ray restarts a dead coordinator this many times; a crash loop then ends."""
CLUSTER_CONNECT_TIMEOUT_S = 5.0
"""How long a named cluster address may take to accept a TCP connection."""


class CoordinatorNotFound(RuntimeError):
    """No coordinator actor is running in the cluster asked about."""


@ray.remote(num_cpus=0, max_concurrency=16)
class LeagueCoordinator:
    """Owns the Algorithm and the league; trains in a thread, answers queries."""

    def __init__(self, cfg_dict: dict[str, Any], resume: bool) -> None:
        from league.config import TrainConfig
        from league.training.loop import TrainControl
        from league.training.sinks import PrometheusSink

        self.cfg = TrainConfig.from_dict(cfg_dict, source="coordinator")
        self.resume_run = resume
        self.control = TrainControl()
        self.metrics = PrometheusSink()
        self.control.listeners.append(self.metrics.write)
        self.lines: deque[tuple[int, str]] = deque(maxlen=LOG_LINES_KEPT)
        self._line_no = 0
        self._lock = threading.Lock()
        self.state = "created"
        self.error: str | None = None
        self.summary: dict[str, Any] | None = None
        self.started_at = time.time()
        self._thread: threading.Thread | None = None
        # Ray re-runs __init__ with the original arguments when it restarts the actor;
        # nobody calls start() then, and the run dir already holds this run: resume it.
        self.restarted = ray.get_runtime_context().was_current_actor_reconstructed
        if self.restarted:
            self.resume_run = True
            self._log("coordinator restarted by Ray: resuming from the last checkpoint")
            self.start()

    def _log(self, line: str) -> None:
        with self._lock:
            self._line_no += 1
            self.lines.append((self._line_no, line))
        print(line, flush=True)

    def _run(self) -> None:
        from league.training.loop import train

        self.state = "running"
        try:
            summary = train(self.cfg, resume=self.resume_run, log=self._log, control=self.control)
            self.summary = {
                "iterations": summary.iterations,
                "env_steps": summary.env_steps,
                "checkpoint": summary.checkpoint,
            }
            self.state = "stopped"
        except Exception as err:  # the service reports, it does not vanish
            self.error = f"{type(err).__name__}: {err}"
            self._log(traceback.format_exc())
            self.state = "failed"

    def start(self) -> str:
        """Start training in a background thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="league-train", daemon=True)
            self._thread.start()
        return self.state

    def wait(self, timeout: float | None = None) -> dict[str, Any]:
        """Block until training ends (or `timeout`); returns status."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.status()

    def status(self) -> dict[str, Any]:
        latest = self.control.latest
        league = latest.league if latest is not None else None
        return {
            "state": "paused" if self.state == "running" and self.control.paused else self.state,
            "env": self.cfg.game_id,
            "mode": self.cfg.run.mode,
            "algo": self.cfg.ppo.algo,
            "run_dir": self.cfg.run.run_dir,
            "iteration": latest.iteration if latest is not None else 0,
            "env_steps": latest.env_steps if latest is not None else 0,
            "steps_per_s": latest.steps_per_s if latest is not None else None,
            "league_size": league.size if league is not None else None,
            "active_set": league.active_set if league is not None else None,
            "error": self.error,
            "summary": self.summary,
            "uptime_s": time.time() - self.started_at,
            "pid": os.getpid(),
            "restarted": self.restarted,
            "stop_requested": self.control.stop_requested(),
        }

    def standings(self) -> list[tuple[str, float, float]]:
        """(module, rating, weight in the league's meta-solver mixture), best rated
        first; the rating is Elo, or the skill rating's conservative mu - 3 sigma."""
        latest = self.control.latest
        league = latest.league if latest is not None else None
        if league is None:
            return []
        ranked = sorted(league.ratings.items(), key=lambda kv: -kv[1])
        return [(module, rating, league.nash.get(module, 0.0)) for module, rating in ranked]

    def snapshots(self) -> dict[str, dict[str, Any]]:
        return dict(self.control.snapshots)

    def logs(self, since: int = 0) -> list[tuple[int, str]]:
        with self._lock:
            return [(n, line) for n, line in self.lines if n > since]

    def pause(self) -> str:
        self.control.pause()
        return "paused"

    def resume(self) -> str:
        self.control.resume()
        return "running"

    def stop(self) -> str:
        self.control.request_stop()
        return "stopping"


def connect(address: str | None) -> None:
    """Join the cluster at `address` (or the local one) in the league namespace."""
    if not ray.is_initialized():
        if address not in (None, "auto"):
            refuse_unreachable(address)
        elif os.environ.get("RAY_ADDRESS"):  # what ray.init's "auto" joins first
            refuse_unreachable(os.environ["RAY_ADDRESS"], source="RAY_ADDRESS=")
        ray.init(address=address or "auto", namespace=NAMESPACE, log_to_driver=False)


def refuse_unreachable(address: str, source: str = "") -> None:
    """Fail at once if nothing listens at a host:port (or scheme://host:port) address.

    `ray.init` retries an address where nothing listens for minutes before it gives
    up; one TCP connect tells a wrong address or a stopped cluster in seconds.
    """
    target = urlsplit(address if "://" in address else f"//{address}")
    try:
        port = target.port
    except ValueError:
        raise ConnectionError(
            f"cluster address {source}{address}: the port is not a number"
        ) from None
    if target.hostname is None or port is None:
        return  # not host:port ("local", a bare name): ray.init says what it accepts
    try:
        with socket.create_connection((target.hostname, port), CLUSTER_CONNECT_TIMEOUT_S):
            pass
    except OSError as err:
        reason = err.strerror or str(err) or type(err).__name__
        raise ConnectionError(
            f"no Ray cluster listens at {source}{address} ({reason}); start one with "
            "`ray start --head` or pass the address it printed"
        ) from None


def get_coordinator(address: str | None = None) -> Any:
    connect(address)
    try:
        return ray.get_actor(COORDINATOR_NAME, namespace=NAMESPACE)
    except ValueError:
        raise CoordinatorNotFound(
            f"no {COORDINATOR_NAME!r} actor in namespace {NAMESPACE!r} on the Ray cluster "
            f"at {address or 'auto'}; start one with `league train --address ...`"
        ) from None


def start_coordinator(cfg_dict: dict[str, Any], resume: bool, address: str | None) -> Any:
    """Create the detached coordinator and start it training; refuse a second one."""
    connect(address)
    try:
        ray.get_actor(COORDINATOR_NAME, namespace=NAMESPACE)
    except ValueError:
        pass
    else:
        raise RuntimeError(f"a {COORDINATOR_NAME!r} is already running; `league stop` it first")
    actor = LeagueCoordinator.options(
        name=COORDINATOR_NAME,
        namespace=NAMESPACE,
        lifetime="detached",
        max_restarts=COORDINATOR_MAX_RESTARTS,
    ).remote(cfg_dict, resume)
    ray.get(actor.start.remote())
    return actor
