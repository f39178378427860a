"""The shared input checks of pymc_anneal.validation: each accepts what it documents (NumPy
scalars included), returns it in its canonical type, and raises AnnealingError (a ValueError)
that names the argument and quotes the value."""

import re

import numpy as np
import pytest

from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.validation import (
    check_choice,
    check_count,
    check_data_rows,
    check_finite_array,
    check_fixed_parameters,
    check_initial_positions,
    check_num_steps,
    check_one_of,
    check_positive_float,
    check_probability,
    check_random_seed,
    check_real,
    is_integer,
)


def test_annealing_error_is_a_value_error():
    assert issubclass(AnnealingError, ValueError)


@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), np.uint8(3)])
def test_check_count_accepts_python_and_numpy_integers(value):
    out = check_count("draws", value, 2)
    assert out == 3 and type(out) is int


@pytest.mark.parametrize("value", [True, False, 3.0, np.float64(3.0), "3", None, 1, 0, -5])
def test_check_count_rejects_bools_floats_strings_and_small_values(value):
    match = rf"draws must be an integer >= 2, got {re.escape(repr(value))}\."
    with pytest.raises(AnnealingError, match=match):
        check_count("draws", value, 2)


def test_check_count_custom_wording_and_zero_minimum():
    assert check_count("burn_in", 0, 0) == 0
    with pytest.raises(AnnealingError, match=r"n_hidden must be a positive integer, got 0\."):
        check_count("n_hidden", 0, 1, what="a positive integer")


def test_is_integer():
    assert is_integer(1) and is_integer(np.int16(-2))
    assert not any(is_integer(v) for v in (True, np.bool_(True), 1.0, "1", None))


@pytest.mark.parametrize("value", [0.5, 2, np.float32(0.5), np.int64(2), np.array(0.5)])
def test_check_positive_float_accepts_numbers(value):
    out = check_positive_float("step_size", value)
    assert out == float(value) and type(out) is float


@pytest.mark.parametrize("value", [0.0, -1.0, np.nan, np.inf, -np.inf, np.float64(-0.1)])
def test_check_positive_float_rejects_bad_values(value):
    match = rf"step_size must be a positive float \(finite and > 0\), got {re.escape(repr(value))}"
    with pytest.raises(AnnealingError, match=match):
        check_positive_float("step_size", value)


@pytest.mark.parametrize("value", [True, "0.1", [0.1], np.array([0.1]), 1j])
def test_check_positive_float_rejects_non_numbers_naming_the_type(value):
    with pytest.raises(AnnealingError, match=rf"step_size must be a positive float .*"
                                             rf"\(a real number, not {type(value).__name__}\)"):
        check_positive_float("step_size", value)


def test_check_positive_float_none_and_custom_wording():
    assert check_positive_float("step_size", None, allow_none=True) is None
    with pytest.raises(AnnealingError, match="step_size must be a positive float.*got None"):
        check_positive_float("step_size", None)
    with pytest.raises(AnnealingError,
                       match=r"learning_rate must be a positive finite number, got -1\.0\."):
        check_positive_float("learning_rate", -1.0, what="a positive finite number")


def test_check_real_bounds_and_infinities():
    assert check_real("epsilon", 0) == 0.0
    with pytest.raises(AnnealingError, match=r"epsilon must be a finite number >= 0, got -1e-09"):
        check_real("epsilon", -1e-9, low=0.0)
    with pytest.raises(AnnealingError, match=r"x must be a finite number, got nan"):
        check_real("x", np.nan)
    assert check_real("window", np.inf, low=0.0, low_open=True, finite=False) == np.inf
    with pytest.raises(AnnealingError, match=r"window must be a number > 0, got nan"):
        check_real("window", np.nan, low=0.0, low_open=True, finite=False)
    with pytest.raises(AnnealingError, match=r"x must be a number in \[-1, 1\), got 1"):
        check_real("x", 1, low=-1.0, high=1.0, high_open=True)
    with pytest.raises(AnnealingError, match=r"x must be a finite number <= 2, got 3"):
        check_real("x", 3, high=2.0)


@pytest.mark.parametrize("value", [1e-12, 0.5, 1, np.float32(1.0)])
def test_check_probability_accepts_the_half_open_interval(value):
    assert check_probability("target_acceptance", value) == float(value)


@pytest.mark.parametrize("value", [0, 0.0, -0.5, 1.5, np.nan, np.inf])
def test_check_probability_rejects_outside(value):
    match = rf"target_acceptance must be in \(0, 1\], got {re.escape(repr(value))}"
    with pytest.raises(AnnealingError, match=match):
        check_probability("target_acceptance", value)


