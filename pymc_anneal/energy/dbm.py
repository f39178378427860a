r"""A two-layer binary deep Boltzmann machine, annealed as an RBM over (v, h2).

.. math:: E(\mathbf v, \mathbf h_1, \mathbf h_2) = -\mathbf v^\top W_1 \mathbf h_1
          - \mathbf h_1^\top W_2 \mathbf h_2 - \mathbf b^\top \mathbf v
          - \mathbf c_1^\top \mathbf h_1 - \mathbf c_2^\top \mathbf h_2 .

Given :math:`(\mathbf v, \mathbf h_2)` the units of :math:`\mathbf h_1` are independent, so
they sum out:

.. math:: f(\mathbf v, \mathbf h_2) = \exp(\mathbf b^\top\mathbf v + \mathbf c_2^\top
          \mathbf h_2) \prod_j \big(1 + e^{(W_1^\top \mathbf v + W_2 \mathbf h_2 +
          \mathbf c_1)_j}\big),

which is the free energy of an RBM whose *visible* layer is :math:`\mathbf x = (\mathbf v,
\mathbf h_2)` (weights :math:`[W_1; W_2^\top]`, visible bias :math:`[\mathbf b;
\mathbf c_2]`) and whose hidden layer is :math:`\mathbf h_1`. Forward AIS therefore anneals
:math:`\mathbf x` with the RBM's Gibbs sweeps (:math:`\mathbf h_1 \mid \mathbf x`, then
:math:`\mathbf x \mid \mathbf h_1`) from a zero-weight base (Salakhutdinov & Hinton 2009),
and :math:`\log Z` is that RBM's. What is not tractable is the probability of a visible
vector, :math:`f(\mathbf v) = \sum_{\mathbf h_2} f(\mathbf v, \mathbf h_2)`: exact by
enumeration for a small :math:`\mathbf h_2` (:meth:`DeepBoltzmannMachine.log_unnormalized_numpy`),
otherwise estimated by importance sampling from the mean-field posterior
(:meth:`DeepBoltzmannMachine.estimate_log_unnormalized`, Burda et al. 2015, §5.2), and
RAISE needs its Algorithm 3 (:func:`pymc_anneal.reverse_ais`).

**RAISE with a heating phase** (Algorithm 3). The reverse chain must start from the test
point and a draw of :math:`\mathbf h_2 \mid \mathbf v_{\rm test}` under the target, which
no one can draw exactly. Instead a forward AIS run over :math:`\mathbf h_2` alone, with
:math:`\mathbf v` clamped to the test point, anneals from the base's conditional
:math:`p_0(\mathbf h_2 \mid \mathbf v)` (independent units) to the target's, with weight
:math:`w_{\rm heat} = \prod_k f_k(\mathbf v, \mathbf h_2^{(k-1)}) / f_{k-1}(\mathbf v,
\mathbf h_2^{(k-1)})`, whose mean is :math:`f_K(\mathbf v) / f_0(\mathbf v)`; its final
state starts the reverse run of Algorithm 2. Extending the forward model of eq. (11) by
the clamped chain run backwards (the paper's :math:`\mathbf h'` variables), the ratio of
forward to proposal densities on that extended space is (eq. 13)

.. math:: w = p_0(\mathbf v_{\rm test})\; w_{\rm heat} \prod_{k=0}^{K-1}
          \frac{f_k(\mathbf x_k)}{f_{k+1}(\mathbf x_k)},

so :math:`\mathbb E[w] = p_{\rm ann}(\mathbf v_{\rm test})` exactly, and :math:`\log` of
its mean is a stochastic lower bound. Here :math:`p_0(\mathbf v) = \prod_i
\sigma(b^0_i)^{v_i} (1 - \sigma(b^0_i))^{1 - v_i}` is the base's marginal of the visible
units (its units are independent). The heating's increments are taken before each clamped
sweep, as in any forward AIS, which is the paper's order (transition at level
:math:`k-1`, then the ratio :math:`f_k/f_{k-1}`).

References
----------
Salakhutdinov, R. & Hinton, G. (2009). Deep Boltzmann machines. *AISTATS*.

Burda, Y., Grosse, R. B. & Salakhutdinov, R. (2015). Accurate and conservative estimates
of MRF log-likelihood using reverse annealing. *AISTATS*, Algorithm 3 and §5.2.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from pymc_anneal.energy.base import EnergyModel, check_dtype
from pymc_anneal.energy.rbm import (
    BernoulliRBM,
    as_generator,
    check_binary,
    check_parameters,
    rbm_gibbs_sweep,
    sigmoid,
)
from pymc_anneal.exceptions import AnnealingError

__all__ = ["DeepBoltzmannMachine"]

MAX_ENUMERATED_H2 = 16
"""Up to this many top-layer units, :math:`f(\\mathbf v)` is summed exactly over
:math:`\\mathbf h_2`."""


def _softplus(x):
    return np.logaddexp(0.0, x)


class DeepBoltzmannMachine(EnergyModel):
    r"""Two-layer binary DBM over visible vectors :math:`\mathbf v \in \{0,1\}^{n_v}`.

    Parameters
    ----------
    W1 : array (n_visible, n_hidden1)
    W2 : array (n_hidden1, n_hidden2)
    visible_bias : array (n_visible,)
    hidden1_bias : array (n_hidden1,)
    hidden2_bias : array (n_hidden2,)
    dtype : {"float64", "float32"}, default "float64"
    name : str, default "dbm"

    Notes
    -----
    :func:`pymc_anneal.ais` anneals the states :math:`(\mathbf v, \mathbf h_2)` (the
    result's ``x`` has ``n_visible + n_hidden2`` columns, visible units first).

    Examples
    --------
    >>> import numpy as np, pymc_anneal as pa
    >>> from pymc_anneal.energy import DeepBoltzmannMachine
    >>> rng = np.random.default_rng(0)
    >>> dbm = DeepBoltzmannMachine(rng.normal(0, 1, (6, 4)), rng.normal(0, 1, (4, 3)),
    ...                            np.zeros(6), np.zeros(4), np.zeros(3))
    >>> est = pa.log_evidence(pa.ais(dbm, draws=300, chains=2, num_steps=200,
    ...                               random_seed=1, progressbar=False))
    >>> bool(abs(est.log_evidence - dbm.exact_log_z()) < 4 * est.standard_error + 0.02)
    True
    """

    def __init__(self, W1, W2, visible_bias, hidden1_bias, hidden2_bias,
                 dtype: str = "float64", name: str = "dbm"):
        W1, b, c1 = check_parameters(W1, visible_bias, hidden1_bias, "DeepBoltzmannMachine (W1)")
        W2, c1_again, c2 = check_parameters(W2, c1, hidden2_bias, "DeepBoltzmannMachine (W2)")
        del c1_again
        self.W1, self.W2, self.visible_bias, self.hidden1_bias, self.hidden2_bias = (
            W1, W2, b, c1, c2)
        for array in (W1, W2, b, c1, c2):
            array.flags.writeable = False
        self.n_visible, self.n_hidden1 = W1.shape
        self.n_hidden2 = W2.shape[1]
        self.num_dims = self.n_visible
        self.dtype = check_dtype(dtype)
        self.name = str(name)
        # the RBM over x = (v, h2) with hidden layer h1
        self.joint_rbm = BernoulliRBM(np.vstack([W1, W2.T]), np.concatenate([b, c2]), c1,
                                      dtype=self.dtype, name=self.name)

    # -- densities -------------------------------------------------------------------------

    def _h2_states(self) -> np.ndarray:
        if self.n_hidden2 > MAX_ENUMERATED_H2:
            raise AnnealingError(
                f"f(v) sums over 2^{self.n_hidden2} top-layer states, more than the "
                f"2^{MAX_ENUMERATED_H2} enumerated; estimate it with "
                "estimate_log_unnormalized(data) instead.")
        return np.array(list(itertools.product([0.0, 1.0], repeat=self.n_hidden2)))

    def log_joint_numpy(self, v, h2) -> np.ndarray:
        r""":math:`\log f(\mathbf v, \mathbf h_2)` (``h_1`` summed out), row by row."""
        v, h2 = np.asarray(v, dtype=np.float64), np.asarray(h2, dtype=np.float64)
        return (v @ self.visible_bias + h2 @ self.hidden2_bias
                + _softplus(v @ self.W1 + h2 @ self.W2.T + self.hidden1_bias).sum(axis=1))

    def log_unnormalized_numpy(self, v) -> np.ndarray:
        r"""Exact :math:`\log f(\mathbf v) = \log\sum_{\mathbf h_2} f(\mathbf v, \mathbf h_2)`
        by enumerating :math:`\mathbf h_2` (up to :data:`MAX_ENUMERATED_H2` units)."""
        v = np.asarray(v, dtype=np.float64)
        states = self._h2_states()
        terms = (v @ self.visible_bias)[:, None] + (states @ self.hidden2_bias)[None, :] \
            + _softplus((v @ self.W1)[:, None, :] + (states @ self.W2.T)[None, :, :]
                        + self.hidden1_bias).sum(axis=2)
        top = terms.max(axis=1, keepdims=True)
        return (top + np.log(np.exp(terms - top).sum(axis=1, keepdims=True)))[:, 0]

    def log_unnormalized(self, v) -> TensorVariable:
        r"""PyTensor graph of the exact :math:`\log f(\mathbf v)` (enumerating
        :math:`\mathbf h_2`, up to :data:`MAX_ENUMERATED_H2` units)."""
        v = pt.as_tensor_variable(v)
        states = pt.constant(self._h2_states().astype(self.dtype))
        const = lambda a: pt.constant(np.asarray(a, dtype=self.dtype))
        hidden = (pt.dot(v, const(self.W1))[:, None, :] + pt.dot(states, const(self.W2.T))[None]
                  + const(self.hidden1_bias))
        terms = (pt.dot(v, const(self.visible_bias))[:, None]
                 + pt.dot(states, const(self.hidden2_bias))[None, :]
                 + pt.softplus(hidden).sum(axis=2))
        return pt.logsumexp(terms, axis=1)

    def check_data(self, data) -> np.ndarray:
        """Binary visible vectors of shape (N, n_visible), as float64."""
        return check_binary(super().check_data(data), "DeepBoltzmannMachine")

    def exact_log_z(self) -> float:
        """The exact :math:`\\log Z`: the (v, h2)-RBM's, by enumeration of its smaller layer."""
        return self.joint_rbm.exact_log_z()

    def mean_field(self, v, num_iterations: int = 50) -> tuple[np.ndarray, np.ndarray]:
        r"""Mean-field posterior :math:`q(\mathbf h_1) q(\mathbf h_2)` of each row of ``v``:
        the fixed point of :math:`\mu_1 = \sigma(W_1^\top\mathbf v + W_2\mu_2 + \mathbf c_1)`,
        :math:`\mu_2 = \sigma(W_2^\top\mu_1 + \mathbf c_2)`, from :math:`\mu_2 = 1/2`."""
        v = np.asarray(v, dtype=np.float64)
        mu2 = np.full((v.shape[0], self.n_hidden2), 0.5)
        bottom = v @ self.W1 + self.hidden1_bias
        for _ in range(int(num_iterations)):
            mu1 = sigmoid(bottom + mu2 @ self.W2.T)
            mu2 = sigmoid(mu1 @ self.W2 + self.hidden2_bias)
        return mu1, mu2

    def estimate_log_unnormalized(self, data, num_samples: int = 500, rng=None
                                  ) -> tuple[np.ndarray, np.ndarray]:
        r"""Importance-sampled :math:`\log f(\mathbf v)` per row, and its standard error.

        :math:`f(\mathbf v) = \mathbb E_q[f(\mathbf v, \mathbf h_2) / q(\mathbf h_2)]` with
        the mean-field :math:`q(\mathbf h_2 \mid \mathbf v)` as proposal (Burda et al. 2015,
        §5.2): unbiased for :math:`f(\mathbf v)`, so its log is a stochastic lower bound.
        """
        v = self.check_data(data)
        rng = as_generator(rng)
        _, mu2 = self.mean_field(v)
        mu2 = np.clip(mu2, 1e-6, 1 - 1e-6)
        out, se = np.empty(v.shape[0]), np.empty(v.shape[0])
        for i in range(v.shape[0]):
            h2 = (rng.random((num_samples, self.n_hidden2)) < mu2[i]).astype(np.float64)
            log_q = (h2 * np.log(mu2[i]) + (1 - h2) * np.log1p(-mu2[i])).sum(axis=1)
            log_w = self.log_joint_numpy(np.repeat(v[i:i + 1], num_samples, axis=0), h2) - log_q
            top = log_w.max()
            w = np.exp(log_w - top)
            out[i] = top + np.log(w.mean())
            se[i] = w.std(ddof=1) / np.sqrt(num_samples) / w.mean()
        return out, se

    # -- annealing -------------------------------------------------------------------------

    def annealing_path(self, *, kernel=None, base=None, data=None, moments=None,
                       base_mean=None, base_scale=None, rng=None):
        """The (v, h2)-RBM's path (Gibbs, h1 summed out): ``base="uniform"`` (default) or
        ``"data"`` (the visible units at the smoothed base rates of ``data``; the top layer
        stays uniform)."""
        if data is not None:
            v = self.check_data(data)
            n = v.shape[0]  # every row twice, with h2 all 0 and all 1: base rate 1/2 there
            data = np.vstack([np.hstack([v, np.zeros((n, self.n_hidden2))]),
                              np.hstack([v, np.ones((n, self.n_hidden2))])])
        return self.joint_rbm.annealing_path(kernel=kernel, base=base, data=data,
                                             moments=moments, base_mean=base_mean,
                                             base_scale=base_scale, rng=rng)

    def heating(self, path, test: np.ndarray, draws: int, rng: np.random.Generator):
        r"""What RAISE's heating phase needs (see the module docstring): the clamped path
        (Gibbs sweeps that resample :math:`\mathbf h_2` only; :math:`\log Z_0 = 0`), its
        starting states (each test point repeated ``draws`` times, with :math:`\mathbf h_2`
        from the base's conditional) and :math:`\log p_0(\mathbf v)` per point."""
        bias = np.asarray(path.info["base_visible_bias"], dtype=np.float64)
        clamp = np.r_[np.ones(self.n_visible), np.zeros(self.n_hidden2)].astype(path.dtype)

        def clamped_sweep(rng_t, x, beta, p):
            rng_t, new = rbm_gibbs_sweep(rng_t, x, beta, p)
            return rng_t, p["clamp"] * x + (1 - p["clamp"]) * new

        heating_path = dataclasses.replace(
            path, build_gibbs_sweep=clamped_sweep, parameters={**path.parameters, "clamp": clamp},
            structure=("clamped", *path.structure), log_base_normalizer=0.0,
            name=f"{self.name} (heating)")
        points = test.shape[0]
        top = sigmoid(bias[self.n_visible:])
        h2 = (rng.random((points * draws, self.n_hidden2)) < top).astype(np.float64)
        start = np.hstack([np.repeat(test, draws, axis=0), h2]).astype(path.dtype)
        b0 = bias[:self.n_visible]
        log_p0 = test @ b0 - _softplus(b0).sum()
        return heating_path, start, log_p0

    def __repr__(self) -> str:
        return (f"DeepBoltzmannMachine(n_visible={self.n_visible}, n_hidden1={self.n_hidden1}, "
                f"n_hidden2={self.n_hidden2}, dtype={self.dtype!r}, name={self.name!r})")
