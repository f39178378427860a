r"""Annealing paths for energy-based models: RBMs in the joint space, and Gaussian bases.

**Binary RBM** (Salakhutdinov & Murray 2008). The base is an RBM with zero weights and
visible biases :math:`b^A` (zero: uniform; or the smoothed data base rates); the
intermediate RBMs scale the target's parameters by :math:`\beta` and the base's by
:math:`1 - \beta`. With the hidden units summed out,

.. math:: \log f_\beta(v) = \big((1-\beta) b^A + \beta b\big)^\top v
          + \sum_j \operatorname{softplus}\!\big(\beta (c_j + (v^\top W)_j)\big),

so :math:`\log Z_0 = M \log 2 + \sum_i \operatorname{softplus}(b^A_i)` (the hidden units are
uniform at :math:`\beta = 0`: the :math:`M \log 2` is easy to forget). A Gibbs sweep draws
:math:`h \sim \sigma(\beta(c + v^\top W))`, then :math:`v \sim \sigma((1-\beta) b^A + \beta(b + W h))`.
The product :math:`v^\top W` is shared by the weight update at :math:`\beta_k`, at
:math:`\beta_{k-1}` and the draw of :math:`h` (PyTensor merges the identical expressions):
each step costs two matrix products. The weight update's softplus differences are computed
as the logarithm of a product of :math:`(1 + e^{-\beta_k|s|})/(1 + e^{-\beta_{k-1}|s|})`, whose
first exponential also serves the draw of :math:`h` (``_softplus_increment``): two
exponentials per hidden unit instead of five transcendental functions.

**Gaussian RBM** (Kiwaki & Aihara 2015, energy eq. 1 with ``W`` of shape (visible, hidden)).
Three bases, compared in the paper:

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

**Continuous energies with HMC.** :func:`gaussian_energy_path` makes the linear path from a
normalized Gaussian base :math:`q` to any :class:`~pymc_anneal.energy.EnergyModel`,
:math:`\log f_\beta = \log q + \beta(\log p^* - \log q)`, for the HMC and Metropolis kernels.

References
----------
Salakhutdinov, R. & Murray, I. (2008). On the quantitative analysis of deep belief
networks. *ICML*.
Kiwaki, T. & Aihara, K. (2015). Designing the covariance of base distributions for
annealed importance sampling of Gaussian RBMs (arXiv preprint).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt

from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.paths import GibbsPath, Path

__all__ = [
    "GRBM_BASES",
    "RBM_BASES",
    "Moments",
    "gaussian_energy_path",
    "grbm_moments",
    "grbm_path",
    "rbm_path",
]

RBM_BASES = ("uniform", "data")
"""Bases for binary RBMs: zero visible biases, or the smoothed base rates of ``data``."""
GRBM_BASES = ("ais", "ais_mean", "ais_cov")
"""Bases for Gaussian RBMs, named as in Kiwaki & Aihara (2015)."""

LOG_2 = float(np.log(2.0))


class Moments(NamedTuple):
    """First and second moments of a target distribution."""

    mean: np.ndarray  # (D,)
    covariance: np.ndarray  # (D, D)
    source: str  # "mcmc", "data" or "given"


def _softplus(x):
    return pt.softplus(x)


MAX_UNCHUNKED = 1000
"""Up to this many hidden units, ``_softplus_increment`` takes one product per row: each
factor lies in [1/2, 1], so the product stays above 2^-1000, inside float64's normal range."""
_CHUNK = 512
"""Above ``MAX_UNCHUNKED`` hidden units, the products are taken over blocks of this size."""


def _exp_neg_abs(s64, beta):
    # exp(-beta |s|): shared by the weight increment and the draw of h in the Gibbs sweep
    # (identical graphs, merged by PyTensor)
    return pt.exp(-beta * pt.abs(s64))


def _bernoulli(u, x, e):
    r"""Draws :math:`u < \sigma(x)` as 0/1 in the dtype of ``u``, from uniforms ``u`` and
    :math:`e = e^{-|x|}`: :math:`u (1 + e) < 1` if :math:`x \ge 0`, else :math:`u (1 + e) < e`.
    No division and no overflow (a compiled division before a comparison costs about three
    times as much as this)."""
    return (u * (1 + e) < pt.switch(x >= 0, pt.ones_like(e), e)).astype(u.dtype)


