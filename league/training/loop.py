"""The training loop behind `league train`: build, (resume,) iterate, evaluate, checkpoint.

Run directory layout:

    config.json              the TrainConfig of the run (resume reads it back)
    progress.jsonl           one JSON line per iteration
    checkpoints/iter_NNNNNN  RLlib Algorithm checkpoints (`save_to_path`)
    checkpoints/latest.json  which checkpoint is complete and newest, with env steps
    players/<id>/            each trainable player's latest weights as a snapshot
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import ray

from envs.opponents import make_opponent
from league.config import TrainConfig
from league.snapshot import SnapshotPolicy, player_metadata, save_snapshot
from league.store import LeagueStore, open_store
from league.tools.evaluation import REFERENCE_OPPONENTS, SeatRecord, evaluate
from league.training.algorithm import MAIN_PLAYER, build_ppo_config, game_seats, trainable_players
from league.training.driver import LeagueDriver

CHECKPOINTS_KEPT = 2


class RunDirError(ValueError):
    """A run directory that cannot be used as asked (e.g. resume without a checkpoint)."""


@dataclass
class RunDir:
    path: Path

    @property
    def config_file(self) -> Path:
        return self.path / "config.json"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def latest_file(self) -> Path:
        return self.checkpoints / "latest.json"

    def player_dir(self, player: str) -> Path:
        return self.path / "players" / player

    def latest_checkpoint(self) -> dict[str, Any]:
        if not self.path.is_dir():
            raise RunDirError(f"run dir {str(self.path)!r} does not exist")
        if not self.latest_file.is_file():
            raise RunDirError(f"run dir {str(self.path)!r} has no checkpoint to resume from")
        return json.loads(self.latest_file.read_text())

    def load_config(self) -> dict[str, Any]:
        if not self.config_file.is_file():
            raise RunDirError(f"run dir {str(self.path)!r} has no config.json")
        return json.loads(self.config_file.read_text())


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)


@dataclass
class TrainingSummary:
    iterations: int = 0
    env_steps: int = 0
    checkpoint: str | None = None
    evaluations: dict[str, list[SeatRecord]] = field(default_factory=dict)


def player_policy(algo: Any, cfg: TrainConfig, player: str) -> tuple[SnapshotPolicy, dict]:
    """The player's current weights (from the learner) as a Ray-free policy."""
    state = algo.learner_group.get_weights(module_ids=[player])[player]
    meta = player_metadata(cfg.env, cfg.model_config, player, env_steps=0)
    policy_state = {k: np.asarray(v) for k, v in state.items() if k.startswith("policy_net.")}
    return SnapshotPolicy(meta, policy_state), policy_state


def evaluate_against_references(
    cfg: TrainConfig, policy: SnapshotPolicy, seed: int
) -> dict[str, list[SeatRecord]]:
    return {
        name: evaluate(cfg.env, policy, make_opponent(name, cfg.env), cfg.eval_games, seed=seed)
        for name in REFERENCE_OPPONENTS[cfg.env]
    }


def format_evaluation(results: dict[str, list[SeatRecord]]) -> str:
    parts = []
    for name, seats in results.items():
        per_seat = " / ".join(
            f"W{r.rate('wins'):.2f} D{r.rate('draws'):.2f} L{r.rate('losses'):.2f}" for r in seats
        )
        parts.append(f"vs {name} {per_seat}")
    return "eval (greedy, first / second seat): " + " | ".join(parts)


def format_progress(
    iteration: int, env_steps: int, steps_per_s: float, result: dict, first_seat: str
) -> str:
    runners = result.get("env_runners", {})
    learner = result.get("learners", {}).get(MAIN_PLAYER, {})
    returns = runners.get("agent_episode_returns_mean", {}) or {}
    first_return = returns.get(first_seat, float("nan"))
    return (
        f"iter {iteration:4d} | env steps {env_steps:>9,d} | {steps_per_s:7,.0f} steps/s | "
        f"episodes {int(runners.get('num_episodes', 0)):5d} | "
        f"ep len {runners.get('episode_len_mean', float('nan')):5.1f} | "
        f"first-seat return {first_return:+.2f} | "
        f"policy loss {learner.get('policy_loss', float('nan')):+.3f} | "
        f"vf loss {learner.get('vf_loss', float('nan')):.3f} | "
        f"entropy {learner.get('entropy', float('nan')):.3f}"
    )


def prepare_run(cfg: TrainConfig, resume: bool) -> tuple[RunDir, dict[str, Any] | None]:
    """Check the run dir for a new run or a resume; write config.json for a new run."""
    run = RunDir(Path(cfg.run_dir))
    if resume:
        return run, run.latest_checkpoint()
    if run.latest_file.is_file():
        raise RunDirError(
            f"run dir {str(run.path)!r} already holds a run; pass --resume to continue it "
            "or choose another --run-dir"
        )
    run.path.mkdir(parents=True, exist_ok=True)
    _write_json_atomic(run.config_file, cfg.to_dict())
    return run, None


