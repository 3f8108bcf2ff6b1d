"""Soak: run a league for hours and watch what grows.

    .venv/bin/python scripts/soak.py --hours 1 --env tictactoe [--run-dir runs/soak]
        [--interval 60] [--extra --resources.num-env-runners 1 ...]

Starts `league train` for the given time and, once a `--interval` (seconds), samples
every process of the run (the trainer, Ray's gcs_server and raylet, every actor and
worker: the trainer's process tree): resident memory, open file descriptors and
threads, summed per kind of process; the run dir's size per part (store, checkpoints,
snapshots, players, tensorboard, logs, progress); and, from `progress.jsonl`, the
iterations' median time and the store commit's median latency since the last sample.
One CSV row per sample goes to RUN_DIR/soak.csv, and RUN_DIR/soak.png draws them.

The verdict compares minutes 10-20 with the last 10 minutes: total RSS, descriptors and
commit latency within 5%, disk growth within what the retention settings allow. It
measures growth, not speed: light work may run beside it. The summary is appended to
docs/results/soak.jsonl.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from league.run import RunDir
from league.tools.results import append_result

LEAGUE_CLI = str(Path(sys.executable).with_name("league"))
PARTS = {
    "store": ("league.sqlite", "league.sqlite-wal", "league.sqlite-shm"),
    "checkpoints": ("checkpoints",),
    "snapshots": ("snapshots",),
    "players": ("players",),
    "tensorboard": ("tensorboard",),
    "logs": ("logs",),
    "progress": ("progress.jsonl",),
}
FLAT_TOLERANCE = 0.05


def kind_of(proc: psutil.Process) -> str:
    """A short name for a process of the run: driver, gcs_server, raylet, an actor's
    class (Ray names actor processes `ray::ClassName`), or the executable's name."""
    try:
        name = proc.name()
        cmdline = proc.cmdline()
    except psutil.Error:
        return "gone"
    title = cmdline[0] if cmdline else name
    if title.startswith("ray::"):
        return title.split()[0].removeprefix("ray::").split(".")[0] or "ray_worker"
    for known in ("gcs_server", "raylet", "dashboard", "log_monitor", "monitor"):
        if known in " ".join(cmdline[:2]):
            return known
    return name


def sample_processes(root: psutil.Process) -> dict[str, dict[str, float]]:
    """Per kind of process: count, RSS (MB), open descriptors and threads, summed."""
    out: dict[str, dict[str, float]] = {}
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return out
    for proc in procs:
        try:
            with proc.oneshot():
                rss = proc.memory_info().rss / 2**20
                fds = proc.num_fds()
                threads = proc.num_threads()
        except psutil.Error:
            continue
        kind = "trainer" if proc.pid == root.pid else kind_of(proc)
        row = out.setdefault(kind, {"count": 0, "rss_mb": 0.0, "fds": 0, "threads": 0})
        row["count"] += 1
        row["rss_mb"] += rss
        row["fds"] += fds
        row["threads"] += threads
    return out


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += (Path(dirpath) / name).lstat().st_size
            except OSError:
                pass
    return total


def run_dir_sizes(run: RunDir) -> dict[str, int]:
    return {
        part: sum(folder_bytes(run.path / name) for name in names if (run.path / name).exists())
        for part, names in PARTS.items()
    }


def progress_since(run: RunDir, offset: int) -> tuple[dict[str, float], int]:
    """Median iteration time and store commit latency of the records after `offset`
    bytes of progress.jsonl, and the new offset."""
    path = run.progress_file
    if not path.is_file():
        return {}, offset
    with path.open("rb") as f:
        f.seek(offset)
        data = f.read()
    end = data.rfind(b"\n") + 1  # a line still being written waits for the next sample
    seconds, commits, steps = [], [], 0
    for line in data[:end].splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        seconds.append(float(record.get("seconds", 0.0)))
        league = record.get("league") or {}
        if "store_seconds" in league:
            commits.append(float(league["store_seconds"]))
        steps = int(record.get("env_steps", steps))
    figures: dict[str, float] = {"iterations": len(seconds)}
    if seconds:
        figures["iteration_s"] = statistics.median(seconds)
        figures["env_steps"] = steps
    if commits:
        figures["commit_ms"] = 1000 * statistics.median(commits)
    return figures, offset + end


