r"""The eight-schools model (Rubin, 1981) and its exact log evidence, shared by
``tests/pymc/test_funnel.py`` and ``benchmarks/measure_funnel.py``.

:math:`y_j \sim N(\theta_j, \sigma_j)`, :math:`\theta_j \sim N(\mu, \tau)`,
:math:`\mu \sim N(0, 5)`, :math:`\tau \sim \mathrm{HalfCauchy}(5)`. Centered, the posterior
of :math:`(\tau, \theta)` is a funnel; non-centered (:math:`\theta = \mu + \tau\eta`,
:math:`\eta \sim N(0, 1)`) it is not, and the evidence is the same. Integrating
:math:`\theta` and :math:`\mu` out (Gaussian),
:math:`y \mid \tau \sim N(0, \mathrm{diag}(\sigma^2 + \tau^2) + 25\,\mathbf 1 \mathbf 1^T)`, so

.. math::

    p(y) = \int_0^\infty \mathrm{HalfCauchy}(\tau; 5)\, N(y; 0, \Sigma(\tau))\, d\tau
         = \int_0^{\pi/2} \tfrac{2}{\pi}\, N(y; 0, \Sigma(5 \tan\varphi))\, d\varphi ,

computed two ways: adaptive quadrature over :math:`\tau` on the half-line and 200-node
Gauss-Legendre over :math:`\varphi` (they agree to 1e-12; a Monte Carlo over the prior of
:math:`\tau` agrees to its error).
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, stats

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
MU_SD, TAU_SCALE = 5.0, 5.0


def log_marginal_given_tau(tau) -> np.ndarray:
    """log N(y; 0, diag(sigma^2 + tau^2) + MU_SD^2 11^T) for each tau (theta, mu integrated)."""
    tau = np.atleast_1d(np.asarray(tau, dtype=np.float64))
    return np.array([stats.multivariate_normal(np.zeros(Y.size),
                                               np.diag(SIGMA**2 + t**2) + MU_SD**2).logpdf(Y)
                     for t in tau])


def exact_log_evidence(method: str = "quad") -> float:
    """The exact log evidence by ``"quad"`` (over tau), ``"legendre"`` (over phi) or
    ``"monte_carlo"`` (20,000 prior draws of tau, seeded: a rough check)."""
    shift = float(log_marginal_given_tau(0.0)[0])  # scale for the integrands
    if method == "quad":
        def density(t):
            prior = 2.0 / (np.pi * TAU_SCALE * (1.0 + (t / TAU_SCALE) ** 2))
            return prior * np.exp(log_marginal_given_tau(t)[0] - shift)
        value = integrate.quad(density, 0.0, np.inf, epsabs=0, epsrel=1e-12, limit=500)[0]
    elif method == "legendre":
        nodes, weights = np.polynomial.legendre.leggauss(200)
        phi = (nodes + 1.0) * np.pi / 4.0
        values = np.exp(log_marginal_given_tau(TAU_SCALE * np.tan(phi)) - shift)
        value = np.sum(weights * values) * (np.pi / 4.0) * (2.0 / np.pi)
    elif method == "monte_carlo":
        tau = np.abs(stats.cauchy(0, TAU_SCALE).rvs(20_000, random_state=np.random.default_rng(0)))
        value = np.mean(np.exp(log_marginal_given_tau(tau) - shift))
    else:
        raise ValueError(f"method must be quad, legendre or monte_carlo, got {method!r}")
    return float(np.log(value) + shift)


def build_model(centered: bool = True):
    """Eight schools as a fresh ``pm.Model``, centered (a funnel) or non-centered."""
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, MU_SD)
        tau = pm.HalfCauchy("tau", TAU_SCALE)
        if centered:
            theta = pm.Normal("theta", mu, tau, shape=Y.size)
        else:
            eta = pm.Normal("eta", 0.0, 1.0, shape=Y.size)
            theta = pm.Deterministic("theta", mu + tau * eta)
        pm.Normal("y", theta, SIGMA, observed=Y)
    return model
