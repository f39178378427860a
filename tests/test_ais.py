"""The generic AIS driver on hand-built paths: NaN log densities never reach the weights."""

import numpy as np
import pytensor.tensor as pt
import pytest

from pymc_anneal.driver import RunOptions, run_annealing
from pymc_anneal.estimators import estimate_log_z
from pymc_anneal.paths import Path
from pymc_anneal.schedules import make_schedule


def _half_line_path():
    """Base N(0, 1); log ratio -x^2/2 for x > 0 and NaN for x <= 0 (a broken likelihood).

    Z = E_base[exp(-x^2/2) 1{x > 0}] = 1 / (2 sqrt(2)).
    """

    def build(x):
        log_base = -0.5 * x[:, 0] ** 2 - 0.5 * np.log(2 * np.pi)
        log_ratio = pt.switch(x[:, 0] > 0, -0.5 * x[:, 0] ** 2, np.nan)
        return log_base, log_ratio

    return Path(num_dims=1, build_log_densities=build,
                sample_base=lambda rng, n: rng.standard_normal((n, 1)), name="half-line")


def test_nan_log_likelihood_gives_zero_weight_never_nan():
    result = run_annealing(_half_line_path(), betas=make_schedule("linear", 50), draws=1000, chains=2,
                     rng=np.random.default_rng(4), options=RunOptions(progressbar=False))
    log_w = result.log_weights
    assert not np.any(np.isnan(log_w))
    assert np.mean(np.isneginf(log_w)) > 0.3  # about half the prior draws are on x <= 0
    assert np.all(result.positions[np.isfinite(log_w)] > 0)
    est = estimate_log_z(log_w)
    exact = -np.log(2 * np.sqrt(2))
    assert abs(est.log_z - exact) < 3 * est.standard_error, (est, exact)
    assert not np.any(np.isnan(result.step_stats["log_z"]))


def test_equal_length_schedule_equalizes_sd_times_dbeta():
    """For Var_beta = c / beta^2 (a Gaussian likelihood's profile) the equal-length schedule
    is geometric; every step then has the same sd * d beta (up to the mixing fraction)."""
    from pymc_anneal.driver import equal_length_schedule

    grid = np.linspace(0.0, 1.0, 20001) ** 4
    var = 50.0 / np.maximum(grid[1:], 1e-3) ** 2
    betas = equal_length_schedule(grid, var, 200, mix=0.0)
    assert betas[0] == 0.0 and betas[-1] == 1.0 and np.all(np.diff(betas) > 0)
    sd = np.sqrt(50.0) / np.maximum(betas[1:], 1e-3)
    lengths = sd * np.diff(betas)
    inner = lengths[20:-1]  # away from the floor at 1e-3 and the endpoints
    assert inner.std() / inner.mean() < 0.05
    # a flat profile gives the original spacing back, and mix keeps coverage everywhere
    np.testing.assert_allclose(equal_length_schedule(np.linspace(0, 1, 11), np.ones(10), 10),
                               np.linspace(0, 1, 11), atol=1e-12)
    spiky = np.ones(100)
    spiky[:5] = 1e8
    mixed = equal_length_schedule(np.linspace(0, 1, 101), spiky, 100, mix=0.1)
    assert np.sum(mixed > 0.05) >= 10  # at least ~mix of the steps remain past the spike


def test_pilot_steps_thin_a_band_evenly_and_keep_its_end():
    from pymc_anneal.driver.tuning import _pilot_steps

    np.testing.assert_array_equal(_pilot_steps(10, 20, None), np.arange(10, 20))
    np.testing.assert_array_equal(_pilot_steps(10, 20, 50), np.arange(10, 20))
    steps = _pilot_steps(1000, 13500, 512)
    assert steps.size == 512 and steps[0] == 1000 and steps[-1] == 13499
    assert np.all(np.diff(steps) > 0) and np.ptp(np.diff(steps)) <= 1


