"""League store commit latency at league size 1000, for both backends.

The coordinator commits the whole league state once per iteration, so what
matters is that one commit stays small next to an iteration (seconds). This
builds a realistic state at 1000 snapshots -- 3 players, 1000 snapshots, payoff
entries for each player vs each snapshot, ratings for every module -- and
commits it with ~200 matches per iteration, changing ratings and payoff each
time as a real iteration does. It reports median and p95 ms per commit for:

- SQLite (WAL, synchronous=FULL) in a temp dir;
- Redis with ``appendfsync always`` (recommended) and ``everysec`` (Redis's
  default), each a redis-server started here via ``tests/redis_server.py``.

    .venv/bin/python scripts/bench_store.py [--commits 60] [--warmup 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the shared redis-server helper

from redis_server import RedisServer  # noqa: E402

from league.store import LeagueStore, open_store  # noqa: E402

PLAYERS = [("main_0", "main"), ("main_exploiter_0", "main_exploiter"), ("league_exploiter_0", "league_exploiter")]  # fmt: skip


def build_state(n_snapshots: int, rng: random.Random) -> dict[str, Any]:
    """A ``League.get_state()``-shaped dict at ``n_snapshots`` snapshots."""
    per_player = n_snapshots // len(PLAYERS)
    snapshots = []
    for i in range(n_snapshots):
        pid, role = PLAYERS[min(i // per_player, len(PLAYERS) - 1)]
        version = i - per_player * PLAYERS.index((pid, role))
        snapshots.append(
            {
                "id": f"{pid}@{version}",
                "player": pid,
                "version": version,
                "role": role,
                "parent": f"{pid}@{version - 1}" if version else None,
                "step": 50_000 * version,
                "iteration": 10 * version,
                "rating": 1000.0 + rng.gauss(0, 100),
            }
        )
    players = [
        {
            "id": pid,
            "role": role,
            "steps": 5_000_000,
            "last_snapshot_step": 4_950_000,
            "next_version": per_player,
            "parent": f"{pid}@{per_player - 1}",
            "latest_snapshot": f"{pid}@{per_player - 1}",
            "resets": 3,
        }
        for pid, role in PLAYERS
    ]
    module_ids = [p["id"] for p in players] + [s["id"] for s in snapshots]
    pairs = {tuple(sorted((p["id"], s["id"]))) for p in players for s in snapshots}
    pairs |= {tuple(sorted((a["id"], b["id"]))) for a in players for b in players if a != b}
    return {
        "format": 1,
        "players": players,
        "snapshots": snapshots,
        "payoff": {
            "entries": [
                [a, b, rng.uniform(0, 50), rng.uniform(0, 5), rng.uniform(0, 50)]
                for a, b in sorted(pairs)
            ]
        },
        "ratings": {"ratings": {m: 1000.0 + rng.gauss(0, 100) for m in sorted(module_ids)}},
    }


def next_iteration(
    state: dict[str, Any], it: int, n_matches: int, rng: random.Random
) -> list[dict[str, Any]]:
    """Mutate ``state`` as one iteration does; return its matches."""
    snapshot_ids = [s["id"] for s in state["snapshots"]]
    matches = []
    for k in range(n_matches):
        pid = PLAYERS[k % len(PLAYERS)][0]
        opp = rng.choice(snapshot_ids)
        win = rng.random() < 0.5
        matches.append(
            {
                "episode_id": f"it{it}-ep{k}",
                "modules": {"player_0": pid, "player_1": opp},
                "outcomes": {
                    "player_0": "win" if win else "loss",
                    "player_1": "loss" if win else "win",
                },
                "length": rng.randint(7, 42),
                "iteration": it,
            }
        )
    ratings = state["ratings"]["ratings"]
    for m in matches:
        for module in m["modules"].values():
            ratings[module] += rng.gauss(0, 2)
    for entry in state["payoff"]["entries"]:
        entry[2] *= 0.99
        entry[4] *= 0.99
    for p in state["players"]:
        p["steps"] += 20_000
    return matches


def bench(store: LeagueStore, n_commits: int, warmup: int, seed: int = 0) -> list[float]:
    """Milliseconds per commit (warm-up commits dropped)."""
    rng = random.Random(seed)
    state = build_state(1000, rng)
    times = []
    for it in range(warmup + n_commits):
        matches = next_iteration(state, it, 200, rng)
        start = time.perf_counter()
        store.commit(state, matches, expected_seq=it)
        times.append((time.perf_counter() - start) * 1000)
    return times[warmup:]


def report(name: str, times: list[float]) -> None:
    p95 = statistics.quantiles(times, n=20)[-1]
    print(f"{name:<24} median {statistics.median(times):7.2f} ms   p95 {p95:7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()

    state = build_state(1000, random.Random(0))
    size_kb = len(__import__("json").dumps(state)) / 1024
    print(
        f"league size 1000: {len(state['snapshots'])} snapshots, "
        f"{len(state['payoff']['entries'])} payoff entries, {len(state['ratings']['ratings'])} "
        f"ratings, state {size_kb:.0f} KiB; 200 matches per commit; {args.commits} commits"
    )
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        with open_store(None, Path(tmp)) as store:
            report("sqlite", bench(store, args.commits, args.warmup))
        for fsync in ("always", "everysec"):
            with RedisServer(Path(tmp) / f"redis-{fsync}", appendfsync=fsync) as server:
                with open_store(server.url(), Path(tmp)) as store:
                    report(f"redis (fsync {fsync})", bench(store, args.commits, args.warmup))


if __name__ == "__main__":
    main()
