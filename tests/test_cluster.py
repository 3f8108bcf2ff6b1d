"""League training on a real multi-node Ray cluster, on this machine, loopback only.

A head node (`ray start --head`, 2 CPUs, no `runner_node` resource) and a second
node with its own raylet that alone offers the custom resource `runner_node`; the
env runners ask for it (`--env-runner-resources`), so they can only run there.
The learner is a remote actor (`--num-learners 1`). Training runs in a `league
train` process (a Ray driver on the head), never in this test process, so the
session's own Ray instance (fixture `ray_session`) is untouched.

- The second node's raylet is killed by its pid mid-run: training goes on, the env
  runner comes back once a node with `runner_node` joins again, no match is
  counted twice and the store and checkpoints agree.
- The detached coordinator's actor process is killed by its pid: Ray restarts it
  and it resumes from its last checkpoint with the store rolled back to it.
- `league tune` on the cluster: every trial's env runner asks for a resource one
  one-CPU node offers once, so each trial spans two nodes and trials run one at a
  time, however many CPUs the cluster has.

Every Ray process belongs to a `ray start --block` started here and is stopped by
that process's pid.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from service_helpers import free_port, wait_for

from league.store import open_store

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
TINY = """\
num_env_runners: 1
num_envs_per_env_runner: 2
train_batch_size: 300
minibatch_size: 100
num_epochs: 1
hidden_sizes: [16]
eval_interval: 0
checkpoint_interval: 2
dashboard: false
league:
  snapshot_step_budget: 150
