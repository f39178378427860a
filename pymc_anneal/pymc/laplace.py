r"""A base for models whose prior cannot be drawn: a Laplace fit, found by optimization.

AIS from any normalized base :math:`q` to the model's density as written,
:math:`\pi(\theta) = p(\theta)\,p(y \mid \theta)` in the unconstrained space (Jacobians
included), with the geometric path :math:`q^{1-\beta}\pi^\beta`, estimates
:math:`Z = \int \pi` without bias (``docs/design.md``, "Bases that do not start from the
prior"). Where PyMC's prior cannot be drawn (``transform=ordered``, whose forward draws
ignore the transform), :math:`q` is a Gaussian at the mode of :math:`\log \pi` found by
L-BFGS from a few dispersed starts, with the inverse of the negative Hessian (central
differences of the gradient) as its covariance, widened by :data:`WIDTH`, mixed with a
defensive share of the same Gaussian :data:`DEFENSIVE_WIDTH` times wider (Hesterberg 1995),
so that a poor fit costs variance, never bias.

This is the minimal form of the optimized base of issue 41 (one mode, no Pathfinder, no
census of modes): a multimodal posterior gets its highest mode's Gaussian and the wide
share, and the weights' Pareto check is what sees a missed mode.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from scipy.optimize import minimize

from pymc_anneal.backends import compile_one_off
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.paths import Path, gaussian_base_path

__all__ = ["DEFENSIVE_WIDTH", "NUM_STARTS", "WIDTH", "fit_laplace", "laplace_base_path"]

NUM_STARTS = 4
"""L-BFGS starts: the model's initial point (where its density is finite) and draws
around it."""

WIDTH = 1.5
"""The base's covariance is ``WIDTH**2`` times the Laplace fit's: heavier than the
posterior's, as a base should be."""

DEFENSIVE_WIDTH = 4.0
"""The defensive component's scale, in units of the fit's (weight
:data:`~pymc_anneal.paths.DEFENSIVE_WEIGHT`)."""


def _log_density_function(path: Path):
    """``x (n, d) -> (log pi (n,), grad (n, d))`` of the path's target, in Python mode."""
    x = pt.matrix("x", dtype="float64")
    log_base, log_ratio = path.build_log_densities(x)
    total = log_base + log_ratio
    fn = compile_one_off([x], [total, pt.grad(total.sum(), x)])
    return lambda points: [np.asarray(v, dtype=np.float64) for v in fn(points)]


def fit_laplace(path: Path, starts: np.ndarray, rng: np.random.Generator,
                num_starts: int = NUM_STARTS) -> tuple[np.ndarray, np.ndarray, dict]:
    """The mode of the path's target (best of ``num_starts`` L-BFGS runs from ``starts[0]``
    and points around it) and the inverse negative Hessian there.

    Returns ``(mean, cov, info)``; ``info`` holds ``laplace_log_density`` (at the mode),
    ``laplace_num_evaluations`` and ``laplace_modes`` (distinct optima found)."""
    d = path.num_dims
    evaluate = _log_density_function(path)
    start = np.asarray(starts, dtype=np.float64).reshape(-1, d)
    points = list(start[:num_starts]) + [start[0] + rng.standard_normal(d)
                                          for _ in range(num_starts - len(start))]
    count = 0

    def objective(theta):
        nonlocal count
        count += 1
        value, grad = evaluate(theta[None, :])
        if not np.isfinite(value[0]) or not np.all(np.isfinite(grad)):
            return 1e300, np.zeros(d)
        return -value[0], -grad[0]

    optima = []
    for point in points:
        if not np.isfinite(evaluate(point[None, :])[0][0]):
            continue
        fit = minimize(objective, point, jac=True, method="L-BFGS-B",
                       options={"maxiter": 2000})
        optima.append((fit.fun, fit.x))
    if not optima:
        raise AnnealingError(
            "the model's log density is not finite at its initial point nor around it, so no "
            "base can be fitted by optimization; give the free variables initial values "
            "(initval=) where the density is finite.")
    optima.sort(key=lambda o: o[0])
    mean = optima[0][1]
    modes = 1 + sum(np.max(np.abs(x - mean)) > 1e-3 * (1 + np.max(np.abs(mean)))
                    for _, x in optima[1:])
    cov = _inverse_negative_hessian(evaluate, mean)
    return mean, cov, {"laplace_log_density": float(-optima[0][0]),
                       "laplace_num_evaluations": count, "laplace_modes": int(modes)}


def _inverse_negative_hessian(evaluate, mean: np.ndarray) -> np.ndarray:
    """Central differences of the gradient at ``mean`` (one batched evaluation of 2d
    points), symmetrized and inverted, with its spectrum floored (a flat direction gets a
    unit variance rather than none)."""
    d = mean.size
    step = 1e-4 * np.maximum(1.0, np.abs(mean))
    shifts = np.diag(step)
    _, grads = evaluate(np.concatenate([mean + shifts, mean - shifts]))
    hessian = (grads[:d] - grads[d:]) / (2.0 * step[:, None])
    precision = -0.5 * (hessian + hessian.T)
    if not np.all(np.isfinite(precision)):
        return np.eye(d)
    values, vectors = np.linalg.eigh(precision)
    values = np.where(values > 1e-8, values, 1.0)
    return (vectors / values) @ vectors.T


def laplace_base_path(path: Path, starts: np.ndarray, rng: np.random.Generator,
                      prior_defensive: bool = False) -> tuple[Path, dict]:
    """The path from the Laplace fit's base (see the module docstring), and what to
    record of the fit. ``prior_defensive``: the defensive share is the path's own base
    (the prior, which must then be drawable) rather than the wide Gaussian."""
    mean, cov, info = fit_laplace(path, starts, rng)
    base = gaussian_base_path(path, mean, WIDTH**2 * cov,
                              defensive_width=None if prior_defensive else DEFENSIVE_WIDTH)
    return base, info
