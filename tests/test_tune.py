"""`league tune`: population-based training (Ray Tune's PBT) of league runs on one game."""

from __future__ import annotations

import json
import math

import pytest

from league.cli import main

TINY = [
    "--resources.num-env-runners", "0", "--ppo.train-batch-size", "128",
    "--ppo.minibatch-size", "64", "--ppo.num-epochs", "1", "--model.hidden-sizes", "16",
    "--evaluation.eval-interval", "0", "--no-run.dashboard",
]  # fmt: skip


def test_tune_copies_the_better_trial_into_the_worse_perturbed_and_writes_the_best(
    ray_session, tmp_path, capsys
):
    from league.config import resolve_config
    from league.run import RunDir
    from league.snapshot import load_policy
    from league.tools.openspiel_exploitability import exact_measure
    from league.training.tune import KNOBS, scored_policy_dirs

    out = tmp_path / "tune"
    argv = ["tune", "--env", "kuhn_poker", "--trials", "2", "--rounds", "2", "--minutes", "0.8"]
    # A flag fixes its setting: the population leaves the learning rate alone.
    argv += ["--score-snapshots", "2", "--league.snapshot-step-budget", "500"]
    assert main([*argv, "--out", str(out), "--ppo.lr", "0.001", *TINY]) == 0
    printed = capsys.readouterr().out
    assert "population-based training of 2 trials" in printed
    assert "mean over it and its 1 latest snapshots" in printed
    assert "train with it: league train --config" in printed

    rows = [json.loads(line) for line in (out / "tune.jsonl").read_text().splitlines()]
    assert sorted((r["trial"], r["round"]) for r in rows) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    first = {r["trial"]: r for r in rows if r["round"] == 1}
    last = {r["trial"]: r for r in rows if r["round"] == 2}
    defaults = resolve_config({"game": {"env": "kuhn_poker"}})
    for knob in KNOBS:
        if knob.group in first[0]["settings"] and knob.name in first[0]["settings"][knob.group]:
            assert first[0]["settings"][knob.group][knob.name] == pytest.approx(
                knob.default(defaults), rel=0.01
            )  # trial 0 starts with the defaults
    assert all("lr" not in r["settings"].get("ppo", {}) for r in rows)
    for row in rows:
        assert row["measure"] == "exploitability" and 0 <= row["score"] < 0.5
        league = row["settings"]["league"]
        assert math.isclose(sum(v for k, v in league.items() if k.endswith("_prob")), 1.0)

    # After round 1 the worse trial continues from a copy of the better one's run,
    # with that trial's settings perturbed; the better one goes on as it was.
    better, worse = sorted(first, key=lambda t: first[t]["score"])
    assert last[worse]["copied_from"] == f"trial_{better:03d}"
    assert last[better]["copied_from"] == ""
    assert last[worse]["settings"] != first[better]["settings"]
    assert last[better]["settings"] == first[better]["settings"]
    assert last[worse]["env_steps"] > first[better]["env_steps"]  # went on, did not restart
    for trial, row in last.items():
        run = out / "runs" / f"trial_{trial:03d}"
        # config.json is the run's first: the worse trial's run dir is the better's copy.
        config = json.loads((run / "config.json").read_text())
        for group, values in first[better]["settings"].items():
            for name, value in values.items():
                assert config[group][name] == pytest.approx(value)
        # What the learners trained with last, as RLlib reports it: the row's settings.
        progress = (run / "progress.jsonl").read_text().splitlines()
        learner = json.loads(progress[-1])["learners"]["main_0"]
        assert learner["default_optimizer_learning_rate"] == pytest.approx(0.001)  # fixed flag
        assert learner["curr_entropy_coeff"] == pytest.approx(
            row["settings"]["ppo"]["entropy_coeff"]
        )
        # The score: the mean over the main and its latest snapshot, as they were then.
        scored = scored_policy_dirs(RunDir(run), 2)
        assert [p.name for p in scored][0] == "main_0" and "@" in scored[1].name
        expected = [
            exact_measure("kuhn_poker", load_policy(p, game="kuhn_poker"))[1] for p in scored
        ]
        assert row["score"] == pytest.approx(sum(expected) / 2)

    best = min(last.values(), key=lambda r: r["score"])
    cfg = resolve_config(config_file=out / "best.yaml")
    assert cfg.game_id == "kuhn_poker" and cfg.ppo.lr == 0.001
    assert cfg.ppo.entropy_coeff == pytest.approx(best["settings"]["ppo"]["entropy_coeff"])
    assert cfg.league.main_learner_share == pytest.approx(
        best["settings"]["league"]["main_learner_share"]
    )
    assert not str(cfg.run.run_dir).startswith(str(out))  # tune's run settings left out


