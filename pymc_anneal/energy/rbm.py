r"""Bernoulli (binary-binary) restricted Boltzmann machines.

With visible units :math:`v \in \{0,1\}^D`, hidden units :math:`h \in \{0,1\}^M`, weights
:math:`W` of shape ``(D, M)``, visible biases :math:`b` and hidden biases :math:`c`,

.. math:: E(v, h) = -v^\top W h - b^\top v - c^\top h .

Summing out either layer gives the two free energies (:math:`\operatorname{softplus}(x) =
\log(1 + e^x)`):

.. math::
    \log p^*(v) &= \log \sum_h e^{-E(v,h)} = b^\top v + \sum_{j=1}^M \operatorname{softplus}\big(c_j + (v^\top W)_j\big), \\
    \log p^*(h) &= c^\top h + \sum_{i=1}^D \operatorname{softplus}\big(b_i + (W h)_i\big),

and :math:`\log Z = \log\sum_v p^*(v) = \log\sum_h p^*(h)`: exact log Z enumerates the
*smaller* layer, :math:`2^{\min(D, M)}` states (:mod:`pymc_anneal.energy.enumerate`). The
conditionals factorize: :math:`p(h_j = 1 \mid v) = \sigma(c_j + (v^\top W)_j)` and
:math:`p(v_i = 1 \mid h) = \sigma(b_i + (W h)_i)` with :math:`\sigma(x) = 1/(1 + e^{-x})`.

**Annealing path** (:func:`rbm_path`; Salakhutdinov & Murray 2008). The base is an RBM with
zero weights and visible biases :math:`b^A` (zero: uniform; or the smoothed data base
rates); the intermediate RBMs scale the target's parameters by :math:`\beta` and the base's
by :math:`1 - \beta`. With the hidden units summed out,

.. math:: \log f_\beta(v) = \big((1-\beta) b^A + \beta b\big)^\top v
          + \sum_j \operatorname{softplus}\!\big(\beta (c_j + (v^\top W)_j)\big),

so :math:`\log Z_0 = M \log 2 + \sum_i \operatorname{softplus}(b^A_i)` (the hidden units are
uniform at :math:`\beta = 0`: the :math:`M \log 2` is easy to forget). A Gibbs sweep draws
:math:`h \sim \sigma(\beta(c + v^\top W))`, then :math:`v \sim \sigma((1-\beta) b^A + \beta(b + W h))`.
The product :math:`v^\top W` is shared by the weight update at :math:`\beta_k`, at
:math:`\beta_{k-1}` and the draw of :math:`h` (PyTensor merges the identical expressions):
each step costs two matrix products. The weight update's softplus differences take two
exponentials per hidden unit (:func:`pymc_anneal.energy.bernoulli.softplus_increment`).

References
----------
Salakhutdinov, R. & Murray, I. (2008). On the quantitative analysis of deep belief
networks. *ICML*.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal.energy.base import (
    EnergyModel,
    cast_finite,
    check_dtype,
    check_positive_int,
    readonly,
)
from pymc_anneal.energy.bernoulli import (
    LOG_2,
    MAX_UNCHUNKED,
    draw_hidden,
    draw_visible,
    softplus_increment,
)
from pymc_anneal.energy.enumerate import (
    DEFAULT_MAX_STATES,
    binary_states,
    check_num_states,
    chunk_bits,
    iterate_high_states,
    logsumexp_over_states,
)
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.paths import GibbsPath
from pymc_anneal.validation import check_count, check_finite_array, check_one_of, check_real

__all__ = ["RBM_BASES", "BernoulliRBM", "rbm_gibbs_sweep", "rbm_path"]

RBM_BASES = ("uniform", "data")
"""Bases for binary RBMs: zero visible biases, or the smoothed base rates of ``data``."""


def softplus(x: np.ndarray) -> np.ndarray:
    r""":math:`\log(1 + e^x)`, stable for any ``x``."""
    return np.logaddexp(0.0, x)


def sigmoid(x: np.ndarray) -> np.ndarray:
    r""":math:`1 / (1 + e^{-x})`, stable for any ``x``."""
    return np.exp(-np.logaddexp(0.0, -x))


def _softplus_row_sums(x: np.ndarray) -> np.ndarray:
    """Row sums of softplus(x), overwriting ``x`` (the hot loop of exact log Z)."""
    positive = np.maximum(x, 0.0)
    np.abs(x, out=x)
    np.negative(x, out=x)
    np.exp(x, out=x)
    np.log1p(x, out=x)
    x += positive
    return x.sum(axis=1)


def check_parameters(W, visible_bias, hidden_bias, model: str) -> tuple[np.ndarray, ...]:
    """Validate an RBM's weights ``(n_visible, n_hidden)`` and biases; return float64 copies."""
    W = check_finite_array("W", W).copy()
    if W.ndim != 2 or W.shape[0] < 1 or W.shape[1] < 1:
        raise AnnealingError(
            f"W of a {model} must be a 2-D array of shape (n_visible, n_hidden) with both sizes "
            f">= 1, got shape {W.shape}."
        )
    n_visible, n_hidden = W.shape
    visible_bias = check_finite_array("visible_bias", visible_bias).copy()
    hidden_bias = check_finite_array("hidden_bias", hidden_bias).copy()
    if visible_bias.shape != (n_visible,) or hidden_bias.shape != (n_hidden,):
        transposed = visible_bias.shape == (n_hidden,) and hidden_bias.shape == (n_visible,)
        hint = (
            " W looks transposed: it must have shape (n_visible, n_hidden); pass W.T (for a "
            "scikit-learn model use BernoulliRBM.from_sklearn)."
            if transposed
            else " Pass 1-D arrays of those lengths."
        )
        raise AnnealingError(
            f"the biases of a {model} must match W of shape {W.shape} (n_visible={n_visible}, "
            f"n_hidden={n_hidden}): visible_bias needs shape ({n_visible},) and hidden_bias "
            f"({n_hidden},); got {visible_bias.shape} and {hidden_bias.shape}.{hint}"
        )
    return W, visible_bias, hidden_bias


