"""LeagueConfig: every knob of the pure league logic in one frozen, validated object.

A bad value fails at start-up, naming the field, instead of hours into a run.
"""

from __future__ import annotations

import dataclasses
import math
import reprlib
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from league.core.ids import (
    LEAGUE_EXPLOITER,
    MAIN,
    MAIN_EXPLOITER,
    ROLE_NAMES,
    player_id,
    reference_id,
)
from league.core.pfsp import WEIGHTINGS
from league.core.ratings import RATING_KINDS

OPPONENT_SAMPLINGS = ("pfsp", "nash", "alpharank")
CROSS_SIDE_OUTCOMES = ("return", "within_side")


def field_help(text: str, choices: Iterable[str] = (), noun: str = "") -> dict[str, Any]:
    """Field metadata: help text, and the allowed values when there is a fixed set.

    `noun` names one value in error messages (default: the field name).
    """
    meta: dict[str, Any] = {"help": text}
    if choices:
        meta["choices"] = tuple(choices)
    if noun:
        meta["noun"] = noun
    return meta


_help = field_help
MAX_REFERENCE_OPPONENTS = 16
MAX_SIDES = 64
# The main's opponent shares (summing to 1) a side may set apart (`main_mix_by_side`).
MAIN_MIX_FIELDS = (
    "main_self_play_prob",
    "main_pfsp_prob",
    "main_forgotten_prob",
    "main_exploiter_prob",
    "main_reference_prob",
)


