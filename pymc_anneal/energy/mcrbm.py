r"""The mean-covariance RBM (mcRBM) with its hidden units summed out (Ranzato & Hinton 2010).

The marginal energy over :math:`\mathbf x \in \mathbb R^M` used by Sohl-Dickstein &
Culpepper (2012, eq. 40; taken from the mcRBM's released code):

.. math:: E(\mathbf x) = -\sum_{k=1}^K \log\Big[1 + \exp\Big(\tfrac12 \sum_{l=1}^L P_{lk}
          \frac{(C_l \mathbf x)^2}{\|\mathbf x\|^2 + \frac12} + b^c_k\Big)\Big]
          - \sum_{j=1}^J \log\big[1 + e^{W_j \mathbf x + b^m_j}\big]
          + \frac{\mathbf x^\top \mathbf x}{2\sigma^2} - \mathbf x^\top \mathbf b^v .

The covariance units see the filter responses :math:`C_l\mathbf x` normalized by the
state's length, so their term is bounded; the mean units grow at most linearly; the
quadratic term makes the density normalizable for every parameter value, with Gaussian
tails. :math:`\log Z` has no closed form: estimate it with :func:`pymc_anneal.ais`, which
anneals from the Gaussian of the quadratic and visible-bias terms,
:math:`\mathcal N(\sigma^2\mathbf b^v, \sigma^2 I)`, with HMC.

References
----------
Ranzato, M. & Hinton, G. E. (2010). Modeling pixel means and covariances using factorized
third-order Boltzmann machines. *CVPR*.

Sohl-Dickstein, J. & Culpepper, B. J. (2012). Hamiltonian annealed importance sampling for
partition function estimation. arXiv:1205.1925, eq. 40.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal.energy.base import EnergyModel, cast_finite, check_dtype, readonly
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.validation import check_finite_array, check_positive_float

__all__ = ["MCRBM"]


def _softplus_np(z: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, z)


class MCRBM(EnergyModel):
    r"""Mean-covariance RBM over :math:`\mathbb R^M` (eq. 40), hidden units summed out.

    Parameters
    ----------
    filters : array (L, M)
        :math:`C`, the covariance filters (one per row).
    pooling : array (L, K)
        :math:`P`, which filters each covariance unit pools (usually :math:`\le 0`).
    cov_bias : array (K,)
        :math:`\mathbf b^c`.
    mean_weights : array (J, M)
        :math:`W`, the mean units' weights (one per row).
    mean_bias : array (J,)
        :math:`\mathbf b^m`.
    visible_bias : array (M,)
        :math:`\mathbf b^v`.
    sigma : float
        :math:`\sigma > 0`, the scale of the quadratic term.
    dtype : {"float64", "float32"}, default "float64"
    name : str, default "mcrbm"
    """

    def __init__(self, filters, pooling, cov_bias, mean_weights, mean_bias, visible_bias,
                 sigma: float, dtype: str = "float64", name: str = "mcrbm"):
        c = self._matrix("filters", filters)
        num_dims = c.shape[1]
        p = self._matrix("pooling", pooling, rows=c.shape[0], what="(num_filters, num_cov_units)")
        w = self._matrix("mean_weights", mean_weights, cols=num_dims,
                         what=f"(num_mean_units, {num_dims})")
        self.filters, self.pooling, self.mean_weights = c, p, w
        self.cov_bias = self._vector("cov_bias", cov_bias, p.shape[1])
        self.mean_bias = self._vector("mean_bias", mean_bias, w.shape[0])
        self.visible_bias = self._vector("visible_bias", visible_bias, num_dims)
        self.sigma = check_positive_float("sigma", sigma)
        self.num_dims = num_dims
        self.dtype = check_dtype(dtype)
        for label in ("filters", "pooling", "mean_weights", "cov_bias", "mean_bias",
                      "visible_bias"):
            cast_finite(getattr(self, label), self.dtype, label)
        cast_finite(np.float64(0.5 / self.sigma**2), self.dtype, "sigma's 0.5 / sigma^2")
        self.name = name

    @staticmethod
    def _matrix(name, value, rows=None, cols=None, what="(rows, columns)") -> np.ndarray:
        array = check_finite_array(name, value)
        if (array.ndim != 2 or min(array.shape) < 1 or (rows is not None and array.shape[0] != rows)
                or (cols is not None and array.shape[1] != cols)):
            raise AnnealingError(f"{name} of an MCRBM must have shape {what}, got shape "
                                 f"{array.shape}.")
        return readonly(array.astype(np.float64))

    @staticmethod
    def _vector(name, value, size) -> np.ndarray:
        array = check_finite_array(name, value)
        if array.shape != (size,):
            raise AnnealingError(f"{name} of an MCRBM must have shape ({size},), got shape "
                                 f"{array.shape}.")
        return readonly(array.astype(np.float64))

    def _const(self, value):
        return pt.constant(np.asarray(value, dtype=self.dtype))

    def log_unnormalized(self, x) -> TensorVariable:
        x = pt.as_tensor(x)
        c, p, w = self._const(self.filters), self._const(self.pooling), self._const(self.mean_weights)
        half = np.asarray(0.5, dtype=self.dtype)
        norm = pt.sum(x**2, axis=1, keepdims=True) + half
        cov = pt.softplus(half * pt.dot(pt.dot(x, c.T) ** 2 / norm, p) + self._const(self.cov_bias))
        mean = pt.softplus(pt.dot(x, w.T) + self._const(self.mean_bias))
        quad = pt.sum(x**2, axis=1) * np.asarray(0.5 / self.sigma**2, dtype=self.dtype)
        return (pt.sum(cov, axis=1) + pt.sum(mean, axis=1) - quad
                + pt.dot(x, self._const(self.visible_bias)))

    def log_unnormalized_numpy(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        norm = np.sum(x**2, axis=1, keepdims=True) + 0.5
        cov = _softplus_np(0.5 * ((x @ self.filters.T) ** 2 / norm) @ self.pooling + self.cov_bias)
        mean = _softplus_np(x @ self.mean_weights.T + self.mean_bias)
        return (cov.sum(axis=1) + mean.sum(axis=1) - 0.5 * np.sum(x**2, axis=1) / self.sigma**2
                + x @ self.visible_bias)

    def annealing_path(self, *, kernel=None, base=None, data=None, moments=None,
                       base_mean=None, base_scale=None, rng=None):
        r"""The linear path from :math:`\mathcal N(\sigma^2\mathbf b^v, \sigma^2 I)` (the
        quadratic and visible-bias terms, normalized), or from ``base_mean`` and
        ``base_scale`` when given, with the ``"hais"`` kernel."""
        mean = self.sigma**2 * self.visible_bias if base_mean is None else base_mean
        scale = self.sigma if base_scale is None else base_scale
        return super().annealing_path(kernel=kernel, base=base, data=data, moments=moments,
                                      base_mean=mean, base_scale=scale, rng=rng)

    def __repr__(self) -> str:
        return (f"MCRBM(num_dims={self.num_dims}, num_filters={self.filters.shape[0]}, "
                f"num_cov_units={self.pooling.shape[1]}, "
                f"num_mean_units={self.mean_weights.shape[0]}, sigma={self.sigma:g}, "
                f"dtype={self.dtype!r}, name={self.name!r})")
