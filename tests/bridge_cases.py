"""Posterior draws simulated exactly, for :func:`pymc_anneal.bridge_sampling`'s tests and
coverage measurement (``benchmarks/measure_bridge_coverage.py``).

Two conjugate models with closed-form evidences and posteriors:

- ``normal``: :func:`tests.analytic.normal_mean` (one unconstrained coordinate, Gaussian);
- ``beta``: :func:`tests.analytic.beta_binomial` (``p`` on the logit scale: a skewed
  posterior in the value space, and a Jacobian in the density).

:func:`exact_idata` draws ``chains x draws`` from the posterior, independent (``rho=0``) or
autocorrelated like MCMC output: a Gaussian AR(1) process with lag-one correlation ``rho``
pushed through the posterior's quantile function (a Gaussian copula), so every draw is
exactly a posterior draw while the ESS is about ``(1 - rho) / (1 + rho)`` of the draws.
``shift`` adds a constant to chosen chains' ``mu`` (to build chains in "different modes").
"""

from __future__ import annotations

import arviz_base as az
import numpy as np
from scipy import stats

from tests.analytic import beta_binomial, normal_mean

CASES = {"normal": normal_mean(n=5), "beta": beta_binomial()}


def posterior(name: str):
    """The exact posterior (a frozen scipy distribution) and the variable's name."""
    target = CASES[name]
    p = target.params
    if name == "normal":
        y = np.asarray(p["y"])
        precision = 1 / p["prior_sd"] ** 2 + y.size / p["noise_sd"] ** 2
        mean = (p["prior_mean"] / p["prior_sd"] ** 2 + y.sum() / p["noise_sd"] ** 2) / precision
        return stats.norm(mean, precision**-0.5), "mu"
    k, n = np.sum(p["k"]), np.sum(np.broadcast_to(p["n_trials"], np.shape(p["k"])))
    return stats.beta(p["alpha"] + k, p["beta"] + n - k), "p"


def exact_draws(name: str, chains: int, draws: int, rng: np.random.Generator,
                rho: float = 0.0) -> np.ndarray:
    """(chains, draws) exact posterior draws, AR(1)-correlated through a Gaussian copula."""
    dist, _ = posterior(name)
    z = rng.standard_normal((chains, draws))
    if rho:
        for t in range(1, draws):
            z[:, t] = rho * z[:, t - 1] + np.sqrt(1 - rho**2) * z[:, t]
    return dist.ppf(stats.norm.cdf(z))


def exact_idata(name: str, chains: int = 4, draws: int = 1000, seed: int = 0,
                rho: float = 0.0, lp: bool = False):
    """A DataTree with the posterior group of exact draws (and ``sample_stats.lp``, the
    model's log density with Jacobian, when ``lp``)."""
    _, var = posterior(name)
    values = exact_draws(name, chains, draws, np.random.default_rng(seed), rho)
    groups = {"posterior": {var: values}}
    if lp:
        groups["sample_stats"] = {"lp": log_joint(name, values)}
    return az.from_dict(groups)


def log_joint(name: str, values: np.ndarray) -> np.ndarray:
    """PyMC's ``lp`` at constrained ``values``: log prior + log-likelihood + log-Jacobian
    of the value transform."""
    p = CASES[name].params
    if name == "normal":
        y = np.asarray(p["y"])
        return (stats.norm(p["prior_mean"], p["prior_sd"]).logpdf(values)
                + stats.norm(values[..., None], p["noise_sd"]).logpdf(y).sum(-1))
    k = np.asarray(p["k"])
    n = np.broadcast_to(p["n_trials"], k.shape)
    like = stats.binom(n, values[..., None]).logpmf(k).sum(-1)
    return (stats.beta(p["alpha"], p["beta"]).logpdf(values) + like
            + np.log(values) + np.log1p(-values))


def grid_draws(log_density, low: float, high: float, shape: tuple, rng: np.random.Generator,
               num: int = 200_001) -> tuple[np.ndarray, float]:
    """Draws of shape ``shape`` from the one-dimensional density ``exp(log_density)`` on
    ``[low, high]`` by inverting its CDF on a fine grid, and the log of its integral there
    (trapezoidal rule: exact to about 1e-9 for smooth densities that vanish at the ends)."""
    x = np.linspace(low, high, num)
    log_f = log_density(x)
    top = log_f.max()
    f = np.exp(log_f - top)
    cdf = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) / 2 * np.diff(x))])
    log_z = float(np.log(cdf[-1]) + top)
    return np.interp(rng.random(shape) * cdf[-1], cdf, x), log_z


MIXTURE_Y = np.array([-0.4, 0.3, 2.9, 0.1, 3.6, -1.0, 0.6, 3.1, 0.2, -0.3])


def mixture_model(y=MIXTURE_Y):
    """Each observation's label ``z_i ~ Bernoulli(0.3)`` shifts its mean by 3; the adapter
    sums the labels out, so the bridge runs over ``mu`` alone."""
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        z = pm.Bernoulli("z", 0.3, shape=len(y))
        pm.Normal("y", mu + 3.0 * z, 1.0, observed=y)
    return model


def mixture_log_marginal(mu: np.ndarray, y=MIXTURE_Y) -> np.ndarray:
    """log p(mu) + sum_i log sum_z p(z) p(y_i | mu, z): the labels summed out."""
    mu = np.asarray(mu)[..., None]
    like = np.logaddexp(np.log(0.7) + stats.norm(mu, 1).logpdf(y),
                        np.log(0.3) + stats.norm(mu + 3, 1).logpdf(y)).sum(-1)
    return stats.norm(0, 2).logpdf(mu[..., 0]) + like


TWO_MODES_Y = np.array([4.1, 3.8, 4.3, 3.9])


def two_modes_model(y=TWO_MODES_Y):
    """``y ~ Normal(mu^2, 0.5)``: two modes near mu = +2 and -2, the positive one heavier
    (the prior is centred at 1)."""
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 1.0, 2.0)
        pm.Normal("y", mu**2, 0.5, observed=y)
    return model


def two_modes_log_joint(mu: np.ndarray, y=TWO_MODES_Y) -> np.ndarray:
    mu = np.asarray(mu)
    return (stats.norm(1, 2).logpdf(mu)
            + stats.norm(mu[..., None] ** 2, 0.5).logpdf(y).sum(-1))


def two_modes_idata(seed: int = 0, draws: int = 1000):
    """Chains 0 and 1 in the positive mode, 2 and 3 in the negative one (as NUTS chains
    started in different modes), each an exact draw of its mode; and the exact log
    evidence."""
    rng = np.random.default_rng(seed)
    positive, log_pos = grid_draws(two_modes_log_joint, 0.0, 6.0, (2, draws), rng)
    negative, log_neg = grid_draws(two_modes_log_joint, -6.0, 0.0, (2, draws), rng)
    values = np.concatenate([positive, negative])
    return az.from_dict({"posterior": {"mu": values}}), float(np.logaddexp(log_pos, log_neg))
