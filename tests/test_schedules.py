"""Schedules: shape, endpoints, monotonicity, and clear errors."""

import numpy as np
import pytest

from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.schedules import SCHEDULES, kiwaki_aihara, make_schedule, power, validate_schedule


@pytest.mark.parametrize("name", sorted(SCHEDULES))
@pytest.mark.parametrize("num_steps", [4, 7, 100, 2001])
def test_every_schedule_is_valid(name, num_steps):
    betas = make_schedule(name, num_steps)
    assert betas.shape == (num_steps + 1,) and betas.dtype == np.float64
    assert betas[0] == 0.0 and betas[-1] == 1.0
    assert np.all(np.diff(betas) > 0)


def test_one_step_schedules_are_plain_importance_sampling():
    for name in ("linear", "power", "geometric", "sigmoid"):
        np.testing.assert_array_equal(make_schedule(name, 1), [0.0, 1.0])


def test_kiwaki_aihara_puts_a_quarter_of_the_steps_in_each_band():
    betas = kiwaki_aihara(400)
    band = np.searchsorted([0.1, 0.25, 0.5, 1.0], betas[1:], side="left")  # (0, .1], (.1, .25], ...
    counts = np.bincount(band, minlength=4)
    np.testing.assert_array_equal(counts, [100, 100, 100, 100])
    with pytest.raises(AnnealingError,
                       match="num_steps must be an integer >= 4 for the 4-band kiwaki_aihara "
                             "schedule, got 3"):
        kiwaki_aihara(3)


def test_power_is_dense_near_zero():
    betas = power(100, exponent=4.0)
    np.testing.assert_allclose(betas, np.linspace(0, 1, 101) ** 4)


@pytest.mark.parametrize(
    "betas, match",
    [
        ([0.0, 0.5, 0.5, 1.0], r"strictly increasing, but beta\[1\] = 0.5 >= beta\[2\] = 0.5"),
        ([0.0, 0.7, 0.3, 1.0], "strictly increasing"),
        ([0.1, 0.5, 1.0], "start at exactly 0 and end at exactly 1, got 0.1"),
        ([0.0, 0.5, 0.99], "start at exactly 0 and end at exactly 1"),
        ([0.0, np.nan, 1.0], "non-finite"),
        ([[0.0, 1.0]], "1-D array"),
        ([0.0], "at least 2"),
        ("abc", (r"schedule must be one of \['adaptive', .*'sigmoid'\] or an array of inverse "
                 r"temperatures, got 'abc'\.")),
    ],
)
def test_bad_schedules_raise(betas, match):
    with pytest.raises(AnnealingError, match=match):
        make_schedule(betas, None) if not isinstance(betas, str) else make_schedule(betas, 10)


@pytest.mark.parametrize("num_steps, match", [(0, "at least 1"), (2.5, "positive integer"),
                                              (True, "positive integer"), ("10", "positive integer")])
def test_bad_num_steps(num_steps, match):
    with pytest.raises(AnnealingError, match=match):
        make_schedule("linear", num_steps)


def test_array_schedule_must_agree_with_num_steps():
    with pytest.raises(AnnealingError, match="num_steps=5 disagrees with the schedule array"):
        make_schedule([0.0, 0.5, 1.0], 5)
    np.testing.assert_array_equal(validate_schedule([0, 0.25, 1]), [0.0, 0.25, 1.0])
