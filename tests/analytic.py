"""Ground-truth targets: PyMC models whose log evidence has a closed form.

Every factory in this module returns an :class:`AnalyticTarget`: a builder for a
fresh ``pm.Model`` (data baked in as constants, never ``pm.Data``), the exact
log marginal likelihood ``log p(y)`` of the observed data computed in NumPy /
SciPy, and the number of unconstrained parameters. Synthetic data are drawn
with ``np.random.default_rng(seed)`` from the model's own prior predictive, so
the data are typical for the model; the default seeds are fixed and documented
in each factory's signature, so the targets are fully deterministic.

Models and closed forms
-----------------------
``normal_mean`` (1 parameter)
    mu ~ Normal(m0, tau), y_i | mu ~ Normal(mu, sigma) iid, i = 1..n, with
    sigma known (m0 = 0.5, tau = 2, sigma = 1.5). Integrating mu out,

        y ~ MVN(m0 * 1, sigma^2 I + tau^2 1 1^T).

``linear_regression`` (num_features parameters)
    beta_j ~ Normal(0, tau) iid, y | beta ~ Normal(X beta, sigma I), with a fixed
    column-standardized design X (n x d) and known noise sd (tau = 1.5,
    sigma = 0.8). Integrating beta out,

        y ~ MVN(0, sigma^2 I + tau^2 X X^T).

``beta_binomial`` (1 parameter)
    p ~ Beta(a, b), k_g | p ~ Binomial(n_g, p) independently for groups
    g = 1..G that share p (a = 2, b = 3). With K = sum k_g, N = sum n_g,

        p(k) = prod_g C(n_g, k_g) * B(a + K, b + N - K) / B(a, b).

    For G = 1 this is the Beta-Binomial pmf. In PyMC, ``p`` is sampled on the
    logit scale (value variable ``p_logodds__``); the evidence is invariant to
    that reparametrization because the joint log density includes the
    log-Jacobian.

``nig_regression`` (num_features + 1 parameters)
    Normal-Inverse-Gamma conjugate regression:
    sigma2 ~ InverseGamma(a0, b0), beta | sigma2 ~ Normal(0, sigma2 * V0) with
    V0 = lambda0 I, y | beta, sigma2 ~ Normal(X beta, sigma2 I)
    (a0 = 3, b0 = 2, lambda0 = 1.5). With the conjugate posterior

        V_n = (V0^{-1} + X^T X)^{-1},  m_n = V_n X^T y,
        a_n = a0 + n / 2,  b_n = b0 + (y^T y - m_n^T V_n^{-1} m_n) / 2,

    the evidence is

        log p(y) = -n/2 log(2 pi) + 1/2 (log|V_n| - log|V0|)
                   + a0 log b0 - a_n log b_n + lgamma(a_n) - lgamma(a0),

    equivalently y ~ multivariate Student-t with 2 a0 degrees of freedom,
    location 0 and shape matrix (b0 / a0) (I + X V0 X^T). ``sigma2`` is
    sampled on the log scale in PyMC (value variable ``sigma2_log__``).

``logistic_regression`` (num_features + 1 parameters)
    beta_j ~ Normal(0, tau) iid (intercept included), y_i ~ Bernoulli(logit^-1(x_i beta))
    (tau = 2). No closed form: the evidence is a (num_features + 1)-dimensional integral,
    computed by tensor Gauss-Hermite quadrature in the coordinates that whiten the Laplace
    approximation at the posterior mode (the integrand is then a smooth, nearly constant
    correction to a Gaussian; 24 nodes per dimension agree with 32 to 1e-9 nat at the
    defaults, which the self-tests check).

``polynomial_regression`` (degree + 2 parameters)
    The Normal-Inverse-Gamma regression on the design ``1, x, x^2, ...``: correlated
    columns, hence a correlated posterior (the kind of model where a diagonal mass matrix
    mixes slowly).

Module-level instances
----------------------
``ALL_TARGETS``
    The default instance of every factory (plus a multi-group Beta-Binomial).
``TINY_TARGET``
    ``normal_mean(n=5)``: a one-parameter problem cheap enough for
    unbiasedness tests that need many independent runs.
``HIGH_DIM_TARGET``
    ``linear_regression(num_features=100, n=200)``.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import scipy.linalg
import scipy.special
import scipy.stats

__all__ = [
    "ALL_TARGETS",
    "HIGH_DIM_TARGET",
    "TINY_TARGET",
    "AnalyticTarget",
    "all_targets",
    "beta_binomial",
    "beta_binomial_log_evidence",
    "exact_log_evidence_gaussian",
    "exact_log_evidence_student_t",
    "linear_regression",
    "logistic_regression",
    "logistic_log_evidence",
    "nig_regression",
    "nig_log_evidence",
    "normal_mean",
    "polynomial_regression",
    "standardized_design",
]


@dataclass(frozen=True)
class AnalyticTarget:
    """A PyMC model together with its exact log evidence.

    Attributes
    ----------
    name : str
        Short identifier, usable as a pytest id.
    build : callable
        ``build()`` returns a fresh ``pm.Model`` with the data as constants.
    log_evidence : float
        Exact log marginal likelihood ``log p(y)`` of the observed data.
    num_dims : int
        Number of unconstrained (value-space) parameters.
    params : Mapping[str, Any]
        Read-only data arrays and hyperparameters used to build the model;
        informational (used by the self-tests), excluded from equality.
    """

    name: str
    build: Callable[[], pm.Model]
    log_evidence: float
    num_dims: int
    params: Mapping[str, Any] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )


def _frozen(**params: Any) -> Mapping[str, Any]:
    """Return a read-only mapping, making any NumPy arrays read-only too."""
    out = {}
    for key, value in params.items():
        if isinstance(value, np.ndarray):
            value = value.copy()
            value.setflags(write=False)
        out[key] = value
    return types.MappingProxyType(out)


def _f64(*values: float) -> tuple[np.float64, ...]:
    """Cast hyperparameters to ``np.float64`` before handing them to PyMC.

    PyTensor turns a Python float that is exactly representable in float32
    (``2.0``, ``1.5``, ``3.0``) into a *float32* constant, and an int into an
    int8 one, so e.g. ``log(sigma)`` or ``gammaln(alpha)`` would be evaluated
    in single precision: an error of ~1e-9 per term, ~1e-7 in the joint logp.
    NumPy float64 scalars keep every constant in double precision.
    """
    return tuple(np.float64(v) for v in values)


# ---------------------------------------------------------------------------
# Closed-form helpers
# ---------------------------------------------------------------------------


def exact_log_evidence_gaussian(
    y: np.ndarray, mean: np.ndarray | float, cov: np.ndarray
) -> float:
    """Log density of ``y`` under ``MVN(mean, cov)``, via a Cholesky factor.

    Parameters
    ----------
    y : ndarray, shape (n,)
        Observation vector.
    mean : ndarray of shape (n,) or float
        Mean vector (a scalar is broadcast).
    cov : ndarray, shape (n, n)
        Symmetric positive-definite covariance matrix.

    Returns
    -------
    float
        ``log N(y; mean, cov)``.
    """
    resid = np.asarray(y, dtype=float) - mean
    chol = scipy.linalg.cholesky(np.asarray(cov, dtype=float), lower=True)
    z = scipy.linalg.solve_triangular(chol, resid, lower=True)
    log_det = 2.0 * np.sum(np.log(np.diag(chol)))
    return float(-0.5 * (resid.size * np.log(2.0 * np.pi) + log_det + z @ z))


def exact_log_evidence_student_t(
    y: np.ndarray, df: float, loc: np.ndarray | float, shape: np.ndarray
) -> float:
    """Log density of ``y`` under a multivariate Student-t distribution.

    Parameters
    ----------
    y : ndarray, shape (n,)
        Observation vector.
    df : float
        Degrees of freedom.
    loc : ndarray of shape (n,) or float
        Location vector (a scalar is broadcast).
    shape : ndarray, shape (n, n)
        Symmetric positive-definite shape (scale) matrix.

    Returns
    -------
    float
        ``log t_df(y; loc, shape)``.
    """
    resid = np.asarray(y, dtype=float) - loc
    n = resid.size
    chol = scipy.linalg.cholesky(np.asarray(shape, dtype=float), lower=True)
    z = scipy.linalg.solve_triangular(chol, resid, lower=True)
    log_det = 2.0 * np.sum(np.log(np.diag(chol)))
    return float(
        scipy.special.gammaln(0.5 * (df + n))
        - scipy.special.gammaln(0.5 * df)
        - 0.5 * n * np.log(df * np.pi)
        - 0.5 * log_det
        - 0.5 * (df + n) * np.log1p(z @ z / df)
    )


def standardized_design(rng: np.random.Generator, n: int, num_features: int) -> np.ndarray:
    """Draw a Gaussian design matrix with columns of mean 0 and sd 1.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of randomness.
    n : int
        Number of rows (observations).
    num_features : int
        Number of columns (features).

    Returns
    -------
    ndarray, shape (n, num_features)
    """
    x = rng.standard_normal((n, num_features))
    return (x - x.mean(axis=0)) / x.std(axis=0)


# ---------------------------------------------------------------------------
# 1. Normal mean with known noise
# ---------------------------------------------------------------------------


def _build_normal_mean(y, prior_mean, prior_sd, noise_sd) -> pm.Model:
    prior_mean, prior_sd, noise_sd = _f64(prior_mean, prior_sd, noise_sd)
    with pm.Model() as model:
        mu = pm.Normal("mu", mu=prior_mean, sigma=prior_sd)
        pm.Normal("y", mu=mu, sigma=noise_sd, observed=y)
    return model


def normal_mean(
    n: int = 20,
    seed: int = 101,
    prior_mean: float = 0.5,
    prior_sd: float = 2.0,
    noise_sd: float = 1.5,
) -> AnalyticTarget:
    """Unknown mean of Gaussian data with known noise sd.

    ``mu ~ Normal(prior_mean, prior_sd)``, ``y_i ~ Normal(mu, noise_sd)``.
    The data use a true ``mu`` drawn from the prior.

    Parameters
    ----------
    n : int, default 20
        Number of observations.
    seed : int, default 101
        Seed for ``np.random.default_rng``.
    prior_mean, prior_sd : float, default 0.5, 2.0
        Prior on ``mu``.
    noise_sd : float, default 1.5
        Known observation noise sd.

    Returns
    -------
    AnalyticTarget
        Evidence ``MVN(prior_mean 1, noise_sd^2 I + prior_sd^2 1 1^T)``.
    """
    rng = np.random.default_rng(seed)
    mu_true = rng.normal(prior_mean, prior_sd)
    y = rng.normal(mu_true, noise_sd, size=n)
    cov = noise_sd**2 * np.eye(n) + prior_sd**2 * np.ones((n, n))
    params = _frozen(
        y=y, prior_mean=prior_mean, prior_sd=prior_sd, noise_sd=noise_sd, mu_true=mu_true
    )
    return AnalyticTarget(
        name=f"normal_mean_n{n}",
        build=functools.partial(_build_normal_mean, params["y"], prior_mean, prior_sd, noise_sd),
        log_evidence=exact_log_evidence_gaussian(y, prior_mean, cov),
        num_dims=1,
        params=params,
    )


# ---------------------------------------------------------------------------
# 2. Gaussian linear regression with known noise
# ---------------------------------------------------------------------------


def _build_linear_regression(x, y, prior_sd, noise_sd) -> pm.Model:
    prior_sd, noise_sd = _f64(prior_sd, noise_sd)
    with pm.Model() as model:
        beta = pm.Normal("beta", mu=np.float64(0.0), sigma=prior_sd, shape=x.shape[1])
        pm.Normal("y", mu=pt.dot(x, beta), sigma=noise_sd, observed=y)
    return model


def linear_regression(
    num_features: int = 10,
    n: int = 50,
    seed: int = 202,
    prior_sd: float = 1.5,
    noise_sd: float = 0.8,
) -> AnalyticTarget:
    """Bayesian linear regression with iid Gaussian prior and known noise.

    ``beta ~ Normal(0, prior_sd)`` iid, ``y ~ Normal(X beta, noise_sd)``,
    ``X`` a fixed standardized Gaussian design; true ``beta`` drawn from the
    prior.

    Parameters
    ----------
    num_features : int, default 10
        Number of regression coefficients (dimension of the problem).
    n : int, default 50
        Number of observations.
    seed : int, default 202
        Seed for ``np.random.default_rng``.
    prior_sd : float, default 1.5
        Prior sd of each coefficient.
    noise_sd : float, default 0.8
        Known observation noise sd.

    Returns
    -------
    AnalyticTarget
        Evidence ``MVN(0, noise_sd^2 I + prior_sd^2 X X^T)``.
    """
    rng = np.random.default_rng(seed)
    x = standardized_design(rng, n, num_features)
    beta_true = rng.normal(0.0, prior_sd, size=num_features)
    y = x @ beta_true + rng.normal(0.0, noise_sd, size=n)
    cov = noise_sd**2 * np.eye(n) + prior_sd**2 * (x @ x.T)
    params = _frozen(x=x, y=y, prior_sd=prior_sd, noise_sd=noise_sd, beta_true=beta_true)
    return AnalyticTarget(
        name=f"linear_regression_d{num_features}_n{n}",
        build=functools.partial(
            _build_linear_regression, params["x"], params["y"], prior_sd, noise_sd
        ),
        log_evidence=exact_log_evidence_gaussian(y, 0.0, cov),
        num_dims=num_features,
        params=params,
    )


# ---------------------------------------------------------------------------
# 3. Beta-Binomial
# ---------------------------------------------------------------------------


def _build_beta_binomial(k, n_trials, alpha, beta) -> pm.Model:
    alpha, beta = _f64(alpha, beta)
    n_trials = np.int64(n_trials)
    with pm.Model() as model:
        p = pm.Beta("p", alpha=alpha, beta=beta)
        pm.Binomial("k", n=n_trials, p=p, observed=k)
    return model


def beta_binomial_log_evidence(k, n_trials, alpha: float, beta: float) -> float:
    """Exact log evidence of independent Binomial counts sharing a Beta prior.

    Parameters
    ----------
    k, n_trials : array_like of int
        Successes and trials per group (broadcast against each other).
    alpha, beta : float
        Beta prior parameters.

    Returns
    -------
    float
        ``sum log C(n_g, k_g) + log B(alpha + K, beta + N - K) - log B(alpha, beta)``.
    """
    k, n_trials = np.broadcast_arrays(np.asarray(k, float), np.asarray(n_trials, float))
    log_binom = (
        scipy.special.gammaln(n_trials + 1)
        - scipy.special.gammaln(k + 1)
        - scipy.special.gammaln(n_trials - k + 1)
    )
    return float(
        np.sum(log_binom)
        + scipy.special.betaln(alpha + k.sum(), beta + (n_trials - k).sum())
        - scipy.special.betaln(alpha, beta)
    )


def beta_binomial(
    n_trials: int = 40,
    num_groups: int = 1,
    seed: int = 303,
    alpha: float = 2.0,
    beta: float = 3.0,
) -> AnalyticTarget:
    """Binomial count(s) with a shared Beta-distributed success probability.

    ``p ~ Beta(alpha, beta)``, ``k_g ~ Binomial(n_trials, p)`` for
    ``g = 1..num_groups``; true ``p`` drawn from the prior. With one group the
    observation is a scalar, otherwise a vector of length ``num_groups``.

    Parameters
    ----------
    n_trials : int, default 40
        Trials per group.
    num_groups : int, default 1
        Number of independent groups sharing ``p``.
    seed : int, default 303
        Seed for ``np.random.default_rng``.
    alpha, beta : float, default 2.0, 3.0
        Beta prior parameters.

    Returns
    -------
    AnalyticTarget
        Evidence ``prod C(n, k_g) B(alpha + K, beta + N - K) / B(alpha, beta)``.
    """
    rng = np.random.default_rng(seed)
    p_true = rng.beta(alpha, beta)
    k = rng.binomial(n_trials, p_true, size=num_groups)
    k_obs = np.asarray(k[0]) if num_groups == 1 else k
    params = _frozen(
        k=k_obs, n_trials=n_trials, alpha=alpha, beta=beta, p_true=p_true
    )
    return AnalyticTarget(
        name=f"beta_binomial_g{num_groups}_n{n_trials}",
        build=functools.partial(_build_beta_binomial, params["k"], n_trials, alpha, beta),
        log_evidence=beta_binomial_log_evidence(k_obs, n_trials, alpha, beta),
        num_dims=1,
        params=params,
    )


# ---------------------------------------------------------------------------
# 4. Normal-Inverse-Gamma regression
# ---------------------------------------------------------------------------


def _build_nig_regression(x, y, a0, b0, lambda0) -> pm.Model:
    a0, b0, lambda0 = _f64(a0, b0, lambda0)
    with pm.Model() as model:
        sigma2 = pm.InverseGamma("sigma2", alpha=a0, beta=b0)
        beta = pm.Normal("beta", np.float64(0.0), pt.sqrt(sigma2 * lambda0), shape=x.shape[1])
        pm.Normal("y", pt.dot(x, beta), pt.sqrt(sigma2), observed=y)
    return model


def nig_log_evidence(x, y, a0: float, b0: float, lambda0: float) -> float:
    """Exact log evidence of the zero-mean Normal-Inverse-Gamma regression.

    Parameters
    ----------
    x : ndarray, shape (n, d)
        Design matrix.
    y : ndarray, shape (n,)
        Observations.
    a0, b0 : float
        Inverse-Gamma shape and scale of ``sigma2``.
    lambda0 : float
        Prior covariance of ``beta`` is ``sigma2 * lambda0 * I``.

    Returns
    -------
    float
        ``log p(y)`` from the conjugate posterior ``(V_n, m_n, a_n, b_n)``.
    """
    n, d = x.shape
    precision_n = np.eye(d) / lambda0 + x.T @ x  # V_n^{-1}
    chol = scipy.linalg.cho_factor(precision_n, lower=True)
    m_n = scipy.linalg.cho_solve(chol, x.T @ y)
    log_det_vn = -2.0 * np.sum(np.log(np.diag(chol[0])))
    log_det_v0 = d * np.log(lambda0)
    a_n = a0 + 0.5 * n
    b_n = b0 + 0.5 * (y @ y - m_n @ precision_n @ m_n)
    return float(
        -0.5 * n * np.log(2.0 * np.pi)
        + 0.5 * (log_det_vn - log_det_v0)
        + a0 * np.log(b0)
        - a_n * np.log(b_n)
        + scipy.special.gammaln(a_n)
        - scipy.special.gammaln(a0)
    )


def nig_regression(
    num_features: int = 3,
    n: int = 40,
    seed: int = 404,
    a0: float = 3.0,
    b0: float = 2.0,
    lambda0: float = 1.5,
) -> AnalyticTarget:
    """Conjugate Normal-Inverse-Gamma linear regression (unknown noise).

    ``sigma2 ~ InverseGamma(a0, b0)``,
    ``beta | sigma2 ~ Normal(0, sqrt(sigma2 * lambda0))`` iid,
    ``y ~ Normal(X beta, sqrt(sigma2))``; ``X`` a fixed standardized design,
    true ``(sigma2, beta)`` drawn from the prior.

    Parameters
    ----------
    num_features : int, default 3
        Number of regression coefficients.
    n : int, default 40
        Number of observations.
    seed : int, default 404
        Seed for ``np.random.default_rng``.
    a0, b0 : float, default 3.0, 2.0
        Inverse-Gamma prior on ``sigma2``.
    lambda0 : float, default 1.5
        Prior variance multiplier of ``beta`` (``V0 = lambda0 I``).

    Returns
    -------
    AnalyticTarget
        Evidence ``t_{2 a0}(y; 0, (b0 / a0) (I + lambda0 X X^T))``;
        ``num_dims = num_features + 1``.
    """
    rng = np.random.default_rng(seed)
    x = standardized_design(rng, n, num_features)
    sigma2_true = 1.0 / rng.gamma(a0, 1.0 / b0)
    beta_true = rng.normal(0.0, np.sqrt(sigma2_true * lambda0), size=num_features)
    y = x @ beta_true + rng.normal(0.0, np.sqrt(sigma2_true), size=n)
    params = _frozen(
        x=x,
        y=y,
        a0=a0,
        b0=b0,
        lambda0=lambda0,
        sigma2_true=sigma2_true,
        beta_true=beta_true,
    )
    return AnalyticTarget(
        name=f"nig_regression_d{num_features}_n{n}",
        build=functools.partial(_build_nig_regression, params["x"], params["y"], a0, b0, lambda0),
        log_evidence=nig_log_evidence(x, y, a0, b0, lambda0),
        num_dims=num_features + 1,
        params=params,
    )


def polynomial_regression(
    degree: int = 2,
    n: int = 36,
    seed: int = 606,
    a0: float = 3.0,
    b0: float = 2.0,
    lambda0: float = 4.0,
) -> AnalyticTarget:
    """The Normal-Inverse-Gamma regression on a polynomial design ``1, x, ..., x^degree``
    (``x`` standardized): columns that are far from orthogonal (``x^2`` against the
    intercept), so the posterior is correlated, as in a quadratic dose-response fit.

    Returns
    -------
    AnalyticTarget
        ``num_dims = degree + 2`` (the coefficients and the log noise variance); evidence
        from :func:`nig_log_evidence`.
    """
    rng = np.random.default_rng(seed)
    t = rng.uniform(0.0, 4.0, size=n)
    t = (t - t.mean()) / t.std()
    x = np.column_stack([t**k for k in range(degree + 1)])
    sigma2_true = 1.0 / rng.gamma(a0, 1.0 / b0)
    beta_true = rng.normal(0.0, np.sqrt(sigma2_true * lambda0), size=degree + 1)
    y = x @ beta_true + rng.normal(0.0, np.sqrt(sigma2_true), size=n)
    params = _frozen(x=x, y=y, a0=a0, b0=b0, lambda0=lambda0, sigma2_true=sigma2_true,
                     beta_true=beta_true)
    return AnalyticTarget(
        name=f"polynomial_regression_deg{degree}_n{n}",
        build=functools.partial(_build_nig_regression, params["x"], params["y"], a0, b0, lambda0),
        log_evidence=nig_log_evidence(x, y, a0, b0, lambda0),
        num_dims=degree + 2,
        params=params,
    )


# ---------------------------------------------------------------------------
# 5. Logistic regression (evidence by quadrature)
# ---------------------------------------------------------------------------


def _build_logistic_regression(x, y, prior_sd) -> pm.Model:
    (prior_sd,) = _f64(prior_sd)
    with pm.Model() as model:
        beta = pm.Normal("beta", np.float64(0.0), prior_sd, shape=x.shape[1])
        pm.Bernoulli("y", logit_p=pt.dot(x, beta), observed=y)
    return model


def _logistic_log_joint(beta, x, y, prior_sd):
    """log p(beta) + log p(y | beta) for a batch of coefficient vectors (m, d)."""
    eta = beta @ x.T
    log_lik = np.sum(np.where(y, -np.logaddexp(0.0, -eta), -np.logaddexp(0.0, eta)), axis=-1)
    d = x.shape[1]
    log_prior = (-0.5 * np.sum(beta**2, axis=-1) / prior_sd**2
                 - d * (np.log(prior_sd) + 0.5 * np.log(2.0 * np.pi)))
    return log_prior + log_lik


def logistic_log_evidence(x, y, prior_sd: float, num_nodes: int = 24) -> float:
    """log p(y) of the Bayesian logistic regression, by Gauss-Hermite quadrature.

    Newton's method finds the posterior mode m and the Hessian H of the negative log joint
    there; with L the Cholesky factor of H^{-1}, beta = m + sqrt(2) L z turns the integral
    into sum_z w(z) exp(|z|^2) p(m + sqrt(2) L z, y) * 2^{d/2} |L|, evaluated on the tensor
    grid of ``num_nodes`` Gauss-Hermite nodes per dimension.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=bool)
    d = x.shape[1]
    beta = np.zeros(d)
    for _ in range(100):
        p = scipy.special.expit(x @ beta)
        grad = x.T @ (y - p) - beta / prior_sd**2
        hess = x.T @ (x * (p * (1 - p))[:, None]) + np.eye(d) / prior_sd**2
        step = np.linalg.solve(hess, grad)
        beta = beta + step
        if np.max(np.abs(step)) < 1e-13:
            break
    p = scipy.special.expit(x @ beta)
    hess = x.T @ (x * (p * (1 - p))[:, None]) + np.eye(d) / prior_sd**2
    chol = np.linalg.cholesky(np.linalg.inv(hess))
    nodes, weights = np.polynomial.hermite.hermgauss(num_nodes)
    grid = np.stack(np.meshgrid(*[nodes] * d, indexing="ij"), axis=-1).reshape(-1, d)
    log_w = np.sum(np.log(np.stack(np.meshgrid(*[weights] * d, indexing="ij"), axis=-1)
                          .reshape(-1, d)), axis=1)
    points = beta + np.sqrt(2.0) * grid @ chol.T
    terms = log_w + np.sum(grid**2, axis=1) + _logistic_log_joint(points, x, y, prior_sd)
    return float(scipy.special.logsumexp(terms) + 0.5 * d * np.log(2.0)
                 + np.sum(np.log(np.diag(chol))))