def _draw_hidden(rng, s, beta):
    r""":math:`h \sim \text{Bernoulli}(\sigma(\beta s))`, sharing :math:`e^{-\beta|s|}` (float64)
    with the weight increment."""
    rng, u = _uniform(rng, s.shape, s.dtype)
    return rng, _bernoulli(u, s, _exp_neg_abs(s.astype("float64"), beta))


def _draw_visible(rng, z):
    r""":math:`v \sim \text{Bernoulli}(\sigma(z))` in the dtype of ``z``."""
    rng, u = _uniform(rng, z.shape, z.dtype)
    return rng, _bernoulli(u, z, pt.exp(-pt.abs(z)))


def _softplus_increment(s, beta, delta, chunked):
    r"""Per row, :math:`\sum_j \operatorname{softplus}(\beta s_j) - \operatorname{softplus}((\beta - \delta) s_j)`
    for ``s`` of shape ``(N, M)`` and :math:`\beta, \beta - \delta \in [0, 1]` (:math:`\delta < 0`
    on a run backwards from the target).

    With :math:`\operatorname{softplus}(x) = \max(x, 0) + \log(1 + e^{-|x|})` the sum is
    :math:`\delta \sum_j \max(s_j, 0) + \log \prod_j (1 + e^{-\beta|s_j|}) / (1 + e^{-(\beta-\delta)|s_j|})`:
    two exponentials per unit (one shared with the draw of :math:`h`) and one logarithm per
    row (per block of 512 units if ``chunked``), instead of two logarithms and two
    exponentials per unit. Each factor lies in [1/2, 1] (in [1, 2] for :math:`\delta < 0`),
    so a product of up to ``MAX_UNCHUNKED`` factors neither overflows nor underflows; exact
    in float64 to rounding (about 1e-13 per step).
    """
    s64 = s.astype("float64")
    ratio = (1.0 + _exp_neg_abs(s64, beta)) / (1.0 + pt.exp(-(beta - delta) * pt.abs(s64)))
    linear = delta * pt.maximum(s64, 0.0).sum(axis=1)
    if not chunked:
        return linear + pt.log(ratio.prod(axis=1))
    rows, cols = ratio.shape
    pad = pt.ones((rows, (-cols) % _CHUNK), dtype="float64")  # factors of 1: s = 0
    ratio = pt.concatenate([ratio, pad], axis=1).reshape((rows, -1, _CHUNK))
    return linear + pt.log(ratio.prod(axis=2)).sum(axis=1)


def _uniform(rng, shape, dtype):
    return pt.random.uniform(size=shape, rng=rng, return_next_rng=True, dtype=dtype)


# ---------------------------------------------------------------------------------------
# binary RBM


def rbm_path(model, base: str = "uniform", data=None, pseudocount: float = 1.0) -> GibbsPath:
    """The annealing path from a zero-weight RBM to ``model`` in the joint (v, h) space.

    Parameters
    ----------
    model : BernoulliRBM
    base : {"uniform", "data"}, default "uniform"
        ``"uniform"``: visible biases 0 (every visible vector equally likely). ``"data"``:
        visible biases at the log-odds of the smoothed base rates of ``data``,
        ``(count + pseudocount) / (N + 2 pseudocount)`` (Salakhutdinov & Murray 2008).
    data : array (N, n_visible), optional
        Binary training data, for ``base="data"``.
    pseudocount : float, default 1
    """
    if base not in RBM_BASES:
        raise AnnealingError(f"unknown base {base!r} for a BernoulliRBM; must be one of {list(RBM_BASES)}.")
    dtype = model.dtype
    n_visible, n_hidden = model.n_visible, model.n_hidden
    if base == "data":
        if data is None:
            raise AnnealingError('base="data" needs the training data: pass data=<binary array '
                                 f'of shape (N, {n_visible})>, or use base="uniform".')
        data = _check_binary(np.asarray(data), n_visible)
        if not pseudocount > 0:
            raise AnnealingError(f"pseudocount must be > 0, got {pseudocount!r}.")
        rate = (data.sum(axis=0) + pseudocount) / (data.shape[0] + 2.0 * pseudocount)
        base_bias = np.log(rate) - np.log1p(-rate)
    else:
        base_bias = np.zeros(n_visible)
    probability = 1.0 / (1.0 + np.exp(-base_bias))

    def sample_base(rng, num_draws):
        return (rng.random((num_draws, n_visible)) < probability).astype(dtype)

    parameters = {
        "W": np.asarray(model.W, dtype=dtype), "W_T": np.ascontiguousarray(model.W.T, dtype=dtype),
        "b": np.asarray(model.visible_bias, dtype=dtype), "c": np.asarray(model.hidden_bias, dtype=dtype),
        "b_base": base_bias.astype(dtype),
    }
    log_z0 = n_hidden * LOG_2 + float(np.logaddexp(0.0, base_bias).sum())
    chunked = n_hidden > MAX_UNCHUNKED
    return GibbsPath(
        num_dims=n_visible, parameters=parameters, build_log_density=_rbm_log_density,
        build_gibbs_sweep=_rbm_gibbs_sweep, sample_base=sample_base, log_base_normalizer=log_z0,
        structure=("bernoulli_rbm", chunked), dtype=dtype, name=getattr(model, "name", "rbm"),
        info={"base": base, "base_visible_bias": base_bias},
        build_log_increment=functools.partial(_rbm_log_increment, chunked=chunked),
    )


