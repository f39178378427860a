"""sample_ais against ground truth: closed-form evidences, plain importance sampling,
unbiasedness of Z-hat, reproducibility, backends, and clear errors on bad input.

Tolerances come from the reported standard error (3 SE) plus, at the documented default
settings, the absolute 0.05-nat accuracy the package promises. Seeds are fixed per test.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pymc as pm
import pytest
from scipy import stats

import pymc_anneal as pa
from pymc_anneal.backends import default_backend
from pymc_anneal.driver import RunOptions, run_annealing
from pymc_anneal.estimators import log_mean_exp
from pymc_anneal.pymc.adapter import model_path
from pymc_anneal.schedules import make_schedule
from tests import analytic

FAST = dict(draws=200, chains=2, num_steps=50, progressbar=False)


@pytest.fixture(scope="module")
def normal_mean():
    target = analytic.normal_mean()
    return target, target.build()


# --------------------------------------------------------------------------- ground truth

DEFAULT_TARGETS = [
    pytest.param("normal_mean", id="normal_mean"),
    pytest.param("beta_binomial", id="beta_binomial"),
    pytest.param("linear_regression", id="linear_regression_d10", marks=pytest.mark.slow),
    pytest.param("nig_regression", id="nig_regression", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name", DEFAULT_TARGETS)
def test_closed_form_evidence_at_default_settings(name):
    target = getattr(analytic, name)()
    with target.build():
        idata = pa.sample_ais(random_seed=20261122, progressbar=False)
    est = pa.log_evidence(idata)
    error = est.log_evidence - target.log_evidence
    assert abs(error) < 3 * est.standard_error + 1e-12, (error, est)
    assert abs(error) < 0.05, (error, est)
    # the per-chain spread is an independent check of the delta-method SE
    per_chain = idata["sample_stats"]["log_marginal_likelihood"].values
    assert per_chain.dtype == np.float64 and per_chain.shape == (4,)
    assert np.all(np.abs(per_chain - target.log_evidence) < 4 * np.sqrt(4) * est.standard_error + 0.05)


def test_evidence_with_likelihood_zero_on_part_of_the_prior():
    """y ~ Uniform(mu - 1, mu + 1): prior draws far from y get weight exactly 0 (never NaN).

    p(y) = 1/2 * (Phi(y + 1) - Phi(y - 1)) for mu ~ N(0, 1).
    """
    y = 0.5
    exact = np.log(0.5 * (stats.norm.cdf(y + 1) - stats.norm.cdf(y - 1)))
    with pm.Model():
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Uniform("y", lower=mu - 1.0, upper=mu + 1.0, observed=y)
        idata = pa.sample_ais(draws=500, chains=2, num_steps=200, random_seed=3, progressbar=False)
    log_w = idata["particles"]["log_weight"].values
    assert not np.any(np.isnan(log_w))
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - exact) < 3 * est.standard_error + 1e-3
    posterior = idata["posterior"]["mu"].values
    assert np.all(np.abs(posterior - y) <= 1.0)


def test_one_step_is_plain_importance_sampling(normal_mean):
    """num_steps=1: log w = log L(x0) for prior draws x0, recomputed here in NumPy."""
    target, model = normal_mean
    mp = model_path(model)
    recorded = []

    def recording_sample_base(rng, n):
        draws = mp.path.sample_base(rng, n)
        recorded.append(draws)
        return draws

    path = dataclasses.replace(mp.path, sample_base=recording_sample_base)
    result = run_annealing(path, betas=make_schedule("linear", 1), draws=300, chains=2,
                     rng=np.random.default_rng(7), options=RunOptions(progressbar=False))
    x0 = np.concatenate(recorded[-2:])[:, 0]
    y, sigma = target.params["y"], target.params["noise_sd"]
    log_lik = stats.norm.logpdf(y[None, :], x0[:, None], sigma).sum(axis=1)
    np.testing.assert_allclose(result.log_weights.ravel(), log_lik, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(log_mean_exp(result.log_weights[0]),
                               log_mean_exp(log_lik[:300]), rtol=1e-12)


def test_z_hat_is_unbiased_and_log_z_hat_is_biased_low():
    """Over many independent 2-particle runs with 3 temperatures, mean(Z-hat) -> Z while
    mean(log Z-hat) sits measurably below log Z (Jensen) - the test can tell them apart."""
    target = analytic.TINY_TARGET
    with target.build():
        idata = pa.sample_ais(draws=2, chains=4000, num_steps=3, random_seed=11,
                              progressbar=False)
    log_w = idata["particles"]["log_weight"].values  # (chains, 2)
    z_ratio = np.exp(log_mean_exp(log_w, axis=1) - target.log_evidence)  # Z-hat / Z per run
    se = z_ratio.std(ddof=1) / np.sqrt(z_ratio.size)
    assert abs(z_ratio.mean() - 1.0) < 3 * se, (z_ratio.mean(), se)
    log_ratio = np.log(z_ratio)
    log_se = log_ratio.std(ddof=1) / np.sqrt(log_ratio.size)
    assert log_ratio.mean() < -3 * log_se, (log_ratio.mean(), log_se)


# --------------------------------------------------------------------------- reproducibility


def test_same_seed_same_result_different_seed_different(normal_mean):
    _, model = normal_mean
    a = pa.sample_ais(model=model, random_seed=5, **FAST)
    b = pa.sample_ais(model=model, random_seed=5, **FAST)
    c = pa.sample_ais(model=model, random_seed=6, **FAST)
    np.testing.assert_array_equal(a["particles"]["log_weight"].values,
                                  b["particles"]["log_weight"].values)
    np.testing.assert_array_equal(a["posterior"]["mu"].values, b["posterior"]["mu"].values)
    assert not np.array_equal(a["particles"]["log_weight"].values,
                              c["particles"]["log_weight"].values)


@pytest.mark.slow
def test_c_and_numba_give_identical_numbers(normal_mean):
    _, model = normal_mean
    numba = pa.sample_ais(model=model, random_seed=9, backend="numba", **FAST)
    c = pa.sample_ais(model=model, random_seed=9, backend="c", **FAST)
    np.testing.assert_allclose(c["particles"]["log_weight"].values,
                               numba["particles"]["log_weight"].values, rtol=1e-12, atol=1e-12)


def test_jax_within_error_bars(normal_mean):
    pytest.importorskip("jax")
    target, model = normal_mean
    numba = pa.log_evidence(pa.sample_ais(model=model, random_seed=9, backend="numba", **FAST))
    jax = pa.log_evidence(pa.sample_ais(model=model, random_seed=9, backend="jax", **FAST))
    combined = np.hypot(numba.standard_error, jax.standard_error)
    assert abs(numba.log_evidence - jax.log_evidence) < 3 * combined
    assert abs(jax.log_evidence - target.log_evidence) < 3 * jax.standard_error + 1e-3


def test_custom_initval_does_not_collapse_the_base():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0, initval=3.0)
        pm.Normal("y", mu, 1.0, observed=[0.1, -0.3])
    draws = model_path(model).path.sample_base(np.random.default_rng(0), 2000)
    assert abs(draws.std() - 1.0) < 0.1 and abs(draws.mean()) < 0.1


# --------------------------------------------------------------------------- DataTree schema


def test_datatree_schema(normal_mean):
    _, model = normal_mean
    idata = pa.sample_ais(model=model, random_seed=1, **FAST)
    assert set(idata.children) == {"posterior", "particles", "sample_stats", "annealing_stats",
                                   "observed_data"}
    assert idata["posterior"]["mu"].dims == ("chain", "draw")
    assert idata["sample_stats"]["log_marginal_likelihood"].dims == ("chain",)
    steps = idata["annealing_stats"]
    assert steps["beta"].dims == ("chain", "step") and steps.sizes["step"] == 50
    assert steps["beta"].values[0, -1] == 1.0
    for name in ("acceptance_rate", "step_size", "ess", "log_marginal_likelihood", "divergences"):
        assert name in steps
    # the running log Z after the last step is the chain's final estimate
    np.testing.assert_allclose(steps["log_marginal_likelihood"].values[:, -1],
                               idata["sample_stats"]["log_marginal_likelihood"].values)
    assert idata.attrs["kernel"] == "hais" and idata.attrs["backend"] == default_backend()
    est = pa.log_evidence(idata)
    assert est.num_particles == 400 and np.isfinite(est.chain_sd)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(draws=1), "draws must be an integer >= 2"),
        (dict(num_steps=0), "num_steps must be an integer >= 1"),
        (dict(chains=0), "chains must be an integer >= 1"),
        (dict(kernel="nuts"), r"unknown kernel 'nuts'; must be one of \[.*'hais', 'hmc', 'mala', 'metropolis'\]"),
        (dict(backend="cuda"), r"unknown backend 'cuda'; must be one of \['c', 'jax', 'numba', 'auto'\]"),
        (dict(schedule="cosine"), "schedule must be one of .* got 'cosine'"),
        (dict(schedule=[0.0, 0.5, 0.4, 1.0], num_steps=None), "strictly increasing"),
        (dict(schedule=[0.1, 1.0], num_steps=None), "start at exactly 0"),
        (dict(mass_matrix="dense"), "unknown mass_matrix 'dense'"),
        (dict(step_size=-1.0), "step_size must be a positive float"),
    ],
)
def test_bad_arguments_raise_clear_errors(normal_mean, kwargs, match):
    _, model = normal_mean
    with pytest.raises(pa.AnnealingError, match=match):
        pa.sample_ais(model=model, **{**FAST, **kwargs})


@pytest.mark.parametrize("dist", ["Flat", "HalfFlat"])
def test_improper_prior_is_refused(dist):
    with pm.Model():
        theta = getattr(pm, dist)("theta")
        pm.Normal("y", theta, 1.0, observed=[0.2])
        with pytest.raises(pa.AnnealingError, match=r"improper \(Flat/HalfFlat\).*undefined"):
            pa.sample_ais(**FAST)


def test_discrete_free_variable_is_explained():
    with pm.Model():
        k = pm.Poisson("k", 3.0)
        pm.Normal("y", k, 1.0, observed=[2.0])
        with pytest.raises(pa.AnnealingError, match="'k' .Poisson. has an unbounded support"):
            pa.sample_ais(**FAST, discrete="sum")


def test_model_without_data_is_refused():
    with pm.Model():
        pm.Normal("mu", 0.0, 1.0)
        with pytest.raises(pa.AnnealingError, match="no observed data"):
            pa.sample_ais(**FAST)


def test_impossible_data_is_an_error_not_nan():
    with pm.Model():
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Uniform("y", lower=mu - 1.0, upper=mu + 1.0, observed=100.0)
        # named before anything runs (issue 40); the run's own zero-weight error is tested
        # in test_run_checks
        with pytest.raises(pa.AnnealingError, match=r"'y' are impossible under the model at "
                                                    r"1 of 1 positions \(\(0,\) = 100\)"):
            pa.sample_ais(**FAST)


def test_log_evidence_refuses_other_data():
    with pytest.raises(pa.AnnealingError, match="needs a DataTree returned by"):
        pa.log_evidence({"posterior": None})


@pytest.mark.slow
def test_model_with_many_log_density_terms():
    """40 scalar variables: a log density summed from > 32 terms (Python mode's limit).

    z_i ~ N(0, 1), y ~ N(mean(z), 1): y ~ N(0, 1 + 1/40) in closed form.
    """
    with pm.Model():
        zs = [pm.Normal(f"z{i}", np.float64(0.0), np.float64(1.0)) for i in range(40)]
        pm.Normal("y", sum(zs) / 40.0, np.float64(1.0), observed=np.array([0.3]))
        idata = pa.sample_ais(draws=200, chains=2, num_steps=20, random_seed=1, progressbar=False)
    exact = stats.norm.logpdf(0.3, 0.0, np.sqrt(1.0 + 1.0 / 40))
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - exact) < 3 * est.standard_error + 1e-3


def test_low_ess_warns_with_our_warning_class():
    from pymc_anneal.diagnostics import check_weights as _check_weights

    log_w = np.zeros((2, 100))
    log_w[:, 0] = 50.0  # one particle per chain dominates: ESS 2 of 200, chains agree
    with pytest.warns(pa.AnnealingWarning, match=r"weight ESS is 2.0 of 200 particles.*num_steps"):
        _check_weights(log_w)
    _check_weights(np.zeros((2, 100)))  # equal weights: no warning (warnings are errors here)


def test_disagreeing_chains_warn():
    from pymc_anneal.diagnostics import check_weights as _check_weights

    rng = np.random.default_rng(0)
    log_w = rng.normal(0.0, 0.1, size=(4, 500))
    _check_weights(log_w)  # consistent chains: no warning (warnings are errors here)
    log_w[0] += 1.0  # one chain is off by a nat
    with pytest.warns(pa.AnnealingWarning, match="the chains disagree.*Increase num_steps"):
        _check_weights(log_w)


# --------------------------------------------------------------------------- model space


def test_a_path_maps_its_positions_to_the_model_space():
    """Path.to_model: the identity on a prior path; on a whitened Gaussian-base path
    x = mean + z @ L.T (Sigma = L L^T), the map the path's own base draws go through: with
    defensive=0 they are N(mean, Sigma) in the model's space."""
    from pymc_anneal.paths import gaussian_base_path

    with pm.Model() as model:
        pm.Normal("x", 0.0, 1.0, shape=2)
        pm.Normal("y", 0.0, 1.0, observed=[0.1])
    prior = model_path(model).path
    z = np.random.default_rng(0).standard_normal((3, 5, 2))
    assert prior.to_model(z) is z
    mean, cov = np.array([1.0, -2.0]), np.array([[2.0, 0.6], [0.6, 0.5]])
    path = gaussian_base_path(prior, mean, cov, defensive=0.0)
    np.testing.assert_allclose(path.to_model(z), mean + z @ np.linalg.cholesky(cov).T,
                               rtol=1e-14)
    draws = path.to_model(path.sample_base(np.random.default_rng(1), 4000))
    # the sample mean and covariance within 4 of their standard errors (n = 4000 normals:
    # var(s_ij) = (s_ii s_jj + s_ij^2) / n)
    n, var = 4000, np.diag(cov)
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 4 * np.sqrt(var / n))
    cov_se = np.sqrt((np.outer(var, var) + cov**2) / n)
    assert np.all(np.abs(np.cov(draws.T) - cov) < 4 * cov_se)
