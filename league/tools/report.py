"""PNG report of a league run: ratings over time, league size, payoff heatmap.

A league's health is hard to read off per-iteration log lines: whether ratings
spread (the league learns) or collapse (cycling, forgetting), whether the
snapshot budget is reached, and who beats whom. ``write_report`` turns a run
directory into three pictures for that:

- ``ratings.png``: Elo of every trainable player (bold) and of the top
  snapshots over env steps, from ``progress.jsonl``'s ``league.ratings``;
- ``league_size.png``: snapshots in the league, the active set, snapshots
  taken and retired (cumulative), from ``progress.jsonl``;
- ``payoff.png``: win rate of row vs column for the top-N modules by rating,
  from the latest league state (the league store, else the newest checkpoint's
  ``league_state.json``).

Figures are drawn on ``matplotlib.figure.Figure`` directly (Agg via
``savefig``), never through ``pyplot``: a library must not switch the global
backend of the process that imports it (a notebook, the CLI, a test run).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.colors import Colormap
from matplotlib.figure import Figure

from league.core.ids import is_snapshot_id

PROGRESS_FILE = "progress.jsonl"
LEAGUE_STATE_FILE = "league_state.json"
STORE_FILE = "league.sqlite"
"""The embedded store's file in the run dir (``league.store.SQLITE_FILENAME``)."""
DEFAULT_TOP_N = 30
DPI = 120
ANNOTATE_MAX = 16
"""Write the win rate into each heatmap cell up to this many modules."""


class ReportError(ValueError):
    """A run directory the report cannot be made from (missing, no progress)."""


# ---- reading the run ---------------------------------------------------------------


def read_progress(run_dir: Path) -> list[dict[str, Any]]:
    """The iteration records of ``progress.jsonl``, oldest first.

    A run that is still training may be halfway through writing its last line,
    so a malformed *last* line is skipped; a malformed line elsewhere means the
    file is damaged and is an error. After a resume the trainer appends again
    from the checkpoint's iteration, so iterations can repeat: the later record
    wins and the abandoned ones are dropped (``_drop_superseded``).
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportError(f"run dir {str(run_dir)!r} does not exist")
    path = run_dir / PROGRESS_FILE
    if not path.is_file():
        raise ReportError(
            f"run dir {str(run_dir)!r} has no {PROGRESS_FILE}: has `league train` run there?"
        )
    lines = [(n, line) for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip()]
    records: list[dict[str, Any]] = []
    for i, (number, line) in enumerate(lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            if i == len(lines) - 1:
                continue  # being written right now
            raise ReportError(f"{path}:{number}: not a JSON line ({err.msg})") from None
        if not isinstance(record, dict) or not isinstance(record.get("iteration"), int):
            raise ReportError(f"{path}:{number}: expected an object with an int 'iteration'")
        records.append(record)
    if not records:
        raise ReportError(f"{path} has no iteration records yet")
    return _drop_superseded(records)


def _drop_superseded(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep one record per iteration: a record whose iteration does not move
    forward restarts the timeline there (a resume), dropping what it replays."""
    kept: list[dict[str, Any]] = []
    for record in records:
        while kept and kept[-1]["iteration"] >= record["iteration"]:
            kept.pop()
        kept.append(record)
    return kept


def _x_axis(records: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, str]:
    """Env steps when every record has them (the comparable clock across runs),
    else iterations."""
    if all(isinstance(r.get("env_steps"), (int, float)) for r in records):
        return np.array([float(r["env_steps"]) for r in records]), "env steps"
    return np.array([float(r["iteration"]) for r in records]), "iteration"


def _unwrap_league_state(data: Any) -> dict[str, Any] | None:
    """``League.get_state()`` from either that dict itself (the store) or the
    driver's checkpoint dict, which nests it under ``"league"``."""
    if isinstance(data, Mapping) and isinstance(data.get("league"), Mapping):
        data = data["league"]
    if isinstance(data, Mapping) and "payoff" in data:
        return dict(data)
    return None


def _checkpoint_number(path: Path) -> int:
    try:
        return int(path.name.split("_", 1)[1])
    except (IndexError, ValueError):
        return -1