def test_check_probability_open_and_closed_ends():
    assert check_probability("momentum", 0.0, low_open=False, high_open=True) == 0.0
    with pytest.raises(AnnealingError, match=r"momentum must be in \[0, 1\), got 1\.0\."):
        check_probability("momentum", 1.0, low_open=False, high_open=True)
    with pytest.raises(AnnealingError, match=r"prob must be a number strictly between 0 and 1"):
        check_probability("prob", 1.0, high_open=True, what="a number strictly between 0 and 1")
    with pytest.raises(AnnealingError,
                       match=r"prob must be in \(0, 1\] \(a real number, not bool\)"):
        check_probability("prob", True)


def test_check_choice():
    kernels = {"hmc": 1, "metropolis": 2, "hais": 3}
    assert check_choice("kernel", "hmc", kernels) == "hmc"
    with pytest.raises(AnnealingError,
                       match=r"unknown kernel 'nuts'; must be one of "
                             r"\['hais', 'hmc', 'metropolis'\]\."):
        check_choice("kernel", "nuts", kernels)
    with pytest.raises(AnnealingError, match=r"unknown kernel None; must be one of"):
        check_choice("kernel", None, kernels)
    with pytest.raises(AnnealingError, match=r"unknown kernel \['hmc'\]; must be one of"):
        check_choice("kernel", ["hmc"], kernels)


def test_check_one_of_keeps_the_given_order():
    assert check_one_of("method", "cd", ("pcd", "cd")) == "cd"
    with pytest.raises(AnnealingError,
                       match=r"method must be one of \['pcd', 'cd'\], got 'cd25'\."):
        check_one_of("method", "cd25", ("pcd", "cd"))
    with pytest.raises(AnnealingError, match=r"method must be one of \['pcd', 'cd'\], got 1\."):
        check_one_of("method", 1, ("pcd", "cd"))


def test_check_choice_with_a_call_sites_own_wording():
    """``what`` is the house form of an established wording; check_one_of is check_choice
    with the options in the given order."""
    assert check_choice("method", "cd", ("pcd", "cd"), what="one of ['pcd', 'cd']") == "cd"
    with pytest.raises(AnnealingError,
                       match=r"^schedule must be one of \['linear'\] or an array, got 'x'\.$"):
        check_choice("schedule", "x", ["linear"], what="one of ['linear'] or an array")


def test_check_num_steps():
    assert check_num_steps(None, "power") == ("auto", None)
    assert check_num_steps(None, [0.0, 1.0]) == (None, None)
    assert check_num_steps("auto", "linear", dlogz=0.1) == ("auto", 0.1)
    assert check_num_steps(np.int64(7), "linear") == (7, None)
    with pytest.raises(AnnealingError, match=r'num_steps="auto" chooses the temperatures'):
        check_num_steps("auto", [0.0, 1.0])
    with pytest.raises(AnnealingError, match=r'num_steps must be an integer >= 1 or "auto", '
                                             r"got 'automatic'"):
        check_num_steps("automatic", "linear")
    with pytest.raises(AnnealingError, match=r"with a fixed num_steps \(5\) it has no effect"):
        check_num_steps(5, "linear", dlogz=0.1)
    with pytest.raises(AnnealingError, match=r"dlogz must be a positive float .*got 0"):
        check_num_steps("auto", "linear", dlogz=0)


def test_check_initial_positions():
    given = check_initial_positions([[1, 2], [3, 4]], direction="backward", shape=(2, 2),
                                    dtype="float32", own_base_draws=False)
    assert given.dtype == np.float32 and given.shape == (2, 2)
    assert check_initial_positions(None, direction="forward", shape=(2, 2), dtype="float64",
                                   own_base_draws=True) is None
    with pytest.raises(AnnealingError, match=r"a backward run starts from given states: pass "
                                             r"initial_positions of shape \(2, 2\)"):
        check_initial_positions(None, direction="backward", shape=(2, 2), dtype="float64",
                                own_base_draws=False)
    with pytest.raises(AnnealingError, match=r"initial_positions must have shape \(4, 2\) "
                                             r"\(chains \* draws, num_dims\), got \(2, 2\)"):
        check_initial_positions(np.zeros((2, 2)), direction="backward", shape=(4, 2),
                                dtype="float64", own_base_draws=False)
    with pytest.raises(AnnealingError, match=r"its extra check chain needs them too"):
        check_initial_positions(np.zeros((2, 2)), direction="forward", shape=(2, 2),
                                dtype="float64", own_base_draws=True)


def test_check_fixed_parameters_and_data_rows():
    class Kernel:
        name, parameter_names = "hmc", ("step_size", "inverse_mass")

    check_fixed_parameters({"step_size": 0.1}, Kernel())
    with pytest.raises(AnnealingError, match=r"the 'hmc' kernel has no parameter\(s\) "
                                             r"\['refresh'\] to fix; its parameters are"):
        check_fixed_parameters({"refresh": 0.5, "step_size": 0.1}, Kernel())
    check_data_rows(None)
    check_data_rows(np.zeros((1, 3)))
    with pytest.raises(AnnealingError, match=r"data must have at least one row, got shape "
                                             r"\(0, 3\)"):
        check_data_rows(np.zeros((0, 3)))


