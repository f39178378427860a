r"""Issue 23, items 1.1 and 1.2: what a model's cached path depends on.

- **Couplings hidden at one point.** Whether labels are independent given the rest was
  decided at the model's initial point, where a coupling coefficient with a symmetric prior
  (Normal, Laplace, StudentT) is exactly 0; the labels were then summed element by element,
  2.1 nats off with no warning. The check now probes exact prior draws; the densities are
  checked against enumeration at random points, and the reproducer's evidence against
  quadrature.
- **Stale results after** ``pm.set_data``. Every model kind (continuous, summed, annealed,
  all-discrete) gives the evidence of the data it holds now, including a data change that
  changes a support (a ``pm.Data`` Binomial n) and one that changes the number of
  observations. Ground truth: closed forms, enumeration, and quadrature.
"""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import integrate, special, stats

import pymc_anneal as pa
from pymc_anneal.pymc.adapter import model_path

RUN = {"draws": 300, "chains": 2, "num_steps": 200, "progressbar": False}


def _check(idata, exact, label=""):
    est = pa.log_evidence(idata)
    error = est.log_evidence - exact
    assert abs(error) < 4 * est.standard_error, (label, error, est)


# -- 1.1: a coupling whose coefficient is 0 at the initial point ----------------------

N_LABELS = 8
_rng = np.random.default_rng(3)
_Z_TRUE = _rng.integers(0, 2, N_LABELS)
Y_COUPLED = _Z_TRUE + 0.8 * np.r_[0, _Z_TRUE[:-1]] + 0.5 * _rng.standard_normal(N_LABELS)
LABELS = np.array(list(itertools.product([0, 1], repeat=N_LABELS)))  # (256, 8)
SHIFTED = np.hstack([np.zeros((len(LABELS), 1)), LABELS[:, :-1]])


def _coupled_model(prior: str):
    with pm.Model() as model:
        if prior == "normal":
            rho = pm.Normal("rho", 0, 1)
        elif prior == "laplace":
            rho = pm.Laplace("rho", 0, 1)
        else:
            rho = pm.StudentT("rho", nu=3, mu=0, sigma=1)
        z = pm.Bernoulli("z", 0.5, shape=N_LABELS)
        pm.Normal("y", z + rho * pt.concatenate([pt.zeros(1), z[:-1]]), 0.5, observed=Y_COUPLED)
    return model


def _log_lik_summed(rho):
    """log sum over the 2^8 labels of p(z) p(y | z, rho), at each rho."""
    rho = np.atleast_1d(rho)
    means = LABELS[None] + rho[:, None, None] * SHIFTED[None]  # (R, 256, 8)
    log_joint = stats.norm.logpdf(Y_COUPLED, means, 0.5).sum(-1) + N_LABELS * np.log(0.5)
    return special.logsumexp(log_joint, axis=-1)


def _coupled_exact():
    integrand = lambda r: np.exp(_log_lik_summed(r)[0] + stats.norm.logpdf(r) + 15.0)
    value, err = integrate.quad(integrand, -12, 12, epsabs=0, epsrel=1e-11, limit=200)
    assert err < 1e-9 * value
    return np.log(value) - 15.0


@pytest.mark.parametrize("prior", ["normal", "laplace", "studentt"])
def test_a_coupling_zero_at_the_initial_point_is_not_summed_per_element(prior):
    """rho's initial point is 0, where the labels look independent; at any prior draw they
    are not. The labels must be summed jointly, and the summed log-likelihood must equal the
    enumeration over all 256 configurations at random values of rho (0 included)."""
    model = _coupled_model(prior)
    mp = model_path(model)
    assert not mp.sums.per_element and [v.name for v in mp.sums.joint] == ["z"]
    positions = pt.matrix("positions")
    fn = pytensor.function([positions], mp.path.build_log_densities(positions)[1],
                           mode="FAST_COMPILE")
    rho = np.r_[0.0, np.random.default_rng(5).normal(size=4)]
    np.testing.assert_allclose(fn(rho[:, None]), _log_lik_summed(rho), rtol=1e-10)


def test_independent_labels_are_still_summed_per_element():
    """The same model without the coupling: each label is summed on its own."""
    with pm.Model() as model:
        rho = pm.Normal("rho", 0, 1)
        z = pm.Bernoulli("z", 0.5, shape=N_LABELS)
        pm.Normal("y", z + rho, 0.5, observed=Y_COUPLED)
    mp = model_path(model)
    assert [v.name for v in mp.sums.per_element] == ["z"] and not mp.sums.joint


def test_a_coupling_switched_on_over_half_the_prior_is_found():
    """A coupling that is 0 for rho < 0 (half of the prior's mass, the initial point
    included) is still found: some of the probed prior draws have rho > 0."""
    with pm.Model() as model:
        rho = pm.Normal("rho", 0, 1)
        z = pm.Bernoulli("z", 0.5, shape=N_LABELS)
        coupling = pt.switch(rho > 0, rho, 0.0)
        pm.Normal("y", z + coupling * pt.concatenate([pt.zeros(1), z[:-1]]), 0.5,
                  observed=Y_COUPLED)
    assert not model_path(model).sums.per_element


@pytest.mark.slow
def test_coupled_labels_evidence_matches_quadrature():
    """The issue's reproducer: -13.36 +/- 0.02 before (per-element sums), exact -15.48.
    Summed (auto) and annealed routes against 2^8 labels x quadrature over rho."""
    model = _coupled_model("normal")
    exact = _coupled_exact()
    assert exact == pytest.approx(-15.48, abs=0.01)
    for route in ("auto", "anneal"):
        _check(pa.sample_ais(model=model, random_seed=1, discrete=route, **RUN), exact, route)


