"""``sample_ais(base=idata)``: a base fitted to posterior draws the user already has
(issue 41, section 1: "posterior draws the user already has may be passed to fit the base").

Ground truth: closed-form evidences (a linear regression with a wide prior, whose path from
the prior is long; a normal-inverse-gamma regression, whose posterior is not Gaussian; an
ordered prior's evidence as written) and the bimodal posterior's by quadrature, within 4
reported standard errors. Draws that are far off cost temperatures, never bias; chains
stuck in two modes give a component each; the checkpoint is keyed on the draws.
"""

from __future__ import annotations

import warnings

import arviz_base as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pymc_anneal as pa
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.pymc import laplace
from tests import analytic
from tests.pymc.test_sampling_auto_base import _bimodal
from tests.pymc.test_unconstrained_draws import ordered_model

KW = dict(draws=200, chains=2, progressbar=False)


def _within(idata, exact, k=4.0):
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - exact) < k * est.standard_error, (est, exact)
    return est


def _posterior_draws(target, shape, rng):
    """Exact posterior draws (``shape`` + (d,)) of the linear regression ``target``."""
    p = target.params
    x, y = np.asarray(p["x"]), np.asarray(p["y"])
    precision = np.eye(x.shape[1]) / p["prior_sd"] ** 2 + x.T @ x / p["noise_sd"] ** 2
    cov = np.linalg.inv(precision)
    mean = cov @ x.T @ y / p["noise_sd"] ** 2
    return rng.multivariate_normal(mean, cov, size=shape), mean, cov


@pytest.mark.slow
def test_draws_of_pm_sample_make_the_base():
    """NUTS's draws of a posterior that is not Gaussian (sigma's log is skewed): the base is
    fitted to them, a few dozen temperatures suffice, and the estimate is exact."""
    target = analytic.nig_regression()
    model = target.build()
    with model:
        idata = pm.sample(300, tune=300, chains=2, random_seed=4, progressbar=False,
                          compute_convergence_checks=False)
    result = pa.sample_ais(model=model, base=idata, random_seed=5, **KW)
    assert result.attrs["base"] == "draws", dict(result.attrs)
    assert result.attrs["base_draws"] == 600
    assert result.attrs["base_draws_group"] == [0, 0]
    assert result.attrs["base_draws_width"] in laplace.WIDTHS
    assert "posterior draws" in result.attrs["base_reason"]
    assert result.attrs["num_steps"] <= 60
    _within(result, target.log_evidence)


def test_the_draws_cut_a_long_path_short():
    """A wide prior (sd 100) and 200 observations: from the prior the path is long; from
    draws of the posterior it is the shortest the pilot allows."""
    target = analytic.linear_regression(num_features=3, n=200, prior_sd=100.0)
    draws, _, _ = _posterior_draws(target, (2, 400), np.random.default_rng(1))
    idata = az.from_dict({"posterior": {"beta": draws}})
    result = pa.sample_ais(model=target.build(), base=idata, random_seed=3, **KW)
    assert result.attrs["num_steps"] <= 30, dict(result.attrs)
    _within(result, target.log_evidence)


@pytest.mark.slow
def test_draws_far_off_cost_variance_not_bias():
    """Draws moved three posterior standard deviations off and made half as wide (of other
    data, say): the run needs more temperatures, and the estimate stays right (the
    defensive share, the prior, covers the posterior). At this fixed K the weights' right
    tail is rarely seen, so one run's estimate is skewed low (z < -3 at 4 of 84 seeds,
    min -4.1, in blocks of the pilot's shape; 0 of 84, min -2.7, in whole calls; the
    weights of seeds 1-40 pooled: KS p 0.04 between the two, and of seeds 41-100 0.84,
    log-mean-exp -0.007 and 0.004 from the closed form over all 100: chance), and a run
    may say so (a heavy tail, or a weight ESS under 10 %: at seeds 7-46, 2 of 40 runs
    before the first band's inverse mass left the defensive draws out, 1 of 40 after, z
    at least -4.1 and -3.4): the mean weight stays
    unbiased, so eight runs pooled must meet the closed form within 4 of their pooled SE."""
    from pymc_anneal.estimators import estimate_log_z

    target = analytic.linear_regression(num_features=2, n=30, prior_sd=2.0)
    draws, _, cov = _posterior_draws(target, (2, 300), np.random.default_rng(2))
    centre = draws.mean(axis=(0, 1))
    poor = centre + 3.0 * np.sqrt(np.diag(cov)) + 0.5 * (draws - centre)
    idata = az.from_dict({"posterior": {"beta": poor}})
    pooled = []
    for seed in range(7, 15):
        with warnings.catch_warnings(record=True) as caught:  # the tail, seen or flagged
            warnings.simplefilter("always")
            result = pa.sample_ais(model=target.build(), base=idata, num_steps=100,
                                   draws=500, chains=2, random_seed=seed, progressbar=False)
        assert all("heavy tail" in str(w.message) or "weight ESS" in str(w.message)
                   for w in caught), [str(w.message) for w in caught]
        _within(result, target.log_evidence, k=5.0)
        pooled.append(np.asarray(result["particles"]["log_weight"].values).ravel())
    est = estimate_log_z(np.concatenate(pooled))
    assert abs(est.log_z - target.log_evidence) < 4 * est.standard_error, est


