"""The training loop behind `league train`: build, (resume,) iterate, evaluate, checkpoint.

One iteration, top to bottom (`train` -> `run_iteration`):
`algo.train()` samples and updates; in league mode `LeagueDriver.step` records the
matches and applies the league's decisions, and the store commits the league
state with the iteration's matches; every `eval_interval` iterations the main is
evaluated against the game's reference opponents; the resulting `IterationRecord`
goes to every sink (terminal, progress.jsonl, TensorBoard, the coordinator's
status and metrics); every `checkpoint_interval` iterations a checkpoint records
the store's sequence number. The run directory's layout is `league.run.RunDir`.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import shlex
import shutil
import signal
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import ray

from envs.opponents import make_opponent, reference_opponents
from envs.registry import get_game
from league.config import ConfigError, TrainConfig
from league.core.outcomes import SeatRecord
from league.run import IterationRecord, LeagueRecord, RunDir, RunDirError, write_json_atomic
from league.snapshot import POLICY_PREFIX, SnapshotPolicy, player_metadata, save_snapshot
from league.store import (
    PASSWORD_VARIABLE,
    LeagueStore,
    literal_password,
    open_store,
    redacted_url,
    url_for_files,
)
from league.store.base import TRAINING_KEEP_STATES
from league.tools.evaluation import evaluate
from league.tools.mixtures import weighable
from league.training.algorithm import (
    build_algorithm_config,
    main_players,
    trainable_players,
)
from league.training.disk_full import OutOfSpaceError, out_of_space, stopped_message
from league.training.driver import LeagueDriver, count_metric
from league.training.library_logs import LibraryLogs, link_session_logs
from league.training.run_clock import RunClock
from league.training.sample_ahead import SampleAheadPPO
from league.training.sinks import (
    ProgressFile,
    TensorBoardSink,
    close_all,
    format_evaluation,
    format_league,
    format_progress,
)

PINNED_CHECKPOINT = "KEEP"
"""A checkpoint folder holding a file of this name is never deleted by retention."""


@dataclass
class TrainingSummary:
    iterations: int = 0
    env_steps: int = 0
    checkpoint: str | None = None
    evaluations: dict[str, list[SeatRecord]] = field(default_factory=dict)
    interrupted: bool = False
    """Ended by Ctrl-C or SIGTERM (with its final checkpoint), not a stop condition."""


def player_policy(algo: Any, cfg: TrainConfig, player: str) -> tuple[SnapshotPolicy, dict]:
    """The player's current weights (from the learner) as a Ray-free policy."""
    state = algo.learner_group.get_weights(module_ids=[player])[player]
    meta = player_metadata(cfg.game_id, cfg.model.network(), player, env_steps=0)
    policy_state = {k: np.asarray(v) for k, v in state.items() if k.startswith(POLICY_PREFIX)}
    return SnapshotPolicy(meta, policy_state), policy_state


def evaluate_against_references(
    cfg: TrainConfig, policies: list[SnapshotPolicy], seed: int
) -> dict[str, list[SeatRecord]]:
    """Per reference opponent: each main's record in every team of its side."""
    return {
        name: [
            seat
            for policy in policies
            for seat in evaluate(
                cfg.game_id,
                policy,
                make_opponent(name, cfg.game_id),
                cfg.evaluation.eval_games,
                seed=seed,
                teams=cfg.game.teams or None,
            )
        ]
        for name in reference_opponents(cfg.game_id)
    }


def config_for_files(cfg: TrainConfig) -> dict[str, Any]:
    """The run's config as config.json holds it: the store URL without a password."""
    stored = cfg.to_dict()
    stored["run"]["store"] = url_for_files(cfg.run.store)
    return stored


def check_run_dir(cfg: TrainConfig, resume: bool) -> tuple[RunDir, dict[str, Any] | None]:
    """The run dir for a new run (none there yet) or a resume (its latest checkpoint);
    writes nothing."""
    run = RunDir(cfg.run.run_dir)
    if resume:
        return run, run.latest_checkpoint()
    if run.latest_file.is_file():
        raise RunDirError(
            f"run dir {str(run.path)!r} already holds a run; pass --resume to continue it "
            "or choose another --run-dir"
        )
    return run, None


