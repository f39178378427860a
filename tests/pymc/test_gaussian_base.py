"""``sample_ais(base="gaussian")``: annealing from a Gaussian fitted to the posterior.

Ground truth as for the prior base: closed-form evidences within 3 reported standard errors
and 0.05 nat at the documented defaults (including a 100-dimensional linear model, where the
prior base falls behind), the exact conjugate posterior, one-step importance sampling
recomputed in NumPy, and the fit itself (`fit_gaussian`) against known covariances.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_anneal as pa
from pymc_anneal.driver import RunOptions, run_annealing
from pymc_anneal.driver.cache import LOOPS
from pymc_anneal.driver.tuning import auto_num_steps
from pymc_anneal.paths import fit_gaussian, gaussian_base_path
from pymc_anneal.pymc.adapter import model_path
from pymc_anneal.pymc.sampling import AUTO_VARIANCE
from pymc_anneal.schedules import make_schedule
from tests import analytic

SEED = 20261123


@pytest.fixture(scope="module")
def normal_mean():
    target = analytic.normal_mean()
    return target, target.build()


def _normal_mean_posterior(target):
    p = target.params
    precision = 1 / p["prior_sd"] ** 2 + len(p["y"]) / p["noise_sd"] ** 2
    mean = (p["prior_mean"] / p["prior_sd"] ** 2 + p["y"].sum() / p["noise_sd"] ** 2) / precision
    return mean, precision**-0.5


# --------------------------------------------------------------------------- the fit


def test_fit_gaussian_recovers_a_known_covariance():
    rng = np.random.default_rng(0)
    d, n = 4, 20000
    a = rng.normal(size=(d, d))
    cov = a @ a.T + 0.5 * np.eye(d)
    mean = rng.normal(size=d)
    x = rng.multivariate_normal(mean, cov, size=n)
    m, c = fit_gaussian(x)
    # many draws, few dimensions: almost no shrinkage, sample-moment accuracy
    np.testing.assert_allclose(m, mean, atol=5 * np.sqrt(np.diag(cov).max() / n))
    np.testing.assert_allclose(c, cov, atol=0.05 * np.abs(cov).max())


def test_fit_gaussian_is_positive_definite_and_shrunk_with_few_draws():
    """50 draws in 100 dimensions: the sample covariance is singular; the fit is not, and
    with an identity truth its spectrum stays near 1 instead of spreading to 0 and 4."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((50, 100))
    _, c = fit_gaussian(x)
    eig = np.linalg.eigvalsh(c)
    assert eig.min() > 0.3 and eig.max() < 2.0, (eig.min(), eig.max())
    sample_eig = np.linalg.eigvalsh(np.cov(x.T))
    assert sample_eig.min() < 1e-10  # what an unshrunk fit would hand to Cholesky


def test_fit_gaussian_weights_act_as_repetitions():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(30, 3)) @ np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.3], [0.0, 0.0, 1.0]])
    counts = rng.integers(1, 4, size=30)
    m_w, c_w = fit_gaussian(x, log_weights=np.log(counts))
    m_r, c_r = fit_gaussian(np.repeat(x, counts, axis=0))
    np.testing.assert_allclose(m_w, m_r, rtol=1e-12)
    # same moments; only the shrinkage intensity (which sees the ESS) may differ a little
    np.testing.assert_allclose(np.diag(c_w), np.diag(c_r), rtol=1e-12)
    with pytest.raises(ValueError, match="zero weight"):
        fit_gaussian(x, log_weights=np.full(30, -np.inf))


@pytest.mark.parametrize("defensive", [0.1, *(pytest.param(a, marks=pytest.mark.slow)
                                              for a in (0.0, 0.5))])
def test_gaussian_base_path_one_step_is_importance_sampling_from_q(normal_mean, defensive):
    """num_steps=1 from q = (1 - a) N(m, s^2) + a prior: log w = log p(y, mu) - log q(mu), in
    NumPy (a = ``defensive``; 0 is the pure Gaussian)."""
    target, model = normal_mean
    mp = model_path(model)
    m, s = 0.8, 0.5
    path = gaussian_base_path(mp.path, np.array([m]), np.array([[s**2]]), defensive=defensive)
    recorded = []

    def recording_sample_base(rng, n):
        draws = rng.standard_normal((n, 1))
        recorded.append(draws)
        return draws

    path = dataclasses.replace(path, sample_base=recording_sample_base)
    result = run_annealing(path, betas=make_schedule("linear", 1), draws=300, chains=2,
                     rng=np.random.default_rng(7), options=RunOptions(progressbar=False))
    z0 = np.concatenate(recorded[-2:])[:, 0].reshape(2, 300)  # the estimate's base draws
    mu = m + s * z0
    p = target.params
    log_joint = (stats.norm.logpdf(mu, p["prior_mean"], p["prior_sd"])
                 + stats.norm.logpdf(p["y"][None, None, :], mu[..., None],
                                     p["noise_sd"]).sum(axis=-1))
    log_q = np.logaddexp(np.log1p(-defensive) + stats.norm.logpdf(mu, m, s),
                         (np.log(defensive) if defensive else -np.inf)
                         + stats.norm.logpdf(mu, p["prior_mean"],
                                                               p["prior_sd"]))
    np.testing.assert_allclose(result.log_weights, log_joint - log_q, rtol=1e-10, atol=1e-10)


