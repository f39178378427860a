"""Models that cannot be trusted say so (issue 40, items 1, 4 and 11).

Each input was answered silently or by a raw trace from PyMC or NumPy: a ``pm.Potential``
that is ``+inf`` on part of the prior (the evidence of the model restricted to the rest,
without a word), non-integer data in a ``pm.Data`` container of a discrete likelihood
(cast by PyMC), a Uniform on an infinite range (``KeyError: 'mu'``), an MvNormal whose
covariance is not positive definite (``LinAlgError``), a string as ``compare``'s seed
(NumPy's ``TypeError``).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

import pymc_anneal as pa
from pymc_anneal.exceptions import AnnealingError

KW = dict(draws=100, chains=2, num_steps=20, progressbar=False, random_seed=1)
Y = [0.3, -0.2, 0.5]


def _model(potential=None) -> pm.Model:
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=Y)
        if potential is not None:
            pm.Potential("constraint", potential(mu))
    return model


@pytest.mark.parametrize("potential, share", [
    (lambda mu: pt.switch(mu > 0, np.inf, 0.0), r"\d\d%"),
    (lambda mu: pt.as_tensor(np.inf), "100%"),
])
def test_an_infinite_potential_is_refused_naming_it(potential, share):
    with pytest.raises(AnnealingError, match=rf"Potential 'constraint' \(\+inf at {share} of "
                                             r"200 prior draws\) is \+inf"):
        pa.sample_ais(model=_model(potential), **KW)


def test_a_finite_constraint_potential_is_accepted():
    """A constraint written as -inf where it fails is fine (the evidence of the model as
    written): only +inf is refused."""
    model = _model(lambda mu: pt.switch(mu > 0, -np.inf, 0.0))
    with pytest.warns(pa.AnnealingWarning):  # tiny run: its weight diagnostics warn
        idata = pa.sample_ais(model=model, **KW)
    assert np.isfinite(pa.log_evidence(idata).log_evidence)


def test_non_integer_data_of_a_discrete_likelihood_warn():
    with pm.Model() as model:
        rate = pm.Gamma("rate", 2.0, 1.0)
        counts = pm.Data("counts", np.array([1.5, 2.2, 0.7, 3.0]))
        pm.Poisson("n", rate, observed=counts)
    with pytest.warns(pa.AnnealingWarning, match=r"observed data of 'n' \(counts\) are not "
                                                 r"integers at 3 of 4 positions \(1.5 at \(0,\)"):
        pa.sample_ais(model=model, **{**KW, "num_steps": 5}).close()


def test_integer_data_in_a_float_container_do_not_warn():
    with pm.Model() as model:
        rate = pm.Gamma("rate", 2.0, 1.0)
        pm.Poisson("n", rate, observed=pm.Data("counts", np.array([1.0, 2.0, 0.0, 3.0])))
    from pymc_anneal.pymc.adapter import model_path

    model_path(model)  # warnings are errors here


def test_a_uniform_on_an_infinite_range_is_refused_as_improper():
    with pm.Model() as model:
        mu = pm.Uniform("mu", -np.inf, np.inf)
        pm.Normal("y", mu, 1.0, observed=Y)
    with pytest.raises(AnnealingError, match=r"priors of \['mu'\] are Uniform on an infinite "
                                             r"range \(bounds \[\(-inf, inf\)\]\)"):
        pa.sample_ais(model=model, **KW)


def test_a_covariance_that_is_not_positive_definite_is_named():
    with pm.Model() as model:
        mu = pm.MvNormal("mu", np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]))
        pm.Normal("y", mu.sum(), 1.0, observed=Y)
    with pytest.raises(AnnealingError, match=r"the prior of 'mu' \(MvNormal\(.*\)\) cannot be "
                                             r"drawn: LinAlgError"):
        pa.sample_ais(model=model, **KW)


def test_compare_refuses_a_seed_that_is_not_one():
    est = pa.EvidenceEstimate(-3.6, 0.02, 0.02, 400.0, 800)
    with pytest.raises(AnnealingError, match="random_seed"):
        pa.compare({"a": est, "b": est}, random_seed="x")


@pytest.mark.parametrize("build, match", [
    (lambda mu: pm.Normal("y", mu, 1.0, observed=[0.3, np.inf, 0.5]),
     r"'y' are impossible under the model at 1 of 3 positions \(\(1,\) = inf\)"),
    (lambda mu: pm.Poisson("n", pm.math.exp(mu), observed=[1, -1, 3, 2]),
     r"'n' are impossible under the model at 1 of 4 positions \(\(1,\) = -1\).*Poisson"),
    (lambda mu: pm.Beta("b", pm.math.exp(mu), 1.0, observed=np.array([[0.2, 1.5],
                                                                        [0.3, 0.4]])),
     r"'b' are impossible under the model at 1 of 4 positions \(\(0, 1\) = 1.5\).*Beta"),
])
def test_impossible_data_are_refused_naming_the_variable_and_positions(build, match):
    with pm.Model() as model:
        build(pm.Normal("mu", 0.0, 1.0))
    with pytest.raises(AnnealingError, match=match):
        pa.sample_ais(model=model, **KW)


def _spread_models():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(60, 3))
    with pm.Model() as regression:
        beta = pm.Normal("beta", 0.0, 10.0, shape=3)
        pm.Normal("y", x @ beta, pm.HalfNormal("sigma", 2.0), observed=rng.normal(size=60))
    with pm.Model() as counts:
        b = pm.Normal("b", 0.0, 2.0, shape=3)
        pm.Poisson("n", pm.math.exp(x @ b), observed=rng.poisson(2.0, size=60))
    with pm.Model() as mixture:
        w = pm.Dirichlet("w", np.ones(2))
        mu = pm.Normal("mu", [-1.0, 1.0], 3.0, shape=2)
        pm.NormalMixture("z", w, mu, 1.0, observed=rng.normal(size=40))
        pm.Potential("order", pt.switch(mu[0] < mu[1], 0.0, -np.inf))
    return [regression, counts, mixture, _model(lambda mu: -(mu**2))]


@pytest.mark.parametrize("index", range(4))
def test_the_spread_is_the_terms_spread_and_needs_no_terms(index, monkeypatch):
    """The log-likelihood's spread at the 200 prior draws, read off the path's own
    log-likelihood where it is finite somewhere and never +inf or NaN (here: a regression,
    a Poisson GLM, a mixture with a -inf ordering Potential, a finite Potential), equals
    the one summed from the terms built one by one, and those terms are then not built."""
    from pymc_anneal.pymc import adapter

    model = _spread_models()[index]
    calls = []
    logp = pm.Model.logp

    def recorded(self, *args, **kwargs):
        calls.append(kwargs.get("sum", True))
        return logp(self, *args, **kwargs)

    monkeypatch.setattr(pm.Model, "logp", recorded)
    mp = adapter.model_path(model)
    assert False not in calls  # no term built on its own
    terms = adapter._check_terms(model, adapter._value_shapes(model), mp.path.sample_base)
    assert False in calls
    np.testing.assert_allclose(mp.prior_log_lik_spread, terms, rtol=1e-9)
