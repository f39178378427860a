"""FunctionEnergy, and the input checks of every model: each bad input raises an
AnnealingError whose message says what was wrong."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest

from pymc_anneal.energy import BernoulliRBM, EnergyModel, FunctionEnergy, GaussianRBM
from pymc_anneal.exceptions import AnnealingError


def _normal_energy(dtype="float64", log_z=None):
    return FunctionEnergy(lambda x: -0.5 * (x**2).sum(axis=1), num_dims=3, dtype=dtype, name="normal",
                          log_z=log_z)


def test_function_energy_evaluates_and_returns_its_log_z():
    model = _normal_energy(log_z=1.5 * np.log(2 * np.pi))
    assert isinstance(model, EnergyModel) and model.num_dims == 3 and model.name == "normal"
    x = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    np.testing.assert_allclose(model.log_unnormalized_numpy(x), [0.0, -7.0])
    np.testing.assert_allclose(model.log_likelihood(x, model.exact_log_z()),
                               [-1.5 * np.log(2 * np.pi), -7.0 - 1.5 * np.log(2 * np.pi)])
    with pytest.raises(AnnealingError, match="without log_z"):
        _normal_energy().exact_log_z()


def test_function_energy_output_has_the_model_dtype():
    model = FunctionEnergy(lambda x: -0.5 * (x.astype("float64") ** 2).sum(axis=1), num_dims=2, dtype="float32")
    out = model.log_unnormalized(pt.matrix("x", dtype="float32"))
    assert out.dtype == "float32"
    assert model.log_unnormalized_numpy(np.ones((1, 2))).dtype == np.float64


def test_function_energy_rejects_bad_callables():
    with pytest.raises(AnnealingError, match=r"one value per row, shape \(N,\); its output has ndim=2"):
        FunctionEnergy(lambda x: -0.5 * x**2, num_dims=3)
    with pytest.raises(AnnealingError, match="ndim=0"):
        FunctionEnergy(lambda x: (x**2).sum(), num_dims=3)
    with pytest.raises(AnnealingError, match="failed with TypeError"):
        FunctionEnergy(lambda x: np.sum(x, axis=1, dtype=object) + None, num_dims=3)
    with pytest.raises(AnnealingError, match="must be a callable"):
        FunctionEnergy("x**2", num_dims=3)
    with pytest.raises(AnnealingError, match="must return floats"):
        FunctionEnergy(lambda x: pt.argmax(x, axis=1), num_dims=3)
    with pytest.raises(AnnealingError, match="num_dims must be a positive integer"):
        FunctionEnergy(lambda x: x.sum(axis=1), num_dims=0)
    with pytest.raises(AnnealingError, match="dtype must be one of"):
        FunctionEnergy(lambda x: x.sum(axis=1), num_dims=2, dtype="int32")
    with pytest.raises(AnnealingError, match="log_z must be finite"):
        FunctionEnergy(lambda x: x.sum(axis=1), num_dims=2, log_z=np.inf)


W = np.zeros((3, 2))


@pytest.mark.parametrize(
    "args, match",
    [
        ((np.zeros(3), np.zeros(3), np.zeros(2)), r"2-D array of shape \(n_visible, n_hidden\).*got shape \(3,\)"),
        ((np.zeros((3, 0)), np.zeros(3), np.zeros(0)), "both sizes >= 1"),
        ((W, np.zeros(4), np.zeros(2)), r"visible_bias needs shape \(3,\).*got \(4,\) and \(2,\)"),
        ((W, np.zeros(3), np.zeros((2, 1))), r"hidden_bias \(2,\); got \(3,\) and \(2, 1\)"),
        ((W, np.zeros(2), np.zeros(3)), "W looks transposed"),
        ((np.full((3, 2), np.nan), np.zeros(3), np.zeros(2)), "W contains 6 NaN or infinite values"),
        ((W, [0.0, np.inf, 0.0], np.zeros(2)), "visible_bias contains 1 NaN or infinite"),
        ((W, np.zeros(3), ["a", "b"]), "hidden_bias must be a numeric array"),
    ],
)
@pytest.mark.parametrize("cls", ["rbm", "grbm"])
def test_bad_parameters_raise(cls, args, match):
    with pytest.raises(AnnealingError, match=match):
        if cls == "rbm":
            BernoulliRBM(*args)
        else:
            GaussianRBM(*args, sigma=1.0)


@pytest.mark.parametrize("cls", [BernoulliRBM, GaussianRBM])
def test_bad_dtype_raises(cls):
    extra = (1.0,) if cls is GaussianRBM else ()
    with pytest.raises(AnnealingError, match=r"dtype must be one of \['float64', 'float32'\], got 'float16'"):
        cls(W, np.zeros(3), np.zeros(2), *extra, dtype="float16")


@pytest.mark.parametrize(
    "sigma, match",
    [
        (0.0, r"sigma must be > 0.*got \[0.0, 0.0, 0.0\]"),
        ([1.0, -1.0, 1.0], r"got \[-1.0\] at visible units \[1\]"),
        ([1.0, 1.0], r"scalar or have shape \(3,\).*got shape \(2,\)"),
        ([1.0, np.nan, 1.0], "sigma contains 1 NaN or infinite"),
        (1e-50, "underflows to 0 in float32"),
    ],
)
def test_bad_sigma_raises(sigma, match):
    with pytest.raises(AnnealingError, match=match):
        GaussianRBM(W, np.zeros(3), np.zeros(2), sigma=sigma, dtype="float32")


def test_bad_data_raises():
    rbm = BernoulliRBM(W, np.zeros(3), np.zeros(2))
    with pytest.raises(AnnealingError, match=r"must be binary \(0 or 1\); found 1 other values such as \[0.5\]"):
        rbm.log_likelihood([[0, 1, 0.5]], 0.0)
    with pytest.raises(AnnealingError, match=r"data must have shape \(N, 3\).*got shape \(2, 4\)"):
        rbm.log_likelihood(np.zeros((2, 4)), 0.0)
    with pytest.raises(AnnealingError, match=r"got shape \(3,\) \(for a single row use data.reshape\(1, -1\)\)"):
        rbm.log_likelihood(np.zeros(3), 0.0)
    with pytest.raises(AnnealingError, match="1 NaN or infinite"):
        rbm.log_likelihood([[0, 1, np.nan]], 0.0)
    with pytest.raises(AnnealingError, match="numeric array"):
        rbm.log_likelihood([["a", "b", "c"]], 0.0)
    with pytest.raises(AnnealingError, match="must be binary"):
        rbm.sample(10, 0, data=[[0, 2, 0]])
    grbm = GaussianRBM(W, np.zeros(3), np.zeros(2), sigma=1.0)
    with pytest.raises(AnnealingError, match=r"data must have shape \(N, 3\)"):
        grbm.log_likelihood(np.zeros((2, 2)), 0.0)
    with pytest.raises(AnnealingError, match=r"v must have shape \(N, 3\)"):
        grbm.log_unnormalized_numpy(np.zeros((2, 2)))
    with pytest.raises(AnnealingError, match=r"h must have shape \(N, 2\)"):
        grbm.visible_mean(np.zeros((2, 3)))
    with pytest.raises(AnnealingError, match="num_samples must be a positive integer"):
        grbm.sample(0, 0)
    with pytest.raises(AnnealingError, match="burn_in must be a non-negative integer"):
        grbm.sample(5, 0, burn_in=-1)
    with pytest.raises(AnnealingError, match="rng must be a numpy.random.Generator or a seed"):
        grbm.sample(5, "seed")


def test_repr_names_the_sizes():
    assert repr(BernoulliRBM(W, np.zeros(3), np.zeros(2))) == (
        "BernoulliRBM(n_visible=3, n_hidden=2, dtype='float64', name='rbm')")