def write_run_config(
    run: RunDir, cfg: TrainConfig, resume: bool, log: Callable[[str], None] = print
) -> None:
    """config.json for a new run; a resumed run's is rewritten only if it still holds
    a store password (a run dir from before the password was kept out of files)."""
    if literal_password(cfg.run.store):
        log(
            f"the store URL's password is not written to files: config.json keeps "
            f"${{{PASSWORD_VARIABLE}}}; export {PASSWORD_VARIABLE} (or pass --store) to resume"
        )
    if resume and not literal_password(run.stored_store_url()):
        return
    run.path.mkdir(parents=True, exist_ok=True)
    write_json_atomic(run.config_file, config_for_files(cfg))


def prepare_run(
    cfg: TrainConfig, resume: bool, log: Callable[[str], None] = print
) -> tuple[RunDir, dict[str, Any] | None]:
    """`check_run_dir`, then `write_run_config`."""
    run, latest = check_run_dir(cfg, resume)
    write_run_config(run, cfg, resume, log)
    return run, latest


def check_local_gpus(cfg: TrainConfig) -> None:
    """A local Ray instance never grows a GPU: a GPU learner on a machine without one is
    refused before anything is written or started (a cluster may autoscale one in)."""
    if (
        cfg.resources.num_gpus_per_learner <= 0
        or os.environ.get("RAY_ADDRESS")
        or ray.is_initialized()
    ):
        return
    import torch

    gpus = torch.cuda.device_count()
    if cfg.resources.num_gpus_per_learner > gpus:
        raise ConfigError(
            f"num_gpus_per_learner {cfg.resources.num_gpus_per_learner:g} but this machine has {gpus} GPUs"
        )


class TrainControl:
    """Hooks through which a service (the coordinator actor) steers the loop.

    The loop runs in one thread; pause/resume/stop come from others. Each finished
    iteration's record is published for status queries and metrics, with the
    league's snapshot registry beside it.
    """

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._lock = threading.Lock()
        self.latest: IterationRecord | None = None
        self.snapshots: dict[str, dict[str, Any]] = {}
        self.listeners: list[Callable[[IterationRecord], None]] = []

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

    def publish(self, record: IterationRecord, snapshots: dict[str, dict[str, Any]]) -> None:
        with self._lock:
            self.latest, self.snapshots = record, snapshots
        for listener in self.listeners:
            listener(record)


class StopSignals:
    """Ctrl-C (SIGINT) and SIGTERM (`ray job stop`, a container stop) end training with
    a final checkpoint.

    The handler raises KeyboardInterrupt at once and also records the signal, which
    the loop checks between iterations: Python prints and drops an exception raised
    while a finalizer runs (an object's `__del__`, such as one of Ray's object refs
    being collected), and the run would otherwise go on as if never interrupted.
    Installed after ray.init, which sets its own handlers; only the main thread can.
    """

    def __init__(self) -> None:
        self._received = threading.Event()
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        # `kill -USR1 PID` prints every thread's stack to stderr (a run that seems
        # stuck, e.g. in its final checkpoint, shows where) and training goes on.
        with contextlib.suppress(AttributeError, ValueError):  # stderr without a file
            faulthandler.register(signal.SIGUSR1, all_threads=True)
        for signum in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(signum) is signal.SIG_IGN:
                continue  # ignored on purpose (a background job, nohup): left so
            self._previous[signum] = signal.signal(signum, self._interrupt)

    def restore(self) -> None:
        if threading.current_thread() is threading.main_thread():
            faulthandler.unregister(signal.SIGUSR1)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def received(self) -> bool:
        return self._received.is_set()

    def _interrupt(self, signum: int, frame: Any) -> None:
        self._received.set()
        raise KeyboardInterrupt