"""
# Quick failure detection: the GCS declares a silent node dead after ~3 s.
FAST_HEALTH_CHECKS = {
    "health_check_initial_delay_ms": 1000,
    "health_check_period_ms": 1000,
    "health_check_timeout_ms": 1000,
    "health_check_failure_threshold": 3,
}


def child_pids(pid: int) -> dict[int, str]:
    """The direct children of a process, by pid, with their command names."""
    children = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :]
        if int(rest.split()[1]) == pid:
            children[int(entry.name)] = name
    return children


class RayNode:
    """One `ray start --block` process on 127.0.0.1 with every port of its own."""

    def __init__(self, log: Path, env: dict[str, str], args: list[str]):
        self.log = log.open("w")
        self.proc = subprocess.Popen(
            [str(VENV_BIN / "ray"), "start", "--block", "--disable-usage-stats"]
            + ["--node-ip-address", "127.0.0.1"]
            + ["--node-manager-port", str(free_port())]
            + ["--object-manager-port", str(free_port())]
            + ["--dashboard-agent-listen-port", str(free_port())]
            + ["--dashboard-agent-grpc-port", str(free_port())]
            + ["--runtime-env-agent-port", str(free_port())]
            + ["--metrics-export-port", str(free_port())]
            + args,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def raylet_pid(self) -> int:
        def find() -> int | None:
            assert self.proc.poll() is None, "ray start exited early"
            pids = [pid for pid, name in child_pids(self.proc.pid).items() if name == "raylet"]
            return pids[0] if pids else None

        return wait_for(find, 60, "the raylet")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Cluster:
    """A head (2 CPUs, the driver, the learner) and runner nodes (`runner_node`)."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.gcs_port = free_port()
        self.address = f"127.0.0.1:{self.gcs_port}"
        # Ray's temp dir path must stay short (unix socket paths are limited).
        self.temp_dir = Path(f"/tmp/lgcl-{os.getpid()}-{self.gcs_port}")
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "PYTHONUNBUFFERED": "1"}
        self.env.pop("RAY_ADDRESS", None)
        self.head = RayNode(
            tmp / "head.log",
            self.env,
            ["--head", "--port", str(self.gcs_port), "--num-cpus", "2"]
            + ["--temp-dir", str(self.temp_dir), "--include-dashboard", "false"]
            + ["--ray-client-server-port", str(free_port())]
            + ["--system-config", json.dumps(FAST_HEALTH_CHECKS)],
        )
        self.head.raylet_pid()
        self.runner_nodes: list[RayNode] = []

    def add_runner_node(self, cpus: int = 1, resource: str = "runner_node") -> RayNode:
        node = RayNode(
            self.tmp / f"runner{len(self.runner_nodes)}.log",
            self.env,
            ["--address", self.address, "--num-cpus", str(cpus)]
            + ["--resources", json.dumps({resource: 1})],
        )
        self.runner_nodes.append(node)
        node.raylet_pid()
        return node

    def league(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "league.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
            cwd=ROOT,
        )

    def shutdown(self) -> None:
        for node in [*self.runner_nodes, self.head]:
            node.stop()
        shutil.rmtree(self.temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield cluster
    finally:
        cluster.shutdown()
    assert all(n.proc.returncode is not None for n in [cluster.head, *cluster.runner_nodes])


def progress(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "progress.jsonl"
    if not path.is_file():
        return []
    text = path.read_text()
    # Whole lines only: the run may be halfway through writing its last one.
    complete = text[: text.rfind("\n") + 1]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]


def latest_checkpoint(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / "checkpoints" / "latest.json"
    return json.loads(path.read_text()) if path.is_file() else None


@pytest.mark.slow
def test_runner_node_dies_and_returns_mid_run(cluster, tmp_path):
    runner = cluster.add_runner_node()
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY)
    run_dir = tmp_path / "run"
    log = (tmp_path / "train.log").open("w")
    train = subprocess.Popen(
        [sys.executable, "-m", "league.cli", "train", "--config", str(config)]
        + ["--run-dir", str(run_dir), "--stop-minutes", "8"]
        + ["--resources.num-learners", "1", "--resources.num-cpus-per-learner", "0.5"]
        + [
            "--resources.env-runner-resources",
            '{"runner_node": 1}',
            "--resources.env-runner-probe-timeout-s",
            "2",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**cluster.env, "RAY_ADDRESS": cluster.address},
        cwd=ROOT,
        # SIGINT is how this test stops it: not ignored even when pytest runs as a
        # background job (a run leaves an ignored SIGINT ignored, as Python does).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # Only the runner node has `runner_node`: every sampled step came from there.
        wait_for(lambda: len(progress(run_dir)) >= 3, 240, "3 iterations")
        assert all(r["env_steps"] > 0 for r in progress(run_dir))

        os.kill(runner.raylet_pid(), signal.SIGKILL)
        killed_at = len(progress(run_dir))
        steps_at_kill = progress(run_dir)[-1]["env_steps"]
        # Training goes on without the node: iterations keep coming (with no samples
        # once RLlib has marked the runner unhealthy).
        wait_for(lambda: len(progress(run_dir)) >= killed_at + 3, 180, "iterations after kill")
        records = progress(run_dir)
        idle = [
            later["iteration"]
            for earlier, later in zip(records[killed_at - 1 :], records[killed_at:], strict=False)
            if later["env_steps"] == earlier["env_steps"]
        ]
        assert idle, "no iteration ran without the runner node"
        runner.proc.wait(timeout=60)  # `ray start --block` ends with its raylet

        # A node with `runner_node` joins again: Ray restarts the runner there.
        cluster.add_runner_node()
        wait_for(
            lambda: progress(run_dir)[-1]["env_steps"] > steps_at_kill + 600,
            240,
            "sampling to resume",
        )
    finally:
        train.send_signal(signal.SIGINT)  # ends with a final checkpoint
        try:
            train.wait(timeout=120)
        except subprocess.TimeoutExpired:
            # Where it is stuck goes to its log (league train dumps its stacks on
            # SIGUSR1) and so into the failure below.
            train.send_signal(signal.SIGUSR1)
            time.sleep(2)
            train.kill()
            train.wait()
        log.close()
    output = (tmp_path / "train.log").read_text()
    assert train.returncode == 0, output[-6000:]

    latest = latest_checkpoint(run_dir)
    records = progress(run_dir)
    with open_store(None, run_dir) as store:
        matches = store.matches()
        ids = [m["episode_id"] for m in matches]
        assert len(ids) == len(set(ids)) == store.match_count()  # none counted twice
        # The final checkpoint records the store's last commit, and every iteration's
        # matches (progress.jsonl) are in the store.
        assert latest is not None and latest["store_seq"] == store.seq()
        assert latest["iteration"] == len(records) == records[-1]["iteration"]
        assert sum(r["league"]["matches"] for r in records) == len(ids)


@pytest.mark.slow
def test_killed_coordinator_is_restarted_and_resumes_from_its_checkpoint(cluster, tmp_path):
    config = tmp_path / "tiny.yaml"
    # Checkpoints every 4 iterations leave a window of 2-3 iterations to kill in.
    tiny = TINY.replace("num_env_runners: 1", "num_env_runners: 0")
    config.write_text(tiny.replace("checkpoint_interval: 2", "checkpoint_interval: 4"))
    run_dir = tmp_path / "run"
    # `league train --address` without --detach: it follows the coordinator's log,
    # across the restart, until the coordinator stops.
    follow_log = tmp_path / "follow.log"
    with follow_log.open("w") as out:
        follower = subprocess.Popen(
            [sys.executable, "-m", "league.cli", "train", "--address", cluster.address]
            + ["--run-dir", str(run_dir), "--config", str(config), "--stop-minutes", "8"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=cluster.env,
            cwd=ROOT,
        )

    def status() -> dict[str, str]:
        proc = cluster.league("status", "--address", cluster.address)
        assert proc.returncode == 0, proc.stderr
        return dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)

    try:
        before = wait_for(
            lambda: status() if latest_checkpoint(run_dir) else None, 240, "a checkpoint"
        )
        assert before["restarted"] == "False" and before["stop_requested"] == "False"

        # Kill between checkpoints: one exists and a later iteration is in the store.
        # Only files are read between the check and the kill (`league status` takes
        # seconds, long enough for the next checkpoint to land).
        def between_checkpoints() -> bool:
            latest = latest_checkpoint(run_dir)
            return bool(latest) and len(progress(run_dir)) - latest["iteration"] in (1, 2)

        wait_for(between_checkpoints, 240, "a checkpoint and one more iteration", interval=0.1)
        os.kill(int(before["pid"]), signal.SIGKILL)
        latest = latest_checkpoint(run_dir)
        with open_store(None, run_dir) as store:
            checkpoint_seq = latest["store_seq"]
            assert store.seq() > checkpoint_seq
            assert store.state(checkpoint_seq) is not None
            kept = [m for m in store.matches() if m["seq"] <= checkpoint_seq]
            lost_ids = {m["episode_id"] for m in store.matches() if m["seq"] > checkpoint_seq}

        # Ray restarts the actor (another process); it resumes and trains on.
        def resumed() -> dict[str, str] | None:
            proc = cluster.league("status", "--address", cluster.address)
            if proc.returncode != 0:
                return None  # the actor is between processes
            now = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
            done = now.get("restarted") == "True" and int(now["iteration"]) > latest["iteration"]
            return now if done else None

        after = wait_for(resumed, 240, "the restarted coordinator to train")
        assert after["pid"] != before["pid"] and after["state"] == "running"
    finally:
        stopped = cluster.league("stop", "--address", cluster.address)
        try:
            follower.wait(timeout=120)
        except subprocess.TimeoutExpired:
            follower.kill()
            follower.wait()
    assert stopped.returncode == 0, stopped.stderr
    followed = follow_log.read_text()
    assert follower.returncode == 0, followed[-3000:]
    # The follower saw the restart and the resume, with the store rolled back.
    assert "coordinator restarted by Ray: resuming from the last checkpoint" in followed
    assert f"league restored at seq {checkpoint_seq}" in followed
    assert "rolling back" in followed

    with open_store(None, run_dir) as store:
        # Rolled back to the checkpoint, not replayed: history up to it is unchanged,
        # the iterations lost with the old process are gone, new ones follow. (The
        # state at the checkpoint itself may be pruned by now: later checkpoints.)
        assert [m for m in store.matches() if m["seq"] <= checkpoint_seq] == kept
        after_matches = store.matches(since_seq=checkpoint_seq)
        assert after_matches and not ({m["episode_id"] for m in after_matches} & lost_ids)
    final = latest_checkpoint(run_dir)
    assert final["iteration"] > latest["iteration"]


@pytest.mark.slow
def test_tune_trials_span_nodes_and_as_many_run_at_once_as_the_scarcest_resource_holds(
    cluster, tmp_path
):
    # CPUs for more than one trial at once (a trial needs 2: its driver with the
    # learner, its env runner), but one node alone offers `tune_node`, once, and every
    # trial's env runner asks for it: one trial at a time. That node's one CPU goes to
    # the env runner, so the trial's driver runs on another node: each trial spans two.
    cluster.add_runner_node(cpus=1, resource="tune_node")
    cluster.add_runner_node(cpus=2, resource="spare_node")
    out = tmp_path / "tune"
    tune = subprocess.run(
        [sys.executable, "-m", "league.cli", "tune", "--env", "kuhn_poker", "--out", str(out)]
        + ["--trials", "2", "--rounds", "2", "--minutes", "0.8"]
        + ["--resources.num-env-runners", "1"]
        + ["--resources.env-runner-resources", '{"tune_node": 1}']
        + ["--ppo.train-batch-size", "128", "--ppo.minibatch-size", "64"]
        + ["--ppo.num-epochs", "1", "--model.hidden-sizes", "16"]
        + ["--evaluation.eval-interval", "0", "--no-run.dashboard"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**cluster.env, "RAY_ADDRESS": cluster.address},
        cwd=ROOT,
    )
    assert tune.returncode == 0, tune.stdout[-3000:] + tune.stderr[-3000:]
    assert "population-based training of 2 trials, 1 side by side" in tune.stdout
    rows = [json.loads(line) for line in (out / "tune.jsonl").read_text().splitlines()]
    assert sorted((r["trial"], r["round"]) for r in rows) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    for trial in (0, 1):
        # Only the env runner samples, and it can only run on the `tune_node` node.
        records = progress(out / "runs" / f"trial_{trial:03d}")
        assert records and records[-1]["env_steps"] > 0
    assert all(r["env_steps"] > 0 and r["measure"] == "exploitability" for r in rows)
    assert "train with it: league train --config" in tune.stdout
    assert (out / "best.yaml").is_file()
