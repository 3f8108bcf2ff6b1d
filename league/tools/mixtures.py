"""The league's mixture of its snapshots, solved and exported (`league export --mixture`).

Solvers, over which meta-game:

- ``nash`` on the league's payoff table (win rates of the games played in training):
  the maximin mixture; for games of two teams only (`league.core.meta`).
- ``nash`` on the exact meta-game (OpenSpiel two-player games): every pair of
  members' expected returns by OpenSpiel, then maximin (PSRO's restricted Nash).
- ``least-exploitable`` (OpenSpiel games): weights minimising the mixture's exact
  exploitability (two-player zero-sum games: the minimum, by linear programming),
  or its NashConv with more players (a local search that keeps the best exact
  figure it meets; `league.tools.least_exploitable`).
- ``alpharank`` on the league's payoff table: alpha-rank's stationary distribution,
  per side; defined for any number of seats, teams and sides, and not a Nash
  equilibrium (it ranks members by how evolution under selection visits them).

`auto` picks least-exploitable where it applies (for more players: where the game's
tree is small enough to weigh every member on it), else Nash where the game has two
teams, else alpha-rank. In a game of several sides a mixture is one side's (`side`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from envs.registry import get_game
from league.core.ids import side_of
from league.core.league import League
from league.core.meta import check_solver, meta_weights
from league.core.nash import WEIGHT_FLOOR, maximin
from league.run import RunDir
from league.snapshot import SnapshotPolicy, load_snapshot
from league.tools.least_exploitable import MAX_HISTORIES, TooManyHistoriesError

SOLVERS = ("auto", "nash", "least-exploitable", "alpharank")
PAYOFFS = ("auto", "exact", "league")


class MixtureError(ValueError):
    """A mixture that cannot be solved for this run or game (one line, why)."""


@dataclass(frozen=True)
class SolvedMixture:
    members: dict[str, SnapshotPolicy]
    weights: dict[str, float]
    what: str
    """What solved it, named honestly (e.g. "Nash mixture (exact payoffs)", "alpha-rank
    mixture (league payoffs)")."""


def league_mixture(
    run: RunDir,
    league: League,
    game: str,
    *,
    solver: str = "auto",
    payoff: str = "auto",
    side: str | None = None,
    log: Callable[[str], None] = print,
) -> SolvedMixture:
    """Solve the mixture of `league`'s snapshots of one side (the only side unless
    `side` names one) with `solver` over `payoff` (see the module doc)."""
    layout = league.layout
    if side is None:
        if layout.multi_side:
            raise MixtureError(
                f"{game} has sides {', '.join(layout.sides)}: say which one's mixture (--side)"
            )
        side = ""
    if side not in layout.sides:
        if not layout.multi_side:
            raise MixtureError(
                f"{game} has one side (every seat's spaces alike): --side is for games of "
                "several, such as predators and prey"
            )
        raise MixtureError(f"{game} has no side {side!r} (sides: {', '.join(layout.sides)})")
    spiel = get_game(game).openspiel
    two_player = layout.two_player
    # More than two players: the least-NashConv search weighs every member on every
    # history, so a large tree is refused (or passed over by auto) before any member
    # is loaded. Counted once, only where it decides.
    small_tree = bool(spiel) and (
        two_player or solver not in ("auto", "least-exploitable") or weighable(game)
    )
    chosen_by_auto = solver == "auto"
    league_solver = "nash" if len(layout.teams) == 2 else "alpharank"
    if solver == "auto":
        solver = "least-exploitable" if spiel and payoff == "auto" and small_tree else league_solver
    if payoff == "auto":
        payoff = "exact" if spiel and two_player and solver == "nash" else "league"
    snapshots = [s for s in league.snapshots if side_of(s) == side]
    if not snapshots:
        raise MixtureError(f"the league holds no snapshots of side {side!r}")
    if solver in ("least-exploitable",) or payoff == "exact":
        if not spiel:
            raise MixtureError(
                f"{solver if solver == 'least-exploitable' else 'exact payoffs'} needs an "
                f"OpenSpiel game; {game} is not (use --solver alpharank or --payoff league)"
            )
        if solver == "least-exploitable" and not small_tree:
            raise TooManyHistoriesError(
                f"{game}: a tree of more than {MAX_HISTORIES:,} histories; the least-NashConv "
                "mixture weighs every member on each (use --solver alpharank)"
            )
        if payoff == "exact" and not two_player:
            raise MixtureError(
                f"exact payoffs need a two-player game; {game} has {len(layout.seats)} "
                "seats (use --solver least-exploitable or alpharank)"
            )
        players = [p for p in league.players if side_of(p) == side]
        policies = league_policies(run, snapshots, players)
        if solver == "least-exploitable":
            try:
                weights = least_exploitable_mixture(game, policies, log)
            except TooManyHistoriesError as err:
                if not chosen_by_auto:
                    raise
                if not two_player:
                    log(f"{err}: solving the {league_solver} mixture over league payoffs instead")
                    return _league_payoff_mixture(run, league, side, league_solver)
                log(f"{err}: solving the exact Nash mixture instead")
            else:
                what = (
                    "least-exploitable mixture"
                    if two_player
                    else "least-NashConv mixture (local search)"
                )
                return SolvedMixture({m: policies[m] for m in weights}, weights, what)
        weights = exact_nash_mixture(game, policies, log)
        return SolvedMixture(
            {m: policies[m] for m in weights}, weights, "Nash mixture (exact payoffs)"
        )
    try:
        check_solver(solver, len(layout.teams), len(layout.sides))
    except ValueError as err:
        raise MixtureError(str(err)) from None
    return _league_payoff_mixture(run, league, side, solver)


def _league_payoff_mixture(run: RunDir, league: League, side: str, solver: str) -> SolvedMixture:
    """`solver`'s mixture of one side's snapshots over the league's payoff table."""
    layout = league.layout
    by_side = {s: [m for m in league.snapshots if side_of(m) == s] for s in layout.sides}
    weights = {
        m: w for m, w in meta_weights(league.payoff, by_side, solver).items() if side_of(m) == side
    }
    name = "Nash mixture" if solver == "nash" else "alpha-rank mixture"
    members = {sid: load_snapshot(run.snapshot_dir(sid)) for sid in weights}
    return SolvedMixture(members, weights, f"{name} (league payoffs)")


def league_policies(run: RunDir, snapshots: list[str], players: list[str]) -> dict[str, Any]:
    """Every snapshot and trainable player of a run, loaded (validated) from disk."""
    policies = {sid: load_snapshot(run.snapshot_dir(sid)) for sid in snapshots}
    for player in players:
        if run.player_dir(player).is_dir():
            policies[player] = load_snapshot(run.player_dir(player))
    return policies


def least_exploitable_mixture(
    game: str, policies: Mapping[str, Any], log: Callable[[str], None]
) -> dict[str, float]:
    """Weights over the policies of an OpenSpiel game (league.tools.least_exploitable):
    with two players (zero-sum), those that minimise the mixture's exact
    exploitability; with more, the least NashConv of every seat drawing a member that
    a local search finds."""
    from open_spiel.python import policy as os_policy

    from league.tools import least_exploitable as solve
    from league.tools.openspiel_exploitability import openspiel_game, tabular_policies

    spiel_game = openspiel_game(game)
    log(f"weighing {len(policies)} policies against exact best responses on {game}")
    template = os_policy.TabularPolicy(spiel_game)
    states, actions = template.action_probability_array.shape
    two_player = spiel_game.num_players() == 2
    if len(policies) * states * actions > solve.MAX_TABLE_ENTRIES:
        what, instead = (
            ("least-exploitable mixture", "nash")
            if two_player
            else ("least-NashConv search", "alpharank")
        )
        raise TooManyHistoriesError(
            f"{game}: {len(policies)} members x {states:,} info states x {actions} actions "
            f"is past {solve.MAX_TABLE_ENTRIES:,} table entries; the {what} holds several "
            f"such tables (use --solver {instead})"
        )
    tables = tabular_policies(spiel_game, list(policies.values()), template)
    if two_player:
        result = solve.least_exploitable_weights(spiel_game, tables, progress=log)
        found = (
            f"least exploitable: {result.exploitability:.4f} (no mixture of these members "
            f"below {result.lower_bound:.4f}"
        )
    else:
        result = solve.least_nash_conv_weights(spiel_game, tables, progress=log)
        found = (
            f"least NashConv: {result.nash_conv:.4f} (uniform weights "
            f"{result.uniform_nash_conv:.4f}"
        )
    log(f"  {found}; {result.rounds} rounds)")
    return {m: float(w) for m, w in zip(policies, result.weights, strict=True) if w > 0.0}


def weighable(game: str) -> bool:
    """Whether an OpenSpiel game's tree is small enough to weigh every member on it
    (more players than two: `least_nash_conv_weights`)."""
    from league.tools.openspiel_exploitability import game_tree_size

    return game_tree_size(game, MAX_HISTORIES) is not None


def exact_nash_mixture(
    game: str, policies: Mapping[str, Any], log: Callable[[str], None]
) -> dict[str, float]:
    """Maximin weights over the policies of a two-player OpenSpiel game, on the exact
    meta-game (league.tools.openspiel_exploitability.exact_meta_game)."""
    from league.tools.openspiel_exploitability import exact_meta_game

    log(f"solving the exact meta-game of {len(policies)} policies on {game}")
    matrix = exact_meta_game(game, policies, progress=log)
    weights, _ = maximin(matrix)
    return {m: float(w) for m, w in zip(policies, weights, strict=True) if w > WEIGHT_FLOOR}
