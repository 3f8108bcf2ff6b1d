"""League vs plain self-play: same machine, same wall-clock, defaults only.

For each game, `league train --env GAME --mode selfplay` and `--mode league` run one
after the other for the same number of minutes (nothing else should run on the
machine meanwhile), then each run's `main_0` is measured exactly where the game
allows it:

- rps: exact exploitability per round (a best response over the 15 rounds, by
  dynamic programming on what the policy observes; 0 = uniform play);
- tictactoe: exact exploitability in both seats, greedy and sampled (full game-tree
  best response), W/D/L against a uniformly random player and, for the league, the
  sampled exploitability's mean and max per seat over the main's last `--late-snapshots`
  snapshots (the final iterate alone swings from 0.03 to 0.8 between snapshots);
- kuhn_poker, leduc_poker and any other two-player OpenSpiel game whose tree an exact
  best response can walk (`openspiel:goofspiel(num_cards=4)`, `openspiel:liars_dice`):
  exact exploitability (OpenSpiel's own `exploitability`, NashConv/2; uniform play's
  beside it) of the main and, for the league, of its two
  mixtures over snapshots and players (`league export --mixture --solver nash` and
  `least-exploitable`, reach-weighted), the least-exploitable one distilled into one
  network (`--distill`) and the mean and max over the main's last
  `--late-snapshots` snapshots;
- kuhn_poker_3p, leduc_poker_3p (OpenSpiel, three players): exact NashConv (OpenSpiel's
  `nash_conv`, every seat playing the policy) of the main and, for the league, of its
  alpha-rank and least-NashConv mixtures over snapshots (`league export --mixture`),
  the least-NashConv one distilled into one network (`--distill`), and the mean over the
  main's last `--late-snapshots` snapshots;
- texas_holdem_4p: the league main's mean chips per hand against three copies of the
  self-play main, dealt as duplicate poker (each deal played with the league main in
  every seat in turn), with a 95% interval over the deals;
- battle (two teams): the league's team against the self-play team head to head, as
  each team in turn (both sampling), and the share of those games drawn;
- simple_tag (two sides: predators and prey): per side, the league's main and the
  self-play main each play that side against the same opponents with the same game
  seed (`paired_per_side`): the share of pairs the league's team return wins;
- connect_four: the two mains head to head (both sampling, seats alternating), and
  an approximate exploitability of each: the win rate of a best response trained
  against it for `--probe-minutes` (`league probe`); and its tactics
  (`league.tools.tactics`): the probability it gives a winning move where it has
  one, and a blocking move where one is due, over its own sampled games. With `--seeds`, every league
  main plays every self-play main, and the self-play mains play each other: one pair
  of runs is not a measurement on this game (two self-play mains of seeds 0 and 1,
  same recipe, scored 0.87 to 0.13).

    .venv/bin/python scripts/bench_league_quality.py [--games rps tictactoe] [--minutes 15]
        [--out runs/quality] [--seeds 0 1] [--random-games 1000] [--h2h-games 1000]

Runs that already finished in OUT are measured again, not retrained; each run's row
carries the commit and `--extra` flags it trained with (`RUN.trained.json` beside it:
copy it with a run reused from another OUT).
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from envs.opponents import RandomPlayer
from envs.registry import game_layout, get_game
from league.config import load_config_file
from league.core.ids import MAIN as MAIN_ROLE
from league.core.ids import parse_module_id, player_id
from league.run import RunDir, write_json_atomic
from league.run.dir import read_json_object
from league.snapshot import load_policy
from league.store import open_store
from league.tools.distill import distill_mixture
from league.tools.evaluation import duplicate_returns, evaluate, play_game
from league.tools.exploitability import greedy, rps_exploitability, tictactoe_exploitability
from league.tools.least_exploitable import MAX_HISTORIES
from league.tools.mixtures import weighable
from league.tools.openspiel_exploitability import exploitability as openspiel_exploitability
from league.tools.openspiel_exploitability import game_tree_size, nash_conv, uniform_measure
from league.tools.results import append_result, current_commit
from league.tools.tactics import connect_four_tactics

MODES = ("selfplay", "league")
MAIN = "main_0"
LEAGUE_CLI = str(Path(sys.executable).with_name("league"))
Row = tuple[str, str, int, int, dict[str, float]]  # game, label, env steps, main's rows, figures


def run_name(game: str, mode: str, seed: int | None) -> str:
    # A game reference such as openspiel:goofspiel(num_cards=4) as one plain file name.
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", game).strip("_")
    return f"{name}-{mode}" if seed is None else f"{name}-{mode}-seed{seed}"


def label_of(mode: str, seed: int | None) -> str:
    return mode if seed is None else f"{mode} seed {seed}"


def train(
    game: str, mode: str, minutes: float, run: RunDir, seed_flags: list[str], extra: list[str]
) -> None:
    flags = ["--env", game, "--mode", mode, "--stop-minutes", str(minutes), *seed_flags, *extra]
    reused = run.latest_file.is_file()
    league_train(f"{game} {mode}", flags, run)
    if not reused:
        write_json_atomic(trained_file(run), {"commit": current_commit(), "extra": extra})


def trained_file(run: RunDir) -> Path:
    return run.path.with_suffix(".trained.json")


def trained_with(run: RunDir) -> dict[str, Any] | None:
    """The commit and `--extra` flags a run trained with (a reused run may have trained
    with other flags, at another commit, than this command); None where not recorded."""
    path = trained_file(run)
    return read_json_object(path) if path.is_file() else None


def league_train(label: str, flags: list[str], run: RunDir) -> None:
    """`league train FLAGS --run-dir RUN` to completion, its output in RUN.log; a run
    that already finished is reused."""
    if run.latest_file.is_file():
        print(f"[{label}] reusing the finished run in {run.path}", flush=True)
        return
    command = [LEAGUE_CLI, "train", *flags, "--run-dir", str(run.path), "--no-run.dashboard"]
    print(f"[{label}] {' '.join(command)}", flush=True)
    run.path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(run.path.with_suffix(".log"), "w") as log:
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True)
    print(f"[{label}] trained for {(time.monotonic() - started) / 60:.1f} min", flush=True)


def steps(run: RunDir) -> tuple[int, int]:
    """(env steps of the run, rows the first main trained on: one per seat it played at
    each step, so a main holding several seats can have more rows than env steps)."""
    total = int(json.loads(run.latest_file.read_text())["env_steps"])
    if not run.store_file.is_file():
        return total, total  # self-play: every step trains the main
    with open_store(None, run.path, read_only=True) as store:
        players = (store.state() or {}).get("players", [])
    mains = [p for p in players if parse_module_id(p["id"]).role == MAIN_ROLE]
    return total, int(mains[0]["steps"]) if mains else 0


def n_player_openspiel(game: str) -> bool:
    spiel = get_game(game).openspiel
    return spiel is not None and len(game_layout(game).teams) > 2


def late_snapshots(game: str, run: RunDir, count: int) -> dict[str, float]:
    """Exploitability over the main's last snapshots (tictactoe: sampled, each seat;
    poker: OpenSpiel's): the final main is one draw from a last iterate that swings
    between snapshots."""
    policies = [load_policy(path, game=game) for path in run.latest_snapshot_dirs(MAIN, count)]
    if not policies:
        return {}
    if game == "tictactoe":
        seats = [tictactoe_exploitability(p.action_probs) for p in policies]
        series = {
            "sampled 1st": [s.as_first for s in seats],
            "sampled 2nd": [s.as_second for s in seats],
        }
    elif n_player_openspiel(game):
        series = {"NashConv": [nash_conv(game, p) for p in policies]}
    else:
        series = {"expl": [openspiel_exploitability(game, p) for p in policies]}
    row: dict[str, float] = {}
    for label, values in series.items():
        row[f"late {len(values)} snapshots {label} mean"] = sum(values) / len(values)
        row[f"{label} max"] = max(values)
    return row


def measure(game: str, run: RunDir, args: argparse.Namespace) -> dict[str, float]:
    if game_layout(game).multi_side or game in ("battle", "texas_holdem_4p"):
        return {}  # measured against the other mode (`pair_rows`)
    policy = load_policy(run.player_dir(MAIN), game=game)
    row: dict[str, float] = {}
    if game == "rps":
        row["exploitability"] = rps_exploitability(policy.action_probs)
    elif game == "tictactoe":
        sampled = tictactoe_exploitability(policy.action_probs)
        greedy_ex = tictactoe_exploitability(greedy(policy.action_probs))
        row |= {
            "expl greedy 1st": greedy_ex.as_first,
            "expl greedy 2nd": greedy_ex.as_second,
            "expl sampled 1st": sampled.as_first,
            "expl sampled 2nd": sampled.as_second,
        }
        for seat in evaluate(game, policy, RandomPlayer(), args.random_games, seed=1):
            row[f"losses vs random ({seat.seat})"] = float(seat.losses)
        row |= late_snapshots(game, run, args.late_snapshots)
    elif n_player_openspiel(game):
        row["NashConv"] = nash_conv(game, policy)
        if run.store_file.is_file():
            row |= mixtures(game, run, solvers=("alpharank", "least-exploitable"))
        row |= late_snapshots(game, run, args.late_snapshots)
    elif get_game(game).openspiel is not None and game_tree_size(game) is not None:
        # Any two-player OpenSpiel game whose tree an exact best response can walk.
        row["exploitability"] = openspiel_exploitability(game, policy)
        row["uniform play's"] = uniform_measure(game)
        if run.store_file.is_file():
            row |= mixtures(game, run)
        row |= late_snapshots(game, run, args.late_snapshots)
    elif game == "connect_four":
        tactics = connect_four_tactics(policy, games=args.tactics_games, seed=3)
        row |= {"takes its win": tactics.win, "blocks": tactics.block}
        row |= probe_row(run, args.probe_minutes)
    return row


def mixtures(
    game: str, run: RunDir, solvers: tuple[str, ...] = ("nash", "least-exploitable")
) -> dict[str, float]:
    """The league's mixtures of its snapshots and players (`league export --mixture`):
    two players, the exact meta-game's Nash and the least-exploitable weights (their
    exploitability); more players, alpha-rank over the league's payoffs and the least
    NashConv a local search finds (their NashConv; the search only where the game's
    tree is small enough)."""
    row: dict[str, float] = {}
    measure = nash_conv if n_player_openspiel(game) else openspiel_exploitability
    for solver in solvers:
        out = run.path / f"{solver}-mixture"
        if solver == "least-exploitable" and n_player_openspiel(game) and not weighable(game):
            print(f"[{game}] no least-NashConv mixture: a tree past {MAX_HISTORIES:,}")
            continue
        if not out.is_dir():
            command = [LEAGUE_CLI, "export", "--mixture", "--run-dir", str(run.path)]
            command += ["--solver", solver, "--out", str(out)]
            started = time.perf_counter()
            if subprocess.run(command).returncode != 0:
                # Refused (its one line says why: a population too large to weigh) or
                # killed: the run's other figures still count.
                print(f"[{game}] no {solver} mixture", flush=True)
                continue
            # Work after the run's budget, beside the figure it buys.
            row[f"{solver} mixture seconds"] = time.perf_counter() - started
        mixture = load_policy(out)
        row[f"{solver} mixture"] = measure(game, mixture)
        if solver == "least-exploitable":
            # The mixture as one network (`league export --mixture --distill`).
            distilled, fit = distill_mixture(mixture, log=lambda line: print(f"[{game}] {line}"))
            row[f"{solver} mixture distilled"] = measure(game, distilled)
            row["distill seconds"] = fit.seconds
    return row


def team_head_to_head(
    game: str, league_run: RunDir, selfplay_run: RunDir, games: int
) -> dict[str, float]:
    """The league's mains against the self-play mains, per team the league plays: the
    league's side-s main takes team T (every seat of it) and the self-play mains of each
    side every other team; both sample. Score: win 1, draw 1/2, by team rank; beside it
    the share of games every team drew (equal team returns)."""
    layout = game_layout(game)
    league = {
        s: load_policy(league_run.player_dir(player_id(MAIN_ROLE, 0, s))) for s in layout.sides
    }
    selfplay = {
        s: load_policy(selfplay_run.player_dir(player_id(MAIN_ROLE, 0, s))) for s in layout.sides
    }
    rng = np.random.default_rng(5)
    row: dict[str, float] = {}
    for team in layout.teams:
        seats = {
            seat: (league if seat in team.seats else selfplay)[layout.side_of(seat)]
            for seat in layout.seats
        }
        score, draws = 0.0, 0
        for _ in range(games):
            returns = play_game(game, seats, rng, dict.fromkeys(seats, False))
            totals = {t.name: sum(returns[s] for s in t.seats) for t in layout.teams}
            best = max(totals.values())
            mine = totals[team.name]
            tied = sum(1 for v in totals.values() if v == best)
            score += 0.0 if mine < best else 1.0 if tied == 1 else 0.5
            draws += tied == len(totals)
        row[f"league as {team.name}"] = score / games
        row[f"draws as {team.name}"] = draws / games
    return row


def paired_per_side(
    game: str, league_run: RunDir, selfplay_run: RunDir, games: int
) -> dict[str, float]:
    """A game of sides (predators and prey) has no head to head between two players
    of one side, and its team ranks say little (simple_tag's predators outscore the
    prey in every game): per side, the league's main and the self-play main each play
    that side against the same opponents (the other sides' mains of the league run and
    of the self-play run, every other game), with the same game seed. Score: the
    share of pairs in which the league's team return is the higher (ties 1/2), over
    all pairs and apart by whose opponents they faced: a side that adapts to the
    opponents it trained with (simple_tag's prey) does better against its own run's."""
    layout = game_layout(game)
    mains = {
        name: {s: load_policy(run.player_dir(player_id(MAIN_ROLE, 0, s))) for s in layout.sides}
        for name, run in (("league", league_run), ("selfplay", selfplay_run))
    }
    row: dict[str, float] = {}
    for side in layout.sides:
        own = layout.seats_of_side(side)
        totals = {"league": 0.0, "selfplay": 0.0}
        scores = {"league": 0.0, "selfplay": 0.0}  # by whose opponents the pair met
        pairs = {"league": 0, "selfplay": 0}
        for game_index in range(games):
            opponents_of = "league" if game_index % 2 else "selfplay"
            opponents = mains[opponents_of]
            pairs[opponents_of] += 1
            pair = {}
            for name in ("league", "selfplay"):
                seats = {
                    seat: (mains[name] if seat in own else opponents)[layout.side_of(seat)]
                    for seat in layout.seats
                }
                rng = np.random.default_rng([7, game_index])  # the pair's game seed
                returns = play_game(game, seats, rng, dict.fromkeys(seats, False))
                pair[name] = sum(returns[seat] for seat in own)
                totals[name] += pair[name]
            scores[opponents_of] += (
                1.0
                if pair["league"] > pair["selfplay"]
                else 0.5 * (pair["league"] == pair["selfplay"])
            )
        row[f"league as {side} (paired)"] = sum(scores.values()) / games
        for opponents_of, whose in (("league", "the league's"), ("selfplay", "self-play's")):
            if pairs[opponents_of]:  # one game has no pair against the league's
                row[f"league as {side} (paired), against {whose}"] = (
                    scores[opponents_of] / pairs[opponents_of]
                )
        row[f"{side} return, league"] = totals["league"] / games
        row[f"{side} return, selfplay"] = totals["selfplay"] / games
    return row


def chips_against_selfplay(
    game: str, league_run: RunDir, selfplay_run: RunDir, hands: int
) -> dict[str, float]:
    """The league main's chips per hand against the self-play main in every other
    seat, dealt as duplicate poker (`duplicate_returns`): the mean and its 95% interval
    over the deals' means (hands rounded up to a whole number of deals, at least two)."""
    league = load_policy(league_run.player_dir(MAIN))
    selfplay = load_policy(selfplay_run.player_dir(MAIN))
    deals = max(2, -(-hands // len(game_layout(game).seats)))  # an interval needs two
    per_deal = duplicate_returns(game, league, selfplay, deals)
    mean = float(np.mean(per_deal))
    half = 1.96 * float(np.std(per_deal, ddof=1)) / np.sqrt(deals)
    return {"chips per hand": mean, "low": mean - half, "high": mean + half, "deals": deals}


def head_to_head(game: str, main: Any, other: Any, games: int) -> dict[str, float]:
    """One main against another, both sampling, seats alternating."""
    seats = evaluate(game, main, other, games // 2, greedy=False, opponent_greedy=False, seed=2)
    wins = sum(s.wins for s in seats)
    draws = sum(s.draws for s in seats)
    total = sum(s.games for s in seats)
    row = {"score": (wins + draws / 2) / total}
    for seat in seats:  # the first player has the edge: each seat's score apart
        row[f"as {seat.seat}"] = (seat.wins + seat.draws / 2) / seat.games
    return row


def cross_table(game: str, runs: dict[tuple[str, int | None], RunDir], games: int) -> list[Row]:
    """Every league main against every self-play main, and, with several seeds, the
    self-play mains against each other: how far two mains of the same recipe score
    apart from the seed alone, the yardstick for the league's margin."""
    mains = {key: load_policy(run.player_dir(MAIN), game=game) for key, run in runs.items()}
    leagues = [key for key in mains if key[0] == "league"]
    selfplays = [key for key in mains if key[0] == "selfplay"]
    pairs = [*itertools.product(leagues, selfplays), *itertools.combinations(selfplays, 2)]
    rows: list[Row] = []
    for a, b in pairs:
        row = head_to_head(game, mains[a], mains[b], games)
        rows.append((game, f"{label_of(*a)} vs {label_of(*b)}", 0, 0, row))
    league_scores = [row["score"] for _, label, _, _, row in rows if label.startswith("league")]
    if len(league_scores) > 1:
        mean = sum(league_scores) / len(league_scores)
        rows.append((game, "league vs selfplay, mean", 0, 0, {"score": mean}))
    return rows


def pair_rows(
    game: str, runs: dict[tuple[str, int | None], RunDir], seeds: list[int | None], games: int
) -> list[Row]:
    """Per seed, the league's mains against the self-play mains trained as long: team
    games head to head per team, sides paired per side, texas_holdem_4p by chips per hand."""
    rows: list[Row] = []
    for seed in seeds:
        league, selfplay = runs[("league", seed)], runs[("selfplay", seed)]
        label = f"league vs selfplay{'' if seed is None else f' seed {seed}'}"
        if game == "texas_holdem_4p":
            rows.append((game, label, 0, 0, chips_against_selfplay(game, league, selfplay, games)))
        elif game_layout(game).multi_side:
            rows.append((game, label, 0, 0, paired_per_side(game, league, selfplay, games)))
        elif game == "battle":
            rows.append((game, label, 0, 0, team_head_to_head(game, league, selfplay, games)))
    return rows


def probe_row(run: RunDir, minutes: float) -> dict[str, float]:
    from league.training.probe import probe

    result = probe(run.player_dir(MAIN), minutes=minutes, games=1000, log=lambda _: None)
    lo, hi = result.win_interval()
    return {"probe BR win rate": result.win_rate, "low": lo, "high": hi}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=["rps", "tictactoe", "connect_four"])
    parser.add_argument("--minutes", type=float, default=15.0)
    parser.add_argument("--out", default="runs/quality")
    parser.add_argument("--random-games", type=int, default=1000)
    parser.add_argument(
        "--h2h-games",
        type=int,
        default=1000,
        help="games per pairing head to head, per team or per side; texas_holdem_4p: "
        "hands (duplicate deals of one hand per seat)",
    )
    parser.add_argument("--probe-minutes", type=float, default=5.0)
    parser.add_argument(
        "--tactics-games",
        type=int,
        default=300,
        help="connect_four: self-play games for the tactics figures (probability on "
        "the winning move where there is one, on the block where one is due)",
    )
    parser.add_argument(
        "--late-snapshots",
        type=int,
        default=10,
        help="league runs of tictactoe and poker: also the main's last N snapshots",
    )
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        help="train each mode once per seed (runs in OUT/GAME-MODE-seedN); connect_four "
        "then plays every league main against every self-play main, and the self-play "
        "mains against each other (the spread a seed alone gives)",
    )
    parser.add_argument(
        "--extra",
        nargs=argparse.REMAINDER,
        default=[],
        help="more `league train` flags, both modes",
    )
    args = parser.parse_args()
    seeds: list[int | None] = args.seeds or [None]
    table: list[Row] = []
    trained: dict[tuple[str, str], dict[str, Any] | None] = {}  # (game, label) -> its run's
    for game in args.games:
        runs = {
            (mode, seed): RunDir(Path(args.out) / run_name(game, mode, seed))
            for seed in seeds
            for mode in args.modes
        }
        for (mode, seed), run in runs.items():
            seed_flags = [] if seed is None else ["--seed", str(seed)]
            train(game, mode, args.minutes, run, seed_flags, args.extra)
        for (mode, seed), run in runs.items():
            total, main_steps = steps(run)
            table.append((game, label_of(mode, seed), total, main_steps, measure(game, run, args)))
            trained[(game, label_of(mode, seed))] = trained_with(run)
        if game == "connect_four" and "league" in args.modes and "selfplay" in args.modes:
            table += cross_table(game, runs, args.h2h_games)
        if "league" in args.modes and "selfplay" in args.modes:
            table += pair_rows(game, runs, seeds, args.h2h_games)
    print(
        f"\nleague vs plain self-play, {args.minutes:g} min each, defaults (`league train --env GAME`)"
    )
    for game, mode, total, main_steps, row in table:
        figures = " | ".join(f"{k} {v:.4f}" if v % 1 else f"{k} {v:.0f}" for k, v in row.items())
        budget = f"{total:>9,d} env steps ({main_steps:,d} main)" if total else ""
        print(f"{game:12s} {mode:28s} {budget:36s} | {figures}")
        append_result(
            "league_quality",
            {
                "game": game,
                "run": mode,
                "minutes": args.minutes,
                "env_steps": total,
                "main_env_steps": main_steps,
                "figures": {k: float(v) for k, v in row.items()},
                **({"trained": trained[game, mode]} if (game, mode) in trained else {}),
                **config_files(args.extra),
            },
        )


def config_files(extra: list[str]) -> dict[str, Any]:
    """The settings of a `--config FILE` among the extra flags (a file `league tune`
    wrote, say), kept in the row: the file may change or go, the row stays."""
    if "--config" not in extra[:-1]:
        return {}
    path = Path(extra[extra.index("--config") + 1])
    return {"config": {"file": str(path), "settings": load_config_file(path)}}


if __name__ == "__main__":
    main()