def write_png(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [r["minute"] for r in rows]
    panels = [
        ("RSS, all processes (MB)", "rss_mb_total"),
        ("open descriptors", "fds_total"),
        ("threads", "threads_total"),
        ("run dir (MB)", "run_dir_mb"),
        ("store commit, median (ms)", "commit_ms"),
        ("iteration, median (s)", "iteration_s"),
    ]
    fig, axes = plt.subplots(3, 2, figsize=(11, 9), sharex=True)
    for ax, (title, key) in zip(axes.flat, panels, strict=True):
        ax.plot(minutes, [r.get(key) for r in rows], marker=".")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("minutes")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def window_mean(rows: list[dict[str, Any]], key: str, lo: float, hi: float) -> float | None:
    values = [r[key] for r in rows if lo <= r["minute"] < hi and r.get(key) is not None]
    return statistics.fmean(values) if values else None


def verdict(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Minutes 10-20 against the last 10 minutes: each figure's relative change."""
    if not rows:
        return {}
    last = rows[-1]["minute"]
    out: dict[str, Any] = {"minutes": last}
    for key in ("rss_mb_total", "fds_total", "threads_total", "commit_ms", "iteration_s"):
        early = window_mean(rows, key, 10, 20)
        late = window_mean(rows, key, last - 10, last + 1)
        if early is None or late is None or early == 0:
            continue
        change = late / early - 1
        out[key] = {"minutes_10_20": early, "last_10": late, "change": change}
        out[key]["flat"] = abs(change) <= FLAT_TOLERANCE
    out["run_dir_mb"] = {part: rows[-1][f"{part}_mb"] for part in PARTS}
    # Disk a day of training takes, per part: the growth from minutes 10-20 to the last
    # 10 minutes, scaled to 24 hours (a bounded part shows about 0).
    span = (last - 5) - 15
    if span > 0:
        growth = {}
        for part in PARTS:
            early = window_mean(rows, f"{part}_mb", 10, 20)
            late = window_mean(rows, f"{part}_mb", last - 10, last + 1)
            if early is not None and late is not None:
                growth[part] = round((late - early) / span * 1440, 1)
        out["growth_mb_per_day"] = growth
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--env", default="tictactoe")
    parser.add_argument("--run-dir", default="runs/soak")
    parser.add_argument("--interval", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="train flags")
    args = parser.parse_args()
    if args.hours <= 0 or args.interval <= 0:
        parser.error("--hours and --interval must be > 0")
    run = RunDir(args.run_dir)
    if run.path.exists():
        parser.error(f"{run.path} exists: choose another --run-dir (a soak starts fresh)")
    command = [
        LEAGUE_CLI,
        "train",
        "--env",
        args.env,
        "--run-dir",
        str(run.path),
        "--stop-minutes",
        str(60 * args.hours),
        "--no-run.dashboard",
        *args.extra,
    ]
    print(" ".join(command), flush=True)
    run.path.mkdir(parents=True)
    log = (run.path / "soak-train.log").open("w")
    trainer = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    root = psutil.Process(trainer.pid)
    started, offset = time.monotonic(), 0
    rows: list[dict[str, Any]] = []
    csv_path, png_path = run.path / "soak.csv", run.path / "soak.png"
    try:
        while trainer.poll() is None:
            time.sleep(args.interval)
            procs = sample_processes(root)
            if trainer.poll() is not None:
                break  # the run ended while we slept: its processes are gone, not shrunk
            sizes = run_dir_sizes(run)
            figures, offset = progress_since(run, offset)
            row: dict[str, Any] = {"minute": round((time.monotonic() - started) / 60, 2)}
            row["rss_mb_total"] = round(sum(p["rss_mb"] for p in procs.values()), 1)
            row["fds_total"] = int(sum(p["fds"] for p in procs.values()))
            row["threads_total"] = int(sum(p["threads"] for p in procs.values()))
            row["processes"] = int(sum(p["count"] for p in procs.values()))
            for kind, p in sorted(procs.items()):
                row[f"rss_mb:{kind}"] = round(p["rss_mb"], 1)
            for part, size in sizes.items():
                row[f"{part}_mb"] = round(size / 2**20, 2)
            row["run_dir_mb"] = round(sum(sizes.values()) / 2**20, 2)
            row.update(figures)
            rows.append(row)
            keys = sorted({k for r in rows for k in r}, key=lambda k: (k != "minute", k))
            with csv_path.open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=keys)
                writer.writeheader()
                writer.writerows(rows)
            print(
                f"{row['minute']:6.1f} min | RSS {row['rss_mb_total']:8.1f} MB | fds "
                f"{row['fds_total']:5d} | threads {row['threads_total']:5d} | run dir "
                f"{row['run_dir_mb']:8.2f} MB | commit {row.get('commit_ms', 0):6.1f} ms",
                flush=True,
            )
    except KeyboardInterrupt:
        os.killpg(trainer.pid, signal.SIGINT)
        trainer.wait()
    log.close()
    if rows:
        write_png(rows, png_path)
    summary = verdict(rows)
    print(json.dumps(summary, indent=2))
    append_result("soak", {"env": args.env, "hours": args.hours, "verdict": summary})
    print(f"wrote {csv_path} and {png_path}")
    return trainer.returncode or 0


if __name__ == "__main__":
    sys.exit(main())
