"""The generic AIS driver on hand-built paths: NaN log densities never reach the weights."""

import numpy as np
import pytensor.tensor as pt

from pymc_anneal.ais import run_ais
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
    result = run_ais(_half_line_path(), betas=make_schedule("linear", 50), draws=1000, chains=2,
                     rng=np.random.default_rng(4), progressbar=False)
    log_w = result.log_weights
    assert not np.any(np.isnan(log_w))
    assert np.mean(np.isneginf(log_w)) > 0.3  # about half the prior draws are on x <= 0
    assert np.all(result.positions[np.isfinite(log_w)] > 0)
    est = estimate_log_z(log_w)
    exact = -np.log(2 * np.sqrt(2))
    assert abs(est.log_z - exact) < 3 * est.standard_error, (est, exact)
    assert not np.any(np.isnan(result.step_stats["log_z"]))
