"""``sample_ais(base="laplace")`` and ``base="auto"``'s choice of it (issue 41, section 1):
annealing from a Gaussian at the mode found by L-BFGS (:mod:`pymc_anneal.pymc.laplace`),
mixed with 10 % of the prior.

Ground truth: closed-form evidences (a linear model with a wide prior, where the prior's
path is long; a normal-inverse-gamma regression, whose posterior is not Gaussian) and a
logistic regression's evidence by quadrature, within 4 reported standard errors; a fit made
deliberately poor costs variance, never bias (the defensive share); a posterior whose
optimizer census finds two modes keeps the prior, whose estimate is checked against
quadrature.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import pymc_anneal as pa
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.pymc import laplace
from pymc_anneal.pymc.sampling import AUTO_LAPLACE_STEPS
from tests import analytic
from tests.pymc.test_sampling_auto_base import _bimodal

KW = dict(draws=200, chains=2, progressbar=False)


def _within(idata, exact, k=4.0):
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - exact) < k * est.standard_error, (est, exact)
    return est


def test_auto_takes_the_laplace_base_where_the_prior_is_wide():
    """A wide prior (sd 100) and 200 observations: the prior's path is long; the Laplace
    base's pilot asks for a few dozen temperatures, and ``auto`` takes it without a pilot
    from the prior."""
    target = analytic.linear_regression(num_features=3, n=200, prior_sd=100.0)
    idata = pa.sample_ais(model=target.build(), random_seed=3, **KW)
    assert idata.attrs["base"] == "laplace", dict(idata.attrs)
    assert idata.attrs["laplace_num_steps"] <= AUTO_LAPLACE_STEPS
    assert "prior_num_steps" not in idata.attrs  # the prior's pilot never ran
    assert "Laplace base's pilot" in idata.attrs["base_reason"]
    _within(idata, target.log_evidence)


@pytest.mark.parametrize("case", ["nig", "logistic"])
def test_laplace_base_on_non_gaussian_posteriors(case):
    target = (analytic.nig_regression() if case == "nig" else analytic.logistic_regression())
    idata = pa.sample_ais(model=target.build(), base="laplace", random_seed=5, **KW)
    assert idata.attrs["base"] == "laplace"
    _within(idata, target.log_evidence)


def test_a_poor_fit_costs_variance_not_bias(monkeypatch):
    """The fit moved three posterior standard deviations off and made half as wide: the
    run needs more temperatures, and the estimate stays right (the geometric path from a
    normalized base, whose defensive share, the prior, covers the posterior)."""
    target = analytic.normal_mean()
    fit = laplace.fit_laplace

    def poor(*args, **kwargs):
        mean, cov, info = fit(*args, **kwargs)
        return mean + 3.0 * np.sqrt(np.diag(cov)), cov / 4.0, info

    monkeypatch.setattr(laplace, "fit_laplace", poor)
    idata = pa.sample_ais(model=target.build(), base="laplace", num_steps=100, draws=500,
                          chains=2, random_seed=7, progressbar=False)
    _within(idata, target.log_evidence)


def test_two_modes_found_keep_the_prior():
    model, exact = _bimodal()
    idata = pa.sample_ais(model=model, random_seed=11, **KW)
    assert idata.attrs["base"] == "prior", dict(idata.attrs)
    assert "modes" in idata.attrs["laplace_reason"]
    _within(idata, exact)


def test_fit_finds_both_modes():
    model, _ = _bimodal()
    from pymc_anneal.pymc.adapter import model_path

    path = model_path(model).path
    starts = np.array([[-3.0], [3.0], [0.5]])
    mean, cov, info = laplace.fit_laplace(path, starts, np.random.default_rng(0))
    assert info["laplace_modes"] >= 2
    assert abs(abs(mean[0]) - 2.0) < 0.05


def test_laplace_base_refuses_annealed_discrete_variables():
    with pm.Model() as model:
        k = pm.Poisson("k", 3.0)
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu + k, 1.0, observed=[3.2])
    with pytest.raises(AnnealingError, match=r'base="laplace" covers continuous coordinates'):
        pa.sample_ais(model=model, base="laplace", discrete="anneal", random_seed=1, **KW)