def load_league_state(
    run_dir: Path, store_url: str | None = None, log: Callable[[str], None] = print
) -> tuple[dict[str, Any], str] | None:
    """The latest league state and where it came from, or None if there is none.

    The store is committed every iteration, so it is preferred over the
    checkpoints (written every few iterations). A SQLite store is only opened
    when its file exists: opening creates the file, and a report must not
    leave an empty store behind in a run dir.
    """
    run_dir = Path(run_dir)
    sqlite_path = run_dir / STORE_FILE
    if store_url is not None or sqlite_path.is_file():
        try:
            from league.store import open_store
        except ImportError:  # a checkout without the store: checkpoints only
            open_store = None
        if open_store is not None:
            where = store_url or str(sqlite_path)
            try:
                with open_store(store_url, run_dir) as store:
                    seq = store.seq()
                    state = _unwrap_league_state(store.state())
            except (ValueError, OSError) as err:  # StoreError is a ValueError
                log(f"report: cannot read the league store {where}: {err}")
                state = None
            if state is not None:
                return state, f"league store {where} (seq {seq})"
    checkpoints = sorted(
        (p for p in (run_dir / "checkpoints").glob("iter_*") if (p / LEAGUE_STATE_FILE).is_file()),
        key=_checkpoint_number,
    )
    for path in reversed(checkpoints):
        file = path / LEAGUE_STATE_FILE
        try:
            state = _unwrap_league_state(json.loads(file.read_text()))
        except (OSError, json.JSONDecodeError) as err:
            log(f"report: skipping unreadable {file}: {err}")
            continue
        if state is not None:
            return state, str(file)
    return None


# ---- payoff ------------------------------------------------------------------------


def payoff_matrix(
    state: Mapping[str, Any], top_n: int = DEFAULT_TOP_N
) -> tuple[list[str], np.ndarray, np.ndarray, int]:
    """(modules, win rate, games, modules in total) for the top-N modules by rating.

    ``win_rate[i, j]`` is ``(wins + draws / 2) / games`` of module i against
    module j from the (decayed) payoff counts, NaN where they never met: a
    blank cell says "no evidence", which 0.5 would hide. Modules are ordered
    by rating, best first, so the strong corner is the top left.
    """
    ratings = {str(m): float(r) for m, r in state.get("ratings", {}).get("ratings", {}).items()}
    entries = state.get("payoff", {}).get("entries", [])
    known = set(ratings)
    for a, b, *_ in entries:
        known.update((str(a), str(b)))
    order = sorted(known, key=lambda m: (-ratings.get(m, -math.inf), m))
    modules = order[: max(int(top_n), 1)]
    index = {m: i for i, m in enumerate(modules)}
    n = len(modules)
    wins = np.zeros((n, n))
    games = np.zeros((n, n))
    for a, b, w, d, lo in entries:
        i, j = index.get(str(a)), index.get(str(b))
        if i is None or j is None:
            continue
        total = float(w) + float(d) + float(lo)
        games[i, j] = games[j, i] = total
        wins[i, j] = float(w) + 0.5 * float(d)
        wins[j, i] = float(lo) + 0.5 * float(d)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(games > 0, wins / np.where(games > 0, games, 1.0), np.nan)
    return modules, rate, games, len(order)


# ---- figures -----------------------------------------------------------------------


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, format="png")
    return path


