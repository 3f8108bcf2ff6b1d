"""PNG report of a league run: ratings over time, league size, payoff heatmap.

A league's health is hard to read off per-iteration log lines: whether ratings
spread (the league learns) or collapse (cycling, forgetting), whether the
snapshot budget is reached, and who beats whom. ``write_report`` turns a run
directory into three pictures for that:

- ``ratings.png``: Elo of every trainable player (bold) and of the top
  snapshots over env steps, from the iteration records' ``league.ratings``;
- ``league_size.png``: snapshots in the league, the active set, snapshots
  taken and retired (cumulative), from the iteration records;
- ``payoff.png``: win rate of row vs column for the top-N modules by rating,
  from the latest league state in the league store.

The run is read through ``league.run``: ``read_progress(RunDir(...))`` gives the
iteration records (``IterationRecord``) of ``progress.jsonl``, and every path
comes from ``RunDir``.

Figures are drawn on ``matplotlib.figure.Figure`` directly (Agg via
``savefig``), never through ``pyplot``: a library must not switch the global
backend of the process that imports it (a notebook, the CLI, a test run).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from matplotlib.colors import Colormap
from matplotlib.figure import Figure

from league.core.ids import is_player_id, is_snapshot_id, side_of
from league.core.ratings import ratings_in_state
from league.run import IterationRecord, LeagueRecord, RunDir, RunDirError, read_progress
from league.store import open_store, redacted_url

DEFAULT_TOP_N = 30
DPI = 120
ANNOTATE_MAX = 16
"""Write the win rate into each heatmap cell up to this many modules."""


class ReportError(ValueError):
    """A run directory the report cannot be made from (missing, no progress,
    damaged progress file)."""


# ---- reading the run ---------------------------------------------------------------


def read_records(run: RunDir) -> list[IterationRecord]:
    """The run's iteration records, oldest first (``league.run.read_progress``:
    a half-written last line is skipped, a resume's replayed iterations are
    dropped); ``ReportError`` for a run dir that has none."""
    try:
        return read_progress(run)
    except RunDirError as err:
        raise ReportError(str(err)) from None


def _league_records(
    records: Sequence[IterationRecord],
) -> list[tuple[IterationRecord, LeagueRecord]]:
    return [(r, r.league) for r in records if r.league is not None]


def _store_url(run: RunDir, store_url: str | None) -> str | None:
    """The store to read: ``store_url`` if given, else the one the run trained
    with (``config.json``'s ``store``; None: the run dir's SQLite file)."""
    if store_url is not None:
        return store_url
    try:
        url = run.stored_store_url()
    except (RunDirError, OSError, ValueError):  # no or unreadable config.json
        return None
    return url if isinstance(url, str) and url else None


def _sqlite_file(run: RunDir, url: str | None) -> Path | None:
    """The file a SQLite store URL names (as ``open_store`` reads it), None for
    another backend."""
    if url is None or url == "sqlite":
        return run.store_file
    if url.lower().startswith("sqlite:"):
        path = urlsplit(url).path
        return Path(path) if path else run.store_file
    return None


def load_league_state(
    run_dir: Path | str, store_url: str | None = None, log: Callable[[str], None] = print
) -> tuple[dict[str, Any], str] | None:
    """The latest league state in the run's league store and where it came
    from, or None if there is none (no store, an empty one, or one that cannot
    be read: said through ``log``).

    The store is the only source: it is committed every iteration. A SQLite
    store is only opened when its file exists: opening creates the file, and a
    report must not leave an empty store behind in a run dir.
    """
    run = RunDir(run_dir)
    url = _store_url(run, store_url)
    sqlite_file = _sqlite_file(run, url)
    if sqlite_file is not None and not sqlite_file.is_file():
        return None
    where = str(sqlite_file) if sqlite_file is not None else redacted_url(str(url))
    try:
        with open_store(url, run.path, read_only=True) as store:
            seq = store.seq()
            state = store.state()
    except (ValueError, OSError) as err:  # StoreError is a ValueError
        log(f"report: cannot read the league store {where}: {err}")
        return None
    if state is None:
        return None
    return state, f"league store {where} (seq {seq})"


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
    ratings = {m: r for m, (r, _) in ratings_in_state(state.get("ratings", {})).items()}
    entries = state.get("payoff", {}).get("entries", [])
    known = set(ratings)
    for a, b, *_ in entries:
        known.update((str(a), str(b)))
    order = sorted(known, key=lambda m: (-ratings.get(m, -math.inf), m))
    modules = _top_of_every_side(order, max(int(top_n), 1))
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


def _top_of_every_side(order: list[str], top_n: int) -> list[str]:
    """The first `top_n` of `order`; in a game of several sides, the best of each side
    in equal parts (side by side): modules of one side never meet, and one side can
    outrate the other in every pair (simple_tag's predators), leaving no games to show."""
    sides: dict[str, list[str]] = {}
    for module in order:
        sides.setdefault(side_of(module), []).append(module)
    named = [side for side in sides if side]
    if len(named) < 2:
        return order[:top_n]
    groups = [sides[side] for side in sorted(named)] + ([sides[""]] if "" in sides else [])
    share = max(1, top_n // len(groups))  # reference opponents (no side) a part too
    return [m for group in groups for m in group[:share]]


# ---- figures -----------------------------------------------------------------------


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, format="png")
    return path


def plot_ratings(records: Sequence[IterationRecord], path: Path, top_n: int) -> Path | None:
    """Rating curves: every trainable player, plus the ``top_n`` snapshots with
    the best last-known rating (a league of hundreds is unreadable otherwise).
    A snapshot's curve starts when it is taken and ends when it is retired."""
    league = _league_records(records)
    if not league:
        return None
    x = np.array([float(r.env_steps) for r, _ in league])
    series: dict[str, np.ndarray] = {}
    for t, (_, lr) in enumerate(league):
        for module, rating in lr.ratings.items():
            series.setdefault(module, np.full(len(league), np.nan))[t] = float(rating)
    if not series:
        return None
    players = sorted(m for m in series if is_player_id(m))
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
    ax.set_xlabel("env steps")
    ax.set_ylabel("Elo rating")
    title = f"Elo ratings: {len(players)} players (bold), {len(shown)} snapshots (dashed)"
    if len(snapshots) > len(shown):
        title += f", the top {len(shown)} of {len(snapshots)} by last rating"
    ax.set_title(title + "\nsnapshot curves end when they are retired", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize="small", ncol=2 if in_legend and shown else 1)
    return _save(fig, path)


def plot_league_size(records: Sequence[IterationRecord], path: Path) -> Path | None:
    """Snapshots in the league and in the active set, and cumulative snapshots
    taken / retired: a flat "taken" line means the snapshot gate never opens,
    a size pinned at the budget means retirement is doing the work."""
    league = _league_records(records)
    if not league:
        return None
    x = np.array([float(r.env_steps) for r, _ in league])
    size = [float(lr.size) for _, lr in league]
    active = [float(len(lr.active_set)) for _, lr in league]
    taken = np.cumsum([len(lr.new_snapshots) for _, lr in league])
    retired = np.cumsum([len(lr.retired) for _, lr in league])
    fig = Figure(figsize=(10, 5))
    ax = fig.add_subplot()
    ax.plot(x, size, linewidth=2.5, label="snapshots in league")
    ax.plot(x, active, linewidth=1.5, label="active set")
    ax.plot(x, taken, linewidth=1.2, linestyle="--", label="snapshots taken (total)")
    ax.plot(x, retired, linewidth=1.2, linestyle=":", label="retired (total)")
    ax.set_xlabel("env steps")
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
    ratings = {m: r for m, (r, _) in ratings_in_state(state.get("ratings", {})).items()}
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


# ---- standings ---------------------------------------------------------------------


def standings_lines(state: Mapping[str, Any]) -> list[str]:
    """Every rated module, best first: its rating and, for the skill rating over
    rankings, its uncertainty (sigma) and the 95% range of its skill mu. In a game of
    several sides each side is ranked on its own, under its name: a predator's
    rating and a prey's are never compared (they never share a seat)."""
    table = ratings_in_state(state.get("ratings", {}))
    if not table:
        return ["no ratings yet"]
    skill = any(sigma is not None for _, sigma in table.values())
    header = (
        "rank  module                                   rating (mu - 3 sigma)    mu  [95% range]"
        if skill
        else "rank  module                                   Elo"
    )
    lines = [header]
    several_sides = len({side_of(module) for module in table}) > 1
    ranked = sorted(table.items(), key=lambda kv: (side_of(kv[0]), -kv[1][0], kv[0]))
    for side, group in itertools.groupby(ranked, key=lambda kv: side_of(kv[0])):
        if several_sides:
            lines.append(f"side {side}:")
        for rank, (module, (rating, sigma)) in enumerate(group, 1):
            line = f"{rank:4d}  {module:40s} {rating:8.2f}"
            if sigma is not None:
                mu = rating + 3.0 * sigma
                line += (
                    f"              {mu:6.2f}  [{mu - 1.96 * sigma:.2f}, {mu + 1.96 * sigma:.2f}]"
                )
            lines.append(line)
    return lines


def write_standings(state: Mapping[str, Any], path: Path) -> Path:
    path.write_text("\n".join(standings_lines(state)) + "\n")
    return path


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
    ``RunDir(run_dir).report``); returns the files written.

    A picture without data (a self-play run has no league; a run without a
    store has no payoff) is skipped with a message through ``log`` instead of
    failing the others. The league state is read from ``store_url`` if given,
    else from the store the run trained with (its ``config.json``), else from
    the run dir's SQLite store. Raises ``ReportError`` for a missing run dir,
    no progress or a damaged progress file.
    """
    if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
        raise ReportError(f"top_n must be an int >= 1, got {top_n!r}")
    run = RunDir(run_dir)
    records = read_records(run)
    out = Path(out_dir) if out_dir is not None else run.report
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    if not _league_records(records):
        log(
            f"report: {run.progress_file} has no league records (a --mode selfplay "
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

    loaded = load_league_state(run.path, store_url, log)
    if loaded is None:
        log(f"report: no league state in the league store of {run.path}: payoff.png skipped")
    else:
        state, source = loaded
        standings = write_standings(state, out / "standings.txt")
        log(f"report: ratings with their uncertainty in {standings}")
        written.append(standings)
        made = plot_payoff(state, out / "payoff.png", top_n, source)
        if made is None:
            log(f"report: the league state from {source} has no games yet: payoff.png skipped")
        else:
            log(f"report: payoff heatmap from {source}")
            written.append(made)
    return written
