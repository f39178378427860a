"""Bidirectional Monte Carlo on conjugate models: the two bounds bracket the closed-form
evidence of the simulated data, and the gap shrinks as the number of temperatures grows."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_anneal as pa
from tests import analytic

STEPS = [2, 20, 200]


def _normal_mean():
    p = analytic.normal_mean().params
    model = analytic._build_normal_mean(p["y"], p["prior_mean"], p["prior_sd"], p["noise_sd"])

    def exact(data):
        y = data["y"]
        cov = p["noise_sd"] ** 2 * np.eye(y.size) + p["prior_sd"] ** 2 * np.ones((y.size, y.size))
        return analytic.exact_log_evidence_gaussian(y, p["prior_mean"], cov)

    return model, exact


def _nig():  # a transformed free variable (sigma2 > 0) and a hierarchical prior
    p = analytic.nig_regression().params
    args = (p["x"], p["a0"], p["b0"], p["lambda0"])
    model = analytic._build_nig_regression(p["x"], p["y"], *args[1:])
    return model, lambda data: analytic.nig_log_evidence(p["x"], data["y"], *args[1:])


@pytest.mark.parametrize("case", [_normal_mean, _nig], ids=["normal_mean", "nig_regression"])
def test_bounds_bracket_the_exact_evidence_and_tighten(case):
    model, exact_of = case()
    result = pa.bdmc(model, num_steps=STEPS, draws=250, chains=4, random_seed=3,
                     progressbar=False)
    stats = result["sample_stats"]
    data = {name: result["observed_data"][name].values for name in result["observed_data"]}
    exact = exact_of(data)
    lower, upper = stats["lower"].values, stats["upper"].values
    lower_se, upper_se = stats["lower_se"].values, stats["upper_se"].values
    assert np.all(lower - 3 * lower_se <= exact), (lower, lower_se, exact)
    assert np.all(exact <= upper + 3 * upper_se), (upper, upper_se, exact)
    np.testing.assert_allclose(stats["gap"].values, upper - lower)
    assert stats["gap"].values[-1] < stats["gap"].values[0]
    assert stats["gap"].values[-1] < 0.1  # K = 200 is enough here
    np.testing.assert_array_equal(stats["num_steps"].values, STEPS)
    assert set(result["true_parameters"].data_vars) == {rv.name for rv in model.free_RVs}
    assert result.attrs["method"] == "bdmc"


def test_simulated_data_come_from_the_true_parameters():
    """The data are drawn given the true parameters (here: their mean is near mu*)."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 0.01, observed=np.zeros(50))
    result = pa.bdmc(model, num_steps=1, num_mixing_steps=0, draws=10, chains=1,
                     random_seed=1, progressbar=False)
    y = result["observed_data"]["y"].values
    assert y.shape == (50,)
    assert abs(y.mean() - float(result["true_parameters"]["mu"])) < 0.01


def test_bad_input_gets_clear_errors():
    with pm.Model() as discrete:
        k = pm.Poisson("k", 3.0)
        pm.Normal("y", k, 1.0, observed=[1.0])
    with pytest.raises(pa.AnnealingError, match="discrete free variables"):
        pa.bdmc(discrete, progressbar=False)
    with pm.Model() as improper:
        mu = pm.Flat("mu")
        pm.Normal("y", mu, 1.0, observed=[1.0])
    with pytest.raises(pa.AnnealingError, match=r"improper \(Flat/HalfFlat\)"):
        pa.bdmc(improper, progressbar=False)
    with pm.Model() as potential:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[1.0])
        pm.Potential("extra", -mu**2)
    with pytest.raises(pa.AnnealingError, match="Potentials.*prior predictive"):
        pa.bdmc(potential, progressbar=False)
    model, _ = _normal_mean()
    with pytest.raises(pa.AnnealingError, match="num_steps must be an integer >= 1, got 0"):
        pa.bdmc(model, num_steps=[10, 0], progressbar=False)
    with pytest.raises(pa.AnnealingError, match="num_steps must be an integer >= 1 or a non-empty"):
        pa.bdmc(model, num_steps=[], progressbar=False)
    with pytest.raises(pa.AnnealingError, match="unknown kernel 'gibbs2'"):
        pa.bdmc(model, kernel="gibbs2", progressbar=False)


def test_docstring_example_runs():
    import doctest

    import pymc_anneal.pymc.bdmc as module

    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 4 and result.failed == 0, result
