r"""The driver in both directions, on a one-dimensional Gaussian with a closed form.

Base :math:`p_0 = \mathcal N(0, 1)` (normalized, :math:`Z_0 = 1`), target
:math:`f_1(x) = e^{-x^2 / (2 \sigma^2)}` with :math:`Z_1 = \sigma \sqrt{2\pi}`. A backward run
from exact draws of :math:`p_1 = \mathcal N(0, \sigma^2)` is AIS from :math:`p_1` to
:math:`p_0`: its weights have mean :math:`Z_0 / Z_1` exactly, so
:math:`\log Z_0 - \log \overline{w}` is a stochastic upper bound on :math:`\log Z_1`, the
mirror of the forward run's lower bound. With few temperatures and two particles per
replicate both Jensen gaps are many standard errors wide, so the tests tell an unbiased
:math:`\hat Z` from a biased :math:`\log \hat Z` (and either from a wrong sign).
"""

from __future__ import annotations

import numpy as np
import pytest

from pymc_anneal.driver import RunOptions, TuningOptions, run_annealing
from pymc_anneal.estimators import log_mean_exp
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.paths import Path
from pymc_anneal.schedules import make_schedule

SIGMA = 0.5
LOG_Z = float(np.log(SIGMA * np.sqrt(2 * np.pi)))
REPLICATES, DRAWS, NUM_STEPS = 2000, 2, 4
TUNING = TuningOptions(fixed={"step_size": 0.4}, mass_matrix="identity")


def _path():
    def build(x):
        log_base = -0.5 * x[:, 0] ** 2 - 0.5 * np.log(2 * np.pi)
        return log_base, -0.5 * (x[:, 0] / SIGMA) ** 2 - log_base

    return Path(num_dims=1, build_log_densities=build,
                sample_base=lambda rng, n: rng.standard_normal((n, 1)), name="gaussian-1d")


PATH = _path()


def _run(direction, seed, initial_positions=None):
    return run_annealing(PATH, betas=make_schedule("linear", NUM_STEPS), draws=DRAWS,
                         chains=REPLICATES, rng=np.random.default_rng(seed), direction=direction,
                         initial_positions=initial_positions,
                         options=RunOptions(tuning=TUNING, progressbar=False))


@pytest.fixture(scope="module")
def backward():
    rng = np.random.default_rng(2024)
    exact = SIGMA * rng.standard_normal((REPLICATES * DRAWS, 1))  # exact draws of p_1
    return _run("backward", 7, exact)


def test_backward_weights_are_unbiased_for_the_inverse_ratio(backward):
    """mean(w) is unbiased for Z_0 / Z_1, replicate by replicate."""
    z_hat = np.exp(log_mean_exp(backward.log_weights, axis=1) + LOG_Z)  # (Z_0/Z_1)-hat * Z_1
    se = z_hat.std(ddof=1) / np.sqrt(z_hat.size)
    assert abs(z_hat.mean() - 1.0) < 3 * se, (z_hat.mean(), se)


def test_backward_log_estimate_is_an_upper_bound(backward):
    """log Z_0 - log mean(w) sits above log Z_1 on average, by more than its error; the
    forward run with the same settings sits below."""
    upper = PATH.log_base_normalizer - log_mean_exp(backward.log_weights, axis=1)
    se = upper.std(ddof=1) / np.sqrt(upper.size)
    assert upper.mean() - LOG_Z > 3 * se, (upper.mean(), LOG_Z, se)
    forward = _run("forward", 8)
    lower = log_mean_exp(forward.log_weights, axis=1)
    se_lower = lower.std(ddof=1) / np.sqrt(lower.size)
    assert LOG_Z - lower.mean() > 3 * se_lower, (lower.mean(), LOG_Z, se_lower)
    z_forward = np.exp(lower - LOG_Z)
    assert abs(z_forward.mean() - 1) < 3 * z_forward.std(ddof=1) / np.sqrt(z_forward.size)


def test_backward_run_goes_from_target_to_base(backward):
    np.testing.assert_allclose(backward.betas, make_schedule("linear", NUM_STEPS)[::-1])
    assert backward.direction == "backward"
    # it moved toward the base N(0, 1): clearly wider than the target N(0, 0.5^2) it started
    # from (the sd of a sample sd of 4000 draws is about 0.006; four transitions of one
    # leapfrog step do not reach the base, only p_0.25 has sd 0.76)
    assert 0.6 < backward.positions.std() < 1.0


def test_backward_run_needs_its_starting_states():
    with pytest.raises(AnnealingError, match=r"backward run starts from given states"):
        _run("backward", 1)
    with pytest.raises(AnnealingError, match=r"initial_positions must have shape \(4000, 1\)"):
        _run("backward", 1, np.zeros((3, 1)))
    with pytest.raises(AnnealingError, match=r"unknown direction 'sideways'"):
        _run("sideways", 1)
