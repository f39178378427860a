r"""Small trainers, so that examples and tests can build realistic RBMs.

Both follow the log-likelihood gradient of an RBM, which is a difference of a data term and a
model term; for the Gaussian RBM of :mod:`pymc_anneal.energy.grbm` (per example,
:math:`\hat h = p(h = 1 \mid v)`)

.. math::
    \frac{\partial \log p(v)}{\partial W_{ji}} = \frac{v_j}{\sigma_j}\hat h_i - E_{\text{model}}\Big[\frac{v_j}{\sigma_j}\hat h_i\Big],\quad
    \frac{\partial \log p(v)}{\partial b_j} = \frac{v_j - b_j}{\sigma_j^2} - E_{\text{model}}[\cdot],\quad
    \frac{\partial \log p(v)}{\partial a_i} = \hat h_i - E_{\text{model}}[\hat h_i].

The model expectation is approximated with one Gibbs sweep from the data (CD-1, Hinton 2002)
or from persistent chains (PCD, Tieleman 2008). :math:`\sigma` stays fixed (1 for whitened
data): learning it by gradient ascent is notoriously unstable.

Binary RBMs are trained with scikit-learn's :class:`sklearn.neural_network.BernoulliRBM`
(PCD), a well-kept implementation, and converted with :meth:`BernoulliRBM.from_sklearn`.

References
----------
Hinton, G. E. (2002). Training products of experts by minimizing contrastive divergence.
*Neural Computation* 14, 1771-1800.
Tieleman, T. (2008). Training restricted Boltzmann machines using approximations to the
likelihood gradient. *ICML*.
"""

from __future__ import annotations

import numpy as np

from pymc_anneal.energy.base import check_positive_int
from pymc_anneal.energy.grbm import GaussianRBM
from pymc_anneal.energy.rbm import BernoulliRBM, as_generator, sigmoid
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.validation import (
    check_choice,
    check_count,
    check_finite_array,
    check_one_of,
    check_positive_float,
    check_probability,
    check_real,
)

__all__ = ["TRAINING_METHODS", "train_grbm", "train_rbm"]

TRAINING_METHODS = ("pcd", "cd")


def _check_real_data(data) -> np.ndarray:
    data = check_finite_array("data", data)
    if data.ndim != 2 or data.shape[0] < 2 or data.shape[1] < 1:
        raise AnnealingError(f"data must have shape (N >= 2, num_dims), got {data.shape}.")
    return data


def _check_positive(value, name: str) -> float:
    return check_positive_float(name, value, what="a positive finite number")