def test_the_pilot_chooses_the_schedule():
    """Pilot.schedule: the pilot's grid as it is, re-spaced (adapt_schedule, same K), or
    K = auto_num_steps(L, sigma^2, tau) steps (auto_variance), each step with the values tuned
    at the grid step it falls in; Pilot.rerun: none while the check chain meets the target,
    else K * v / sigma^2 steps."""
    from pymc_anneal.driver import TuningOptions
    from pymc_anneal.driver.tuning import AUTO_RERUN_FACTOR, Pilot, auto_num_steps

    grid = np.linspace(0.0, 1.0, 11)
    pilot = Pilot(grid, {"step_size": np.arange(10.0)}, np.full(10, 400.0), 2.0)
    betas, values, length = pilot.schedule(TuningOptions())
    assert betas is grid and values is pilot.values and length is None
    betas, values, length = pilot.schedule(TuningOptions(adapt_schedule=True))
    np.testing.assert_allclose(betas, grid, atol=1e-12)  # a constant slope: equal steps
    np.testing.assert_array_equal(values["step_size"], np.arange(10.0))
    betas, values, length = pilot.schedule(TuningOptions(auto_variance=0.5))
    assert length == pytest.approx(20.0) and betas.size - 1 == auto_num_steps(20.0, 0.5, 2.0) == 1600
    np.testing.assert_array_equal(values["step_size"], np.repeat(np.arange(10.0), 160))
    quiet = np.zeros(100)  # equal weights: realized variance 0
    realized, repeat = pilot.rerun(1600, quiet, 0.5, 0)
    assert abs(realized) < 1e-12 and repeat is None
    loud = np.log(np.r_[np.full(50, 1e-3), np.ones(50)])  # log(N / ESS) about 0.69
    realized, (betas, _) = pilot.rerun(1600, loud, 0.3, 0)
    assert realized > AUTO_RERUN_FACTOR * 0.3
    assert betas.size - 1 == int(np.ceil(1600 * realized / 0.3))


def test_a_long_fixed_schedule_is_thinned_for_the_pilot_only(monkeypatch):
    """With K = 12,000 fixed temperatures the pilot anneals through at most PILOT_MAX_STEPS
    of them; the step sizes it tunes match those of a pilot through all of them (same
    seed), and the main run, over every temperature, estimates log Z = 0 of the normalized
    Gaussian path within its error."""
    import pymc_anneal.driver.tuning as tuning
    from tests.gaussian_paths import DEFAULT

    def run():
        return run_annealing(DEFAULT.path, betas=make_schedule("geometric",
                             12_000), draws=200, chains=2, rng=np.random.default_rng(5),
                             options=RunOptions(kernel="hais", progressbar=False, backend="numba"))

    calls = []
    original_run = tuning.CompiledLoop.run

    def counting_run(self, rng, arrays, state, log_w, chains, *args, **kwargs):
        if chains == 1:  # the pilot's one population (the main run has two chains)
            calls.append(len(arrays["beta"]))
        return original_run(self, rng, arrays, state, log_w, chains, *args, **kwargs)

    monkeypatch.setattr(tuning.CompiledLoop, "run", counting_run)
    thinned = run()
    pilot_steps = sum(calls)  # the pilot's bands and step-size trials
    limit = tuning.PILOT_MAX_STEPS
    monkeypatch.setattr(tuning, "PILOT_MAX_STEPS", 10**9)
    calls.clear()
    full = run()
    assert pilot_steps <= limit + 8 * 6 * tuning.TRIAL_STEPS < sum(calls)
    ratio = thinned.parameters["step_size"] / full.parameters["step_size"]
    assert np.all((ratio > 0.7) & (ratio < 1.4)), ratio
    assert thinned.betas.size == 12_001
    est = estimate_log_z(thinned.log_weights.ravel())
    assert abs(est.log_z) < 3 * est.standard_error + 0.01, est
