"""PyMC models with discrete free variables and their exact log evidences (shared by the
tests and ``benchmarks/bench_discrete.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import special, stats


@dataclass(frozen=True)
class DiscreteCase:
    name: str
    build: object  # () -> pm.Model
    log_evidence: float
    data: np.ndarray


def _gamma_poisson(counts, a, b):
    r"""\log \int \prod_t \mathrm{Poisson}(y_t | \lambda) \mathrm{Gamma}(\lambda | a, b) d\lambda."""
    m, total = len(counts), counts.sum()
    return (a * np.log(b) - special.gammaln(a) + special.gammaln(a + total)
            - (a + total) * np.log(b + m) - special.gammaln(counts + 1).sum())


def change_point(n: int = 21, a: float = 2.0, b: float = 1.0) -> DiscreteCase:
    """Poisson counts with a DiscreteUniform(0, n) switch point and two Gamma(a, b) rates;
    the evidence is a sum over switch points of two Gamma-Poisson integrals."""
    rng = np.random.default_rng(3)
    switch = 9 * n // 21
    y = np.concatenate([rng.poisson(4.0, switch), rng.poisson(1.0, n - switch)])
    years = np.arange(n)

    def build():
        with pm.Model() as model:
            s = pm.DiscreteUniform("switch", 0, n)
            early = pm.Gamma("early", alpha=a, beta=b)
            late = pm.Gamma("late", alpha=a, beta=b)
            rate = pm.Deterministic("rate", pt.switch(years < s, early, late))
            pm.Poisson("y", rate, observed=y)
        return model

    per_switch = switch_posterior_log_weights(y, a, b)
    return DiscreteCase("change_point", build,
                        float(special.logsumexp(per_switch) - np.log(n + 1)), y)


def switch_posterior_log_weights(y, a, b):
    return np.array([_gamma_poisson(y[:s], a, b) + _gamma_poisson(y[s:], a, b)
                     for s in range(len(y) + 1)])


def label_mixture(n: int = 40, weight: float = 0.3) -> DiscreteCase:
    """Two unit-variance Gaussian components with N(0, 3^2) means and n explicit Bernoulli
    labels; the evidence is that of pm.NormalMixture, integrated on a 801 x 801 grid."""
    rng = np.random.default_rng(4)
    k = round(n * (1 - weight))
    y = np.concatenate([rng.normal(-1.0, 1.0, n - k), rng.normal(2.0, 1.0, k)])

    def build():
        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 3.0, shape=2)
            z = pm.Bernoulli("z", weight, shape=n)
            pm.Normal("y", mu[z], 1.0, observed=y)
        return model

    grid = np.linspace(-12, 12, 801)
    m0, m1 = np.meshgrid(grid, grid, indexing="ij")
    log_lik = sum(np.logaddexp(np.log(1 - weight) + stats.norm.logpdf(v, m0, 1.0),
                               np.log(weight) + stats.norm.logpdf(v, m1, 1.0)) for v in y)
    log_prior = stats.norm.logpdf(m0, 0, 3) + stats.norm.logpdf(m1, 0, 3)
    exact = special.logsumexp(log_lik + log_prior) + 2 * np.log(grid[1] - grid[0])
    return DiscreteCase("label_mixture", build, float(exact), y)


def latent_count(rate: float = 10.0, a: float = 2.0, b: float = 2.0) -> DiscreteCase:
    """N ~ Poisson(rate), y_j ~ Binomial(N, p), p ~ Beta(a, b): the evidence is a sum over N
    of Poisson-weighted Beta-Binomial terms (truncated where the Poisson tail is below
    1e-300)."""
    y = np.array([4, 6, 5, 3, 7])

    def build():
        with pm.Model() as model:
            count = pm.Poisson("N", rate)
            p = pm.Beta("p", a, b)
            pm.Binomial("y", count, p, observed=y)
        return model

    total, j = y.sum(), len(y)
    counts = np.arange(y.max(), 400)
    terms = (stats.poisson.logpmf(counts, rate)
             + sum(special.gammaln(counts + 1) - special.gammaln(v + 1)
                   - special.gammaln(counts - v + 1) for v in y)
             + special.betaln(a + total, b + j * counts - total) - special.betaln(a, b))
    return DiscreteCase("latent_count", build, float(special.logsumexp(terms)), y)