def start_ray(cfg: TrainConfig, log: Callable[[str], None]) -> None:
    """Join the cluster in RAY_ADDRESS (a Ray job), or start a local Ray instance
    with its dashboard (unless `dashboard` is off) and say where it is."""
    if ray.is_initialized():
        return
    if os.environ.get("RAY_ADDRESS"):
        ray.init()
        return
    context = ray.init(
        address="local",
        num_cpus=cfg.resources.num_cpus,
        include_dashboard=cfg.run.dashboard,
        # Quiet: actors' output stays in Ray's session logs (linked from RUN_DIR/logs).
        log_to_driver=cfg.run.verbose,
    )
    if not cfg.run.verbose:
        link_session_logs(RunDir(cfg.run.run_dir).logs, context.address_info.get("session_dir"))
    if cfg.run.dashboard and context.dashboard_url:
        log(f"Ray dashboard: http://{context.dashboard_url}")
    # A local instance never grows a GPU: fail now rather than wait forever for a
    # learner actor that cannot be placed. (A cluster may autoscale one in.)
    gpus = float(ray.cluster_resources().get("GPU", 0))
    if cfg.resources.num_gpus_per_learner > gpus:
        ray.shutdown()
        raise ConfigError(
            f"num_gpus_per_learner {cfg.resources.num_gpus_per_learner:g} but this machine's Ray "
            f"instance has {gpus:g} GPUs"
        )


def learner_stats(result: dict[str, Any], modules: list[str]) -> dict[str, dict[str, float]]:
    """Per trained module, RLlib's scalar learner stats (losses, entropy, ...)."""
    learners = result.get("learners", {})
    return {
        module: {
            k: float(v)
            for k, v in learners[module].items()
            if isinstance(v, int | float | np.number)
        }
        for module in modules
        if module in learners
    }


def run_iteration(
    algo: Any,
    cfg: TrainConfig,
    iteration: int,
    env_steps: int,
    driver: LeagueDriver | None,
    store: LeagueStore | None,
    store_seq: int,
) -> tuple[IterationRecord, int]:
    """One training iteration and its league step; returns its record and the
    store's new sequence number."""
    iteration_started = time.perf_counter()
    result = algo.train()
    elapsed = time.perf_counter() - iteration_started
    runners = result.get("env_runners", {})
    # Counts are NaN in an iteration that sampled nothing (every env runner lost).
    sampled = count_metric(runners.get("num_env_steps_sampled"))
    returns = runners.get("agent_episode_returns_mean", {}) or {}
    record = IterationRecord(
        iteration=iteration,
        env_steps=env_steps + sampled,
        seconds=elapsed,
        train_seconds=elapsed,
        steps_per_s=sampled / elapsed,
        episodes=count_metric(runners.get("num_episodes")),
        episode_len_mean=runners.get("episode_len_mean"),
        first_seat_return=returns.get(cfg.layout.seats[0]),
        learners=learner_stats(result, trainable_players(cfg)),
    )
    if driver is not None and store is not None:
        started = time.perf_counter()
        report = driver.step(iteration, result)
        step_seconds = time.perf_counter() - started
        started = time.perf_counter()
        store_seq = store.commit(
            driver.get_state(), [r.to_dict() for r in report.records], expected_seq=store_seq
        )
        record.league = LeagueRecord(
            size=len(driver.league.snapshots),
            active_set=list(report.active_set),
            matches=report.matches,
            new_snapshots=list(report.new_snapshots),
            retired=list(report.retired),
            resets=list(report.resets),
            ratings=driver.league.ratings.as_dict(),
            rating_uncertainty={
                m: sigma
                for m in driver.league.ratings.as_dict()
                if (sigma := driver.league.ratings.uncertainty(m)) is not None
            },
            role_scores=report.role_scores,
            nash=report.nash,
            step_seconds=step_seconds,
            store_seq=store_seq,
            store_seconds=time.perf_counter() - started,
        )
    if cfg.evaluation.eval_interval and iteration % cfg.evaluation.eval_interval == 0:
        eval_started = time.perf_counter()
        mains = [player_policy(algo, cfg, main)[0] for main in main_players(cfg)]
        record.eval = evaluate_against_references(cfg, mains, cfg.run.seed + iteration)
        record.eval_seconds = time.perf_counter() - eval_started
    # The rate a user can count on: the whole iteration, not algo.train() alone (with
    # sampling ahead, the league step is where the wait for the next batch lands).
    record.seconds = time.perf_counter() - iteration_started
    record.steps_per_s = sampled / record.seconds
    return record, store_seq


