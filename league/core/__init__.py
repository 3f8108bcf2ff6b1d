"""Pure league logic: ids, config, players and snapshots, roles, payoff, ratings,
PFSP, matchmaking and retirement. Imports neither ray nor torch."""

from league.core.config import LeagueConfig
from league.core.ids import (
    LEAGUE_EXPLOITER,
    MAIN,
    MAIN_EXPLOITER,
    ROLE_NAMES,
    ModuleId,
    is_frozen_id,
    is_player_id,
    is_reference_id,
    is_snapshot_id,
    parse_module_id,
    player_id,
    reference_id,
    snapshot_id,
)
from league.core.league import League
from league.core.match import MatchRecord
from league.core.matchmaking import MatchmakingPlan
from league.core.model import Decision, LeagueView, Player, Reset, Snapshot
from league.core.payoff import PayoffTable
from league.core.ratings import EloRatings
from league.core.roles import LeagueExploiter, MainAgent, MainExploiter, Role

__all__ = [
    "LEAGUE_EXPLOITER",
    "MAIN",
    "MAIN_EXPLOITER",
    "ROLE_NAMES",
    "Decision",
    "EloRatings",
    "League",
    "LeagueConfig",
    "LeagueExploiter",
    "LeagueView",
    "MainAgent",
    "MainExploiter",
    "MatchRecord",
    "MatchmakingPlan",
    "ModuleId",
    "PayoffTable",
    "Player",
    "Reset",
    "Role",
    "Snapshot",
    "is_frozen_id",
    "is_player_id",
    "is_reference_id",
    "is_snapshot_id",
    "parse_module_id",
    "player_id",
    "reference_id",
    "snapshot_id",
]