def check_binary(array: np.ndarray, model: str) -> np.ndarray:
    """``array`` if every entry is 0 or 1, else a clear error naming ``model``."""
    bad = (array != 0) & (array != 1)
    if np.any(bad):
        raise AnnealingError(
            f"data for a {model} must be binary (0 or 1); found {int(bad.sum())} other "
            f"values such as {array[bad][:3].tolist()}. Binarize it first (e.g. data > 0.5)."
        )
    return array


def as_generator(rng) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError) as err:
        raise AnnealingError(
            f"rng must be a numpy.random.Generator or a seed, got {type(rng).__name__}."
        ) from err


def _no_options(model, **options) -> None:
    """Refuse annealing options that ``model``'s paths do not use."""
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise AnnealingError(f"{given} do not apply to a {type(model).__name__}; its annealing "
                             "path is set by kernel, base and data.")


class RestrictedBoltzmannMachine(EnergyModel):
    """Parts shared by :class:`BernoulliRBM` and :class:`~pymc_anneal.energy.GaussianRBM`:
    parameters, block Gibbs sampling, enumeration bookkeeping.

    Subclasses implement ``_hidden_input`` (NumPy, the argument of the hidden sigmoid),
    ``visible_probability``/``visible_mean`` and ``sample_visible``, ``_initial_visible``,
    and the enumeration methods.
    """

    _kind = "RBM"

    def _set_parameters(self, W, visible_bias, hidden_bias, dtype, name) -> None:
        self.dtype = check_dtype(dtype)
        W, visible_bias, hidden_bias = check_parameters(W, visible_bias, hidden_bias, self._kind)
        self.W = readonly(cast_finite(W, self.dtype, "W"))
        self.visible_bias = readonly(cast_finite(visible_bias, self.dtype, "visible_bias"))
        self.hidden_bias = readonly(cast_finite(hidden_bias, self.dtype, "hidden_bias"))
        # float64 copies of the (possibly float32-rounded) parameters for the NumPy side, so
        # that NumPy and PyTensor evaluate the same model
        self._W = readonly(self.W.astype(np.float64))
        self._b = readonly(self.visible_bias.astype(np.float64))
        self._c = readonly(self.hidden_bias.astype(np.float64))
        self.n_visible, self.n_hidden = W.shape
        self.num_dims = self.n_visible
        self.name = str(name)

    # -- NumPy conditionals and sampling ---------------------------------------------------

    def _check_states(self, x, width: int, what: str) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != width:
            raise AnnealingError(f"{what} must have shape (N, {width}), got {x.shape}.")
        return x

    def _hidden_input(self, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def hidden_probability(self, v) -> np.ndarray:
        r""":math:`p(h_j = 1 \mid v)` for each row of ``v`` ``(N, n_visible)``: ``(N, n_hidden)``."""
        return sigmoid(self._hidden_input(self._check_states(v, self.n_visible, "v")))

    def sample_hidden(self, v, rng) -> np.ndarray:
        r"""Draw :math:`h \sim p(h \mid v)` (float64 0/1, shape ``(N, n_hidden)``)."""
        p = self.hidden_probability(v)
        return (as_generator(rng).random(p.shape) < p).astype(np.float64)

    def sample_visible(self, h, rng) -> np.ndarray:
        raise NotImplementedError

    def _initial_visible(self, num_chains: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def gibbs(self, v, rng, num_steps: int = 1) -> np.ndarray:
        r"""``num_steps`` block Gibbs sweeps from ``v``: :math:`h \sim p(h\mid v)`, then
        :math:`v \sim p(v \mid h)`. Returns the new visible states ``(N, n_visible)``."""
        rng = as_generator(rng)
        num_steps = check_count("num_steps", num_steps, 0, what="a non-negative integer")
        v = self._check_states(v, self.n_visible, "v")
        for _ in range(num_steps):
            v = self.sample_visible(self.sample_hidden(v, rng), rng)
        return v

    def sample(
        self,
        num_samples: int,
        rng,
        num_steps: int = 1000,
        burn_in: int = 100,
        data=None,
    ) -> np.ndarray:
        r"""Approximate draws from the model by block Gibbs sampling (e.g. for its moments).

        ``ceil(num_samples / num_steps)`` chains run in parallel; each makes ``burn_in``
        sweeps that are discarded, then ``num_steps`` sweeps whose visible states are kept.
        ``num_steps=1`` gives ``num_samples`` independent chains, each returning its state
        after ``burn_in + 1`` sweeps (independent draws, exact once the chains have mixed).

        Parameters
        ----------
        num_samples : int
            Number of visible states returned.
        rng : numpy.random.Generator or seed
        num_steps : int, default 1000
            Kept sweeps per chain.
        burn_in : int, default 100
            Discarded sweeps per chain.
        data : array (N, n_visible), optional
            Start the chains at randomly chosen rows of ``data`` (the usual start for a
            trained model); by default they start from the model with zero weights.

        Returns
        -------
        ndarray of shape (num_samples, n_visible), float64; chain ``c``'s kept states are
        rows ``c * num_steps`` to ``(c + 1) * num_steps - 1``.
        """
        rng = as_generator(rng)
        num_samples = check_positive_int(num_samples, "num_samples")
        num_steps = check_positive_int(num_steps, "num_steps")
        burn_in = check_count("burn_in", burn_in, 0, what="a non-negative integer")
        num_chains = -(-num_samples // num_steps)
        if data is not None:
            data = self.check_data(data)
            v = data[rng.integers(data.shape[0], size=num_chains)]
        else:
            v = self._initial_visible(num_chains, rng)
        v = self.gibbs(v, rng, burn_in)
        kept = np.empty((num_chains, num_steps, self.n_visible))
        for step in range(num_steps):
            v = self.gibbs(v, rng, 1)
            kept[:, step] = v
        return kept.reshape(-1, self.n_visible)[:num_samples]

    def free_energy(self, v) -> np.ndarray:
        r"""Free energy :math:`F(v) = -\log p^*(v)` per row, float64 ``(N,)``."""
        return -self.log_unnormalized_numpy(v)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(n_visible={self.n_visible}, n_hidden={self.n_hidden}, "
                f"dtype={self.dtype!r}, name={self.name!r})")


class BernoulliRBM(RestrictedBoltzmannMachine):
    r"""A restricted Boltzmann machine with binary visible and hidden units.

    :math:`E(v, h) = -v^\top W h - b^\top v - c^\top h` (see the module docstring).

    Parameters
    ----------
    W : array of shape (n_visible, n_hidden)
    visible_bias : array of shape (n_visible,)
        :math:`b`.
    hidden_bias : array of shape (n_hidden,)
        :math:`c`.
    dtype : {"float64", "float32"}, default "float64"
        Dtype of the stored parameters and of the PyTensor graphs. The NumPy methods compute
        in float64 from the stored (possibly float32-rounded) parameters.
    name : str, default "rbm"

    Attributes
    ----------
    W, visible_bias, hidden_bias : ndarray
        Read-only copies in ``dtype``.
    n_visible, n_hidden, num_dims : int
        ``num_dims = n_visible``: the visible units are the annealed state.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_anneal.energy import BernoulliRBM
    >>> rng = np.random.default_rng(0)
    >>> rbm = BernoulliRBM(rng.normal(size=(6, 3)), np.zeros(6), np.zeros(3))
    >>> log_z = rbm.exact_log_z()  # sums over the 2^3 hidden states
    >>> bool(np.isclose(log_z, rbm.exact_log_z(layer="visible")))
    True
    """

    _kind = "BernoulliRBM"

    def __init__(self, W, visible_bias, hidden_bias, dtype: str = "float64", name: str = "rbm"):
        self._set_parameters(W, visible_bias, hidden_bias, dtype, name)

    @classmethod
    def from_sklearn(cls, estimator: Any, dtype: str = "float64", name: str = "rbm") -> BernoulliRBM:
        """The RBM of a fitted :class:`sklearn.neural_network.BernoulliRBM`.

        scikit-learn stores ``components_`` of shape (n_hidden, n_visible) (our ``W.T``),
        ``intercept_visible_`` and ``intercept_hidden_``; its energy is the same as ours.
        """
        missing = [a for a in ("components_", "intercept_visible_", "intercept_hidden_")
                   if not hasattr(estimator, a)]
        if missing:
            raise AnnealingError(
                "from_sklearn needs a fitted sklearn.neural_network.BernoulliRBM (with "
                f"components_, intercept_visible_, intercept_hidden_); {type(estimator).__name__} "
                f"lacks {missing}. Call estimator.fit(data) first."
            )
        W = np.asarray(estimator.components_, dtype=np.float64).T
        return cls(W, estimator.intercept_visible_, estimator.intercept_hidden_, dtype=dtype, name=name)

    # -- densities -------------------------------------------------------------------------

    def annealing_path(self, *, kernel=None, base=None, data=None, moments=None,
                       base_mean=None, base_scale=None, rng=None):
        """The path from a zero-weight RBM in the joint (v, h) space, and its kernel.

        ``base``: ``"uniform"`` (default) or ``"data"`` (the smoothed base rates of
        ``data``); see :func:`rbm_path`. Binary units move only by Gibbs sweeps, so the
        kernel is ``"gibbs"``.
        """
        _no_options(self, moments=moments, base_mean=base_mean, base_scale=base_scale)
        kernel = kernel or "gibbs"
        if isinstance(kernel, str) and kernel != "gibbs":
            raise AnnealingError(f"a BernoulliRBM has binary units, which only the 'gibbs' "
                                 f"kernel can move; got kernel={kernel!r}.")
        base = base or ("data" if data is not None else "uniform")
        return rbm_path(self, base=base, data=data), kernel

    def log_unnormalized(self, v) -> TensorVariable:
        r"""PyTensor graph of :math:`b^\top v + \sum_j \operatorname{softplus}(c_j + (v^\top W)_j)`."""
        v = pt.as_tensor_variable(v)
        W = pt.as_tensor_variable(self.W)
        b = pt.as_tensor_variable(self.visible_bias)
        c = pt.as_tensor_variable(self.hidden_bias)
        return pt.dot(v, b) + pt.softplus(pt.dot(v, W) + c).sum(axis=-1)

    def log_unnormalized_numpy(self, v) -> np.ndarray:
        v = self._check_states(v, self.n_visible, "v")
        return v @ self._b + softplus(v @ self._W + self._c).sum(axis=1)

    def check_data(self, data) -> np.ndarray:
        """Validate binary data of shape (N, n_visible); return it as float64."""
        return check_binary(super().check_data(data), "BernoulliRBM")

    # -- conditionals ------------------------------------------------------------------------

    def _hidden_input(self, v):
        return v @ self._W + self._c

    def visible_probability(self, h) -> np.ndarray:
        r""":math:`p(v_i = 1 \mid h)` for each row of ``h`` ``(N, n_hidden)``: ``(N, n_visible)``."""
        h = self._check_states(h, self.n_hidden, "h")
        return sigmoid(h @ self._W.T + self._b)

    def sample_visible(self, h, rng) -> np.ndarray:
        r"""Draw :math:`v \sim p(v \mid h)` (float64 0/1, shape ``(N, n_visible)``)."""
        p = self.visible_probability(h)
        return (as_generator(rng).random(p.shape) < p).astype(np.float64)

    def _initial_visible(self, num_chains, rng):
        return (rng.random((num_chains, self.n_visible)) < sigmoid(self._b)).astype(np.float64)

    # -- exact log Z by enumeration ------------------------------------------------------------

    def _layer(self, layer: str) -> str:
        if layer == "auto":
            return "hidden" if self.n_hidden <= self.n_visible else "visible"
        return check_one_of("layer", layer, ("auto", "visible", "hidden"))

    def _enumeration(self, layer: str, chunk_size: int | None):
        """``(num_bits, num_low, low_states, chunk)`` where ``chunk(high)`` returns the log
        weights of the enumerated layer's states and the other layer's pre-activations."""
        if layer == "hidden":
            bias_s, bias_o, W_so = self._c, self._b, self._W.T  # states h, summed-out v
        else:
            bias_s, bias_o, W_so = self._b, self._c, self._W
        num_bits, width = W_so.shape
        k = chunk_bits(num_bits, width, chunk_size)
        low = binary_states(k)
        pre_low = low @ W_so[:k] + bias_o
        lin_low = low @ bias_s[:k]

        def chunk(high):
            return lin_low + high @ bias_s[k:], pre_low + high @ W_so[k:]

        return num_bits, k, low, chunk

    def exact_log_z(
        self,
        max_states: int | None = DEFAULT_MAX_STATES,
        layer: str = "auto",
        chunk_size: int | None = None,
    ) -> float:
        r"""Exact :math:`\log Z` by summing :math:`p^*` over every state of one layer.

        Parameters
        ----------
        max_states : int or None, default 2**20
            Refuse (:class:`AnnealingError`) to enumerate more states than this; ``None``
            removes the guard. Time grows linearly with the number of states (about
            ``2^min(D, M) × max(D, M)`` softplus evaluations); memory is bounded by the chunk.
        layer : {"auto", "visible", "hidden"}, default "auto"
            The layer to enumerate; "auto" takes the smaller one.
        chunk_size : int, optional
            States per chunk, a power of two (default: about 2^21 / width of the other layer).
        """
        layer = self._layer(layer)
        num_bits = self.n_hidden if layer == "hidden" else self.n_visible
        check_num_states(num_bits, max_states, f"BernoulliRBM ({layer} layer of {num_bits} units)")
        num_bits, k, _, chunk = self._enumeration(layer, chunk_size)

        def log_weights(high):
            linear, pre = chunk(high)
            return linear + _softplus_row_sums(pre)

        return logsumexp_over_states(num_bits, k, log_weights)

    def exact_moments(
        self,
        max_states: int | None = DEFAULT_MAX_STATES,
        chunk_size: int | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        r"""Exact mean ``(n_visible,)`` and covariance ``(n_visible, n_visible)`` of the visible
        units, by enumerating the smaller layer.

        Given :math:`h` the visible units are independent Bernoulli(:math:`\mu_h =
        \sigma(b + W h)`), so with hidden enumeration
        :math:`E[v v^\top] = \sum_h p(h)\,(\mu_h \mu_h^\top + \operatorname{diag}(\mu_h(1-\mu_h)))`.
        Costs about ``2^min(D, M) × D^2`` operations.
        """
        layer = self._layer("auto")
        num_bits = self.n_hidden if layer == "hidden" else self.n_visible
        check_num_states(num_bits, max_states, f"BernoulliRBM ({layer} layer of {num_bits} units)")
        log_z = self.exact_log_z(max_states, layer, chunk_size)
        num_bits, k, low, chunk = self._enumeration(layer, chunk_size)
        D = self.n_visible
        first, second, diag = np.zeros(D), np.zeros((D, D)), np.zeros(D)
        for high in iterate_high_states(num_bits, k):
            linear, pre = chunk(high)
            p = np.exp(linear + softplus(pre).sum(axis=1) - log_z)
            if layer == "hidden":
                mu = sigmoid(pre)
                diag += p @ (mu * (1.0 - mu))
            else:
                mu = np.concatenate([low, np.broadcast_to(high, (low.shape[0], high.size))], axis=1)
            first += p @ mu
            second += (mu * p[:, None]).T @ mu
        cov = second + np.diag(diag) - np.outer(first, first)
        return first, (cov + cov.T) / 2


# -- the annealing path ------------------------------------------------------------------------


def _base_bias(model, base: str, data, pseudocount: float) -> np.ndarray:
    """The base RBM's visible biases: zero, or the log-odds of ``data``'s smoothed rates."""
    if base not in RBM_BASES:
        raise AnnealingError(f"unknown base {base!r} for a BernoulliRBM; must be one of "
                             f"{list(RBM_BASES)}.")
    if base == "uniform":
        return np.zeros(model.n_visible)
    if data is None:
        raise AnnealingError('base="data" needs the training data: pass data=<binary array '
                             f'of shape (N, {model.n_visible})>, or use base="uniform".')
    data = model.check_data(data)
    pseudocount = check_real("pseudocount", pseudocount, low=0.0, low_open=True,
                             what="a positive number (e.g. 1)")
    rate = (data.sum(axis=0) + pseudocount) / (data.shape[0] + 2.0 * pseudocount)
    return np.log(rate) - np.log1p(-rate)


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
    dtype = model.dtype
    n_visible, n_hidden = model.n_visible, model.n_hidden
    base_bias = _base_bias(model, base, data, pseudocount)
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
        build_gibbs_sweep=rbm_gibbs_sweep, sample_base=sample_base, log_base_normalizer=log_z0,
        structure=("bernoulli_rbm", chunked), dtype=dtype, name=getattr(model, "name", "rbm"),
        info={"base": base, "base_visible_bias": base_bias},
        build_log_increment=functools.partial(_rbm_log_increment, chunked=chunked),
    )


def _rbm_hidden_input(v, p):
    return v @ p["W"] + p["c"]  # (N, M), beta-free: merged across the step


def _rbm_log_density(v, beta, p):
    v64 = v.astype("float64")
    linear = (1.0 - beta) * (v64 @ p["b_base"].astype("float64")) + beta * (v64 @ p["b"].astype("float64"))
    return linear + pt.softplus(beta * _rbm_hidden_input(v, p).astype("float64")).sum(axis=1)


def _rbm_log_increment(v, beta, delta, p, chunked):
    """``_rbm_log_density(v, beta) - _rbm_log_density(v, beta - delta)``, cheaply."""
    shift = p["b"].astype("float64") - p["b_base"].astype("float64")
    return (delta * (v.astype("float64") @ shift)
            + softplus_increment(_rbm_hidden_input(v, p), beta, delta, chunked))


def rbm_gibbs_sweep(rng, v, beta, p):
    r"""One Gibbs sweep of :func:`rbm_path` at ``beta``: :math:`h \sim \sigma(\beta(c + v^\top
    W))`, then :math:`v \sim \sigma((1-\beta) b^A + \beta(b + W h))`; ``p`` holds the path's
    parameters. Returns ``(rng, v)``."""
    dtype = v.dtype
    beta_x = beta.astype(dtype)
    rng, h = draw_hidden(rng, _rbm_hidden_input(v, p), beta)
    return draw_visible(rng, (1 - beta_x) * p["b_base"] + beta_x * (h @ p["W_T"] + p["b"]))