@pytest.mark.parametrize(
    ("flags", "complaint"),
    [
        (["--env", "kuhn_poker", "--trials", "1"], "--trials must be 2..100"),
        (["--env", "kuhn_poker", "--rounds", "0"], "--rounds must be 1..1000"),
        (["--env", "kuhn_poker", "--minutes", "nan"], "--minutes must be"),
        (["--env", "kuhn_poker", "--trials", "50", "--minutes", "1"], "at least 0.1"),
        (["--env", "tictactoe", "--measure", "exact"], "does not come from OpenSpiel"),
        (["--env", "tictactoe", "--opponents", "nobody"], "--opponents: unknown opponent"),
        (["--env", "tictactoe", "--score-games", "0"], "--score-games must be"),
        (["--env", "kuhn_poker", "--score-snapshots", "0"], "--score-snapshots must be 1..100"),
        (["--env", "kuhn_poker", "--run-dir", "elsewhere"], "--run.run-dir"),
        (["--env", "kuhn_poker", "--stop-minutes", "3"], "--run.stop-minutes"),
    ],
)
def test_tune_refuses_bad_input_in_one_line_and_writes_nothing(flags, complaint, tmp_path, capsys):
    out = tmp_path / "tune"
    assert main(["tune", *flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("league: error:") and complaint in err, err
    assert not out.exists()


def test_tune_never_writes_into_a_folder_that_holds_something(tmp_path, capsys):
    out = tmp_path / "tune"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["tune", "--env", "kuhn_poker", "--out", str(out)]) == 2
    assert "tune never overwrites" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_a_game_without_an_exact_measure_is_scored_by_win_rate_against_its_references():
    from league.training.tune import base_config

    cfg, measure, pool = base_config({"game": {"env": "tictactoe"}}, None, "auto", (), 10)
    assert cfg.game_id == "tictactoe" and measure == "win_rate"
    assert pool == ("random", "minimax")
    _, measure, pool = base_config({"game": {"env": "kuhn_poker"}}, None, "auto", (), 10)
    assert measure == "exact" and pool == ()
    _, measure, pool = base_config({"game": {"env": "kuhn_poker"}}, None, "win_rate", (), 10)
    assert measure == "win_rate" and pool == ("random",)


def test_knobs_start_around_the_defaults_keep_schedules_and_role_mixes_whole():
    from league.config import TrainConfig, resolve_config
    from league.training.tune import initial_values, tuned_knobs

    base = resolve_config({"game": {"env": "leduc_poker"}})  # lr, entropy anneal; magnet on
    knobs = tuned_knobs(base, fixed=set())
    keys = {k.key for k in knobs}
    assert {"ppo.lr", "ppo.entropy_coeff", "ppo.magnet_coeff"} <= keys
    assert {"league.main_learner_share", "league.main_self_play_prob"} <= keys
    starts = initial_values(base, knobs, trials=4, seed=0)
    assert starts == initial_values(base, knobs, trials=4, seed=0)  # seeded
    assert starts[0] == {k.key: pytest.approx(k.default(base), rel=0.01) for k in knobs}
    assert len({s["ppo.lr"] for s in starts}) == 4
    for values in starts[1:]:
        settings = {}
        for knob in knobs:
            low, high = knob.bounds(base)
            assert low <= values[knob.key] * 1.001 and values[knob.key] <= high * 1.001
            for group, named in [(knob.group, knob.settings(base, values[knob.key]))]:
                settings.setdefault(group, {}).update(named)
        # A schedule keeps its shape: its end moves by the same factor as its start.
        factor = settings["ppo"]["lr"] / base.ppo.lr
        assert settings["ppo"]["lr_final"] / base.ppo.lr_final == pytest.approx(factor, rel=0.01)
        # The role mix still sums to 1, the other roles in their old proportions.
        league = settings["league"]
        assert math.isclose(sum(v for k, v in league.items() if k.endswith("_prob")), 1.0)
        TrainConfig.from_dict(
            {"game": {"env": "leduc_poker"}, **settings}, source="test"
        )  # every start is a valid config
    # PBT's x1.2 may step past a bound: the setting stays within it.
    share = next(k for k in knobs if k.name == "main_learner_share")
    assert share.settings(base, 2.0)["main_learner_share"] == 0.95

    fixed = tuned_knobs(base, fixed={"ppo.lr", "league.main_pfsp_prob"})
    assert {k.key for k in fixed} == keys - {"ppo.lr", "league.main_self_play_prob"}
    selfplay = resolve_config({"game": {"env": "leduc_poker"}, "run": {"mode": "selfplay"}})
    assert all(k.group != "league" for k in tuned_knobs(selfplay, set()))
    kuhn = resolve_config({"game": {"env": "kuhn_poker"}})  # no magnet, no entropy schedule
    assert {"ppo.magnet_coeff", "ppo.entropy_coeff_final"}.isdisjoint(
        k.key for k in tuned_knobs(kuhn, set())
    )


def test_a_round_is_scored_over_the_main_and_its_latest_snapshots(tmp_path):
    from league.run import RunDir
    from league.training.tune import scored_policy_dirs

    run = RunDir(tmp_path / "run")
    for name in ("main_0@1", "main_0@2", "main_0@10", "main_exploiter_0@11"):
        (run.snapshots / name).mkdir(parents=True)
    main = run.player_dir("main_0")
    assert scored_policy_dirs(run, 1) == [main]
    # Versions by number (10 after 2), the main's own only.
    assert scored_policy_dirs(run, 3) == [
        main,
        run.snapshots / "main_0@2",
        run.snapshots / "main_0@10",
    ]
    assert len(scored_policy_dirs(run, 100)) == 4  # fewer snapshots than asked: all of them
    assert run.latest_snapshot_dirs("main_exploiter_0", 2) == [
        run.snapshots / "main_exploiter_0@11"
    ]
    assert run.latest_snapshot_dirs("main_0", 0) == []


def test_trials_side_by_side_counts_every_resource_a_trial_asks_for():
    from league.training.tune import trials_side_by_side

    # The driver and one env runner: 2 CPUs; 4 CPUs hold two such trials.
    assert trials_side_by_side({"CPU": 2.0}, {"CPU": 4.0, "memory": 1e9}, 5) == 2
    assert trials_side_by_side({"CPU": 2.0}, {"CPU": 40.0}, 5) == 5  # no more than there are
    assert trials_side_by_side({"CPU": 2.0}, {"CPU": 1.0}, 5) == 1  # Tune waits: one at a time
    # Env runners pinned to a custom resource one node offers once: that decides.
    wants = {"CPU": 2.0, "runner_node": 1.0}
    assert trials_side_by_side(wants, {"CPU": 8.0, "runner_node": 1.0}, 4) == 1
    assert trials_side_by_side(wants, {"CPU": 8.0, "runner_node": 3.0}, 4) == 3
    assert trials_side_by_side({"CPU": 1.0, "GPU": 1.0}, {"CPU": 8.0}, 4) == 1


def test_a_trial_that_fails_inside_ends_in_one_line_with_its_traceback_kept(tmp_path):
    """A user's game that breaks in a trial: one `league: error:` line with the cause
    and the trial's traceback file, exit 70, no traceback on the console."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    tests = Path(__file__).parent
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # its own Ray
    env["PYTHONPATH"] = os.pathsep.join([str(tests), env.get("PYTHONPATH", "")])
    out = tmp_path / "tune"
    argv = ["tune", "--env", "toy_games:crashing_nim", "--trials", "2", "--rounds", "1"]
    argv += ["--minutes", "0.3", "--out", str(out), *TINY, "--resources.num-cpus", "1"]
    proc = subprocess.run(
        [sys.executable, "-m", "league.cli", *argv],
        capture_output=True, text=True, timeout=300, cwd=tests, env=env,
    )  # fmt: skip
    assert proc.returncode == 70, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("league: error:")]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert "a trial failed: RuntimeError: the rules of this game broke" in lines[0]
    assert "more detail" not in lines[0]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    log = Path(lines[0].rsplit("(traceback: ", 1)[1].rstrip(")"))
    assert log.is_relative_to(out) and "more detail" in log.read_text()


def test_the_console_log_pickles_while_ray_has_swapped_print(tmp_path, monkeypatch) -> None:
    """Tune pickles its callbacks with the console log in them. Ray's tqdm_ray swaps
    `builtins.print` in the driver when a worker's progress bar first reports; `print`
    itself then no longer pickles, the module's `print_line` does (a flaky failure of
    the cluster's Tune test until it was the default)."""
    import builtins

    from ray import cloudpickle
    from ray.experimental import tqdm_ray

    from league.training.tune import ProgressCallback, print_line

    original = builtins.print
    monkeypatch.setattr(builtins, "print", original)  # restored after the test
    monkeypatch.setattr(tqdm_ray, "_manager", None)  # a driver no bar has reported to yet
    monkeypatch.setenv("RAY_TQDM_PATCH_PRINT", "1")
    tqdm_ray.instance()  # what the first progress bar's report does in the driver
    assert builtins.print is not original
    with pytest.raises(Exception, match="not the same object"):
        cloudpickle.dumps(ProgressCallback(tmp_path / "tune.jsonl", original))
    restored = cloudpickle.loads(cloudpickle.dumps(ProgressCallback(tmp_path / "t", print_line)))
    assert type(restored).__name__ == "_Progress"
