"""League scale: memory and iteration time as the snapshot registry grows.

For league sizes 10, 100 and 1000 (registry filled directly with snapshots of the
current players, exported as safetensors like real ones), it runs a few league
iterations (train + league step) and reports:

- env-runner RSS and learner RSS (the learner runs in the driver process here);
- iteration time (algo.train() + league step), median of the timed iterations,
  and of it the league step's own work (the wait for the batch the runners sample
  ahead, timed apart, is the runners' sampling, not the league's);
- add-to-runner latency: one snapshot added to every env runner (weights load,
  add_module, set_state, new plan), median of several adds.

Env runners hold only the trainable players plus the active set (at most
`active_set_size` frozen opponents), so memory and iteration time should not grow
with the registry. The last line prints the 1000-vs-10 ratios.

    .venv/bin/python scripts/bench_league_scale.py [--sizes 10 100 1000] [--iterations 4]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import ray

from league.config import TrainConfig
from league.training.algorithm import build_ppo_config
from league.training.driver import LeagueDriver


def rss_mb() -> float:
    """Resident set size of the calling process (Linux /proc), in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def fill_registry(driver: LeagueDriver, size: int) -> None:
    """Register `size` snapshots, spread over the players, each exported to disk."""
    weights = driver.learner_weights(driver.players)
    for i in range(size):
        player = driver.players[i % len(driver.players)]
        sid = driver.league.take_snapshot(player, iteration=0)
        driver.export_snapshot(sid, weights[player])


def measure(size: int, args: argparse.Namespace, root: Path) -> dict[str, float]:
    cfg = TrainConfig.from_dict(
        {
            "env": "tictactoe",
            "num_env_runners": 1,
            "num_envs_per_env_runner": 8,
            "train_batch_size": 2000,
            "minibatch_size": 500,
            "num_epochs": 2,
            "league": {
                "max_snapshots": size,
                "active_set_size": args.active_set_size,
                "snapshot_step_budget": 10**9,
            },
        }
    )
    algo = build_ppo_config(cfg).build_algo()
    try:
        driver = LeagueDriver(algo, cfg, root / f"size_{size}", seed=0)
        fill_started = time.perf_counter()
        fill_registry(driver, size)
        fill_seconds = time.perf_counter() - fill_started
        times, step_times, wait_times = [], [], []
        for iteration in range(1, args.iterations + 2):
            started = time.perf_counter()
            result = algo.train()
            wait_started = time.perf_counter()
            # Returns once each runner has finished the batch it samples ahead.
            algo.env_runner_group.foreach_env_runner(lambda er: None, local_env_runner=False)
            step_started = time.perf_counter()
            driver.step(iteration, result)
            if iteration > 1:  # the first iteration warms up
                times.append(time.perf_counter() - started)
                step_times.append(time.perf_counter() - step_started)
                wait_times.append(step_started - wait_started)
        runner_rss = max(
            algo.env_runner_group.foreach_env_runner(lambda er: rss_mb(), local_env_runner=False)
        )
        outsiders = [s for s in driver.league.snapshots if s not in driver.active_set]
        add_times = []
        active = driver.active_set
        for sid in outsiders[: args.adds]:
            driver.active_set = (*active, sid)  # the plan still names only `active`
            started = time.perf_counter()
            driver.push()
            add_times.append(time.perf_counter() - started)
            driver.active_set = active
            driver.push()
        return {
            "size": size,
            "registry": len(driver.league.snapshots),
            "active": len(driver.active_set),
            "runner_rss_mb": runner_rss,
            "learner_rss_mb": rss_mb(),
            "iteration_s": statistics.median(times),
            "league_step_ms": 1000 * statistics.median(step_times),
            "wait_ms": 1000 * statistics.median(wait_times),
            "add_ms": 1000 * statistics.median(add_times) if add_times else float("nan"),
            "fill_s": fill_seconds,
        }
    finally:
        algo.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--iterations", type=int, default=4, help="timed iterations per size")
    parser.add_argument("--adds", type=int, default=5, help="timed single-snapshot adds")
    parser.add_argument("--active-set-size", type=int, default=8)
    args = parser.parse_args()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    rows = []
    with tempfile.TemporaryDirectory(prefix="league-scale-") as tmp:
        for size in args.sizes:
            row = measure(size, args, Path(tmp))
            rows.append(row)
            print(
                f"size {row['size']:5d} (registry {row['registry']}, active {row['active']}): "
                f"runner RSS {row['runner_rss_mb']:7.1f} MB | learner RSS "
                f"{row['learner_rss_mb']:7.1f} MB | iteration {row['iteration_s']:5.2f} s "
                f"(league step {row['league_step_ms']:5.1f} ms, wait for the batch sampled "
                f"ahead {row['wait_ms']:5.1f} ms) | "
                f"add-to-runner {row['add_ms']:6.1f} ms | registry fill {row['fill_s']:.1f} s",
                flush=True,
            )
    first, last = rows[0], rows[-1]
    print(
        f"size {last['size']} vs {first['size']}: runner RSS "
        f"{last['runner_rss_mb'] / first['runner_rss_mb']:.3f}x, iteration time "
        f"{last['iteration_s'] / first['iteration_s']:.3f}x, learner RSS "
        f"{last['learner_rss_mb'] / first['learner_rss_mb']:.3f}x"
    )
    ray.shutdown()


if __name__ == "__main__":
    main()