def held(driver: LeagueDriver | None) -> list[str] | None:
    """The snapshots the league holds now (None without a league)."""
    return None if driver is None else list(driver.league.snapshots)


def next_steps(cfg: TrainConfig, run: RunDir) -> list[str]:
    """What a user does with a finished run, with its own paths (in a game of several
    sides, each side's main and mixture by name)."""
    where = shlex.quote(str(run.path))
    sides = cfg.layout.sides if cfg.layout.multi_side else [""]
    lines = [
        "next:",
        f"  league evaluate --run-dir {where} --opponent random   # W/D/L per seat",
        f"  league report --run-dir {where}                       # ratings, payoff PNGs",
    ]
    if cfg.run.mode == "league":
        for side in sides:
            side_flag, name = (f" --side {side}", f"{side}.mixture") if side else ("", "mixture")
            lines.append(
                f"  league export --run-dir {where} --mixture{side_flag} --out {where}/{name}"
                "   # the league's mixture"
            )
            if get_game(cfg.game_id).openspiel is not None and weighable(cfg.game_id):
                lines.append(
                    f"  league export --run-dir {where} --mixture{side_flag} --distill --out "
                    f"{where}/{name}.snapshot   # as one network (small game trees)"
                )
    for main in main_players(cfg):
        player_flag = f" --player {main}" if cfg.layout.multi_side else ""
        lines.append(
            f"  league export --run-dir {where}{player_flag} --out {main}.snapshot"
            "   # load_policy() anywhere"
        )
    lines += [
        f"  tensorboard --logdir {shlex.quote(str(run.tensorboard))}",
        f"  logs of Ray and RLlib: {run.logs}",
    ]
    return lines


def train(
    cfg: TrainConfig,
    *,
    resume: bool = False,
    log: Callable[[str], None] = print,
    control: TrainControl | None = None,
) -> TrainingSummary:
    """Train until a stop condition; checkpoint periodically and at the end."""
    # Everything that can refuse the run does so before config.json is written or Ray
    # starts: the run dir, its recorded progress, the GPUs, the store.
    run, latest = check_run_dir(cfg, resume)
    progress = recorded_progress(run, latest)  # a hand-broken latest.json fails before Ray
    check_local_gpus(cfg)
    store = (
        open_store(
            cfg.run.store,
            run.path,
            keep_states=TRAINING_KEEP_STATES,
            keep_matches=cfg.run.store_retention,
        )
        if cfg.run.mode == "league"
        else None
    )
    if store is not None and latest is None and store.seq() > 0:
        store.close()
        raise RunDirError(
            f"the league store {redacted_url(cfg.run.store) if cfg.run.store else 'in ' + str(run.path)} "
            "already holds a league "
            f"(seq {store.seq()}); pass --resume, or use another store or namespace"
        )
    write_run_config(run, cfg, resume, log)
    with LibraryLogs(run.logs, cfg.run.verbose):
        return _train(cfg, run, latest, progress, store, log, control)


