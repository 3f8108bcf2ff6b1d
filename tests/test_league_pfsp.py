"""PFSP weighting formulas and the probability fallback."""

from __future__ import annotations

import numpy as np
import pytest

from league.core.pfsp import WEIGHTINGS, pfsp_probabilities, pfsp_weights

X = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


def test_hard_is_one_minus_x_to_the_p() -> None:
    np.testing.assert_allclose(pfsp_weights(X, "hard"), [1.0, 0.5625, 0.25, 0.0625, 0.0])
    np.testing.assert_allclose(pfsp_weights(X, "hard", p=3.0), (1.0 - X) ** 3)
    np.testing.assert_allclose(pfsp_weights(X, "hard", p=1.0), 1.0 - X)


def test_var_is_x_times_one_minus_x() -> None:
    np.testing.assert_allclose(pfsp_weights(X, "var"), [0.0, 0.1875, 0.25, 0.1875, 0.0])


def test_linear_and_linear_capped() -> None:
    np.testing.assert_allclose(pfsp_weights(X, "linear"), [1.0, 0.75, 0.5, 0.25, 0.0])
    np.testing.assert_allclose(pfsp_weights(X, "linear_capped"), [0.5, 0.5, 0.5, 0.25, 0.0])


def test_probabilities_normalise_the_weights() -> None:
    probs = pfsp_probabilities([0.0, 0.5], "hard")
    np.testing.assert_allclose(probs, [0.8, 0.2])
    probs = pfsp_probabilities([0.2, 0.5, 0.9], "var")
    w = np.array([0.16, 0.25, 0.09])
    np.testing.assert_allclose(probs, w / w.sum())


@pytest.mark.parametrize(
    ("weighting", "rates"),
    [("hard", [1.0, 1.0, 1.0]), ("var", [0.0, 1.0, 0.0]), ("linear", [1.0, 1.0, 1.0])],
)
def test_vanishing_weights_fall_back_to_uniform(weighting: str, rates: list[float]) -> None:
    np.testing.assert_allclose(pfsp_probabilities(rates, weighting), [1 / 3] * 3)


def test_hard_favours_opponents_we_lose_to() -> None:
    probs = pfsp_probabilities([0.1, 0.5, 0.9])
    assert probs[0] > probs[1] > probs[2]


def test_empty_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        pfsp_probabilities([])


@pytest.mark.parametrize("bad", [[-0.1], [1.1], [float("nan")], [[0.5]]])
def test_bad_win_rates_are_errors(bad: list) -> None:
    with pytest.raises(ValueError):
        pfsp_probabilities(bad)


def test_unknown_weighting_and_bad_p_are_errors() -> None:
    with pytest.raises(ValueError, match="weighting"):
        pfsp_probabilities([0.5], "squared")
    with pytest.raises(ValueError, match="p must"):
        pfsp_probabilities([0.5], "hard", p=0.0)


def test_every_weighting_gives_a_distribution() -> None:
    rng = np.random.default_rng(0)
    rates = rng.random(50)
    for name in WEIGHTINGS:
        probs = pfsp_probabilities(rates, name)
        assert probs.shape == (50,)
        assert np.all(probs >= 0.0)
        assert probs.sum() == pytest.approx(1.0)