def test_check_finite_array():
    out = check_finite_array("x", [[1, 2], [3, 4]], shape=(None, 2))
    assert out.dtype == np.float64 and out.shape == (2, 2)
    given = np.zeros(3)
    assert check_finite_array("x", given) is given
    with pytest.raises(AnnealingError, match=r"x must have shape \(N, 3\), got \(2, 2\)"):
        check_finite_array("x", out, shape=(None, 3))
    with pytest.raises(AnnealingError, match=r"x must have shape \(2,\), got \(2, 2\)"):
        check_finite_array("x", out, shape=(2,))
    with pytest.raises(AnnealingError, match=r"x contains 2 NaN or infinite values; remove"):
        check_finite_array("x", [1.0, np.nan, -np.inf])
    with pytest.raises(AnnealingError, match=r"x must be a numeric array, got list"):
        check_finite_array("x", ["a", "b"])


def test_check_random_seed():
    rng, recorded = check_random_seed(3)
    assert isinstance(rng, np.random.Generator) and recorded == "3"
    assert check_random_seed(None)[1] is None
    assert check_random_seed(np.random.default_rng(0))[1] is None
    np.testing.assert_array_equal(check_random_seed([1, 2])[0].random(3),
                                  check_random_seed([1, 2])[0].random(3))
    with pytest.raises(AnnealingError,
                       match=r"random_seed must be None, a non-negative integer.*got -1"):
        check_random_seed(-1)
    with pytest.raises(AnnealingError, match=r"random_seed must be None.*got 'seed'"):
        check_random_seed("seed")


def test_check_counts_accepts_one_or_many_and_names_the_bad_one():
    from pymc_anneal.validation import check_counts

    assert check_counts("num_steps", 5, 1) == [5]
    assert check_counts("num_steps", (1, np.int64(10)), 1) == [1, 10]
    with pytest.raises(AnnealingError, match=r"num_steps must be an integer >= 1, got 0"):
        check_counts("num_steps", [3, 0], 1)
    with pytest.raises(AnnealingError, match=r"num_steps must be an integer >= 1 or a non-empty"):
        check_counts("num_steps", [], 1)
    with pytest.raises(AnnealingError, match=r"num_steps must be an integer >= 1, got 2.5"):
        check_counts("num_steps", [2.5], 1)


def test_auto_backend_is_jax_when_installed_else_numba(monkeypatch):
    import importlib.util

    from pymc_anneal import backends
    from pymc_anneal.validation import check_backend

    real = importlib.util.find_spec
    assert check_backend("auto") == ("jax" if real("jax") is not None else "numba")
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "jax" else real(name, *a))
    assert backends.default_backend() == "numba" and check_backend("AUTO") == "numba"
    with pytest.raises(AnnealingError, match=r"unknown backend 'gpu'; must be one of .*'auto'"):
        check_backend("gpu")


def test_every_backend_has_a_mode_and_a_package_rule():
    """validation.check_backend (the one check of ``backend=``) and backends.BACKENDS (the
    PyTensor mode of each) name the same backends."""
    from pymc_anneal.backends import BACKENDS
    from pymc_anneal.validation import BACKEND_PACKAGES

    assert set(BACKENDS) == set(BACKEND_PACKAGES)


@pytest.mark.parametrize("value", [True, False, np.bool_(True), [1, True], (2, np.True_)])
def test_check_random_seed_refuses_bools(value):
    """True was taken as the seed 1 (SeedSequence accepts it), while every count refuses bools."""
    with pytest.raises(AnnealingError, match=r"random_seed must be None, .*\(a bool is not a "
                                             r"seed\)\."):
        check_random_seed(value)


def test_check_model():
    import pymc as pm

    from pymc_anneal.validation import check_model

    with pm.Model() as model:
        assert check_model(None) is model
    assert check_model(model) is model
    with pytest.raises(AnnealingError, match=r"model must be a pymc.Model \(or None for the model "
                                             r"of the enclosing .*got str 'm'\. Pass the model "
                                             r"object, not its name\."):
        check_model("m")
    with pytest.raises(AnnealingError, match=r"no model given and none on the context stack"):
        check_model(None)


def test_check_chain_weights_refuses_a_dead_chain_among_live_ones():
    from pymc_anneal.validation import check_chain_weights

    check_chain_weights(np.zeros((2, 3)))
    check_chain_weights(np.full((2, 3), -np.inf))  # every chain: check_weights' error
    check_chain_weights(np.array([[-np.inf, 0.0], [0.0, -np.inf]]))
    with pytest.raises(AnnealingError, match=r"every particle of chains \[0, 2\] \(of 3 chains of "
                                             r"2 particles\) has zero weight: log f is -inf or "
                                             r"NaN .*rest on 2 particles .*Do this\.$"):
        check_chain_weights(np.array([[-np.inf] * 2, [0.0, 1.0], [-np.inf] * 2]),
                            subject="log f", fix="Do this.")