def resume_config(run_dir: str, overrides: dict[str, Any]) -> TrainConfig:
    """The stored config of a run, with explicitly given values on top."""
    run = RunDir(Path(run_dir))
    run.latest_checkpoint()  # refuse early when there is nothing to resume
    stored = run.load_config()
    stored.update(overrides)
    stored["run_dir"] = run_dir
    return TrainConfig.from_dict(stored, source=str(run.config_file))


class TrainControl:
    """Hooks through which a service (the coordinator actor) steers the loop.

    The loop runs in one thread; pause/resume/stop come from others. Each finished
    iteration is published as a JSON-able record for status queries and metrics.
    """

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._lock = threading.Lock()
        self.latest: dict[str, Any] = {}
        self.listeners: list[Callable[[dict[str, Any]], None]] = []

    def request_stop(self) -> None:
        self._stop.set()
        self._running.set()

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def wait_while_paused(self) -> None:
        while not self._running.wait(timeout=0.2):
            pass

    def publish(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.latest = record
        for listener in self.listeners:
            listener(record)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(self.latest)


def _stop_on_sigterm() -> None:
    """SIGTERM (`ray job stop`, a container stop) ends training like Ctrl-C: with a
    final checkpoint. Installed after ray.init, which sets its own handler."""
    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def train(
    cfg: TrainConfig,
    *,
    resume: bool = False,
    log: Callable[[str], None] = print,
    control: TrainControl | None = None,
) -> TrainingSummary:
    """Train until a stop condition; checkpoint periodically and at the end."""
    run, latest = prepare_run(cfg, resume)
    store = open_store(cfg.store, run.path) if cfg.mode == "league" else None
    if store is not None and latest is None and store.seq() > 0:
        store.close()
        raise RunDirError(
            f"the league store {cfg.store or 'in ' + str(run.path)} already holds a league "
            f"(seq {store.seq()}); pass --resume, or use another store or namespace"
        )
    if not ray.is_initialized():
        if os.environ.get("RAY_ADDRESS"):  # a Ray job, or a user pointing at a cluster
            ray.init()
        else:
            ray.init(address="local", num_cpus=cfg.num_cpus, include_dashboard=False)
    _stop_on_sigterm()
    algo = build_ppo_config(cfg).build_algo()
    driver = LeagueDriver(algo, cfg, run.path, seed=cfg.seed) if cfg.mode == "league" else None
    summary = TrainingSummary()
    base_steps = 0
    iteration = 0
    store_seq = 0
    if latest is not None:
        checkpoint = run.checkpoints / latest["checkpoint"]
        algo.restore_from_path(str(checkpoint))
        if driver is not None and store is not None:
            store_seq = restore_league(driver, store, int(latest.get("store_seq", 0)), log)
        base_steps, iteration = int(latest["env_steps"]), int(latest["iteration"])
        log(f"resumed {run.path} at iteration {iteration}, {base_steps:,d} env steps")
    elif driver is not None and store is not None:
        log(f"league seeded with {', '.join(driver.seed_league())}")
        store_seq = store.commit(driver.get_state(), [], expected_seq=0)
    stop_minutes = cfg.stop_minutes
    if cfg.stop_timesteps is None and stop_minutes is None:
        stop_minutes = cfg.default_stop_minutes
    deadline = time.monotonic() + 60 * stop_minutes if stop_minutes else float("inf")
    log(
        f"training {cfg.env} ({cfg.num_env_runners} env runners x "
        f"{cfg.num_envs_per_env_runner} envs), stop at "
        f"{cfg.stop_timesteps or '-'} env steps / {stop_minutes or '-'} min; run dir {run.path}"
    )
    env_steps = base_steps
    seats = game_seats(cfg.env)
    last_saved_iteration = iteration if latest else -1
    progress = (run.path / "progress.jsonl").open("a")
    try:
        while env_steps < (cfg.stop_timesteps or float("inf")) and time.monotonic() < deadline:
            if control is not None:
                if control.paused:
                    log("paused")
                    control.wait_while_paused()
                    log("resumed" if not control.stop_requested() else "stopping")
                if control.stop_requested():
                    log("stop requested: writing a final checkpoint")
                    break
            started = time.perf_counter()
            result = algo.train()
            elapsed = time.perf_counter() - started
            iteration += 1
            sampled = int(result.get("env_runners", {}).get("num_env_steps_sampled", 0))
            env_steps += sampled
            log(format_progress(iteration, env_steps, sampled / elapsed, result, seats[0]))
            record: dict[str, Any] = {
                "iteration": iteration,
                "env_steps": env_steps,
                "seconds": elapsed,
                "episode_len_mean": result.get("env_runners", {}).get("episode_len_mean"),
            }
            if driver is not None and store is not None:
                report = driver.step(iteration, result)
                log(report.format(driver.league))
                store_started = time.perf_counter()
                store_seq = store.commit(
                    driver.get_state(),
                    [r.to_dict() for r in report.records],
                    expected_seq=store_seq,
                )
                record["league"] = {
                    "store_seq": store_seq,
                    "store_seconds": time.perf_counter() - store_started,
                    "size": len(driver.league.snapshots),
                    "active_set": list(report.active_set),
                    "matches": report.matches,
                    "new_snapshots": list(report.new_snapshots),
                    "retired": list(report.retired),
                    "ratings": driver.league.ratings.as_dict(),
                    "role_scores": report.role_scores,
                }
            if cfg.eval_interval and iteration % cfg.eval_interval == 0:
                policy, _ = player_policy(algo, cfg, MAIN_PLAYER)
                summary.evaluations = evaluate_against_references(cfg, policy, cfg.seed + iteration)
                log(format_evaluation(summary.evaluations))
                record["eval"] = {
                    name: [r.__dict__ for r in records]
                    for name, records in summary.evaluations.items()
                }
            progress.write(json.dumps(record) + "\n")
            progress.flush()
            if control is not None:
                record["steps_per_s"] = sampled / elapsed
                if driver is not None:
                    record["snapshots"] = {
                        sid: dataclasses.asdict(snap)
                        for sid, snap in driver.league.snapshots.items()
                    }
                control.publish(record)
            if cfg.checkpoint_interval and iteration % cfg.checkpoint_interval == 0:
                summary.checkpoint = save_checkpoint(
                    algo, cfg, run, iteration, env_steps, store, store_seq
                )
                last_saved_iteration = iteration
    except KeyboardInterrupt:
        log("interrupted: writing a final checkpoint")
    finally:
        progress.close()
    if iteration != last_saved_iteration:
        summary.checkpoint = save_checkpoint(algo, cfg, run, iteration, env_steps, store, store_seq)
    log(f"done: {iteration} iterations, {env_steps:,d} env steps; checkpoint {summary.checkpoint}")
    algo.stop()
    if store is not None:
        store.close()
    summary.iterations, summary.env_steps = iteration, env_steps
    return summary


def restore_league(
    driver: LeagueDriver, store: LeagueStore, checkpoint_seq: int, log: Callable[[str], None]
) -> int:
    """Bring the league back to the state the checkpoint was taken with.

    Rule: the algorithm checkpoint is the truth for the weights, so the store goes
    back to the sequence number the checkpoint recorded. Entries written after it
    (iterations whose weights were never checkpointed: matches, snapshots, rating
    changes) are rolled back, never replayed. A store *behind* the checkpoint has
    lost data it had confirmed: that is refused rather than guessed at.
    """
    current = store.seq()
    if current < checkpoint_seq:
        raise RunDirError(
            f"the league store is at seq {current}, behind the checkpoint's seq "
            f"{checkpoint_seq}: it lost committed data (a different store or namespace?)"
        )
    if current > checkpoint_seq:
        log(
            f"league store: rolling back {current - checkpoint_seq} iterations newer than "
            f"the checkpoint (seq {current} -> {checkpoint_seq})"
        )
        store.rollback(checkpoint_seq)
    state = store.state(checkpoint_seq)
    if state is None:
        raise RunDirError(f"the league store has no state at the checkpoint's seq {checkpoint_seq}")
    driver.set_state(state)
    log(
        f"league restored at seq {checkpoint_seq}: {len(driver.league.snapshots)} snapshots, "
        f"{store.match_count()} matches"
    )
    return checkpoint_seq


def save_checkpoint(
    algo: Any,
    cfg: TrainConfig,
    run: RunDir,
    iteration: int,
    env_steps: int,
    store: LeagueStore | None = None,
    store_seq: int = 0,
) -> str:
    """Algorithm checkpoint + player snapshots, recording the league store's seq.

    `latest.json` flips only when both exist, so a crash mid-save leaves the
    previous checkpoint in charge. The store pins the recorded seq so that its
    pruning never drops the state a checkpoint needs.
    """
    name = f"iter_{iteration:06d}"
    run.checkpoints.mkdir(parents=True, exist_ok=True)
    algo.save_to_path(str(run.checkpoints / name))
    if store is not None:
        store.pin(store_seq)
    for player in trainable_players(cfg):
        _, state = player_policy(algo, cfg, player)
        save_snapshot(
            run.player_dir(player),
            state,
            player_metadata(cfg.env, cfg.model_config, player, env_steps),
        )
    _write_json_atomic(
        run.latest_file,
        {
            "checkpoint": name,
            "iteration": iteration,
            "env_steps": env_steps,
            "store_seq": store_seq,
        },
    )
    old = sorted(p for p in run.checkpoints.glob("iter_*") if p.is_dir())[:-CHECKPOINTS_KEPT]
    for path in old:
        shutil.rmtree(path, ignore_errors=True)
    return str(run.checkpoints / name)