# -- 1.2: pm.set_data -----------------------------------------------------------------


def _exact_normal_mean(y, prior_sd=1.0, sd=1.0):
    """mu ~ N(0, prior_sd), y_i ~ N(mu, sd): y ~ N(0, sd^2 I + prior_sd^2 11')."""
    y = np.asarray(y, float)
    cov = sd**2 * np.eye(y.size) + prior_sd**2 * np.ones((y.size, y.size))
    return stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y)


def _exact_all_discrete(y, n, p=0.4):
    """z ~ Binomial(n, p), y_i ~ N(z, 1): a sum over z = 0..n."""
    z = np.arange(n + 1)
    log_joint = stats.binom.logpmf(z, n, p) + stats.norm.logpdf(
        np.asarray(y)[None], z[:, None], 1.0).sum(-1)
    return special.logsumexp(log_joint)


def _all_discrete_model():
    with pm.Model() as model:
        n = pm.Data("n", 2)
        y = pm.Data("y", np.array([1.0, 2.0]))
        z = pm.Binomial("z", n, 0.4)
        pm.Normal("obs", z, 1.0, observed=y)
    return model


def test_all_discrete_model_follows_set_data():
    """The exact sum is computed again after pm.set_data: new observed values (the issue's
    -4.338 against an exact -3.031), a new Binomial n (a new support: the issue's -40.318
    against -2.872), and a new number of observations."""
    model = _all_discrete_model()
    cases = [({}, [1.0, 2.0], 2), ({"y": np.array([3.0, 4.0])}, [3.0, 4.0], 2),
             ({"n": 6}, [3.0, 4.0], 6), ({"y": np.array([5.0, 4.0, 6.0])}, [5.0, 4.0, 6.0], 6),
             ({"n": 2, "y": np.array([1.0, 2.0])}, [1.0, 2.0], 2)]
    for new, y, n in cases:
        with model:
            pm.set_data(new)
        est = pa.log_evidence(pa.sample_ais(model=model, progressbar=False))
        assert est.log_evidence == pytest.approx(_exact_all_discrete(y, n), abs=1e-10), new


def test_a_pm_data_support_is_read_again_after_set_data():
    """The support of a Binomial whose n is pm.Data follows n."""
    model = _all_discrete_model()
    assert model_path(model).sums.joint[0].support.tolist() == [0, 1, 2]
    with model:
        pm.set_data({"n": 6})
    assert model_path(model).sums.joint[0].support.tolist() == list(range(7))


def test_a_path_is_reused_while_its_data_is_unchanged():
    """The cache still serves repeated calls: the same data gives the same path object; a
    continuous model's new data values of the same shape keep it too (its compiled
    densities read pm.Data when they run), while a new shape builds it again."""
    model = _all_discrete_model()
    assert model_path(model) is model_path(model)
    with pm.Model() as continuous:
        y = pm.Data("y", np.array([1.0, 2.0]))
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("obs", mu, 1.0, observed=y)
    first = model_path(continuous)
    with continuous:
        pm.set_data({"y": np.array([3.0, 4.0])})
    assert model_path(continuous) is first
    with continuous:
        pm.set_data({"y": np.array([3.0, 4.0, 5.0])})
    assert model_path(continuous) is not first


def test_a_prior_that_reads_data_is_keyed_on_its_values():
    """The prior's draws (the base) depend on data the prior reads: a new value of its
    scale builds the path again."""
    with pm.Model() as model:
        scale = pm.Data("scale", 1.0)
        mu = pm.Normal("mu", 0, scale)
        pm.Normal("obs", mu, 1.0, observed=[0.5])
    first = model_path(model)
    with model:
        pm.set_data({"scale": 3.0})
    second = model_path(model)
    assert second is not first
    assert second.path.base_scale[0] == pytest.approx(3.0, rel=0.2)


def _mixture_model(route_y):
    with pm.Model() as model:
        y = pm.Data("y", np.asarray(route_y))
        mu = pm.Normal("mu", 0, 1)
        z = pm.Bernoulli("z", 0.3, shape=y.shape)
        pm.Normal("obs", mu + 2.0 * z, 1.0, observed=y, shape=y.shape)
    return model


def _exact_mixture(y):
    y = np.asarray(y)

    def integrand(mu):
        log_lik = np.logaddexp(np.log(0.7) + stats.norm.logpdf(y, mu, 1),
                               np.log(0.3) + stats.norm.logpdf(y, mu + 2, 1)).sum()
        return np.exp(log_lik + stats.norm.logpdf(mu) + 20.0)

    value, _ = integrate.quad(integrand, -12, 12, epsabs=0, epsrel=1e-11, limit=200)
    return np.log(value) - 20.0


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["continuous", "summed", "annealed"])
def test_evidence_follows_set_data(kind):
    """Each model kind gives the evidence of its current data: new values, then a new number
    of observations (which, for the labels, is a new shape of a free variable)."""
    datasets = [[1.0, 2.0], [3.0, 4.0], [0.5, -1.0, 2.5]]
    if kind == "continuous":
        with pm.Model() as model:
            y = pm.Data("y", np.asarray(datasets[0]))
            mu = pm.Normal("mu", 0, 1)
            pm.Normal("obs", mu, 1.0, observed=y, shape=y.shape)
        exact = _exact_normal_mean
    else:
        model = _mixture_model(datasets[0])
        exact = _exact_mixture
    route = "anneal" if kind == "annealed" else "auto"
    for seed, y in enumerate(datasets):
        with model:
            pm.set_data({"y": np.asarray(y)})
        idata = pa.sample_ais(model=model, random_seed=seed, discrete=route, **RUN)
        _check(idata, exact(y), (kind, y))
