"""The generated reference pages match the code, and every setting has help text."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from league.config import TrainConfig
from league.reference_docs import PAGES, configuration_page, missing_help

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("name", sorted(PAGES))
def test_generated_page_is_current(name: str) -> None:
    assert (DOCS / name).read_text() == PAGES[name](), (
        f"docs/{name} is stale: run .venv/bin/python scripts/gen_docs.py"
    )


def test_every_setting_has_help_text() -> None:
    assert missing_help() == []


def test_a_setting_without_help_is_found() -> None:
    """The check is not vacuous: a field with empty help is reported by its key."""

    @dataclasses.dataclass
    class Probe(TrainConfig):
        extra_knob: int = dataclasses.field(default=1, metadata={"help": " "})

    import league.reference_docs as reference_docs

    original = reference_docs.TrainConfig
    reference_docs.TrainConfig = Probe
    try:
        assert missing_help() == ["extra_knob"]
    finally:
        reference_docs.TrainConfig = original


def test_configuration_page_lists_every_flag_with_its_default() -> None:
    page = configuration_page()
    assert "| `ppo.lr` | `--ppo.lr` |" in page
    assert "| `league.active_set_size` | `--league.active-set-size` |" in page
    assert "`league:` (flags `--league.FIELD`)" in page


QUALITY_ROW = {
    "date": "2026-12-04T00:00:00Z",
    "commit": "abc1234",
    "game": "simple_tag",
    "run": "league seed 0",
    "minutes": 15.0,
    "command": "scripts/bench_league_quality.py --games simple_tag",
    "figures": {},
}


def test_a_quality_row_names_the_flags_it_trained_with() -> None:
    from league.reference_docs import _quality_table

    plain = QUALITY_ROW
    flagged = {**plain, "command": plain["command"] + " --extra --league.pfsp-p 1.5"}
    assert "| league seed 0 |" in _quality_table([plain])[-1]
    assert "| league seed 0 (`--league.pfsp-p 1.5`) |" in _quality_table([flagged])[-1]


def test_a_reused_run_is_labelled_with_its_own_flags_and_commit() -> None:
    from league.reference_docs import _quality_table

    command = QUALITY_ROW["command"] + " --extra --league.pfsp-p 1.5"
    reused = {**QUALITY_ROW, "command": command, "trained": {"commit": "def5678", "extra": []}}
    line = _quality_table([reused])[-1]
    assert "| league seed 0 |" in line and "pfsp" not in line
    assert f"| {QUALITY_ROW['commit']} (trained at def5678) |" in line
    unknown = _quality_table([{**reused, "trained": None}])[-1]
    assert "| league seed 0 (reused: its flags were not recorded) |" in unknown


def test_a_quality_row_prints_a_count_whole_and_a_measure_to_four_places() -> None:
    from league.reference_docs import _quality_table

    row = {**QUALITY_ROW, "figures": {"chips per hand": 0.06321, "deals": 5000.0}}
    assert "chips per hand 0.0632; deals 5000 |" in _quality_table([row])[-1]