def train_grbm(
    data,
    n_hidden: int,
    *,
    sigma=None,
    method: str = "pcd",
    num_updates: int = 5000,
    batch_size: int = 100,
    learning_rate: float = 1e-3,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    num_chains: int | None = None,
    initial_scale: float = 0.01,
    rng=None,
    dtype: str = "float64",
    name: str = "grbm",
) -> GaussianRBM:
    r"""Train a :class:`GaussianRBM` on real data by minibatch CD-1 or PCD (NumPy).

    :math:`W`, the visible biases and the hidden biases are learned; :math:`\sigma` is fixed.
    The weights start at :math:`\mathcal N(0, \text{initial\_scale}^2)`, the hidden biases
    at 0 and the visible biases at the data mean, so ``num_updates=0`` returns the
    initialization (with the same ``rng``, the starting point of a trained model).

    Parameters
    ----------
    data : array of shape (N, n_visible)
        Real data, ideally standardized or whitened (then ``sigma=1`` is natural).
    n_hidden : int
    sigma : float or array (n_visible,), optional
        Fixed visible standard deviations; default 1.
    method : {"pcd", "cd"}, default "pcd"
        Persistent contrastive divergence (``num_chains`` persistent chains, one Gibbs sweep
        per update) or CD-1 (one sweep from the minibatch).
    num_updates : int, default 5000
        Parameter updates (minibatches); 0 returns the initialization.
    batch_size : int, default 100
    learning_rate : float, default 1e-3
    momentum : float, default 0.9
        Classical momentum in [0, 1).
    weight_decay : float, default 0
        L2 penalty on ``W``.
    num_chains : int, optional
        PCD chains (default ``batch_size``), started at random data rows.
    initial_scale : float, default 0.01
    rng : numpy.random.Generator or seed, optional
    dtype : {"float64", "float32"}, default "float64"
        Dtype of the returned model (training runs in float64).
    name : str, default "grbm"

    Returns
    -------
    GaussianRBM

    Raises
    ------
    AnnealingError
        On bad inputs, or when the parameters diverge (lower ``learning_rate``).
    """
    data = _check_real_data(data)
    n_hidden = check_positive_int(n_hidden, "n_hidden")
    check_one_of("method", method, TRAINING_METHODS)
    num_updates = check_count("num_updates", num_updates, 0, what="a non-negative integer")
    batch_size = min(check_positive_int(batch_size, "batch_size"), data.shape[0])
    learning_rate = _check_positive(learning_rate, "learning_rate")
    momentum = check_probability("momentum", momentum, low_open=False, high_open=True)
    weight_decay = check_real("weight_decay", weight_decay, low=0.0, what=">= 0")
    initial_scale = _check_positive(initial_scale, "initial_scale")
    num_chains = batch_size if num_chains is None else check_positive_int(num_chains, "num_chains")
    rng = as_generator(rng)
    num_rows, n_visible = data.shape

    W = initial_scale * rng.standard_normal((n_visible, n_hidden))
    a = np.zeros(n_hidden)
    b = data.mean(axis=0)
    model = GaussianRBM(W, b, a, 1.0 if sigma is None else sigma, name=name)
    sigma = model.sigma.astype(np.float64)
    velocity = [np.zeros_like(W), np.zeros_like(b), np.zeros_like(a)]
    chains = data[rng.integers(num_rows, size=num_chains)] if method == "pcd" else None
    order, position = rng.permutation(num_rows), 0

    # overflow is caught below as non-finite parameters, with a message that says what to do
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(int(num_updates)):
            if position + batch_size > num_rows:
                order, position = rng.permutation(num_rows), 0
            v_data = data[order[position:position + batch_size]]
            position += batch_size
            h_data = sigmoid((v_data / sigma) @ W + a)
            start = chains if method == "pcd" else v_data  # one Gibbs sweep from here
            p_h = sigmoid((start / sigma) @ W + a)
            h = (rng.random(p_h.shape) < p_h).astype(np.float64)
            v_model = b + sigma * (h @ W.T) + sigma * rng.standard_normal(start.shape)
            if method == "pcd":
                chains = v_model
            h_model = sigmoid((v_model / sigma) @ W + a)

            grad_W = ((v_data / sigma).T @ h_data / v_data.shape[0]
                      - (v_model / sigma).T @ h_model / v_model.shape[0] - weight_decay * W)
            grad_b = ((v_data - b).mean(axis=0) - (v_model - b).mean(axis=0)) / sigma**2
            grad_a = h_data.mean(axis=0) - h_model.mean(axis=0)
            for param, vel, grad in zip((W, b, a), velocity, (grad_W, grad_b, grad_a), strict=True):
                vel *= momentum
                vel += learning_rate * grad
                param += vel
            if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b)) and np.all(np.isfinite(a))):
                raise AnnealingError(
                    f"GRBM training diverged (non-finite parameters) with learning_rate={learning_rate}; "
                    "lower learning_rate (or momentum), or standardize/whiten the data."
                )
    return GaussianRBM(W, b, a, sigma, dtype=dtype, name=name)