def _rbm_hidden_input(v, p):
    return v @ p["W"] + p["c"]  # (N, M), beta-free: merged across the step


def _rbm_log_density(v, beta, p):
    v64 = v.astype("float64")
    linear = (1.0 - beta) * (v64 @ p["b_base"].astype("float64")) + beta * (v64 @ p["b"].astype("float64"))
    return linear + _softplus(beta * _rbm_hidden_input(v, p).astype("float64")).sum(axis=1)


def _rbm_log_increment(v, beta, delta, p, chunked):
    """``_rbm_log_density(v, beta) - _rbm_log_density(v, beta - delta)``, cheaply."""
    shift = p["b"].astype("float64") - p["b_base"].astype("float64")
    return (delta * (v.astype("float64") @ shift)
            + _softplus_increment(_rbm_hidden_input(v, p), beta, delta, chunked))


def _rbm_gibbs_sweep(rng, v, beta, p):
    dtype = v.dtype
    beta_x = beta.astype(dtype)
    rng, h = _draw_hidden(rng, _rbm_hidden_input(v, p), beta)
    return _draw_visible(rng, (1 - beta_x) * p["b_base"] + beta_x * (h @ p["W_T"] + p["b"]))


def _check_binary(data: np.ndarray, n_visible: int) -> np.ndarray:
    if data.ndim != 2 or data.shape[1] != n_visible:
        raise AnnealingError(f"data must have shape (N, {n_visible}), got {data.shape}.")
    if not np.all((data == 0) | (data == 1)):
        bad = data[(data != 0) & (data != 1)]
        raise AnnealingError(f"data for a BernoulliRBM must be binary (0 or 1); found values such "
                             f"as {bad[:3].tolist()}. Binarize it first (e.g. data > 0.5).")
    return data.astype(np.float64)


# ---------------------------------------------------------------------------------------
# Gaussian RBM


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


def _data_moments(data, num_dims) -> Moments:
    data = np.asarray(data, dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != num_dims or data.shape[0] < 2:
        raise AnnealingError(f"data must have shape (N >= 2, {num_dims}), got {data.shape}.")
    if not np.all(np.isfinite(data)):
        raise AnnealingError("data contain NaN or infinite values.")
    return Moments(data.mean(axis=0), np.cov(data, rowvar=False).reshape(num_dims, num_dims), "data")


def _given_moments(moments, num_dims) -> Moments:
    try:
        mean, cov = (np.asarray(m, dtype=np.float64) for m in moments[:2])
    except (TypeError, ValueError) as err:
        raise AnnealingError("moments must be a pair (mean (D,), covariance (D, D)), "
                             f"got {type(moments).__name__}.") from err
    if mean.shape != (num_dims,) or cov.shape != (num_dims, num_dims):
        raise AnnealingError(f"moments must have shapes ({num_dims},) and ({num_dims}, {num_dims}), "
                             f"got {mean.shape} and {cov.shape}.")
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
        raise AnnealingError("moments contain NaN or infinite values.")
    return Moments(mean, (cov + cov.T) / 2, getattr(moments, "source", "given"))


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
    if moments is not None:
        moments = _given_moments(moments, D)
    elif data is not None:
        moments = _data_moments(data, D)
    else:
        moments = grbm_moments(model, rng if rng is not None else np.random.default_rng())
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
    return -beta * _grbm_quad(v, p) + _softplus(beta * _grbm_hidden_input(v, p).astype("float64")).sum(axis=1)


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
            + _softplus_increment(_grbm_hidden_input(v, p), beta, delta, chunked))