@pytest.mark.slow
def test_chains_in_two_modes_get_a_component_each():
    """Two chains at each of the mirror modes (mu = +-2): two groups, a Gaussian each, and
    the estimate is the quadrature's."""
    model, exact = _bimodal()
    rng = np.random.default_rng(3)
    signs = np.array([1.0, 1.0, -1.0, -1.0])[:, None]
    draws = signs * 2.0 + 0.06 * rng.standard_normal((4, 300))
    idata = az.from_dict({"posterior": {"mu": draws}})
    result = pa.sample_ais(model=model, base=idata, random_seed=11, **KW)
    assert result.attrs["base_draws_group"] == [0, 0, 1, 1]
    _within(result, exact)


@pytest.mark.slow
def test_an_ordered_prior_gets_its_evidence_as_written_with_the_note():
    """The prior cannot be drawn (transform=ordered): the defensive share is a wide
    Gaussian, and the warning says the prior as written is not normalized."""
    model, exact, idata = ordered_model()
    with pytest.warns(pa.AnnealingWarning, match=r"prior as written is not normalized.*'mu'"):
        result = pa.sample_ais(model=model, base=idata, random_seed=2, **KW)
    assert result.attrs["base"] == "draws"
    assert abs(result.attrs["log_prior_mass"] - np.log(0.5)) < 4 * result.attrs[
        "log_prior_mass_se"]
    _within(result, exact)


def test_the_checkpoint_is_keyed_on_the_draws(tmp_path):
    """A checkpoint written with one set of draws is refused with another (the base, and
    so the run, depends on them)."""
    target = analytic.linear_regression(num_features=2, n=30, prior_sd=2.0)
    model = target.build()
    draws, _, _ = _posterior_draws(target, (2, 100), np.random.default_rng(4))
    file = tmp_path / "run.npz"
    kw = dict(model=model, num_steps=10, draws=50, chains=2, random_seed=1,
              progressbar=False, checkpoint=file)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)  # 10 temperatures, 50 particles
        first = pa.sample_ais(base=az.from_dict({"posterior": {"beta": draws}}), **kw)
        again = pa.sample_ais(base=az.from_dict({"posterior": {"beta": draws.copy()}}), **kw)
    np.testing.assert_array_equal(first["particles"]["log_weight"],
                                  again["particles"]["log_weight"])
    with pytest.raises(AnnealingError, match="written by a call with another model"):
        pa.sample_ais(base=az.from_dict({"posterior": {"beta": draws + 0.1}}), **kw)


def _poisson_model():
    with pm.Model() as model:
        pm.Poisson("k", 3.0)
        pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", 0.0, 1.0, observed=[0.1])
    return model


@pytest.mark.parametrize("base, model, match", [
    (42, None, r"base must be one of \['auto', 'prior', 'gaussian', 'laplace'\] or posterior "
     r"draws .*got int"),
    ("draws", None, r"unknown base 'draws'"),
    (xr.DataTree(), None, r"sample_ais\(base=\.\.\.\) needs the result of pm\.sample"),
    (az.from_dict({"posterior": {"theta": np.zeros((2, 10))}}), None,
     r"posterior lacks the model's variables \['mu'\]"),
    (az.from_dict({"posterior": {"mu": np.zeros((1, 1))}}), None,
     r"base fitted to posterior draws needs at least 2 draws per chain, got 1"),
    (az.from_dict({"posterior": {"mu": np.zeros((2, 10)), "k": np.ones((2, 10))}}),
     _poisson_model, r"covers continuous coordinates only.*\['k'\]"),
])
def test_bad_draws_are_refused_before_anything_runs(base, model, match):
    if model is None:
        with pm.Model() as m:
            mu = pm.Normal("mu", 0.0, 1.0)
            pm.Normal("y", mu, 1.0, observed=[0.1])
    else:
        m = model()
    with pytest.raises(AnnealingError, match=match):
        pa.sample_ais(model=m, base=base, random_seed=1, **KW)
