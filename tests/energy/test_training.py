"""The trainers do something: trained models have a higher exact mean log-likelihood than
their initialization (log Z by enumeration of a small hidden layer)."""

from __future__ import annotations

import numpy as np
import pytest

from pymc_anneal.energy import BernoulliRBM, GaussianRBM, binarized_digits, train_grbm, train_rbm
from pymc_anneal.exceptions import AnnealingError

pytest.importorskip("sklearn")


def _mean_log_likelihood(model, data):
    return float(model.log_likelihood(data, model.exact_log_z()).mean())


def _teacher(seed=0):
    """A 4-D Gaussian RBM with 3 orthogonal weight vectors of norm 3 and hidden biases
    -|w_i|^2 / 2: the hidden units are independent fair coins, so the visible density is an
    equal mixture of 8 unit Gaussians at the corners of a cube of side 3, far from the single
    Gaussian of a zero-weight GRBM."""
    rng = np.random.default_rng(seed)
    W = 3.0 * np.linalg.qr(rng.normal(size=(4, 4)))[0][:, :3]
    return GaussianRBM(W, np.zeros(4), -0.5 * (W**2).sum(axis=0), sigma=1.0)


def _teacher_data(num=2000, seed=0):
    return _teacher(seed).sample(num, np.random.default_rng(seed), num_steps=100, burn_in=50)


@pytest.mark.parametrize("method", ["pcd", "cd"])
def test_train_grbm_increases_the_exact_log_likelihood(method):
    data = _teacher_data()
    kwargs = {"sigma": 1.0, "method": method, "batch_size": 50, "learning_rate": 0.01, "rng": 1}
    initial = train_grbm(data, 8, num_updates=0, **kwargs)
    trained = train_grbm(data, 8, num_updates=1500, **kwargs)
    assert isinstance(trained, GaussianRBM) and (trained.n_visible, trained.n_hidden) == (4, 8)
    np.testing.assert_allclose(initial.visible_bias, data.mean(axis=0))
    np.testing.assert_array_equal(trained.sigma, 1.0)
    before, after = _mean_log_likelihood(initial, data), _mean_log_likelihood(trained, data)
    best = _mean_log_likelihood(_teacher(), data)  # the true model: about -7.2 vs -9.0 at the start
    np.testing.assert_allclose(_teacher().exact_hidden_moments()[0], 0.5, rtol=1e-12)
    assert after > before + 1.0, (before, after, best)


def test_train_grbm_is_reproducible_and_returns_the_dtype():
    data = _teacher_data(200)
    one = train_grbm(data, 3, num_updates=20, rng=5, dtype="float32")
    two = train_grbm(data, 3, num_updates=20, rng=5, dtype="float32")
    assert one.dtype == "float32"
    np.testing.assert_array_equal(one.W, two.W)


def test_train_grbm_rejects_bad_inputs():
    data = _teacher_data(100)
    with pytest.raises(AnnealingError, match=r"method must be one of \['pcd', 'cd'\], got 'cd25'"):
        train_grbm(data, 3, method="cd25")
    with pytest.raises(AnnealingError, match=r"data must have shape \(N >= 2, num_dims\)"):
        train_grbm(data[0], 3)
    with pytest.raises(AnnealingError, match="n_hidden must be a positive integer"):
        train_grbm(data, 0)
    with pytest.raises(AnnealingError, match="learning_rate must be a positive finite number"):
        train_grbm(data, 3, learning_rate=-1.0)
    with pytest.raises(AnnealingError, match="momentum must be in"):
        train_grbm(data, 3, momentum=1.0)
    with pytest.raises(AnnealingError, match="training diverged"):
        train_grbm(data * 1e100, 3, learning_rate=1e10, num_updates=50, rng=0)


def test_train_rbm_with_sklearn_increases_the_exact_log_likelihood():
    data = binarized_digits()
    trained = train_rbm(data, 8, num_epochs=10, batch_size=20, learning_rate=0.05, rng=0)
    assert isinstance(trained, BernoulliRBM) and (trained.n_visible, trained.n_hidden) == (64, 8)
    # scikit-learn initializes W ~ N(0, 0.01^2) and zero biases: nearly uniform, log p ~ -64 log 2
    rng = np.random.default_rng(0)
    initial = BernoulliRBM(0.01 * rng.normal(size=(64, 8)), np.zeros(64), np.zeros(8))
    before, after = _mean_log_likelihood(initial, data), _mean_log_likelihood(trained, data)
    np.testing.assert_allclose(before, -64 * np.log(2), atol=0.05)
    assert after > before + 10, (before, after)
    with pytest.raises(AnnealingError, match="must be binary"):
        train_rbm(data * 0.5, 8)