def _train(
    cfg: TrainConfig,
    run: RunDir,
    latest: dict[str, Any] | None,
    progress: float,
    store: LeagueStore | None,
    log: Callable[[str], None],
    control: TrainControl | None,
) -> TrainingSummary:
    start_ray(cfg, log)
    stop_signals = StopSignals()
    stop_signals.install()
    algo = build_algorithm_config(cfg).build_algo()
    driver = LeagueDriver(algo, cfg, run, seed=cfg.run.seed) if cfg.run.mode == "league" else None
    summary = TrainingSummary()
    env_steps = iteration = store_seq = 0
    if latest is not None:
        algo.restore_from_path(str(run.checkpoints / latest["checkpoint"]))
        if driver is not None and store is not None:
            store_seq = restore_league(driver, store, int(latest.get("store_seq", 0)), log)
        env_steps, iteration = int(latest["env_steps"]), int(latest["iteration"])
        log(f"resumed {run.path} at iteration {iteration}, {env_steps:,d} env steps")
    elif driver is not None and store is not None:
        log(f"league seeded with {', '.join(driver.seed_league())}")
        store_seq = store.commit(driver.get_state(), [], expected_seq=0)
    stop_minutes = cfg.run.run_minutes()
    deadline = time.monotonic() + 60 * stop_minutes if stop_minutes else float("inf")
    clock = run_clock(algo, cfg, progress, log)
    log(
        f"training {cfg.game_id} ({cfg.resources.num_env_runners} env runners x "
        f"{cfg.resources.num_envs_per_env_runner} envs), stop at "
        f"{cfg.run.stop_timesteps or '-'} env steps / {stop_minutes or '-'} min; run dir {run.path}"
    )
    log(f"TensorBoard: tensorboard --logdir {run.tensorboard}")
    last_saved_iteration = iteration if latest else -1
    sinks = [ProgressFile(run), TensorBoardSink(run)]
    failed = True  # until the loop ends by a stop condition or Ctrl-C
    try:
        try:
            while (
                env_steps < (cfg.run.stop_timesteps or float("inf")) and time.monotonic() < deadline
            ):
                if stop_signals.received():
                    raise KeyboardInterrupt  # one the interpreter dropped inside the iteration
                if control is not None:
                    if control.paused:
                        log("paused")
                        control.wait_while_paused()
                        log("resumed" if not control.stop_requested() else "stopping")
                    if control.stop_requested():
                        log("stop requested: writing a final checkpoint")
                        break
                # Counted once complete: a Ctrl-C inside an iteration checkpoints the last
                # finished one, whose number and store seq then match the run's records.
                record, store_seq = run_iteration(
                    algo, cfg, iteration + 1, env_steps, driver, store, store_seq
                )
                iteration, env_steps = record.iteration, record.env_steps
                log(format_progress(record, main_players(cfg)[0]))
                if record.league is not None:
                    log(format_league(record, cfg.league.active_set_size))
                if record.eval is not None:
                    summary.evaluations = record.eval
                    log(format_evaluation(record))
                for sink in sinks:
                    sink.write(record)
                if control is not None:
                    snapshots = driver.league.snapshots if driver is not None else {}
                    control.publish(record, {sid: asdict(s) for sid, s in snapshots.items()})
                if cfg.run.checkpoint_interval and iteration % cfg.run.checkpoint_interval == 0:
                    summary.checkpoint = save_checkpoint(
                        algo, cfg, run, iteration, env_steps, store, store_seq, clock, held(driver)
                    )
                    last_saved_iteration = iteration
            failed = False
        except KeyboardInterrupt:
            log("interrupted: writing a final checkpoint")
            summary.interrupted = True
            failed = False
        finally:
            stop_signals.restore()
            # Quietly when the loop failed: a sink's close then re-raises the write that
            # failed (a buffered progress line), which would hide the loop's own error.
            close_all(sinks, quietly=failed)
        if iteration != last_saved_iteration:
            summary.checkpoint = save_checkpoint(
                algo, cfg, run, iteration, env_steps, store, store_seq, clock, held(driver)
            )
    except Exception as err:
        # Wherever the write that found no space was: an iteration, a sink's close, the
        # final checkpoint.
        if not out_of_space(err):
            raise
        latest_name = run.latest_checkpoint()["checkpoint"] if run.latest_file.is_file() else None
        checkpoint = str(run.checkpoints / latest_name) if latest_name else None
        algo.stop()
        if store is not None:
            store.close()
        raise OutOfSpaceError(stopped_message(err, checkpoint, str(run.path))) from err
    log(f"done: {iteration} iterations, {env_steps:,d} env steps; checkpoint {summary.checkpoint}")
    for line in next_steps(cfg, run):
        log(line)
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


SCHEDULE_PROGRESS = "schedule_progress"
"""latest.json's key for the run clock's progress (0..1) at the checkpoint."""


