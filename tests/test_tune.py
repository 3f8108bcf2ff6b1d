"""`league tune`: short runs around a game's defaults, scored by the exact measure."""

from __future__ import annotations

import json

import pytest

from league.cli import main

TINY = [
    "--resources.num-env-runners", "0", "--ppo.train-batch-size", "128",
    "--ppo.minibatch-size", "64", "--ppo.num-epochs", "1", "--model.hidden-sizes", "16",
    "--evaluation.eval-interval", "0", "--no-run.dashboard",
]  # fmt: skip


def test_tune_scores_each_trial_exactly_and_writes_a_config_of_the_best(
    ray_session, tmp_path, capsys
):
    from league.config import resolve_config
    from league.snapshot import load_policy
    from league.tools.openspiel_exploitability import exact_measure

    out = tmp_path / "tune"
    argv = ["tune", "--env", "kuhn_poker", "--trials", "2", "--minutes", "0.2"]
    # A flag fixes its setting: the search leaves the learning rate alone.
    assert main([*argv, "--out", str(out), "--ppo.lr", "0.001", *TINY]) == 0
    printed = capsys.readouterr().out
    assert (
        "trial 0/1: the defaults" in printed and "train with it: league train --config" in printed
    )

    rows = [json.loads(line) for line in (out / "tune.jsonl").read_text().splitlines()]
    assert [r["trial"] for r in rows] == [0, 1]
    assert rows[0]["settings"] == {}
    varied = rows[1]["settings"]
    assert set(varied["ppo"]) == {"entropy_coeff"} and "main_learner_share" in varied["league"]
    for row in rows:
        run = out / f"trial_{row['trial']:03d}"
        config = json.loads((run / "config.json").read_text())
        assert config["ppo"]["lr"] == 0.001  # the fixed flag reached every trial
        for group, values in row["settings"].items():
            for name, value in values.items():
                assert config[group][name] == value  # the sampled settings trained
        main_0 = load_policy(run / "players" / "main_0", game="kuhn_poker")
        assert row["measure"] == "exploitability" and row["env_steps"] > 0
        assert row["score"] == pytest.approx(exact_measure("kuhn_poker", main_0)[1])

    best = min(rows, key=lambda r: r["score"])
    cfg = resolve_config(config_file=out / "best.yaml")
    assert cfg.game_id == "kuhn_poker" and cfg.ppo.lr == 0.001
    if best["trial"] == 1:
        assert cfg.ppo.entropy_coeff == varied["ppo"]["entropy_coeff"]
        assert cfg.league.main_learner_share == varied["league"]["main_learner_share"]
    else:
        assert (
            cfg.ppo.entropy_coeff
            == resolve_config({"game": {"env": "kuhn_poker"}}).ppo.entropy_coeff
        )
    assert cfg.run.run_dir != str(out / f"trial_{best['trial']:03d}")  # run settings left out


@pytest.mark.parametrize(
    ("flags", "complaint"),
    [
        (["--env", "kuhn_poker", "--trials", "1"], "--trials must be 2..100"),
        (["--env", "kuhn_poker", "--minutes", "nan"], "--minutes must be"),
        (["--env", "kuhn_poker", "--trials", "50", "--minutes", "1"], "at least 0.1"),
        (["--env", "tictactoe"], "does not come from OpenSpiel"),
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


def test_trials_vary_the_knobs_around_the_defaults_and_keep_what_the_user_fixed():
    from league.config import resolve_config
    from league.training.tune import sample_trials

    base = resolve_config({"game": {"env": "leduc_poker"}})  # descent: lr and entropy anneal
    trials = sample_trials(base, fixed=set(), trials=4, seed=0)
    assert trials[0].settings == {} and len(trials) == 4
    assert trials == sample_trials(base, fixed=set(), trials=4, seed=0)  # seeded
    for trial in trials[1:]:
        ppo = trial.settings["ppo"]
        # A schedule keeps its shape: its end moves by the same factor as its start.
        factor = ppo["lr"] / base.ppo.lr
        assert 2**-1.5 - 0.01 <= factor <= 2**1.5 + 0.01
        assert ppo["lr_final"] / base.ppo.lr_final == pytest.approx(factor, rel=0.01)
        factor = ppo["entropy_coeff"] / base.ppo.entropy_coeff
        assert ppo["entropy_coeff_final"] / base.ppo.entropy_coeff_final == pytest.approx(
            factor, rel=0.01
        )
        assert 0.5 <= trial.settings["league"]["main_learner_share"] <= 0.95
    assert len({t.settings["ppo"]["lr"] for t in trials[1:]}) == 3

    fixed = sample_trials(base, fixed={"ppo.lr", "ppo.entropy_coeff_final"}, trials=3, seed=1)
    for trial in fixed[1:]:
        # lr fixed: its knob (lr_final with it) is left alone; a fixed end stays.
        assert set(trial.settings["ppo"]) == {"entropy_coeff"}
    selfplay = resolve_config({"game": {"env": "leduc_poker"}, "run": {"mode": "selfplay"}})
    assert all("league" not in t.settings for t in sample_trials(selfplay, set(), 3, seed=0))
