r"""Gaussian(-Bernoulli) restricted Boltzmann machines, as in Kiwaki & Aihara (2015), eq. (1).

Real visible units :math:`v \in \mathbb R^D`, binary hidden units :math:`h \in \{0,1\}^M`,
weights :math:`W` of shape ``(D, M)`` (the paper's :math:`W_{ij}` with i hidden, j visible is
our ``W[j, i]``), visible biases :math:`b`, hidden biases :math:`a`, visible standard
deviations :math:`\sigma > 0`:

.. math:: E(v, h) = \sum_{j=1}^D \frac{(v_j - b_j)^2}{2\sigma_j^2}
          - \sum_{j=1}^D \frac{v_j}{\sigma_j} (W h)_j - a^\top h .

**Free energy** (hidden units summed out):

.. math:: \log p^*(v) = -\sum_j \frac{(v_j - b_j)^2}{2\sigma_j^2}
          + \sum_{i=1}^M \operatorname{softplus}\Big(a_i + \sum_j \frac{v_j}{\sigma_j} W_{ji}\Big).

**Conditionals.** :math:`p(h_i = 1 \mid v) = \sigma\big(a_i + \sum_j (v_j/\sigma_j) W_{ji}\big)`
and :math:`v \mid h \sim \mathcal N\big(b + \sigma \odot W h,\ \operatorname{diag}(\sigma^2)\big)`.

**Partition function** (visible units integrated out). With :math:`u = W h`, completing the
square in each :math:`v_j`,

.. math:: \int \exp\Big(-\frac{(v_j - b_j)^2}{2\sigma_j^2} + \frac{v_j u_j}{\sigma_j}\Big) dv_j
          = \sqrt{2\pi}\,\sigma_j \exp\Big(\frac{b_j u_j}{\sigma_j} + \frac{u_j^2}{2}\Big),

so

.. math:: Z = (2\pi)^{D/2} \prod_j \sigma_j \sum_h \exp\Big(a^\top h
          + \sum_j \frac{b_j}{\sigma_j} (W h)_j + \tfrac12 \lVert W h \rVert^2\Big),

a sum over the :math:`2^M` hidden states only. The summand is :math:`p^*(h)`, so the
visible marginal is the mixture :math:`\sum_h p(h)\,\mathcal N(b + \sigma\odot Wh,
\operatorname{diag}(\sigma^2))`, whose mean and covariance (:meth:`GaussianRBM.exact_moments`)
follow from :math:`E[h]` and :math:`\operatorname{Cov}[h]`:
:math:`E[v] = b + \sigma \odot W E[h]`, :math:`\operatorname{Cov}[v] = \operatorname{diag}(\sigma^2)
+ (\sigma\sigma^\top) \odot (W \operatorname{Cov}[h] W^\top)`.

References
----------
Kiwaki, T. & Aihara, K. (2015). Designing the covariance of base distributions for
annealed importance sampling of Gaussian RBMs (arXiv preprint).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal.energy.base import cast_finite, readonly
from pymc_anneal.energy.enumerate import (
    DEFAULT_MAX_STATES,
    binary_states,
    check_num_states,
    chunk_bits,
    iterate_high_states,
    logsumexp_over_states,
)
from pymc_anneal.energy.rbm import (
    _no_options,
    RestrictedBoltzmannMachine,
    _as_float_array,
    as_generator,
    softplus,
)
from pymc_anneal.exceptions import AnnealingError

__all__ = ["GaussianRBM"]

_LOG_2PI = float(np.log(2.0 * np.pi))


class GaussianRBM(RestrictedBoltzmannMachine):
    r"""A Gaussian-Bernoulli RBM: real visible units, binary hidden units (Kiwaki & Aihara eq. 1).

    Parameters
    ----------
    W : array of shape (n_visible, n_hidden)
    visible_bias : array of shape (n_visible,)
        :math:`b`, the visible means when all hidden units are off.
    hidden_bias : array of shape (n_hidden,)
        :math:`a`.
    sigma : float or array of shape (n_visible,)
        Visible standard deviations :math:`\sigma_j > 0` (a scalar is broadcast).
    dtype : {"float64", "float32"}, default "float64"
        Dtype of the stored parameters and of the PyTensor graphs. The NumPy methods compute
        in float64 from the stored (possibly float32-rounded) parameters.
    name : str, default "grbm"

    Attributes
    ----------
    W, visible_bias, hidden_bias, sigma : ndarray
        Read-only copies in ``dtype``.
    n_visible, n_hidden, num_dims : int

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_anneal.energy import GaussianRBM
    >>> rng = np.random.default_rng(0)
    >>> grbm = GaussianRBM(rng.normal(size=(4, 3)), np.zeros(4), np.zeros(3), sigma=1.0)
    >>> log_z = grbm.exact_log_z()  # a sum over the 2^3 hidden states
    """

    _kind = "GaussianRBM"

    def __init__(self, W, visible_bias, hidden_bias, sigma, dtype: str = "float64", name: str = "grbm"):
        self._set_parameters(W, visible_bias, hidden_bias, dtype, name)
        sigma = _as_float_array(sigma, "sigma")
        if sigma.ndim == 0:
            sigma = np.full(self.n_visible, float(sigma))
        if sigma.shape != (self.n_visible,):
            raise AnnealingError(
                f"sigma of a GaussianRBM must be a scalar or have shape ({self.n_visible},) "
                f"(one per visible unit), got shape {sigma.shape}."
            )
        if not np.all(sigma > 0):
            raise AnnealingError(
                f"sigma must be > 0 (visible standard deviations); got {sigma[sigma <= 0][:3].tolist()} "
                f"at visible units {np.flatnonzero(sigma <= 0)[:3].tolist()}."
            )
        self.sigma = readonly(cast_finite(sigma, self.dtype, "sigma"))
        self._sigma = readonly(self.sigma.astype(np.float64))
        if not np.all(self._sigma > 0):
            raise AnnealingError(f"sigma underflows to 0 in {self.dtype}; rescale the data.")

    # -- densities -------------------------------------------------------------------------

    def annealing_path(self, *, kernel=None, base=None, data=None, moments=None,
                       base_mean=None, base_scale=None, rng=None):
        """The annealing path and its kernel.

        With the ``"gibbs"`` kernel (default), the path of Kiwaki & Aihara (2015) from the
        ``base`` ``"ais_cov"`` (default), ``"ais"`` or ``"ais_mean"``, with the target's
        moments from ``moments``, ``data`` or Gibbs chains (seeded by ``rng``); see
        :func:`pymc_anneal.energy.annealing.grbm_path`. With a continuous kernel, the visible
        units are annealed (hidden units summed out) from a diagonal Gaussian base with
        ``base_mean`` and ``base_scale``, by default the target's moments.
        """
        from pymc_anneal.energy.annealing import (
            GRBM_BASES,
            _data_moments,
            _given_moments,
            gaussian_energy_path,
            grbm_moments,
            grbm_path,
        )

        kernel = kernel or "gibbs"
        if kernel == "gibbs":
            _no_options(self, base_mean=base_mean, base_scale=base_scale)
            base = base or "ais_cov"
            if base not in GRBM_BASES:
                raise AnnealingError(f"unknown base {base!r} for a GaussianRBM; must be one of "
                                     f"{list(GRBM_BASES)}.")
            return grbm_path(self, base, moments=moments, data=data, rng=rng), kernel
        if base is not None:
            raise AnnealingError(f"base={base!r} applies to the 'gibbs' kernel; with kernel="
                                 f"{kernel!r} give base_mean and base_scale (or moments or data).")
        if base_mean is None and base_scale is None:
            m = (_given_moments(moments, self.num_dims) if moments is not None
                 else _data_moments(data, self.num_dims) if data is not None
                 else grbm_moments(self, rng if rng is not None else np.random.default_rng()))
            base_mean, base_scale = m.mean, np.sqrt(np.diag(m.covariance))
        return gaussian_energy_path(self, base_mean, base_scale), kernel

    def log_unnormalized(self, v) -> TensorVariable:
        r"""PyTensor graph of :math:`-\sum_j \frac{(v_j-b_j)^2}{2\sigma_j^2} + \sum_i
        \operatorname{softplus}(a_i + \sum_j (v_j/\sigma_j) W_{ji})`."""
        v = pt.as_tensor_variable(v)
        W_in = pt.as_tensor_variable(readonly((self._W / self._sigma[:, None]).astype(self.dtype)))
        a = pt.as_tensor_variable(self.hidden_bias)
        b = pt.as_tensor_variable(self.visible_bias)
        inv_sigma = pt.as_tensor_variable((1.0 / self._sigma).astype(self.dtype))
        half = np.asarray(0.5, dtype=self.dtype)
        z = (v - b) * inv_sigma
        return pt.softplus(pt.dot(v, W_in) + a).sum(axis=-1) - half * (z * z).sum(axis=-1)

    def log_unnormalized_numpy(self, v) -> np.ndarray:
        v = self._check_states(v, self.n_visible, "v")
        z = (v - self._b) / self._sigma
        return softplus(self._hidden_input(v)).sum(axis=1) - 0.5 * (z * z).sum(axis=1)

    # -- conditionals ------------------------------------------------------------------------

    def _hidden_input(self, v):
        return (v / self._sigma) @ self._W + self._c

    def visible_mean(self, h) -> np.ndarray:
        r""":math:`E[v \mid h] = b + \sigma \odot (W h)` for each row of ``h`` ``(N, n_hidden)``."""
        h = self._check_states(h, self.n_hidden, "h")
        return self._b + self._sigma * (h @ self._W.T)

    def sample_visible(self, h, rng) -> np.ndarray:
        r"""Draw :math:`v \sim \mathcal N(b + \sigma \odot W h, \operatorname{diag}(\sigma^2))`."""
        mean = self.visible_mean(h)
        return mean + self._sigma * as_generator(rng).standard_normal(mean.shape)

    def _initial_visible(self, num_chains, rng):
        return self._b + self._sigma * rng.standard_normal((num_chains, self.n_visible))

    # -- exact log Z by enumerating the hidden layer ---------------------------------------------

    def _enumeration(self, chunk_size):
        """``(k, low, chunk)``: ``chunk(high)`` returns :math:`\\log p^*(h)` for the states with
        those high units (without the constant :math:`\\tfrac D2 \\log 2\\pi + \\sum \\log\\sigma`)."""
        M = self.n_hidden
        k = chunk_bits(M, self.n_visible, chunk_size)
        low = binary_states(k)
        W_low, W_high = self._W[:, :k], self._W[:, k:]
        b_over_sigma = self._b / self._sigma
        u_low = low @ W_low.T  # (2^k, D)
        lin_low = low @ self._c[:k] + u_low @ b_over_sigma + 0.5 * np.einsum("nd,nd->n", u_low, u_low)

        def chunk(high):
            u_high = W_high @ high
            lin_high = high @ self._c[k:] + u_high @ b_over_sigma + 0.5 * (u_high @ u_high)
            return lin_low + (u_low @ u_high + lin_high)

        return k, low, chunk

    def _log_normalizer_v(self) -> float:
        return 0.5 * self.n_visible * _LOG_2PI + float(np.log(self._sigma).sum())

    def exact_log_z(self, max_states: int | None = DEFAULT_MAX_STATES, chunk_size: int | None = None) -> float:
        r"""Exact :math:`\log Z` by summing over the :math:`2^M` hidden states (see the module
        docstring for the formula).

        Parameters
        ----------
        max_states : int or None, default 2**20
            Refuse (:class:`AnnealingError`) to enumerate more hidden states than this;
            ``None`` removes the guard. Each state costs ``O(n_visible)`` flops (2^20 states
            with 108 visible units: about 0.5 s; 2^24: about 5 s); memory is bounded by the
            chunk.
        chunk_size : int, optional
            States per chunk, a power of two (default: about 2^21 / n_visible).
        """
        check_num_states(self.n_hidden, max_states, f"GaussianRBM ({self.n_hidden} hidden units)")
        k, _, chunk = self._enumeration(chunk_size)
        return logsumexp_over_states(self.n_hidden, k, chunk) + self._log_normalizer_v()

    def exact_hidden_moments(
        self, max_states: int | None = DEFAULT_MAX_STATES, chunk_size: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        r""":math:`E[h]` ``(M,)`` and :math:`E[h h^\top]` ``(M, M)`` under the model, exactly."""
        log_z = self.exact_log_z(max_states, chunk_size) - self._log_normalizer_v()
        k, low, chunk = self._enumeration(chunk_size)
        M = self.n_hidden
        first, second = np.zeros(M), np.zeros((M, M))
        for high in iterate_high_states(M, k):
            p = np.exp(chunk(high) - log_z)
            h = np.concatenate([low, np.broadcast_to(high, (low.shape[0], high.size))], axis=1)
            first += p @ h
            second += (h * p[:, None]).T @ h
        return first, second

    def exact_moments(
        self, max_states: int | None = DEFAULT_MAX_STATES, chunk_size: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        r"""Exact mean ``(n_visible,)`` and covariance ``(n_visible, n_visible)`` of the visible
        units: :math:`b + \sigma\odot W E[h]` and :math:`\operatorname{diag}(\sigma^2) +
        (\sigma\sigma^\top)\odot(W \operatorname{Cov}[h] W^\top)`, by enumerating the hidden layer.
        """
        mean_h, second_h = self.exact_hidden_moments(max_states, chunk_size)
        cov_h = second_h - np.outer(mean_h, mean_h)
        mean = self._b + self._sigma * (self._W @ mean_h)
        cov = np.outer(self._sigma, self._sigma) * (self._W @ cov_h @ self._W.T) + np.diag(self._sigma**2)
        return mean, (cov + cov.T) / 2
