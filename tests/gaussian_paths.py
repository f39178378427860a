r"""A Gaussian annealing path with closed-form tempered distributions, for kernel tests.

The path is the geometric path between a diagonal Gaussian base and a correlated Gaussian
target,

.. math:: \log f_0(x) = \log \mathcal N(x; 0, S_0), \qquad
          \ell(x) = \log \mathcal N(x; m, S) - \log \mathcal N(x; 0, S_0),

so :math:`f_\beta \propto \mathcal N(0, S_0)^{1-\beta}\,\mathcal N(m, S)^\beta` is Gaussian
for every :math:`\beta`, with precision :math:`\Lambda_\beta = (1-\beta) S_0^{-1} + \beta
S^{-1}` and mean :math:`\mu_\beta = \Lambda_\beta^{-1} \beta S^{-1} m`. Its log density is
:math:`-\tfrac12 (x-\mu_\beta)^\top \Lambda_\beta (x-\mu_\beta) + c_\beta`, i.e. the
potential energy of a (coupled) harmonic oscillator.

The default instance (:data:`DEFAULT`) is three-dimensional: base scales (2, 1.5, 2.5),
target mean (1, -0.5, 0.8), target scales (0.8, 1.3, 0.6) with all pairwise correlations
0.6. Everything is float64 (NumPy ``float64`` constants, so PyTensor never builds a float32
constant).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytensor.tensor as pt

from pymc_anneal.paths import Path

__all__ = ["DEFAULT", "GaussianPath", "correlated_cov"]

LOG_2PI = np.float64(np.log(2.0 * np.pi))


def correlated_cov(scales, correlation: float) -> np.ndarray:
    """Covariance with the given marginal ``scales`` and one common pairwise correlation."""
    scales = np.asarray(scales, dtype=np.float64)
    corr = np.full((scales.size, scales.size), float(correlation))
    np.fill_diagonal(corr, 1.0)
    return np.outer(scales, scales) * corr


@dataclass(frozen=True, eq=False)
class GaussianPath:
    """Geometric path from ``N(0, diag(base_scale**2))`` to ``N(target_mean, target_cov)``.

    ``path`` is the :class:`pymc_anneal.paths.Path`; :meth:`moments` and :meth:`sample` give
    the exact tempered distribution :math:`p_\beta`.
    """

    base_scale: np.ndarray
    target_mean: np.ndarray
    target_cov: np.ndarray
    path: Path = field(init=False, repr=False)

    def __post_init__(self):
        base_scale = np.asarray(self.base_scale, dtype=np.float64)
        mean = np.asarray(self.target_mean, dtype=np.float64)
        cov = np.asarray(self.target_cov, dtype=np.float64)
        d = base_scale.size
        if mean.shape != (d,) or cov.shape != (d, d):
            raise ValueError("target_mean must be (d,) and target_cov (d, d)")
        precision = np.linalg.inv(cov)
        precision = 0.5 * (precision + precision.T)
        _, log_det = np.linalg.slogdet(cov)
        base_const = np.float64(-np.sum(np.log(base_scale)) - 0.5 * d * LOG_2PI)
        target_const = np.float64(-0.5 * log_det - 0.5 * d * LOG_2PI)

        def build_log_densities(x):
            log_base = -0.5 * pt.sum((x / base_scale) ** 2, axis=1) + base_const
            resid = x - mean
            log_target = -0.5 * pt.sum(pt.dot(resid, precision) * resid, axis=1) + target_const
            return log_base, log_target - log_base

        def sample_base(rng, num_draws):
            return rng.standard_normal((num_draws, d)) * base_scale

        path = Path(
            num_dims=d,
            build_log_densities=build_log_densities,
            sample_base=sample_base,
            log_base_normalizer=0.0,
            base_scale=base_scale,
            name="gaussian",
        )
        for name, value in (("base_scale", base_scale), ("target_mean", mean),
                            ("target_cov", cov), ("path", path)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_precision", precision)

    @property
    def num_dims(self) -> int:
        return self.base_scale.size

    def precision(self, beta: float) -> np.ndarray:
        r""":math:`\Lambda_\beta = (1-\beta) S_0^{-1} + \beta S^{-1}`."""
        return (1.0 - beta) * np.diag(self.base_scale**-2.0) + beta * self._precision

    def moments(self, beta: float) -> tuple[np.ndarray, np.ndarray]:
        """Exact mean and covariance of the normalized tempered density ``p_beta``."""
        cov = np.linalg.inv(self.precision(beta))
        cov = 0.5 * (cov + cov.T)
        return cov @ (beta * self._precision @ self.target_mean), cov

    def sample(self, rng: np.random.Generator, beta: float, num_draws: int) -> np.ndarray:
        """``num_draws`` exact iid draws from ``p_beta``, shape (num_draws, d)."""
        mean, cov = self.moments(beta)
        chol = np.linalg.cholesky(cov)
        return mean + rng.standard_normal((num_draws, self.num_dims)) @ chol.T

    def log_density(self, x: np.ndarray, beta: float) -> np.ndarray:
        r"""Unnormalized :math:`\log f_\beta(x) = \log f_0 + \beta\ell` in NumPy, (N,)."""
        x = np.atleast_2d(x)
        log_base = -0.5 * np.sum((x / self.base_scale) ** 2, axis=1) - np.sum(
            np.log(self.base_scale)) - 0.5 * self.num_dims * LOG_2PI
        resid = x - self.target_mean
        _, log_det = np.linalg.slogdet(self.target_cov)
        log_target = (-0.5 * np.einsum("ni,ij,nj->n", resid, self._precision, resid)
                      - 0.5 * log_det - 0.5 * self.num_dims * LOG_2PI)
        return log_base + beta * (log_target - log_base)


DEFAULT = GaussianPath(
    base_scale=np.array([2.0, 1.5, 2.5]),
    target_mean=np.array([1.0, -0.5, 0.8]),
    target_cov=correlated_cov([0.8, 1.3, 0.6], 0.6),
)
"""Three-dimensional default: correlation 0.6, distinct scales, nonzero target mean."""