def _grbm_sample_hidden(rng, v, beta, p):
    return _draw_hidden(rng, _grbm_hidden_input(v, p), beta)


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


# ---------------------------------------------------------------------------------------
# any continuous energy, for HMC


def gaussian_energy_path(model, mean=None, scale=None, cov=None) -> Path:
    r"""The linear path from a normalized Gaussian :math:`q = \mathcal N(\mu, \operatorname{diag}(s^2))`
    to ``model``'s unnormalized density, for the ``"hais"``, ``"hmc"`` and ``"metropolis"`` kernels.

    Parameters
    ----------
    model : EnergyModel
    mean, scale : array (num_dims,) or float, optional
        The base's mean (default 0) and standard deviations (default 1). A base close to the
        target in location and scale makes AIS far more efficient.
    cov : array (num_dims, num_dims), optional
        A full covariance instead of ``scale``.
    """
    d = int(model.num_dims)
    if cov is not None:
        return _full_gaussian_energy_path(model, mean, cov)
    mean = np.broadcast_to(np.asarray(0.0 if mean is None else mean, dtype=np.float64), (d,)).copy()
    scale = np.broadcast_to(np.asarray(1.0 if scale is None else scale, dtype=np.float64), (d,)).copy()
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(scale)) and np.all(scale > 0)):
        raise AnnealingError(f"the Gaussian base needs a finite mean and positive finite scales; got "
                             f"mean {mean[:3].tolist()}..., scale {scale[:3].tolist()}...")
    mean_t, scale_t = pt.constant(mean), pt.constant(scale)
    log_norm = -0.5 * d * np.log(2 * np.pi) - float(np.log(scale).sum())

    def log_densities(x):
        log_q = -0.5 * (((x - mean_t) / scale_t) ** 2).sum(axis=1) + log_norm
        log_p = model.log_unnormalized(x.astype(model.dtype)).astype("float64")
        return log_q, log_p - log_q

    def sample_base(rng, num_draws):
        return mean + scale * rng.standard_normal((num_draws, d))

    return Path(num_dims=d, build_log_densities=log_densities, sample_base=sample_base,
                log_base_normalizer=0.0, base_scale=scale, name=getattr(model, "name", "energy"))


def _full_gaussian_energy_path(model, mean, cov) -> Path:
    """:func:`gaussian_energy_path` with a full-covariance base."""
    d = int(model.num_dims)
    mean = np.broadcast_to(np.asarray(0.0 if mean is None else mean, dtype=np.float64), (d,)).copy()
    cov = np.asarray(cov, dtype=np.float64)
    try:
        chol = np.linalg.cholesky(0.5 * (cov + cov.T))
    except np.linalg.LinAlgError as err:
        raise AnnealingError("the Gaussian base's covariance is not positive definite; "
                             "give more data or moments with a full-rank covariance.") from err
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(chol))):
        raise AnnealingError("the Gaussian base needs a finite mean and covariance.")
    inv_chol = np.linalg.inv(chol)
    log_norm = -0.5 * d * np.log(2 * np.pi) - float(np.log(np.diag(chol)).sum())
    mean_t, inv_chol_t = pt.constant(mean), pt.constant(inv_chol.T.copy())

    def log_densities(x):
        z = pt.dot(x - mean_t, inv_chol_t)
        log_q = -0.5 * pt.sum(z**2, axis=1) + log_norm
        log_p = model.log_unnormalized(x.astype(model.dtype)).astype("float64")
        return log_q, log_p - log_q

    def sample_base(rng, num_draws):
        return mean + rng.standard_normal((num_draws, d)) @ chol.T

    return Path(num_dims=d, build_log_densities=log_densities, sample_base=sample_base,
                log_base_normalizer=0.0, base_scale=np.sqrt(np.diag(chol @ chol.T)),
                name=getattr(model, "name", "energy"), info={"base": "gaussian_full"})