def test_gaussian_base_path_draws_the_defensive_mixture(normal_mean):
    """sample_base draws (1 - a) N(m, s^2) + a prior in whitened coordinates: mapped back,
    the draws pass a KS test against the mixture's CDF, for several a."""
    target, model = normal_mean
    p = target.params
    m, s = 3.0, 0.2  # far from the prior (mean p["prior_mean"]), so the shares show
    for a in (0.0, 0.1, 0.5):
        path = gaussian_base_path(model_path(model).path, np.array([m]), np.array([[s**2]]),
                                  defensive=a)
        mu = m + s * path.sample_base(np.random.default_rng(11), 20_000)[:, 0]

        def cdf(x, a=a):
            return ((1 - a) * stats.norm.cdf(x, m, s)
                    + a * stats.norm.cdf(x, p["prior_mean"], p["prior_sd"]))

        assert stats.kstest(mu, cdf).pvalue > 1e-3, a
    with pytest.raises(pa.AnnealingError, match=r"defensive must be in \[0, 1\), got 1"):
        gaussian_base_path(model_path(model).path, np.array([m]), np.array([[s**2]]),
                           defensive=1)


def test_gaussian_base_path_rejects_bad_moments(normal_mean):
    _, model = normal_mean
    with pytest.raises(ValueError, match="finite"):
        gaussian_base_path(model_path(model).path, np.array([np.nan]), np.eye(1))


# --------------------------------------------------------------------------- ground truth

DEFAULT_TARGETS = [
    pytest.param("normal_mean", {}, id="normal_mean"),
    pytest.param("beta_binomial", {}, id="beta_binomial", marks=pytest.mark.slow),
    pytest.param("linear_regression", {}, id="linear_regression_d10", marks=pytest.mark.slow),
    pytest.param("nig_regression", {}, id="nig_regression", marks=pytest.mark.slow),
    pytest.param("linear_regression", dict(num_features=100, n=200),
                 id="linear_regression_d100", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name, options", DEFAULT_TARGETS)
def test_closed_form_evidence_at_default_settings(name, options):
    target = getattr(analytic, name)(**options)
    with target.build():
        idata = pa.sample_ais(base="gaussian", random_seed=SEED, progressbar=False)
    est = pa.log_evidence(idata)
    error = est.log_evidence - target.log_evidence
    assert abs(error) < 3 * est.standard_error + 1e-12, (error, est)
    assert abs(error) < 0.05, (error, est)
    assert idata.attrs["base"] == "gaussian"
    # the default num_steps="auto" sizes the run from the fitted base's path
    assert idata.attrs["num_steps"] == auto_num_steps(idata.attrs["thermodynamic_length"],
                                                      AUTO_VARIANCE, idata.attrs["inefficiency"])
    assert idata.attrs["auto_reruns"] == 0
    assert idata.attrs["fit_steps"] == 500 and idata.attrs["fit_draws"] >= 250


def test_posterior_is_mapped_back_to_the_model_space(normal_mean):
    """The particles live in whitened coordinates inside the loop; the returned posterior
    must be the model's mu, matching the conjugate posterior."""
    target, model = normal_mean
    idata = pa.sample_ais(model=model, base="gaussian", draws=500, chains=2, num_steps=50,
                          random_seed=SEED, progressbar=False)
    mean, sd = _normal_mean_posterior(target)
    mu = idata["posterior"]["mu"].values.ravel()
    assert abs(mu.mean() - mean) < 5 * sd / np.sqrt(mu.size), (mu.mean(), mean)
    assert abs(mu.std() / sd - 1) < 0.1, (mu.std(), sd)
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - target.log_evidence) < 3 * est.standard_error + 1e-3


def test_every_fit_reuses_one_compiled_loop(normal_mean):
    """The fitted mean and Cholesky factor are loop inputs, not constants: new fits
    (different seeds, different numbers) must not add compiled functions."""
    _, model = normal_mean
    kwargs = dict(model=model, base="gaussian", draws=100, chains=1, num_steps=20,
                  fit_steps=20, progressbar=False)
    pa.sample_ais(random_seed=1, **kwargs)
    owner = model_path(model).path
    entries = {key: LOOPS.get(owner, key, None) for key in LOOPS.owned_by(owner)}
    assert entries  # the model's own loop and that of its fitted bases
    pa.sample_ais(random_seed=2, **kwargs)
    assert set(LOOPS.owned_by(owner)) == set(entries)
    assert all(LOOPS.get(owner, key, None) is loop for key, loop in entries.items())


def test_compiled_loops_are_freed_with_their_model():
    """The compile cache holds a model's loops only while the model lives."""
    import gc

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[0.1, 0.4])
    pa.sample_ais(model=model, draws=200, chains=1, num_steps=5, progressbar=False,
                  random_seed=1)
    owner = model_path(model).path
    assert LOOPS.owned_by(owner)
    size = len(LOOPS)
    ref = __import__("weakref").ref(owner)
    del model, owner, mu
    gc.collect()
    assert ref() is None  # nothing else kept the model's path alive
    assert len(LOOPS) < size


def test_unknown_base_lists_the_options(normal_mean):
    _, model = normal_mean
    with pytest.raises(pa.AnnealingError, match=r"unknown base 'normal'; must be one of "
                                                r"\['auto', 'gaussian', 'laplace', 'prior'\]"):
        pa.sample_ais(model=model, base="normal", progressbar=False)
    with pytest.raises(pa.AnnealingError, match="fit_steps must be an integer >= 1"):
        pa.sample_ais(model=model, base="gaussian", fit_steps=0, progressbar=False)
