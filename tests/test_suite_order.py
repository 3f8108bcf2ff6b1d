"""The suite's own scheduling: the files listed to run first exist."""

from __future__ import annotations

from pathlib import Path

from conftest import LONGEST_FIRST


def test_every_file_listed_longest_first_exists_once():
    here = Path(__file__).parent
    missing = [name for name in LONGEST_FIRST if not (here / name).is_file()]
    assert not missing, f"renamed or removed: {missing} (tests/conftest.py: LONGEST_FIRST)"
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