def logistic_regression(
    num_features: int = 2,
    n: int = 100,
    seed: int = 505,
    prior_sd: float = 2.0,
) -> AnalyticTarget:
    """Bayesian logistic regression with an intercept; evidence by quadrature.

    ``beta ~ Normal(0, prior_sd)`` iid over the intercept and ``num_features`` slopes,
    ``y_i ~ Bernoulli(logit^-1(beta_0 + x_i beta_1:))``; a fixed standardized design, true
    coefficients drawn from the prior.

    Parameters
    ----------
    num_features : int, default 2
        Slopes (the model has ``num_features + 1`` coefficients).
    n : int, default 100
    seed : int, default 505
    prior_sd : float, default 2.0

    Returns
    -------
    AnalyticTarget
        ``log_evidence`` from :func:`logistic_log_evidence`.
    """
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(n), standardized_design(rng, n, num_features)])
    beta_true = rng.normal(0.0, 1.0, size=num_features + 1)
    y = rng.random(n) < scipy.special.expit(x @ beta_true)
    params = _frozen(x=x, y=y, prior_sd=prior_sd, beta_true=beta_true)
    return AnalyticTarget(
        name=f"logistic_regression_d{num_features + 1}_n{n}",
        build=functools.partial(_build_logistic_regression, params["x"], params["y"],
                                prior_sd),
        log_evidence=logistic_log_evidence(x, y, prior_sd),
        num_dims=num_features + 1,
        params=params,
    )


# ---------------------------------------------------------------------------
# Default instances
# ---------------------------------------------------------------------------


def all_targets() -> tuple[AnalyticTarget, ...]:
    """Return fresh default instances of every target family.

    Returns
    -------
    tuple of AnalyticTarget
        ``normal_mean()``, ``linear_regression()``, ``beta_binomial()``,
        ``beta_binomial(num_groups=4)`` and ``nig_regression()``.
    """
    return (
        normal_mean(),
        linear_regression(),
        beta_binomial(),
        beta_binomial(num_groups=4),
        nig_regression(),
    )


ALL_TARGETS: tuple[AnalyticTarget, ...] = all_targets()
"""Default instance of every target family (cheap: models are built lazily)."""

TINY_TARGET: AnalyticTarget = normal_mean(n=5)
"""One-parameter, five-observation problem for many-run unbiasedness tests."""

HIGH_DIM_TARGET: AnalyticTarget = linear_regression(num_features=100, n=200)
"""100-dimensional Gaussian linear regression (n = 200)."""
