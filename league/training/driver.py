"""Glue between the pure league (league.core) and a running RLlib Algorithm.

Once per training iteration `LeagueDriver.step`:

1. drains the match records buffered on the env runners (each leaves once; in a
   game of several sides with `cross_side_outcome: within_side`, cross-side matches
   re-ranked within each side) and folds them into payoff and ratings;
2. counts each player's env steps, asks the league which players snapshot and
   reset, exports new snapshots (safetensors + JSON) and resets weights on the
   learner (learner weights are read only when a snapshot or a reset is due);
3. retires snapshots beyond the budget, picks the active set (at most K frozen
   opponents) and builds the matchmaking plan on it;
4. with `ppo.magnet_league_snapshots` N, sends each main's learner the latest N
   snapshots of its side as its magnet (rlmodules.magnet), when they change;
5. in one actor call per env runner, adds/removes frozen modules (inference-only,
   env runners only, never learners) and installs the plan, so a plan never names
   a module its runner lacks. New snapshots go to the runners from memory; only a
   snapshot that re-enters the active set is read back from its folder.

Frozen snapshots stay off the learners; the learner's connector drops their
experience (rlmodules.league_learner), so weight syncs carry trainable players only.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_RL_MODULE
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from safetensors.numpy import load_file

from league.config import TrainConfig
from league.core.ids import MAIN, is_reference_id, side_of, upgrade_reference_ids
from league.core.league import League
from league.core.match import MatchRecord, ranked_within_sides
from league.core.matchmaking import MatchmakingPlan, build_plan, next_plan
from league.core.meta import meta_weights
from league.core.retirement import retirements
from league.run import RunDir
from league.snapshot import POLICY_PREFIX, WEIGHTS_FILE, player_metadata, save_snapshot
from league.training.algorithm import (
    frozen_module_spec,
    snapshot_module_spec,
    trainable_players,
)
from league.training.env_runner import LeagueEnvRunner, PlanMapping

SEEN_EPISODES_KEPT = 200_000


@dataclass
class LeagueStepReport:
    iteration: int
    matches: int
    new_snapshots: tuple[str, ...]
    resets: tuple[str, ...]
    retired: tuple[str, ...]
    active_set: tuple[str, ...]
    role_scores: dict[str, float] = field(default_factory=dict)
    nash: dict[str, float] = field(default_factory=dict)
    """The meta-solver's mixture of the league's snapshots, per side (league.core.meta:
    Nash for games of two teams, alpha-rank for more)."""
    records: list[MatchRecord] = field(default_factory=list, repr=False)


def count_metric(value: Any) -> int:
    """A metric as a count: RLlib reports NaN for modules with no samples (e.g. after
    an env runner restart)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    return int(number) if math.isfinite(number) else 0


def role_scores(records: list[MatchRecord], players: Mapping[str, Any]) -> dict[str, float]:
    """Per role (per side and role, `side.role`, in a game of several sides): mean score
    (win 1, draw 0.5) of its trainable players against others."""
    totals: dict[str, list[float]] = {}
    value = {"win": 1.0, "draw": 0.5, "loss": 0.0}
    for record in records:
        modules = set(record.modules.values())
        if len(modules) < 2:
            continue  # a player against itself says nothing
        for seat, module in record.modules.items():
            if module in players:
                side = side_of(module)
                role = f"{side}.{players[module].role}" if side else players[module].role
                totals.setdefault(role, []).append(value[record.outcomes[seat]])
    return {role: float(np.mean(v)) for role, v in totals.items()}


