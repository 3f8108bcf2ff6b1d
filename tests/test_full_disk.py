"""A full disk is survived (league.training.disk_full): training stops with one line at
the last good checkpoint, nothing saved is lost, and --resume goes on once there is
space. SQLite through a real file-size limit on the trainer (RLIMIT_FSIZE, no root
needed), Redis through `maxmemory` with `noeviction`."""

from __future__ import annotations

import errno
import json
import os
import signal
import sqlite3
import subprocess
import time
import uuid
from pathlib import Path

import psutil
import pytest
from redis_server import RedisServer
from tiny_run import ROOT, league_cmd, own_ray_env, tiny_config

from league.run import IterationRecord, RunDir
from league.snapshot import load_policy
from league.store import StoreError, open_store
from league.training.disk_full import out_of_space
from league.training.sinks import ProgressFile, close_all


def test_errors_that_mean_no_space_are_recognised() -> None:
    assert out_of_space(OSError(errno.ENOSPC, "No space left on device"))
    assert out_of_space(OSError(errno.EFBIG, "File too large"))
    assert out_of_space(sqlite3.OperationalError("database or disk is full"))
    assert out_of_space(sqlite3.OperationalError("disk I/O error"))  # a file-size limit
    assert out_of_space(
        RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed")
    )
    try:
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError as inner:
            raise StoreError("SQLite store x: database or disk is full") from inner
    except StoreError as outer:
        assert out_of_space(outer)
    assert not out_of_space(OSError(errno.EACCES, "Permission denied"))
    assert not out_of_space(ValueError("bad value"))


class ClosingSink:
    closed = False

    def close(self) -> None:
        self.closed = True


def test_a_failed_progress_line_does_not_hide_the_loops_error_when_sinks_close(
    tmp_path: Path,
) -> None:
    # A progress line that found no space stays in the file's buffer, and closing the file
    # tries it again: the run's one-line "out of space" must not become that raw OSError.
    run = RunDir(tmp_path)
    run.progress_file.symlink_to("/dev/full")  # every flush: ENOSPC
    progress = ProgressFile(run)
    with pytest.raises(OSError) as failed:
        progress.write(IterationRecord(1, 100, seconds=1.0))
    assert out_of_space(failed.value)
    other = ClosingSink()
    close_all([progress, other], quietly=True)  # the loop is raising its own error
    assert other.closed

    progress, other = ProgressFile(run), ClosingSink()
    with pytest.raises(OSError):
        progress.write(IterationRecord(1, 100, seconds=1.0))
    with pytest.raises(OSError) as on_close:  # the loop had ended well: the failure shows
        close_all([progress, other])
    assert out_of_space(on_close.value) and other.closed


def test_redis_at_maxmemory_refuses_a_commit_and_keeps_the_store(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis") as server:
        namespace = f"full-{uuid.uuid4().hex[:8]}"
        store = open_store(server.url(), tmp_path, namespace=namespace)
        store.commit({"iteration": 1}, [{"episode_id": "e1"}], expected_seq=0)
        admin = store._r  # the store's own client: set the server's limits
        used = int(admin.info("memory")["used_memory"])
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", used + 200_000)
        big = {"iteration": 2, "padding": "x" * 400_000}
        with pytest.raises(StoreError) as refused:
            store.commit(big, [{"episode_id": "e2"}], expected_seq=1)
        assert out_of_space(refused.value)
        assert store.seq() == 1 and store.state() == {"iteration": 1}
        assert [m["episode_id"] for m in store.matches()] == ["e1"]
        admin.config_set("maxmemory", 0)  # space is back
        assert store.commit(big, [{"episode_id": "e2"}], expected_seq=1) == 2
        store.close()


@pytest.mark.slow
def test_a_file_size_limit_mid_run_stops_training_and_resume_goes_on(tmp_path: Path) -> None:
    config = tiny_config(tmp_path / "tiny.yaml", run={"checkpoint_interval": 2})
    run_dir = tmp_path / "run"
    base = ["train", "--run-dir", str(run_dir), "--config", str(config)]
    env = own_ray_env()
    proc = subprocess.Popen(
        league_cmd(*base, "--stop-minutes", "10", "--no-run.dashboard"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    latest_file = run_dir / "checkpoints" / "latest.json"
    try:
        deadline = time.monotonic() + 240
        while not (latest_file.is_file() and json.loads(latest_file.read_text())["iteration"] >= 2):
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint in time"
            time.sleep(0.2)
        # From now on the trainer (not Ray's processes) cannot grow any file: its next
        # store commit, progress line or checkpoint finds no space.
        psutil.Process(proc.pid).rlimit(psutil.RLIMIT_FSIZE, (4096, 4096))
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 74, err[-3000:]
    lines = [line for line in err.splitlines() if line.startswith("league: error:")]
    assert len(lines) == 1 and "out of space" in lines[0] and "--resume" in lines[0], err[-3000:]

    latest = json.loads(latest_file.read_text())
    assert (run_dir / "checkpoints" / latest["checkpoint"]).is_dir()
    assert latest["checkpoint"] in lines[0]
    with open_store(None, run_dir, read_only=True) as store:
        assert store.seq() >= latest["store_seq"]
        assert store.state(latest["store_seq"]) is not None
    snapshots = [p for p in (run_dir / "snapshots").iterdir()]
    assert snapshots and all(load_policy(p) is not None for p in snapshots)

    target = latest["env_steps"] + 600
    resumed = subprocess.run(
        league_cmd(*base, "--resume", "--stop-timesteps", str(target), "--no-run.dashboard"),
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads(latest_file.read_text())["env_steps"] >= target
