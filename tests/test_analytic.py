"""Self-tests of the closed-form evidence targets in ``tests/analytic.py``.

Each closed form is checked against an independent computation:

* 1-D targets: adaptive quadrature of ``exp(joint logp)`` taken from the PyMC
  model itself (value space, with log-Jacobian, so the integral is ``p(y)``).
* Gaussian / NIG regressions: Chib's identity
  ``p(y) = p(y | theta) p(theta) / p(theta | y)`` at arbitrary points, with the
  conjugate posterior; plus agreement of the PyMC joint logp with SciPy
  densities at the same points. The NIG evidence is further checked by a 1-D
  quadrature over ``log sigma2`` with ``beta`` integrated out analytically, and
  against the multivariate Student-t form.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
import scipy.integrate
import scipy.linalg
import scipy.optimize
import scipy.special
import scipy.stats

from tests import analytic

ATOL = 1e-8  # deterministic; PyMC logp agrees with the closed forms to ~1e-11

EVERY_TARGET = (*analytic.ALL_TARGETS, analytic.TINY_TARGET, analytic.HIGH_DIM_TARGET)


def _ids(targets):
    return [t.name for t in targets]


def _by_prefix(prefix, targets=EVERY_TARGET):
    return tuple(t for t in targets if t.name.startswith(prefix))


def _log_integrate_1d(log_f, x0=0.0):
    """``log int exp(log_f(x)) dx`` by quadrature around the mode of ``log_f``.

    The integrand is shifted by its maximum for numerical range, and
    integrated over +/- 40 Laplace standard deviations around the mode.
    """
    mode = scipy.optimize.minimize_scalar(
        lambda x: -log_f(x), bracket=(x0 - 1.0, x0 + 1.0)
    ).x
    h = 1e-4
    curv = (log_f(mode + h) - 2.0 * log_f(mode) + log_f(mode - h)) / h**2
    assert curv < 0.0
    scale = 1.0 / np.sqrt(-curv)
    peak = log_f(mode)
    integral, _ = scipy.integrate.quad(
        lambda x: np.exp(log_f(x) - peak),
        mode - 40.0 * scale,
        mode + 40.0 * scale,
        points=[mode],
        epsabs=0.0,
        epsrel=1e-12,
        limit=500,
    )
    return peak + np.log(integral)


def _scalar_logp(model, jacobian=True):
    """Joint logp of a one-parameter model as a function of its value variable."""
    (value_var,) = model.value_vars
    logp = model.compile_logp(jacobian=jacobian)
    return lambda x: float(logp({value_var.name: np.asarray(x, dtype=float)}))


# ---------------------------------------------------------------------------
# Structure of every target
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("target", EVERY_TARGET, ids=_ids(EVERY_TARGET))
def test_target_structure(target):
    model = target.build()
    assert isinstance(model, pm.Model)
    assert target.build() is not model  # fresh model each call
    assert not model.data_vars  # data baked in as constants, no pm.Data
    assert isinstance(target.log_evidence, float)
    assert np.isfinite(target.log_evidence)
    point = model.initial_point()
    assert sum(np.size(v) for v in point.values()) == target.num_dims
    assert np.isfinite(model.compile_logp()(point))


def test_targets_are_deterministic_and_named_uniquely():
    again = analytic.all_targets()
    assert [t.log_evidence for t in again] == [t.log_evidence for t in analytic.ALL_TARGETS]
    assert len({t.name for t in EVERY_TARGET}) == len(EVERY_TARGET)
    assert analytic.TINY_TARGET.num_dims == 1
    assert analytic.TINY_TARGET.log_evidence == analytic.normal_mean(n=5).log_evidence
    assert analytic.HIGH_DIM_TARGET.num_dims == 100
    assert analytic.linear_regression(num_features=100, n=200).num_dims == 100


# ---------------------------------------------------------------------------
# Closed-form helpers
# ---------------------------------------------------------------------------


def test_gaussian_helper_matches_scipy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 6))
    cov = a @ a.T + 0.5 * np.eye(6)
    mean, y = rng.standard_normal(6), rng.standard_normal(6)
    expected = scipy.stats.multivariate_normal(mean, cov).logpdf(y)
    assert analytic.exact_log_evidence_gaussian(y, mean, cov) == pytest.approx(
        expected, abs=1e-10
    )


def test_student_t_helper_matches_scipy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((5, 5))
    shape = a @ a.T + 0.5 * np.eye(5)
    loc, y = rng.standard_normal(5), rng.standard_normal(5)
    expected = scipy.stats.multivariate_t(loc, shape, df=4.5).logpdf(y)
    assert analytic.exact_log_evidence_student_t(y, 4.5, loc, shape) == pytest.approx(
        expected, abs=1e-10
    )


# ---------------------------------------------------------------------------
# Normal mean: quadrature of the PyMC joint density
# ---------------------------------------------------------------------------

NORMAL_MEANS = _by_prefix("normal_mean")


@pytest.mark.parametrize("target", NORMAL_MEANS, ids=_ids(NORMAL_MEANS))
def test_normal_mean_quadrature(target):
    log_f = _scalar_logp(target.build())
    assert _log_integrate_1d(log_f) == pytest.approx(target.log_evidence, abs=ATOL)


@pytest.mark.parametrize("target", NORMAL_MEANS, ids=_ids(NORMAL_MEANS))
def test_normal_mean_chib_identity(target):
    p = target.params
    y, m0, tau, sigma = p["y"], p["prior_mean"], p["prior_sd"], p["noise_sd"]
    post_prec = 1.0 / tau**2 + y.size / sigma**2
    post_mean = (m0 / tau**2 + y.sum() / sigma**2) / post_prec
    log_f = _scalar_logp(target.build())
    for mu in (-3.0, p["mu_true"], 0.7, 4.0):
        log_joint = (
            scipy.stats.norm(mu, sigma).logpdf(y).sum() + scipy.stats.norm(m0, tau).logpdf(mu)
        )
        assert log_f(mu) == pytest.approx(log_joint, abs=1e-9)
        log_post = scipy.stats.norm(post_mean, post_prec**-0.5).logpdf(mu)
        assert log_joint - log_post == pytest.approx(target.log_evidence, abs=ATOL)


# ---------------------------------------------------------------------------
# Beta-Binomial: quadrature over logit(p) and over p
# ---------------------------------------------------------------------------

BETA_BINOMIALS = _by_prefix("beta_binomial")


@pytest.mark.parametrize("target", BETA_BINOMIALS, ids=_ids(BETA_BINOMIALS))
def test_beta_binomial_quadrature_over_logit(target):
    model = target.build()
    assert [v.name for v in model.value_vars] == ["p_logodds__"]
    log_f = _scalar_logp(model, jacobian=True)
    assert _log_integrate_1d(log_f) == pytest.approx(target.log_evidence, abs=ATOL)


@pytest.mark.parametrize("target", BETA_BINOMIALS, ids=_ids(BETA_BINOMIALS))
def test_beta_binomial_quadrature_over_p_with_scipy(target):
    prm = target.params
    k, n, a, b = np.atleast_1d(prm["k"]), prm["n_trials"], prm["alpha"], prm["beta"]

    def integrand(p):
        return np.exp(
            scipy.stats.binom(n, p).logpmf(k).sum()
            + scipy.stats.beta(a, b).logpdf(p)
            - target.log_evidence
        )

    mode = (a - 1 + k.sum()) / (a + b - 2 + n * k.size)
    ratio, _ = scipy.integrate.quad(
        integrand, 0.0, 1.0, points=[mode], epsabs=0.0, epsrel=1e-12, limit=500
    )
    assert np.log(ratio) == pytest.approx(0.0, abs=ATOL)


def test_beta_binomial_single_group_is_betabinom_pmf():
    target = analytic.beta_binomial()
    p = target.params
    assert np.ndim(p["k"]) == 0
    expected = scipy.stats.betabinom(p["n_trials"], p["alpha"], p["beta"]).logpmf(p["k"])
    assert target.log_evidence == pytest.approx(expected, abs=1e-10)


def test_beta_binomial_groups_observed_as_vector():
    target = analytic.beta_binomial(num_groups=4)
    assert np.shape(target.params["k"]) == (4,)
    assert target.build()["k"].type.shape == (4,)


# ---------------------------------------------------------------------------
# Gaussian linear regression: Chib identity and PyMC logp agreement
# ---------------------------------------------------------------------------

LINEAR_REGRESSIONS = _by_prefix("linear_regression")


def _linear_regression_points(params, rng):
    d = params["beta_true"].size
    return (np.zeros(d), params["beta_true"], rng.normal(0.0, 2.0, size=d))


@pytest.mark.parametrize("target", LINEAR_REGRESSIONS, ids=_ids(LINEAR_REGRESSIONS))
def test_linear_regression_chib_identity_and_model_logp(target):
    p = target.params
    x, y, tau, sigma = p["x"], p["y"], p["prior_sd"], p["noise_sd"]
    d = x.shape[1]
    precision = np.eye(d) / tau**2 + x.T @ x / sigma**2
    post_cov = np.linalg.inv(precision)
    post_cov = 0.5 * (post_cov + post_cov.T)
    post_mean = post_cov @ (x.T @ y) / sigma**2
    posterior = scipy.stats.multivariate_normal(post_mean, post_cov)

    logp = target.build().compile_logp(jacobian=True)
    for beta in _linear_regression_points(p, np.random.default_rng(7)):
        log_lik = scipy.stats.norm(x @ beta, sigma).logpdf(y).sum()
        log_prior = scipy.stats.norm(0.0, tau).logpdf(beta).sum()
        assert logp({"beta": beta}) == pytest.approx(log_lik + log_prior, abs=1e-8)
        chib = log_lik + log_prior - posterior.logpdf(beta)
        assert chib == pytest.approx(target.log_evidence, abs=ATOL)


# ---------------------------------------------------------------------------
# Normal-Inverse-Gamma regression
# ---------------------------------------------------------------------------

NIG_REGRESSIONS = _by_prefix("nig_regression") + (
    analytic.nig_regression(num_features=1, n=10, seed=5),
)


def _nig_points(params, rng):
    d = params["beta_true"].size
    return (
        (params["sigma2_true"], params["beta_true"]),
        (0.4, np.zeros(d)),
        (3.0, rng.normal(0.0, 1.0, size=d)),
    )


@pytest.mark.parametrize("target", NIG_REGRESSIONS, ids=_ids(NIG_REGRESSIONS))
def test_nig_model_logp_matches_scipy(target):
    p = target.params
    x, y, a0, b0, lam = p["x"], p["y"], p["a0"], p["b0"], p["lambda0"]
    model = target.build()
    assert [v.name for v in model.value_vars] == ["sigma2_log__", "beta"]
    logp_no_jac = model.compile_logp(jacobian=False)
    logp_jac = model.compile_logp(jacobian=True)
    for sigma2, beta in _nig_points(p, np.random.default_rng(11)):
        point = {"sigma2_log__": np.log(sigma2), "beta": beta}
        expected = (
            scipy.stats.invgamma(a0, scale=b0).logpdf(sigma2)
            + scipy.stats.norm(0.0, np.sqrt(sigma2 * lam)).logpdf(beta).sum()
            + scipy.stats.norm(x @ beta, np.sqrt(sigma2)).logpdf(y).sum()
        )
        assert logp_no_jac(point) == pytest.approx(expected, abs=1e-8)
        # log-Jacobian of sigma2 = exp(u) is u = log(sigma2)
        assert logp_jac(point) == pytest.approx(expected + np.log(sigma2), abs=1e-8)


@pytest.mark.parametrize("target", NIG_REGRESSIONS, ids=_ids(NIG_REGRESSIONS))
def test_nig_chib_identity(target):
    p = target.params
    x, y, a0, b0, lam = p["x"], p["y"], p["a0"], p["b0"], p["lambda0"]
    n, d = x.shape
    v_n = np.linalg.inv(np.eye(d) / lam + x.T @ x)
    v_n = 0.5 * (v_n + v_n.T)
    m_n = v_n @ x.T @ y
    a_n = a0 + 0.5 * n
    b_n = b0 + 0.5 * (y @ y - m_n @ np.linalg.solve(v_n, m_n))

    logp = target.build().compile_logp(jacobian=False)
    for sigma2, beta in _nig_points(p, np.random.default_rng(13)):
        log_joint = logp({"sigma2_log__": np.log(sigma2), "beta": beta})
        log_post = scipy.stats.invgamma(a_n, scale=b_n).logpdf(sigma2) + (
            scipy.stats.multivariate_normal(m_n, sigma2 * v_n).logpdf(beta)
        )
        assert log_joint - log_post == pytest.approx(target.log_evidence, abs=ATOL)


@pytest.mark.parametrize("target", NIG_REGRESSIONS, ids=_ids(NIG_REGRESSIONS))
def test_nig_quadrature_over_log_sigma2(target):
    p = target.params
    x, y, a0, b0, lam = p["x"], p["y"], p["a0"], p["b0"], p["lambda0"]
    base_cov = np.eye(y.size) + lam * (x @ x.T)  # y | sigma2 ~ N(0, sigma2 * base_cov)
    prior = scipy.stats.invgamma(a0, scale=b0)

    def log_f(u):
        sigma2 = np.exp(u)
        return (
            scipy.stats.multivariate_normal(np.zeros(y.size), sigma2 * base_cov).logpdf(y)
            + prior.logpdf(sigma2)
            + u  # d sigma2 / du
        )

    x0 = np.log(p["sigma2_true"])
    assert _log_integrate_1d(log_f, x0=x0) == pytest.approx(target.log_evidence, abs=ATOL)


@pytest.mark.parametrize("target", NIG_REGRESSIONS, ids=_ids(NIG_REGRESSIONS))
def test_nig_student_t_form(target):
    p = target.params
    x, y, a0, b0, lam = p["x"], p["y"], p["a0"], p["b0"], p["lambda0"]
    shape = (b0 / a0) * (np.eye(y.size) + lam * (x @ x.T))
    expected = scipy.stats.multivariate_t(np.zeros(y.size), shape, df=2.0 * a0).logpdf(y)
    assert target.log_evidence == pytest.approx(expected, abs=ATOL)
    assert analytic.exact_log_evidence_student_t(y, 2.0 * a0, 0.0, shape) == pytest.approx(
        expected, abs=1e-9
    )


def test_logistic_quadrature_converges_and_matches_the_model():
    """The logistic evidence: PyMC's joint logp equals the NumPy log joint the quadrature
    integrates, the quadrature has converged (24 vs 40 nodes per dimension), and importance
    sampling from a Student-t around the mode (an independent estimate) agrees within 4 of
    its standard errors."""
    target = analytic.logistic_regression()
    x, y, prior_sd = target.params["x"], target.params["y"], target.params["prior_sd"]
    logp = target.build().compile_logp()
    rng = np.random.default_rng(0)
    for beta in rng.normal(size=(3, x.shape[1])):
        np.testing.assert_allclose(logp({"beta": beta}),
                                   analytic._logistic_log_joint(beta[None], x, y, prior_sd)[0],
                                   rtol=1e-10)
    assert analytic.logistic_log_evidence(x, y, prior_sd, num_nodes=40) == pytest.approx(
        target.log_evidence, abs=1e-8)
    # t_5 proposal centred at the mode with the Laplace covariance, inflated
    mode = scipy.optimize.minimize(
        lambda b: -analytic._logistic_log_joint(b[None], x, y, prior_sd)[0],
        np.zeros(x.shape[1])).x
    p = scipy.special.expit(x @ mode)
    cov = np.linalg.inv(x.T @ (x * (p * (1 - p))[:, None]) + np.eye(x.shape[1]) / prior_sd**2)
    proposal = scipy.stats.multivariate_t(mode, 2.0 * cov, df=5, seed=1)
    draws = proposal.rvs(200_000)
    log_w = analytic._logistic_log_joint(draws, x, y, prior_sd) - proposal.logpdf(draws)
    w = np.exp(log_w - log_w.max())
    estimate = np.log(w.mean()) + log_w.max()
    se = w.std() / (w.mean() * np.sqrt(w.size))
    assert abs(estimate - target.log_evidence) < 4 * se + 1e-6, (estimate, se)


def test_polynomial_design_is_correlated_and_its_evidence_is_nig():
    target = analytic.polynomial_regression()
    x = target.params["x"]
    np.testing.assert_allclose(x[:, 0], 1.0)
    # the squared column is far from orthogonal to the intercept
    assert abs(np.mean(x[:, 2])) > 0.5
    assert target.log_evidence == pytest.approx(analytic.nig_log_evidence(
        x, target.params["y"], 3.0, 2.0, 4.0), abs=1e-12)
    beta = target.params["beta_true"]
    point = {"sigma2_log__": np.log(target.params["sigma2_true"]), "beta": beta}
    model_logp = target.build().compile_logp()(point)
    sigma2 = target.params["sigma2_true"]
    expected = (scipy.stats.invgamma(3.0, scale=2.0).logpdf(sigma2) + np.log(sigma2)
                + scipy.stats.norm(0, np.sqrt(4.0 * sigma2)).logpdf(beta).sum()
                + scipy.stats.norm(x @ beta, np.sqrt(sigma2)).logpdf(target.params["y"]).sum())
    assert model_logp == pytest.approx(expected, abs=1e-8)