class LeagueDriver:
    """Runs the league beside an Algorithm built by `league.training.algorithm.build_algorithm_config`."""

    def __init__(self, algo: Any, cfg: TrainConfig, run: RunDir | Path, seed: int = 0):
        self.algo = algo
        self.cfg = cfg
        self.run = run if isinstance(run, RunDir) else RunDir(run)
        self.layout = cfg.layout
        self.league = League(cfg.league, self.layout)
        self.rng = np.random.default_rng(seed)
        self.seats = self.layout.seats
        self.players = trainable_players(cfg)
        self.active_set: tuple[str, ...] = ()
        self.plan: MatchmakingPlan = build_plan(self.league, ())
        self._seen: deque[str] = deque(maxlen=SEEN_EPISODES_KEPT)
        self._seen_set: set[str] = set()
        # Games of several sides may rank cross-side matches within each side.
        self._side_of_seat = (
            {seat: self.layout.side_of(seat) for seat in self.seats}
            if len(self.layout.sides) > 1 and cfg.league.cross_side_outcome == "within_side"
            else None
        )
        self._initial_weights = self.learner_weights(self.players)
        # Per main, the snapshot ids its learner holds as its magnet (none after a restore),
        # and their weights: a new set reuses them instead of reading the files again.
        self._magnet_members: dict[str, tuple[str, ...]] = {}
        self._magnet_weights: dict[str, Mapping[str, np.ndarray]] = {}
        self._specs = {side: snapshot_module_spec(cfg, side) for side in self.layout.sides}
        # Weights of snapshots taken since the last push: sent from memory, not disk.
        self._fresh_weights: dict[str, Mapping[str, np.ndarray]] = {}

    def seed_league(self) -> tuple[str, ...]:
        """Snapshot each main's initial weights, so PFSP and the exploiters have a
        past to play from the first iteration (AlphaStar seeds its league the same
        way with its supervised agents). Call once on a fresh league."""
        ids = tuple(
            self.league.take_snapshot(pid, iteration=0)
            for pid in self.league.cfg.player_ids(MAIN, self.layout.sides)
        )
        for sid in ids:
            self.export_snapshot(sid, self._initial_weights[self.league.snapshots[sid].player])
        self.active_set, self.plan = next_plan(self.league, self.rng)
        self.send_magnets()
        self.push()
        return ids

    # ---- Ray-side helpers --------------------------------------------------

    @property
    def _use_local_runner(self) -> bool:
        # With remote runners the local one never samples; keeping snapshots off it
        # keeps them out of RLlib's checkpoints (the league saves them itself).
        return self.cfg.resources.num_env_runners == 0

    def learner_weights(self, module_ids: list[str]) -> dict[str, dict[str, np.ndarray]]:
        weights = self.algo.learner_group.get_weights(module_ids=module_ids)
        return {m: {k: np.asarray(v) for k, v in weights[m].items()} for m in module_ids}

    def sync_to_runners(self, module_ids: list[str]) -> None:
        """Copy these players' inference-only weights from the learner to every env
        runner now. Not `EnvRunnerGroup.sync_weights`: it is asynchronous and drops
        the call while the iteration's own weight sync is still unanswered (one
        request in flight per runner and tag), which left a reset player's old
        weights on the runners for the next sample."""
        modules = [f"{COMPONENT_LEARNER}/{COMPONENT_RL_MODULE}/{m}" for m in module_ids]
        state = self.algo.learner_group.get_state(components=modules, inference_only=True)
        weights = state[COMPONENT_LEARNER][COMPONENT_RL_MODULE]

        def install(er: LeagueEnvRunner, w: Mapping = weights) -> None:
            er.module.set_state(w)

        self.algo.env_runner_group.foreach_env_runner(install, local_env_runner=True)

    def drain(self, iteration: int) -> list[MatchRecord]:
        """Every finished episode since the last drain, once (deduplicated by id)."""
        batches = self.algo.env_runner_group.foreach_env_runner(
            LeagueEnvRunner.drain_matches, local_env_runner=True
        )
        records = []
        for batch in batches:
            for match in batch:
                if match["episode_id"] in self._seen_set:
                    continue
                if len(self._seen) == self._seen.maxlen:
                    self._seen_set.discard(self._seen[0])
                self._seen.append(match["episode_id"])
                self._seen_set.add(match["episode_id"])
                records.append(MatchRecord(**match, iteration=iteration))
        if self._side_of_seat is not None:
            records = ranked_within_sides(records, self._side_of_seat)
        return records

    def push(self) -> None:
        """Make every env runner hold exactly the trainable players plus the active
        set, and install the current plan, in one actor call per runner group.

        Runners are diffed one by one, so a runner that RLlib restarted after a
        failure (it comes back with the trainable players only) gets the whole
        active set again, while healthy runners receive only what changed.
        """
        wanted = set(self.active_set)
        mapping = PlanMapping(self.plan, self.seats)
        holdings = self.algo.env_runner_group.foreach_env_runner(
            LeagueEnvRunner.module_ids, local_env_runner=self._use_local_runner
        )
        groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[int]] = {}
        for index, modules in holdings:
            frozen = set(modules) - set(self.players)
            key = (tuple(sorted(wanted - frozen)), tuple(sorted(frozen - wanted)))
            groups.setdefault(key, []).append(index)
        for (missing, extra), indices in groups.items():
            payload = {sid: self._frozen_module(sid) for sid in missing}

            def update(er: LeagueEnvRunner, p: dict = payload, r: tuple = extra) -> list[str]:
                return er.update_league(add=p, remove=r, mapping=mapping)

            group = self.algo.env_runner_group
            if 0 in indices:
                update(group.local_env_runner)
            remote = [i for i in indices if i != 0]
            if remote:  # never an empty list: RLlib reads [] as "all runners"
                group.foreach_env_runner(update, local_env_runner=False, remote_worker_ids=remote)
        self._fresh_weights.clear()

    def _frozen_module(self, module_id: str) -> tuple[RLModuleSpec, Mapping[str, np.ndarray]]:
        """What a runner needs to hold a frozen member: its spec and its weights
        (a reference opponent is scripted and has none)."""
        if is_reference_id(module_id):
            return frozen_module_spec(self.cfg, module_id), {}
        return self._specs[side_of(module_id)], self.snapshot_weights(module_id)

    # ---- snapshots -----------------------------------------------------------

    def snapshot_weights(self, snapshot_id: str) -> Mapping[str, np.ndarray]:
        """Policy weights of a snapshot: from memory if just taken, else from the
        file the league wrote itself (not a user's file: no `load_policy` checks)."""
        if snapshot_id in self._fresh_weights:
            return self._fresh_weights[snapshot_id]
        return load_file(str(self.run.snapshot_dir(snapshot_id) / WEIGHTS_FILE))

    def export_snapshot(self, snapshot_id: str, weights: Mapping[str, np.ndarray]) -> None:
        """Write a new snapshot's folder and keep its policy weights for the next push."""
        snap = self.league.snapshots[snapshot_id]
        meta = player_metadata(self.cfg.game_id, self.cfg.model.network(), snap.player, snap.step)
        meta.version = snap.version
        meta.parent = snap.parent
        meta.rating = snap.rating
        save_snapshot(self.run.snapshot_dir(snapshot_id), weights, meta)
        self._fresh_weights[snapshot_id] = {
            k: v for k, v in weights.items() if k.startswith(POLICY_PREFIX)
        }

    def send_magnets(self) -> None:
        """Give each main's learner the latest `magnet_league_snapshots` snapshots of its
        side as its magnet, when they changed (before `push` clears fresh weights)."""
        count = self.cfg.ppo.magnet_league_snapshots
        if not count:
            return
        for main in self.cfg.league.player_ids(MAIN, self.layout.sides):
            side = side_of(main)
            latest = sorted(
                (s for s in self.league.snapshots.values() if side_of(s.id) == side),
                key=lambda s: (s.iteration, s.step, s.id),
            )[-count:]
            ids = tuple(s.id for s in latest)
            if not ids or self._magnet_members.get(main) == ids:
                continue
            held = self._magnet_weights
            weights_by_id = {
                sid: held[sid] if sid in held else self.snapshot_weights(sid) for sid in ids
            }
            members = list(weights_by_id.values())

            def install(learner: Any, player: str = main, weights: list = members) -> None:
                learner.set_league_magnet(player, weights)

            for call in self.algo.learner_group.foreach_learner(install):
                if not call.ok:  # a remote learner's error comes back as a value
                    raise call.get()
            self._magnet_members[main] = ids
            held.update(weights_by_id)
            kept = set().union(*self._magnet_members.values())  # every main's members
            self._magnet_weights = {sid: w for sid, w in held.items() if sid in kept}

    # ---- one iteration -------------------------------------------------------

    def step(self, iteration: int, result: Mapping[str, Any]) -> LeagueStepReport:
        records = self.drain(iteration)
        used = self.league.record(records)
        sampled = result.get("env_runners", {}).get("num_module_steps_sampled", {}) or {}
        self.league.add_steps({p: count_metric(sampled.get(p)) for p in self.players})

        decision = self.league.decide(self.rng)
        # Learner weights cross the wire only when a snapshot or a reset needs them.
        wanted = set(decision.snapshots)
        wanted |= {r.source for r in decision.resets if r.source in self.league.players}
        current = self.learner_weights(sorted(wanted)) if wanted else {}
        new_ids = self.league.apply(decision, iteration)
        for sid in new_ids:
            self.export_snapshot(sid, current[self.league.snapshots[sid].player])
        reset_players = []
        for reset in decision.resets:
            source = self._initial_weights[reset.player] if reset.source is None else None
            if source is None:
                source = current.get(reset.source) or self.snapshot_weights(reset.source)
            self.algo.learner_group.set_weights({reset.player: source})
            reset_players.append(reset.player)
        if reset_players:
            self.sync_to_runners(reset_players)

        retired = retirements(self.league)
        self.league.retire(retired)
        # Their folders stay until the next checkpoint (loop.sweep_retired_snapshots):
        # the store's state at the last checkpoint, which a resume restores, still
        # names them.

        self.active_set, self.plan = next_plan(
            self.league, self.rng, self.active_set, iteration=iteration
        )
        self.send_magnets()
        self.push()
        active = self.active_set
        return LeagueStepReport(
            iteration=iteration,
            matches=used,
            new_snapshots=new_ids,
            resets=tuple(reset_players),
            retired=tuple(retired),
            active_set=active,
            role_scores=role_scores(records, self.league.players),
            nash=self.meta_mixture(),
            records=records,
        )

    def meta_mixture(self) -> dict[str, float]:
        """The league's mixture over its snapshots, per side: Nash where the game has
        two teams, alpha-rank where it has more (league.core.meta)."""
        solver = "nash" if len(self.layout.teams) == 2 else "alpharank"
        sides = {side: self.league.view().snapshot_ids(side=side) for side in self.layout.sides}
        return meta_weights(self.league.payoff, sides, solver)

    # ---- state -----------------------------------------------------------------

    def get_state(self) -> dict[str, Any]:
        """The league state (as League.get_state) plus the driver's own: active set
        and matchmaking RNG. This is what the league store commits each iteration."""
        return {
            **self.league.get_state(),
            "driver": {"active_set": list(self.active_set), "rng": self.rng.bit_generator.state},
        }

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore league state and put the active set back on the env runners."""
        state = upgrade_reference_ids(state)  # stored before reference ids had no ':'
        league_state = {k: v for k, v in state.items() if k != "driver"}
        self.league = League.from_state(self.cfg.league, league_state, self.layout)
        extra = state.get("driver", {})
        if "rng" in extra:
            self.rng.bit_generator.state = extra["rng"]
        wanted = extra.get("active_set", [])
        kept = (s for s in wanted if s in self.league.snapshots)
        # The config's reference opponents are always loaded (ones it dropped are not).
        self.active_set = (*self.league.references, *kept)
        self.plan = build_plan(self.league, self.active_set)
        self.push()