def run_clock(
    algo: Any,
    cfg: TrainConfig,
    start_progress: float,
    log: Callable[[str], None],
) -> RunClock | None:
    """With `anneal_over: run` and a time budget, the clock the learners' schedules
    follow (`league.training.run_clock`), resumed from the checkpoint's progress.
    None when nothing anneals: `run` is every game's default, most keep constant rates."""
    minutes = cfg.run.run_minutes()
    if cfg.ppo.anneal_over != "run" or minutes is None or not cfg.anneals():
        return None
    if not (isinstance(algo, SampleAheadPPO) and algo.samples_ahead):
        log(
            "anneal_over run: schedules over time need ppo with sample_ahead and env "
            f"runners; they span {cfg.schedule_steps():,d} env steps instead"
        )
        return None
    clock = RunClock(cfg.schedule_steps(), 60 * (cfg.run.anneal_minutes or minutes), start_progress)
    algo.schedule_clock = clock
    return clock


def recorded_progress(run: RunDir, latest: dict[str, Any] | None) -> float:
    """The run clock's progress a checkpoint recorded (0 for a new run or none)."""
    value = 0.0 if latest is None else latest.get(SCHEDULE_PROGRESS, 0.0)
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= 1:
        raise RunDirError(
            f"{run.latest_file}: {SCHEDULE_PROGRESS} must be in [0, 1], got {value!r}"
        )
    return float(value)


def save_checkpoint(
    algo: Any,
    cfg: TrainConfig,
    run: RunDir,
    iteration: int,
    env_steps: int,
    store: LeagueStore | None = None,
    store_seq: int = 0,
    clock: RunClock | None = None,
    driver_snapshots: Collection[str] | None = None,
) -> str:
    """Algorithm checkpoint + player snapshots, recording the league store's seq
    (and, with a run clock, how far the schedules have come).

    `latest.json` flips only when both exist, so a crash mid-save leaves the
    previous checkpoint in charge. The store pins the recorded seq so that its
    pruning never drops the state a checkpoint needs.
    """
    checkpoint = run.checkpoint_dir(iteration)
    run.checkpoints.mkdir(parents=True, exist_ok=True)
    algo.save_to_path(str(checkpoint))
    if store is not None:
        store.pin(store_seq)
    for player in trainable_players(cfg):
        _, state = player_policy(algo, cfg, player)
        save_snapshot(
            run.player_dir(player),
            state,
            player_metadata(cfg.game_id, cfg.model.network(), player, env_steps),
        )
    progress = {} if clock is None else {SCHEDULE_PROGRESS: clock.progress()}
    write_json_atomic(
        run.latest_file,
        {
            **progress,
            "checkpoint": checkpoint.name,
            "iteration": iteration,
            "env_steps": env_steps,
            "store_seq": store_seq,
        },
    )
    prune_checkpoints(run, cfg.run.keep_checkpoints)
    if driver_snapshots is not None:
        sweep_retired_snapshots(
            run, driver_snapshots, archive=cfg.run.retired_snapshots == "archive"
        )
    return str(checkpoint)


def prune_checkpoints(run: RunDir, keep: int) -> None:
    """Delete all but the newest `keep` checkpoints, sparing the pinned ones (KEEP)."""
    for path in run.checkpoint_dirs()[:-keep]:
        if not (path / PINNED_CHECKPOINT).exists():
            shutil.rmtree(path, ignore_errors=True)


def sweep_retired_snapshots(run: RunDir, league_snapshots: Collection[str], archive: bool) -> None:
    """Delete (or move to RUN_DIR/archive/snapshots) the snapshot folders the league no
    longer holds. Only right after a checkpoint: the state a resume rolls back to is
    then the current one, so no runner, store state or resume still needs them (a
    snapshot retired between checkpoints stays on disk until the next one)."""
    keep = set(league_snapshots)
    for folder in run.snapshot_dirs():
        if folder.name in keep:
            continue
        if archive:
            target = run.archive / "snapshots" / folder.name
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                shutil.rmtree(target, ignore_errors=True)  # an earlier run's same id
            shutil.move(str(folder), str(target))
        else:
            shutil.rmtree(folder, ignore_errors=True)
