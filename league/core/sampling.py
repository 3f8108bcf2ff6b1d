"""Weighted sampling: how league code draws one item from a discrete distribution."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence

import numpy as np


def sample_index(weights: Sequence[float], rng: np.random.Generator) -> int:
    """Index ``i`` with probability ``weights[i] / sum(weights)``, from one ``rng.random()``."""
    cumulative = list(itertools.accumulate(weights))
    index = bisect.bisect_right(cumulative, rng.random() * cumulative[-1])
    return min(index, len(weights) - 1)
