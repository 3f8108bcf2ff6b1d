"""scripts/soak.py's measuring parts on a real process tree and a made-up run dir (the
hour-long soak itself runs as a benchmark, not in the suite)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import psutil

from league.run import RunDir

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("soak", ROOT / "scripts" / "soak.py")
soak = importlib.util.module_from_spec(spec)
spec.loader.exec_module(soak)


def test_a_process_tree_is_sampled_per_kind() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        procs = soak.sample_processes(psutil.Process())
    finally:
        child.kill()
        child.wait()
    assert procs["trainer"]["count"] == 1 and procs["trainer"]["rss_mb"] > 1
    assert sum(p["count"] for p in procs.values()) >= 2  # the child too
    assert all(p["fds"] >= 0 and p["threads"] >= 1 for p in procs.values())


def test_run_dir_parts_and_progress_are_read(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    (tmp_path / "league.sqlite").write_bytes(b"x" * 1000)
    (tmp_path / "snapshots" / "main_0@1").mkdir(parents=True)
    (tmp_path / "snapshots" / "main_0@1" / "w").write_bytes(b"x" * 500)
    sizes = soak.run_dir_sizes(run)
    assert sizes["store"] == 1000 and sizes["snapshots"] == 500 and sizes["logs"] == 0
    lines = [
        {"iteration": i, "env_steps": 100 * i, "seconds": s, "league": {"store_seconds": c}}
        for i, (s, c) in enumerate([(1.0, 0.01), (3.0, 0.03), (2.0, 0.02)], start=1)
    ]
    text = "".join(json.dumps(r) + "\n" for r in lines) + '{"iteration": 4, "sec'
    run.progress_file.write_text(text)
    figures, offset = soak.progress_since(run, 0)
    assert figures == {"iterations": 3, "iteration_s": 2.0, "env_steps": 300, "commit_ms": 20.0}
    assert offset == len(text) - len('{"iteration": 4, "sec')  # the partial line waits


def test_the_verdict_compares_minutes_10_20_with_the_last_10() -> None:
    rows = [
        {"minute": m, "rss_mb_total": 1000 + (50 if m >= 50 else 0), "fds_total": 200}
        | {f"{part}_mb": 1.0 for part in soak.PARTS}
        for m in range(0, 61)
    ]
    result = soak.verdict(rows)
    assert result["fds_total"]["flat"] and abs(result["fds_total"]["change"]) < 1e-9
    assert not result["rss_mb_total"]["flat"]  # grew 5% after minute 50: past the bound
    assert result["run_dir_mb"]["store"] == 1.0
    assert result["growth_mb_per_day"]["store"] == 0.0  # flat: bounded