def plot_ratings(records: Sequence[Mapping[str, Any]], path: Path, top_n: int) -> Path | None:
    """Rating curves: every trainable player, plus the ``top_n`` snapshots with
    the best last-known rating (a league of hundreds is unreadable otherwise).
    A snapshot's curve starts when it is taken and ends when it is retired."""
    league = [r for r in records if isinstance(r.get("league"), Mapping)]
    if not league:
        return None
    x, xlabel = _x_axis(league)
    series: dict[str, np.ndarray] = {}
    for t, record in enumerate(league):
        for module, rating in (record["league"].get("ratings") or {}).items():
            series.setdefault(module, np.full(len(league), np.nan))[t] = float(rating)
    if not series:
        return None
    players = sorted(m for m in series if not is_snapshot_id(m))
    last = {m: float(v[~np.isnan(v)][-1]) for m, v in series.items()}
    snapshots = sorted((m for m in series if is_snapshot_id(m)), key=lambda m: (-last[m], m))
    shown = snapshots[:top_n]
    fig = Figure(figsize=(10, 6))
    ax = fig.add_subplot()
    for module in players:
        ax.plot(x, series[module], linewidth=2.5, label=module, zorder=3)
    in_legend = len(shown) <= 12
    for module in shown:
        ax.plot(
            x,
            series[module],
            linewidth=0.9,
            alpha=0.7,
            linestyle="--",
            label=module if in_legend else None,
            zorder=2,
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Elo rating")
    title = f"Elo ratings: {len(players)} players (bold), {len(shown)} snapshots (dashed)"
    if len(snapshots) > len(shown):
        title += f", the top {len(shown)} of {len(snapshots)} by last rating"
    ax.set_title(title + "\nsnapshot curves end when they are retired", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize="small", ncol=2 if in_legend and shown else 1)
    return _save(fig, path)


def plot_league_size(records: Sequence[Mapping[str, Any]], path: Path) -> Path | None:
    """Snapshots in the league and in the active set, and cumulative snapshots
    taken / retired: a flat "taken" line means the snapshot gate never opens,
    a size pinned at the budget means retirement is doing the work."""
    league = [r for r in records if isinstance(r.get("league"), Mapping)]
    if not league:
        return None
    x, xlabel = _x_axis(league)
    size = [float(r["league"].get("size", np.nan)) for r in league]
    active = [float(len(r["league"].get("active_set") or ())) for r in league]
    taken = np.cumsum([len(r["league"].get("new_snapshots") or ()) for r in league])
    retired = np.cumsum([len(r["league"].get("retired") or ()) for r in league])
    fig = Figure(figsize=(10, 5))
    ax = fig.add_subplot()
    ax.plot(x, size, linewidth=2.5, label="snapshots in league")
    ax.plot(x, active, linewidth=1.5, label="active set")
    ax.plot(x, taken, linewidth=1.2, linestyle="--", label="snapshots taken (total)")
    ax.plot(x, retired, linewidth=1.2, linestyle=":", label="retired (total)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("modules")
    ax.set_ylim(bottom=0)
    ax.set_title("League size")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    return _save(fig, path)


def _heatmap_cmap() -> Colormap:
    from matplotlib import colormaps

    # Never met: grey, distinct from any win rate.
    return colormaps["RdBu"].with_extremes(bad="#d9d9d9")


def plot_payoff(state: Mapping[str, Any], path: Path, top_n: int, source: str = "") -> Path | None:
    """Heatmap of row-vs-column win rate (blue: row wins) for the top-N modules."""
    modules, rate, games, total = payoff_matrix(state, top_n)
    if not modules or not np.any(games > 0):
        return None
    ratings = state.get("ratings", {}).get("ratings", {})
    labels = [f"{m} ({ratings[m]:.0f})" if m in ratings else m for m in modules]
    n = len(modules)
    side = min(max(6.0, 0.38 * n + 3.0), 24.0)
    fig = Figure(figsize=(side + 1.5, side))
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(rate), cmap=_heatmap_cmap(), vmin=0.0, vmax=1.0)
    ax.set_xticks(range(n), labels, rotation=90, fontsize="small")
    ax.set_yticks(range(n), labels, fontsize="small")
    ax.set_xlabel("column: opponent")
    ax.set_ylabel("row: module (best rated first)")
    if n <= ANNOTATE_MAX:
        for i in range(n):
            for j in range(n):
                if not np.isnan(rate[i, j]):
                    dark = abs(rate[i, j] - 0.5) > 0.3
                    ax.text(
                        j,
                        i,
                        f"{rate[i, j]:.2f}",
                        ha="center",
                        va="center",
                        fontsize="x-small",
                        color="white" if dark else "black",
                    )
    shown = f"top {n} of {total} by rating" if total > n else f"{n} modules"
    ax.set_title(
        f"Payoff: win rate of row vs column\n({shown}; grey: never met)", fontsize="medium"
    )
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="win rate (draw = 1/2)")
    if source:
        fig.text(0.01, 0.005, f"from {source}", fontsize="x-small", color="grey")
    return _save(fig, path)


# ---- entry point -------------------------------------------------------------------


def write_report(
    run_dir: Path | str,
    out_dir: Path | str | None = None,
    *,
    top_n: int = DEFAULT_TOP_N,
    store_url: str | None = None,
    log: Callable[[str], None] = print,
) -> list[Path]:
    """Write the report PNGs of ``run_dir`` to ``out_dir`` (default
    ``run_dir/report``); returns the files written.

    A picture without data (a self-play run has no league; a run without a
    store or a checkpoint has no payoff yet) is skipped with a message through
    ``log`` instead of failing the others. ``store_url`` reads the league state
    from that store (e.g. the run's ``redis://`` URL) instead of the run dir's
    SQLite store. Raises ``ReportError`` for a missing run dir or progress.
    """
    if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
        raise ReportError(f"top_n must be an int >= 1, got {top_n!r}")
    run_dir = Path(run_dir)
    records = read_progress(run_dir)
    out = Path(out_dir) if out_dir is not None else run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    has_league = any(isinstance(r.get("league"), Mapping) for r in records)
    if not has_league:
        log(
            f"report: {run_dir / PROGRESS_FILE} has no league records (a --mode selfplay "
            "run?): ratings.png and league_size.png skipped"
        )
    else:
        for made, name in (
            (plot_ratings(records, out / "ratings.png", top_n), "ratings.png"),
            (plot_league_size(records, out / "league_size.png"), "league_size.png"),
        ):
            if made is None:
                log(f"report: no data for {name}: skipped")
            else:
                written.append(made)

    loaded = load_league_state(run_dir, store_url, log)
    if loaded is None:
        log(
            f"report: no league state in {run_dir} (no {STORE_FILE} store and no "
            f"checkpoints/iter_*/{LEAGUE_STATE_FILE}): payoff.png skipped"
        )
    else:
        state, source = loaded
        made = plot_payoff(state, out / "payoff.png", top_n, source)
        if made is None:
            log(f"report: the league state from {source} has no games yet: payoff.png skipped")
        else:
            log(f"report: payoff heatmap from {source}")
            written.append(made)
    return written
