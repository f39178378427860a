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

**Annealing path** (:func:`grbm_path`; Kiwaki & Aihara 2015). Three bases, compared in the
paper:

- ``"ais"``: eq. (7)-(9), a diagonal Gaussian base with the target's means and variances;
- ``"ais_mean"``: the same with the target's means and :math:`\sigma^A = \sigma^B`;
- ``"ais_cov"``: eq. (10)-(14), a full-covariance base :math:`\mathcal N(b^A, \Sigma^A)`
  through auxiliary variables :math:`x`.

TRAP in the paper's eq. (9): the printed :math:`\sigma_j^2(\beta) = \{\beta/\sigma_j^{A2} +
(1-\beta)/\sigma_j^{A2}\}^{-1}` must read :math:`\{\beta/\sigma_j^{B2} + (1-\beta)/\sigma_j^{A2}\}^{-1}`.

For ``"ais_cov"`` we parametrize by :math:`S = \Lambda^{-1} = \Sigma^A - \operatorname{diag}(\sigma^2)`
rather than :math:`\Lambda`: a GRBM's covariance exceeds :math:`\operatorname{diag}(\sigma^2)`
only in the span of its (few) weight vectors, so :math:`\Lambda` is infinite in most
directions while :math:`S` is merely singular. With :math:`\Sigma^A = S + \operatorname{diag}(\sigma^2)`
the conditional of eq. (13) is

.. math:: x \mid v \sim \mathcal N\big(b^A + S \Sigma^{A\,-1} (v - b^A),\;
          (S - S\Sigma^{A\,-1} S)/(1-\beta)\big),

whose covariance is factored once (an eigendecomposition); the sweep draws
:math:`y = (1-\beta) x` directly, which stays finite at :math:`\beta = 1`. A requested
:math:`\Sigma^A` that is not :math:`\succeq \operatorname{diag}(\sigma^2)` (sampling noise)
is projected: :math:`S` keeps its non-negative eigenvalues; the covariance actually used is
reported in the path's ``info``. The marginal (eq. 11) is used for the weights, with
:math:`\log Z_0 = M\log 2 + \tfrac D2 \log 2\pi + \tfrac12 \log|\Sigma^A|`.

With a continuous kernel the visible units are annealed instead (hidden units summed out)
from a diagonal Gaussian base (:func:`pymc_anneal.energy.base.gaussian_energy_path`).

References
----------
Kiwaki, T. & Aihara, K. (2015). Designing the covariance of base distributions for
annealed importance sampling of Gaussian RBMs (arXiv preprint).
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal.energy.base import (
    Moments,
    as_moments,
    cast_finite,
    data_moments,
    gaussian_energy_path,
    readonly,
)
from pymc_anneal.energy.bernoulli import LOG_2, MAX_UNCHUNKED, draw_hidden, softplus_increment
from pymc_anneal.energy.enumerate import (
    DEFAULT_MAX_STATES,
    binary_states,
    check_num_states,
    chunk_bits,
    iterate_high_states,
    logsumexp_over_states,
)
from pymc_anneal.energy.rbm import (
    RestrictedBoltzmannMachine,
    _no_options,
    as_generator,
    softplus,
)
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.paths import GibbsPath
from pymc_anneal.validation import check_finite_array

__all__ = ["GRBM_BASES", "GaussianRBM", "grbm_moments", "grbm_path"]

GRBM_BASES = ("ais", "ais_mean", "ais_cov")
"""Bases for Gaussian RBMs, named as in Kiwaki & Aihara (2015)."""

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
        sigma = check_finite_array("sigma", sigma).copy()
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
        :func:`grbm_path`. With a continuous kernel, the visible
        units are annealed (hidden units summed out) from a diagonal Gaussian base with
        ``base_mean`` and ``base_scale``, by default the target's moments.
        """
        kernel = kernel or "gibbs"
        if kernel == "gibbs":
            _no_options(self, base_mean=base_mean, base_scale=base_scale)
            return grbm_path(self, base or "ais_cov", moments=moments, data=data, rng=rng), kernel
        if base is not None:
            raise AnnealingError(f"base={base!r} applies to the 'gibbs' kernel; with kernel="
                                 f"{kernel!r} give base_mean and base_scale (or moments or data).")
        if base_mean is None and base_scale is None:
            m = _target_moments(self, moments, data, rng)
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


# -- the annealing path ------------------------------------------------------------------------


def grbm_moments(model, rng: np.random.Generator, num_chains: int = 100,
                 num_steps: int = 5000, burn_in: int = 100) -> Moments:
    """Mean and covariance of a Gaussian RBM's visible units by block Gibbs sampling.

    The paper's setting: 100 chains of 5000 steps, the first 100 discarded. Rao-Blackwellized:
    each kept step contributes the conditional mean :math:`m(h) = b + \\sigma \\odot W h`,
    and the covariance is the mean of :math:`m m^\\top` minus the outer product of the means,
    plus :math:`\\operatorname{diag}(\\sigma^2)`.
    """
    W = np.asarray(model.W, dtype=np.float64)
    sigma = np.asarray(model.sigma, dtype=np.float64)
    b = np.asarray(model.visible_bias, dtype=np.float64)
    a = np.asarray(model.hidden_bias, dtype=np.float64)
    W_in = W / sigma[:, None]  # s(v) = v @ W_in + a
    W_out = (W * sigma[:, None]).T  # sigma * (W h) = h @ W_out
    v = b + sigma * rng.standard_normal((num_chains, b.size))
    total = np.zeros(b.size)
    outer = np.zeros((b.size, b.size))
    kept = 0
    for step in range(num_steps):
        p_h = 1.0 / (1.0 + np.exp(-(v @ W_in + a)))
        h = (rng.random(p_h.shape) < p_h).astype(np.float64)
        mean = b + h @ W_out
        v = mean + sigma * rng.standard_normal(mean.shape)
        if step >= burn_in:
            total += mean.sum(axis=0)
            outer += mean.T @ mean
            kept += num_chains
    mu = total / kept
    cov = outer / kept - np.outer(mu, mu) + np.diag(sigma**2)
    return Moments(mu, (cov + cov.T) / 2, "mcmc")


def _target_moments(model, moments, data, rng) -> Moments:
    """The target's moments: ``moments`` as given, else those of ``data``, else by
    :func:`grbm_moments` (seeded by ``rng``)."""
    if moments is not None:
        return as_moments(moments, model.num_dims)
    if data is not None:
        return data_moments(data, model.num_dims)
    return grbm_moments(model, rng if rng is not None else np.random.default_rng())


def grbm_path(model, base: str = "ais_cov", *, moments=None, data=None,
              rng: np.random.Generator | None = None) -> GibbsPath:
    """The annealing path from a Gaussian base to a Gaussian RBM (Kiwaki & Aihara 2015).

    Parameters
    ----------
    model : GaussianRBM
    base : {"ais", "ais_mean", "ais_cov"}, default "ais_cov"
        The paper's three bases (see the module docstring).
    moments : Moments or (mean, covariance), optional
        The target's moments. By default they are estimated from ``data`` if given, else by
        :func:`grbm_moments` (100 Gibbs chains of 5000 steps, seeded by ``rng``).
    data : array (N, n_visible), optional
    rng : numpy.random.Generator, optional
        For the moment-estimating chains.
    """
    if base not in GRBM_BASES:
        raise AnnealingError(f"unknown base {base!r} for a GaussianRBM; must be one of {list(GRBM_BASES)}.")
    dtype = model.dtype
    D, M = model.n_visible, model.n_hidden
    moments = _target_moments(model, moments, data, rng)
    sigma = np.asarray(model.sigma, dtype=np.float64)
    W = np.asarray(model.W, dtype=np.float64)
    b_base = moments.mean
    parameters = {
        "W_in": W / sigma[:, None],  # s(v) = v @ W_in + a
        "W_out": np.ascontiguousarray((W * sigma[:, None]).T),  # h @ W_out = sigma * (W h)
        "a": model.hidden_bias, "b": model.visible_bias, "sigma": sigma, "b_base": b_base,
    }
    info = {"base": base, "moments": moments.source, "base_mean": b_base}
    if base in ("ais", "ais_mean"):
        base_sd = np.sqrt(np.diag(moments.covariance)) if base == "ais" else sigma
        if not np.all(base_sd > 0):
            raise AnnealingError("the target's estimated variances must be positive for base='ais'.")
        parameters["base_sd"] = base_sd
        chol = np.diag(base_sd)
        log_z0 = M * LOG_2 + D / 2 * np.log(2 * np.pi) + float(np.log(base_sd).sum())
        info["base_covariance"] = np.diag(base_sd**2)
        log_density, sweep = _grbm_diag_log_density, _grbm_diag_sweep
        quad_base = _grbm_diag_quad_base
    else:
        S = moments.covariance - np.diag(sigma**2)
        eigval, eigvec = np.linalg.eigh((S + S.T) / 2)
        clipped = float(-eigval[eigval < 0].sum())
        S = (eigvec * np.maximum(eigval, 0.0)) @ eigvec.T
        cov = S + np.diag(sigma**2)
        chol = np.linalg.cholesky(cov)
        cov_inv = np.linalg.inv(cov)
        P = S @ cov_inv  # E[x | v] = b_A + P (v - b_A)
        C = S - S @ cov_inv @ S  # (1 - beta) Cov[x | v]
        c_val, c_vec = np.linalg.eigh((C + C.T) / 2)
        C_root = c_vec * np.sqrt(np.maximum(c_val, 0.0))  # C = C_root C_root^T
        parameters.update(chol_inv_T=np.linalg.inv(chol).T, P_T=np.ascontiguousarray(P.T),
                          C_root_T=np.ascontiguousarray(C_root.T))
        log_z0 = M * LOG_2 + D / 2 * np.log(2 * np.pi) + float(np.log(np.diag(chol)).sum())
        info.update(base_covariance=cov, clipped_eigenvalue_mass=clipped)
        log_density, sweep = _grbm_cov_log_density, _grbm_cov_sweep
        quad_base = _grbm_cov_quad_base

    chunked = M > MAX_UNCHUNKED

    def sample_base(rng, num_draws):
        z = rng.standard_normal((num_draws, D))
        return (b_base + z @ chol.T).astype(dtype)

    parameters = {k: np.ascontiguousarray(v, dtype=dtype) for k, v in parameters.items()}
    return GibbsPath(
        num_dims=D, parameters=parameters, build_log_density=log_density,
        build_gibbs_sweep=sweep, sample_base=sample_base, log_base_normalizer=float(log_z0),
        structure=("gaussian_rbm", "cov" if base == "ais_cov" else "diag", chunked), dtype=dtype,
        name=getattr(model, "name", "grbm"), info=info,
        build_log_increment=functools.partial(_grbm_log_increment, chunked=chunked,
                                              quad_base=quad_base),
    )


def _grbm_hidden_input(v, p):
    return v @ p["W_in"] + p["a"]  # beta-free: merged across the step


def _grbm_quad(v, p):
    v64, b, sigma = v.astype("float64"), p["b"].astype("float64"), p["sigma"].astype("float64")
    return (((v64 - b) / sigma) ** 2).sum(axis=1) / 2


def _grbm_target_part(v, beta, p):
    return -beta * _grbm_quad(v, p) + pt.softplus(beta * _grbm_hidden_input(v, p).astype("float64")).sum(axis=1)


def _grbm_diag_quad_base(v, p):
    b_base, base_sd = p["b_base"].astype("float64"), p["base_sd"].astype("float64")
    return (((v.astype("float64") - b_base) / base_sd) ** 2).sum(axis=1) / 2


def _grbm_cov_quad_base(v, p):
    r = (v.astype("float64") - p["b_base"].astype("float64")) @ p["chol_inv_T"].astype("float64")
    return (r**2).sum(axis=1) / 2


def _grbm_diag_log_density(v, beta, p):
    """Eq. (8)."""
    return _grbm_target_part(v, beta, p) - (1.0 - beta) * _grbm_diag_quad_base(v, p)


def _grbm_cov_log_density(v, beta, p):
    """Eq. (11)."""
    return _grbm_target_part(v, beta, p) - (1.0 - beta) * _grbm_cov_quad_base(v, p)


def _grbm_log_increment(v, beta, delta, p, chunked, quad_base):
    """``log_density(v, beta) - log_density(v, beta - delta)`` of eq. (8) or (11), cheaply."""
    return (delta * (quad_base(v, p) - _grbm_quad(v, p))
            + softplus_increment(_grbm_hidden_input(v, p), beta, delta, chunked))


def _grbm_sample_hidden(rng, v, beta, p):
    return draw_hidden(rng, _grbm_hidden_input(v, p), beta)


def _grbm_diag_sweep(rng, v, beta, p):
    """Eq. (9), with the paper's typo fixed: precision beta/sigma_B^2 + (1-beta)/sigma_A^2."""
    dtype = v.dtype
    rng, h = _grbm_sample_hidden(rng, v, beta, p)
    sigma2, base_var = p["sigma"].astype("float64") ** 2, p["base_sd"].astype("float64") ** 2
    precision = beta / sigma2 + (1.0 - beta) / base_var
    mean = (beta / sigma2 * (h @ p["W_out"] + p["b"]).astype("float64")
            + (1.0 - beta) / base_var * p["b_base"].astype("float64")) / precision
    rng, z = pt.random.normal(size=v.shape, rng=rng, return_next_rng=True, dtype=dtype)
    return rng, mean.astype(dtype) + z * pt.sqrt(1.0 / precision).astype(dtype)


def _grbm_cov_sweep(rng, v, beta, p):
    """Eq. (12)-(14), drawing y = (1 - beta) x, finite at beta = 1."""
    dtype = v.dtype
    beta_x = beta.astype(dtype)
    rng, h = _grbm_sample_hidden(rng, v, beta, p)
    rng, z = pt.random.normal(size=v.shape, rng=rng, return_next_rng=True, dtype=dtype)
    x_mean = p["b_base"] + (v - p["b_base"]) @ p["P_T"]
    y = (1 - beta_x) * x_mean + pt.sqrt(1 - beta_x) * (z @ p["C_root_T"])
    mean = beta_x * (h @ p["W_out"] + p["b"]) + y
    rng, z = pt.random.normal(size=v.shape, rng=rng, return_next_rng=True, dtype=dtype)
    return rng, mean + p["sigma"] * z
