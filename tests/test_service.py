"""The league as a service on a real local Ray cluster (`ray start --head` on loopback).

One head per module: the coordinator lifecycle is driven from other processes with
the `league` CLI (start, status, standings, pause/resume, stop with a checkpoint),
league metrics are read back from the node's Prometheus endpoint, and a Ray job is
submitted, watched and stopped. The head is shut down by its own process id.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from service_helpers import free_port, listening_ports, wait_for

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent
TINY_CONFIG = """\
resources:
  num_env_runners: 1
  num_envs_per_env_runner: 2
ppo:
  train_batch_size: 400
  minibatch_size: 200
  num_epochs: 1
model:
  hidden_sizes: [16]
evaluation:
  eval_interval: 0
run:
  checkpoint_interval: 1000
league:
  snapshot_step_budget: 200
"""


class Head:
    def __init__(self, tmp: Path):
        self.gcs_port, self.dashboard_port, self.metrics_port = (
            free_port(),
            free_port(),
            free_port(),
        )
        self.runtime_env_agent_port = free_port()
        self.address = f"127.0.0.1:{self.gcs_port}"
        self.dashboard = f"http://127.0.0.1:{self.dashboard_port}"
        # Ray's temp dir path must stay short (unix socket paths are limited).
        self.temp_dir = Path(f"/tmp/lgtest-{os.getpid()}-{self.gcs_port}")
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "PYTHONUNBUFFERED": "1"}
        self.env.pop("RAY_ADDRESS", None)
        self.log = (tmp / "head.log").open("w")
        self.proc = subprocess.Popen(
            [str(VENV_BIN / "ray"), "start", "--head", "--block"]
            + ["--port", str(self.gcs_port), "--num-cpus", "2"]
            + ["--node-ip-address", "127.0.0.1", "--dashboard-host", "127.0.0.1"]
            + ["--dashboard-port", str(self.dashboard_port)]
            + ["--metrics-export-port", str(self.metrics_port)]
            + ["--temp-dir", str(self.temp_dir), "--disable-usage-stats"]
            # Every other port free too: another Ray on this machine (a test session's
            # own, a training run) holds the defaults.
            + ["--dashboard-agent-listen-port", str(free_port())]
            + ["--dashboard-agent-grpc-port", str(free_port())]
            + ["--runtime-env-agent-port", str(self.runtime_env_agent_port)]
            + ["--ray-client-server-port", str(free_port())]
            + ["--node-manager-port", str(free_port())]
            + ["--object-manager-port", str(free_port())]
            + ["--include-dashboard", "true"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=self.env,
        )
        self.wait_ready()

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until the GCS, the dashboard and the runtime-env agent (started last) listen."""
        # The agent binds the node's address, not loopback: look for listeners instead.
        ports = {self.gcs_port, self.dashboard_port, self.runtime_env_agent_port}

        def ready() -> bool:
            assert self.proc.poll() is None, f"ray start --head exited early:\n{self.log_tail()}"
            return ports <= listening_ports()

        try:
            wait_for(ready, timeout, "the Ray head")
        except TimeoutError as error:
            raise TimeoutError(f"the Ray head did not come up:\n{self.log_tail()}") from error

    def log_tail(self, lines: int = 40) -> str:
        self.log.flush()
        return "\n".join(Path(self.log.name).read_text(errors="replace").splitlines()[-lines:])

    def league(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        assert self.proc.poll() is None, f"the Ray head has exited:\n{self.log_tail()}"
        return subprocess.run(
            [sys.executable, "-m", "league.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
            cwd=ROOT,
        )

    def shutdown(self) -> None:
        """Stop this head (and only it) by its own process id."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def head(tmp_path_factory):
    head = Head(tmp_path_factory.mktemp("head"))
    yield head
    head.shutdown()
    assert head.proc.returncode is not None


def status(head: Head) -> dict[str, str]:
    proc = head.league("status", "--address", head.address)
    assert proc.returncode == 0, proc.stderr
    return dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)


def test_coordinator_lifecycle_and_metrics(head, tmp_path):
    """The coordinator trains with APPO here (the job below with PPO, the default): the
    service does not care which algorithm trains."""
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY_CONFIG)
    run_dir = tmp_path / "run"
    started = head.league(
        "train", "--address", head.address, "--detach", "--run-dir", str(run_dir),
        "--config", str(config), "--stop-minutes", "10", "--ppo.algo", "appo",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert "league-coordinator started" in started.stdout

    # Queried from other processes while it trains.
    first = wait_for(lambda: (s := status(head)) and int(s["iteration"]) >= 3 and s)
    assert first["state"] == "running" and first["mode"] == "league"
    assert first["algo"] == "appo" and int(first["league_size"]) >= 1
    standings = head.league("standings", "--address", head.address)
    assert standings.returncode == 0 and "main_0" in standings.stdout
    assert "Nash" in standings.stdout.splitlines()[0]
    snapshots = head.league("snapshots", "--address", head.address)
    assert snapshots.returncode == 0, snapshots.stderr
    # Which snapshots are listed depends on timing (retirement keeps the best 64);
    # every line names a snapshot of one of the league's players, the main among them.
    listed = [line.split()[0] for line in snapshots.stdout.splitlines() if "@" in line]
    assert any(sid.startswith("main_0@") for sid in listed), snapshots.stdout
    assert all(sid.split("@")[0] in ("main_0", "main_exploiter_0") for sid in listed), listed

    # League metrics reach the node's Prometheus endpoint.
    def league_metrics() -> str | None:
        url = f"http://127.0.0.1:{head.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        wanted = ("ray_league_env_steps_per_second", "ray_league_size", "ray_league_rating")
        return text if all(name in text for name in wanted) else None

    metrics = wait_for(league_metrics, timeout=60, interval=2)
    assert 'module="main_0"' in metrics

    # Pause: iterations stop advancing; resume: they advance again.
    assert head.league("pause", "--address", head.address).returncode == 0
    paused = wait_for(lambda: (s := status(head))["state"] == "paused" and s)
    time.sleep(4)
    still = status(head)
    assert int(still["iteration"]) <= int(paused["iteration"]) + 1
    assert head.league("resume", "--address", head.address).returncode == 0
    wait_for(lambda: int(status(head)["iteration"]) > int(still["iteration"]))

    # Stop: a final checkpoint, then the actor is gone.
    stopped = head.league("stop", "--address", head.address)
    assert stopped.returncode == 0, stopped.stderr
    latest = json.loads((run_dir / "checkpoints" / "latest.json").read_text())
    assert latest["iteration"] >= 3 and latest["checkpoint"] in stopped.stdout
    gone = head.league("status", "--address", head.address)
    assert gone.returncode == 2 and "no 'league-coordinator'" in gone.stderr


def test_job_submission_runs_and_stops(head, tmp_path):
    run_dir = tmp_path / "jobrun"
    submit = subprocess.run(
        ["bash", "scripts/submit_job.sh", "--no-wait", "--", "--run-dir", str(run_dir)]
        + [
            "--stop-minutes",
            "10",
            "--resources.num-env-runners",
            "0",
            "--resources.num-envs-per-env-runner",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env={**head.env, "RAY_ADDRESS": head.dashboard},
    )
    assert submit.returncode == 0, submit.stdout + submit.stderr
    job_id = next(
        word.strip("'")
        for word in submit.stdout.split()
        if word.strip("'").startswith("raysubmit_")
    )
    jobs = {**head.env, "RAY_ADDRESS": head.dashboard}

    def job_status() -> str:
        proc = subprocess.run(
            [str(VENV_BIN / "ray"), "job", "status", job_id],
            capture_output=True, text=True, timeout=60, env=jobs,
        )  # fmt: skip
        return proc.stdout + proc.stderr  # the CLI logs its status lines to stderr

    def job_logs() -> str:
        return subprocess.run(
            [str(VENV_BIN / "ray"), "job", "logs", job_id],
            capture_output=True, text=True, timeout=60, env=jobs,
        ).stdout[-3000:]  # fmt: skip

    try:
        wait_for(lambda: "running" in job_status().lower(), timeout=180)
        wait_for(lambda: (run_dir / "progress.jsonl").is_file(), timeout=180)
    except TimeoutError:
        pytest.fail(f"job did not run: {job_status()}\n{job_logs()}")
    stop = subprocess.run(
        [str(VENV_BIN / "ray"), "job", "stop", job_id],
        capture_output=True, text=True, timeout=120, env=jobs,
    )  # fmt: skip
    assert stop.returncode == 0, stop.stderr
    try:
        wait_for(lambda: "was stopped" in job_status().lower(), timeout=90)
    except TimeoutError:
        pytest.fail(f"job did not stop: {job_status()}\n{job_logs()}")


def test_an_address_where_no_cluster_listens_is_one_line_at_once():
    """Without the check, ray.init retries such an address for minutes."""
    address = f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    refused = (
        "(Connection refused); start one with `ray start --head` or pass the address it printed"
    )
    for args, extra_env, expected in (
        (["status", "--address", address], {}, f"no Ray cluster listens at {address} {refused}"),
        (["stop", "--address", address], {}, f"no Ray cluster listens at {address} {refused}"),
        (  # auto joins RAY_ADDRESS's cluster
            ["status"],
            {"RAY_ADDRESS": address},
            f"no Ray cluster listens at RAY_ADDRESS={address} {refused}",
        ),
        (
            ["status", "--address", "127.0.0.1:x"],
            {},
            "cluster address 127.0.0.1:x: the port is not a number",
        ),
    ):
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "league.cli", *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=env | extra_env,
            cwd=ROOT,
        )
        assert done.returncode == 74, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"league: error: ConnectionError: {expected}"
        ], done.stderr
        assert time.monotonic() - started < 20