def train_rbm(
    data,
    n_hidden: int,
    *,
    num_epochs: int = 20,
    batch_size: int = 10,
    learning_rate: float = 0.05,
    rng=None,
    dtype: str = "float64",
    name: str = "rbm",
    method: str = "pcd",
) -> BernoulliRBM:
    """Train a :class:`BernoulliRBM` on binary data by PCD (scikit-learn) or CD-1.

    ``method="pcd"`` (default) is a thin wrapper around
    :class:`sklearn.neural_network.BernoulliRBM` (persistent contrastive divergence,
    ``n_iter=num_epochs``, seeded from ``rng``), converted with
    :meth:`BernoulliRBM.from_sklearn`; it needs scikit-learn (``pip install
    pymc-anneal[examples]``). ``method="cd"`` is contrastive divergence with one Gibbs step
    from the data (Hinton 2002), in NumPy: the negative phase starts at each minibatch, so
    the model's own modes far from the data go unpenalized, which is what makes CD-1 RBMs
    the hard case for AIS (Burda et al. 2015).

    Parameters
    ----------
    data : array of shape (N, n_visible), binary (0/1)
    n_hidden : int
    num_epochs : int, default 20
        Passes over the data.
    method : {"pcd", "cd"}, default "pcd"
    batch_size : int, default 10
    learning_rate : float, default 0.05
    rng : numpy.random.Generator or seed, optional
    dtype : {"float64", "float32"}, default "float64"
    name : str, default "rbm"
    """
    method = check_choice("method", method, ("cd", "pcd"))
    data = _check_real_data(data)
    bad = (data != 0) & (data != 1)
    if np.any(bad):
        raise AnnealingError(
            f"data for a BernoulliRBM must be binary (0 or 1); found {int(bad.sum())} other values "
            f"such as {data[bad][:3].tolist()}. Binarize it first (e.g. data > 0.5)."
        )
    n_hidden = check_positive_int(n_hidden, "n_hidden")
    num_epochs = check_positive_int(num_epochs, "num_epochs")
    batch_size = check_positive_int(batch_size, "batch_size")
    learning_rate = _check_positive(learning_rate, "learning_rate")
    if method == "cd":
        return _train_rbm_cd1(data, n_hidden, num_epochs, batch_size, learning_rate,
                              as_generator(rng), dtype, name)
    try:
        from sklearn.neural_network import BernoulliRBM as SklearnRBM
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "train_rbm needs scikit-learn: pip install 'pymc-anneal[examples]' (or scikit-learn)."
        ) from err
    seed = int(as_generator(rng).integers(2**31 - 1))
    estimator = SklearnRBM(n_components=n_hidden, learning_rate=learning_rate, batch_size=batch_size,
                           n_iter=num_epochs, random_state=seed)
    estimator.fit(data)
    return BernoulliRBM.from_sklearn(estimator, dtype=dtype, name=name)


def _train_rbm_cd1(data, n_hidden, num_epochs, batch_size, learning_rate, rng, dtype, name):
    """CD-1: positive phase at the data, negative phase one Gibbs sweep away."""
    n, n_visible = data.shape
    rate = (data.sum(axis=0) + 1.0) / (n + 2.0)
    W = rng.normal(0.0, 0.01, (n_visible, n_hidden))
    b, c = np.log(rate) - np.log1p(-rate), np.zeros(n_hidden)
    for _ in range(num_epochs):
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            v0 = data[order[start:start + batch_size]]
            ph0 = sigmoid(v0 @ W + c)
            h0 = (rng.random(ph0.shape) < ph0).astype(np.float64)
            pv1 = sigmoid(h0 @ W.T + b)
            v1 = (rng.random(pv1.shape) < pv1).astype(np.float64)
            ph1 = sigmoid(v1 @ W + c)
            m = v0.shape[0]
            W += learning_rate * (v0.T @ ph0 - v1.T @ ph1) / m
            b += learning_rate * (v0 - v1).mean(axis=0)
            c += learning_rate * (ph0 - ph1).mean(axis=0)
    return BernoulliRBM(W, b, c, dtype=dtype, name=name)