@dataclass(frozen=True)
class LeagueConfig:
    """Every parameter of the pure league logic; validated on construction.

    One typed field with help text per knob: the repetition below is deliberate
    boilerplate (it is what the CLI flags and the docs are generated from).
    """

    # Population.
    num_main_agents: int = field(
        default=1, metadata=_help("Number of main agents (the players we ship).")
    )
    num_main_exploiters: int = field(
        default=1, metadata=_help("Number of main exploiters (hunt current mains).")
    )
    num_league_exploiters: int = field(
        default=1,
        metadata=_help("Number of league exploiters (hunt the whole league)."),
    )

    # Compute split.
    main_learner_share: float = field(
        default=0.5,
        metadata=_help(
            "Share of episodes whose learning seat is a main agent (split evenly among "
            "mains); exploiters share the rest. The main is the product: it should get "
            "most of the samples and updates."
        ),
    )

    # Main agent opponent mix.
    main_self_play_prob: float = field(
        default=0.35, metadata=_help("Main agent: share of self-play vs mains.")
    )
    main_pfsp_prob: float = field(
        default=0.50,
        metadata=_help("Main agent: share of PFSP over all past snapshots."),
    )
    main_forgotten_prob: float = field(
        default=0.15,
        metadata=_help(
            "Main agent: share of PFSP over forgotten main snapshots and past "
            "main exploiters (self-play when there are none)."
        ),
    )
    main_exploiter_prob: float = field(
        default=0.0,
        metadata=_help(
            "Main agent: share of games against the live main exploiters (self-play when "
            "there are none). The exploiter tracks a best response to the main, so these "
            "games push the main down its exploitability (exploitability descent)."
        ),
    )
    main_reference_prob: float = field(
        default=0.0,
        metadata=_help(
            "Main agent: share of games against the reference opponents (self-play when "
            "there are none). A scripted strong player punishes every blunder in lines "
            "that self-play, which samples both sides, rarely finishes."
        ),
    )
    main_mix_by_side: dict[str, dict[str, float]] = field(
        default_factory=dict,
        metadata=_help(
            "Games of several sides: a side's own main opponent mix, by side name, e.g. "
            '{"agent": {"main_pfsp_prob": 0.3, "main_exploiter_prob": 0.1}} for '
            "simple_tag's prey. The shares named (main_self_play_prob, main_pfsp_prob, "
            "main_forgotten_prob, main_exploiter_prob, main_reference_prob) replace the "
            "league-wide ones for that side's mains; the shares left unnamed keep their "
            "league-wide proportions, scaled to fill the rest of 1. Sides not named play "
            "the league-wide mix."
        ),
    )
    reference_opponents: list[str] = field(
        default_factory=list,
        metadata=_help(
            "Frozen scripted league members, always loaded on env runners: the game's "
            "reference opponents by name (`minimax` on tictactoe, `search` on connect_four, "
            "`random` anywhere) or user bots as package.module:callable (returning an object "
            "with `action_probs(obs)` over the league observation dict). They appear in the "
            "payoff table and ratings as `ref=<name>`; only mains play them "
            "(main_reference_prob)."
        ),
    )
    main_forgotten_win_rate: float = field(
        default=0.7,
        metadata=_help(
            "A main snapshot counts as forgotten while the main's win rate "
            "against it is below this."
        ),
    )

    # Main exploiter.
    main_exploiter_switch_win_rate: float = field(
        default=0.2,
        metadata=_help(
            "Main exploiter: below this win rate vs a current main, always "
            "train against that main's snapshots instead."
        ),
    )
    main_exploiter_pfsp_prob: float = field(
        default=0.5,
        metadata=_help(
            "Main exploiter: probability of playing the main's snapshots even "
            "when it can beat the current main."
        ),
    )
    main_exploiter_weighting: str = field(
        default="var",
        metadata=_help("Main exploiter: PFSP weighting over main snapshots."),
    )
    main_exploiter_reset_to: str = field(
        default="initial",
        metadata=_help(
            "Main exploiter reset after a snapshot: 'initial' weights or the "
            "current best-rated 'main'."
        ),
    )
    main_adopts_exploiter_win_rate: float | None = field(
        default=None,
        metadata=_help(
            "When a main exploiter snapshots, a main it surely beats at this win rate "
            "(the snapshot gate's test: games and confidence) restarts from the exploiter's weights "
            "and the exploiter carries on from them: population-based training's exploit "
            "step, so an exploiter's training that made a stronger player is not lost to "
            "the main's lineage (unset: mains never restart)."
        ),
    )
    league_exploiter_reset_prob: float = field(
        default=0.25,
        metadata=_help("League exploiter: probability of reset after a snapshot."),
    )

    # Snapshot gate.
    snapshot_win_rate: float = field(
        default=0.7,
        metadata=_help(
            "Snapshot when the win rate against every matchmaking target surely reaches "
            "this: the lower end of its Wilson interval at snapshot_confidence."
        ),
    )
    snapshot_confidence: float = field(
        default=0.95,
        metadata=_help(
            "Confidence of the snapshot gate's Wilson interval over the decayed games "
            "(draws count half): a lucky streak over a few games does not open it. "
            "0 gates on the point estimate."
        ),
    )
    snapshot_min_games: float = field(
        default=20.0,
        metadata=_help(
            "Decayed games needed against each target before the win-rate gate can open."
        ),
    )
    snapshot_min_steps: int = field(
        default=0,
        metadata=_help("Env steps since the last snapshot before the win-rate gate."),
    )
    snapshot_step_budget: int = field(
        default=100_000,
        metadata=_help(
            "Snapshot anyway after this many of the player's env steps since the last "
            "(small-game default; AlphaStar-scale runs use far more)."
        ),
    )

    # Payoff and PFSP.
    payoff_decay: float = field(
        default=0.99,
        metadata=_help("Payoff decay applied once per update (iteration)."),
    )
    payoff_min_games: float = field(
        default=5.0,
        metadata=_help("Below this many decayed games a win rate reads 0.5."),
    )
    pfsp_weighting: str = field(
        default="hard",
        metadata=_help(f"PFSP weighting: one of {sorted(WEIGHTINGS)}."),
    )
    pfsp_p: float = field(default=2.0, metadata=_help("Exponent p of the 'hard' weighting."))
    opponent_sampling: str = field(
        default="pfsp",
        metadata=_help(
            "How the main and league exploiters weight snapshots: 'pfsp' (by win rate, "
            "AlphaStar), 'nash' (by the league's Nash mixture over the payoff table, "
            "PSRO-style; two-player zero-sum games only) or 'alpharank' (by alpha-rank's "
            "stationary distribution over the payoff table, per side: any number of seats, "
            "teams or sides). Only snapshots in the mixture's support are played, uniformly "
            "when it holds none.",
            choices=OPPONENT_SAMPLINGS,
        ),
    )

    # League size and active set.
    max_snapshots: int = field(
        default=64,
        metadata=_help("League-size budget: snapshots beyond it are retired."),
    )
    active_set_size: int = field(
        default=8,
        metadata=_help("K: frozen opponents loaded on env runners at once."),
    )
    active_set_max_swaps: int = field(
        default=2,
        metadata=_help(
            "Active-set members replaced per update at most (stability; empty "
            "slots are always filled)."
        ),
    )
    active_set_hysteresis: float = field(
        default=0.25,
        metadata=_help(
            "An outsider replaces a member only if its need exceeds the "
            "member's by this relative margin."
        ),
    )

    # Regularisation.
    entropy_coeff: float | None = field(
        default=None,
        metadata=_help(
            "Entropy bonus of every player in league mode (unset: the run's entropy_coeff). "
            "A league main that plays frozen snapshots turns deterministic sooner than a "
            "self-play main (tictactoe, 15 minutes at 0.03: entropy 0.01 against 0.26), and "
            "a deterministic main loses every game to a best response wherever it has a hole."
        ),
    )
    entropy_coeff_final: float | None = field(
        default=None,
        metadata=_help(
            "Anneal the players' entropy bonus to this in league mode (unset: the run's "
            "entropy_coeff_final). Lets a league anneal while self-play keeps a constant "
            "bonus (tictactoe: annealing helped the league main's second seat and hurt "
            "self-play's)."
        ),
    )
    exploiter_entropy_coeff: float | None = field(
        default=None,
        metadata=_help(
            "Entropy bonus of the exploiters alone (unset: as the players'). An exploiter "
            "approximates a best response, which is deterministic: a sharp one punishes "
            "every hole of the main it finds, so the main learns to close it."
        ),
    )
    teacher: str = field(
        default="",
        metadata=_help(
            "A scripted teacher for every player (AlphaStar's pull toward a supervised "
            "policy): a game's reference opponent by name (`search` on connect_four) or "
            "package.module:callable. Where it rules moves out, each player's loss gains "
            "teacher_coeff * -log(the player's probability on the teacher's moves). Empty: none."
        ),
    )
    teacher_coeff: float = field(
        default=0.0,
        metadata=_help("Weight of the pull toward the teacher's moves (0: off)."),
    )

    # Ratings.
    ratings: str = field(
        default="auto",
        metadata=_help(
            "Rating of every league module: 'elo' (pairwise), 'skill' (a Bayesian rating "
            "over team rankings: openskill's Plackett-Luce, shown as mu - 3 sigma), or "
            "'auto': Elo for two-player games, skill for more seats or teams.",
            choices=RATING_KINDS,
        ),
    )
    cross_side_outcome: str = field(
        default="return",
        metadata=_help(
            "Games of several sides (simple_tag's predators and prey): who wins a match "
            "between teams of different sides. 'return': the higher team return (sides "
            "whose rewards differ in scale then win or lose every such match); "
            "'within_side': each team's return standardized over its side's teams in "
            "the iteration's matches, so a team wins by doing better than its side "
            "usually does.",
            choices=CROSS_SIDE_OUTCOMES,
        ),
    )
    elo_initial: float = field(default=1000.0, metadata=_help("Initial Elo rating."))
    elo_k: float = field(default=16.0, metadata=_help("Elo K factor."))
    elo_scale: float = field(
        default=400.0, metadata=_help("Elo scale: a gap of this is 10:1 odds.")
    )

    @property
    def snapshot_z(self) -> float:
        """Standard errors below the point estimate the snapshot gate reads."""
        return statistics.NormalDist().inv_cdf(0.5 + self.snapshot_confidence / 2.0)

    def __post_init__(self) -> None:
        for name in ("num_main_exploiters", "num_league_exploiters"):
            _check_int(self, name, minimum=0)
        _check_int(self, "num_main_agents", minimum=1)
        for name in (
            "main_learner_share",
            "main_self_play_prob",
            "main_pfsp_prob",
            "main_forgotten_prob",
            "main_exploiter_prob",
            "main_reference_prob",
            "main_forgotten_win_rate",
            "main_exploiter_switch_win_rate",
            "main_exploiter_pfsp_prob",
            "league_exploiter_reset_prob",
            "snapshot_win_rate",
        ):
            _check_float(self, name, low=0.0, high=1.0)
        _check_float(self, "snapshot_confidence", low=0.0, high=1.0, open_high=True)
        total = self.main_self_play_prob + self.main_pfsp_prob
        total += self.main_forgotten_prob + self.main_exploiter_prob + self.main_reference_prob
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ValueError(
                "main_self_play_prob + main_pfsp_prob + main_forgotten_prob + "
                f"main_exploiter_prob + main_reference_prob must sum to 1, got {total}"
            )
        self._check_references()
        self._check_main_mix_by_side()
        for name in ("pfsp_weighting", "main_exploiter_weighting"):
            if getattr(self, name) not in WEIGHTINGS:
                raise ValueError(
                    f"{name} must be one of {sorted(WEIGHTINGS)}, got {reprlib.repr(getattr(self, name))}"
                )
        if self.opponent_sampling not in OPPONENT_SAMPLINGS:
            raise ValueError(
                f"opponent_sampling must be one of {', '.join(OPPONENT_SAMPLINGS)}, "
                f"got {reprlib.repr(self.opponent_sampling)}"
            )
        if self.ratings not in RATING_KINDS:
            raise ValueError(
                f"ratings must be one of {', '.join(RATING_KINDS)}, got {reprlib.repr(self.ratings)}"
            )
        if self.cross_side_outcome not in CROSS_SIDE_OUTCOMES:
            raise ValueError(
                f"cross_side_outcome must be one of {', '.join(CROSS_SIDE_OUTCOMES)}, "
                f"got {reprlib.repr(self.cross_side_outcome)}"
            )
        if self.main_exploiter_reset_to not in ("initial", "main"):
            raise ValueError(
                "main_exploiter_reset_to must be 'initial' or 'main', "
                f"got {reprlib.repr(self.main_exploiter_reset_to)}"
            )
        _check_float(self, "snapshot_min_games", low=0.0)
        _check_int(self, "snapshot_min_steps", minimum=0)
        _check_int(self, "snapshot_step_budget", minimum=1)
        _check_float(self, "payoff_decay", low=0.0, high=1.0, open_low=True)
        _check_float(self, "payoff_min_games", low=0.0)
        _check_float(self, "pfsp_p", low=0.0, open_low=True)
        _check_int(self, "max_snapshots", minimum=1)
        _check_int(self, "active_set_size", minimum=1)
        _check_int(self, "active_set_max_swaps", minimum=0)
        _check_float(self, "active_set_hysteresis", low=0.0)
        if self.main_adopts_exploiter_win_rate is not None:
            _check_float(self, "main_adopts_exploiter_win_rate", low=0.0, high=1.0)
        for name in ("entropy_coeff", "entropy_coeff_final", "exploiter_entropy_coeff"):
            if getattr(self, name) is not None:
                _check_float(self, name, low=0.0, high=100.0)
        _check_float(self, "teacher_coeff", low=0.0, high=100.0)
        if not isinstance(self.teacher, str):
            raise ValueError(f"teacher must be a name, got {reprlib.repr(self.teacher)}")
        if self.teacher:
            reference_id(self.teacher)  # raises on a malformed name
        elif self.teacher_coeff > 0:
            raise ValueError("teacher_coeff > 0 needs a teacher (a reference opponent's name)")
        _check_float(self, "elo_initial")
        _check_float(self, "elo_k", low=0.0, open_low=True)
        _check_float(self, "elo_scale", low=0.0, open_low=True)

    def _check_main_mix_by_side(self) -> None:
        by_side = self.main_mix_by_side
        if not isinstance(by_side, dict) or len(by_side) > MAX_SIDES:
            raise ValueError(
                f"main_mix_by_side must be a mapping of at most {MAX_SIDES} side names to "
                f"mixes, got {reprlib.repr(by_side)}"
            )
        for side, shares in by_side.items():
            if not isinstance(side, str) or not isinstance(shares, dict) or not shares:
                raise ValueError(
                    "main_mix_by_side maps a side name to its main's shares, got "
                    f"{reprlib.repr(side)}: {reprlib.repr(shares)}"
                )
            unknown = sorted(set(shares) - set(MAIN_MIX_FIELDS), key=str)
            if unknown:
                raise ValueError(
                    f"main_mix_by_side[{side!r}] names {reprlib.repr(unknown)}; a side's mix "
                    f"takes {', '.join(MAIN_MIX_FIELDS)}"
                )
            try:
                self.for_side(side)
            except ValueError as err:
                raise ValueError(f"main_mix_by_side[{side!r}]: {err}") from None

    def for_side(self, side: str) -> LeagueConfig:
        """The settings of one side's players: the league-wide ones with the side's
        own main mix (`main_mix_by_side`) in place. The shares a side leaves unnamed
        keep their league-wide proportions, scaled to fill what the named ones leave,
        so a side's mix still sums to 1 when the league-wide one changes (`league
        tune` perturbs it)."""
        shares = self.main_mix_by_side.get(side)
        if not shares:
            return self
        for name, share in shares.items():  # checked before the arithmetic below
            _check_number(name, share, low=0.0, high=1.0)
        named = sum(shares.values())
        if named > 1.0 + 1e-9:
            raise ValueError(f"the shares named sum to {named:g}, more than 1")
        rest = {name: getattr(self, name) for name in MAIN_MIX_FIELDS if name not in shares}
        rest_total = sum(rest.values())
        if rest_total > 0:
            scale = max(0.0, 1.0 - named) / rest_total
            shares = {**{name: share * scale for name, share in rest.items()}, **shares}
        elif not math.isclose(named, 1.0, abs_tol=1e-9):
            raise ValueError(
                f"the shares named sum to {named:g} and the league-wide ones they leave "
                "are all 0: name shares summing to 1"
            )
        return dataclasses.replace(self, main_mix_by_side={}, **shares)

    def _check_references(self) -> None:
        refs = self.reference_opponents
        if not isinstance(refs, (list, tuple)):
            raise ValueError(
                f"reference_opponents must be a list of names, got {reprlib.repr(refs)}"
            )
        if len(refs) > MAX_REFERENCE_OPPONENTS:
            raise ValueError(
                f"reference_opponents names {len(refs)} opponents; at most "
                f"{MAX_REFERENCE_OPPONENTS}"
            )
        ids = [reference_id(name) for name in refs]  # raises on a malformed name
        if len(set(ids)) != len(ids):
            raise ValueError(f"reference_opponents names one twice: {reprlib.repr(refs)}")

    def reference_ids(self) -> tuple[str, ...]:
        """Module ids of the reference opponents (``ref=<name>``), in config order."""
        return tuple(reference_id(name) for name in self.reference_opponents)

    def learner_weights(self, sides: Iterable[str] = ("",)) -> dict[str, float]:
        """Trainable player -> probability of being an episode's learner (the mains of
        every side share `main_learner_share` evenly, the other players the rest)."""
        sides = tuple(sides)
        mains = self.player_ids(MAIN, sides)
        others = [p for p in self.player_ids(None, sides) if p not in mains]
        main_share = self.main_learner_share if others else 1.0
        weights = dict.fromkeys(mains, main_share / len(mains))
        weights.update(dict.fromkeys(others, (1.0 - main_share) / len(others) if others else 0.0))
        return weights

    def player_ids(self, role: str | None = None, sides: Iterable[str] = ("",)) -> tuple[str, ...]:
        """Trainable player ids, in creation order (side by side, mains first); a game
        with one side has the side "" and ids without a side."""
        counts = {
            MAIN: self.num_main_agents,
            MAIN_EXPLOITER: self.num_main_exploiters,
            LEAGUE_EXPLOITER: self.num_league_exploiters,
        }
        roles = ROLE_NAMES if role is None else (role,)
        return tuple(
            player_id(r, i, side) for side in sides for r in roles for i in range(counts[r])
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict of every field."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LeagueConfig:
        """Inverse of ``to_dict``; unknown keys are an error, not ignored,
        because a typo would otherwise silently run with a default."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown LeagueConfig fields: {unknown}")
        return cls(**data)


def _check_int(cfg: LeagueConfig, name: str, minimum: int) -> None:
    value = getattr(cfg, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an int, got {reprlib.repr(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


def _check_float(
    cfg: LeagueConfig,
    name: str,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
) -> None:
    _check_number(name, getattr(cfg, name), low, high, open_low, open_high)


def _check_number(
    name: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {reprlib.repr(value)}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and (value <= low if open_low else value < low):
        bound = ">" if open_low else ">="
        raise ValueError(f"{name} must be {bound} {low}, got {value}")
    if high is not None and (value >= high if open_high else value > high):
        bound = "<" if open_high else "<="
        raise ValueError(f"{name} must be {bound} {high}, got {value}")
