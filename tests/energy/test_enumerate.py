"""Enumeration limits, chunk bookkeeping, and the time of a 2^20-state sum."""

from __future__ import annotations

import time

import numpy as np
import pytest

from pymc_anneal.energy import DEFAULT_MAX_STATES, BernoulliRBM, GaussianRBM
from pymc_anneal.energy.enumerate import binary_states, chunk_bits, iterate_high_states
from pymc_anneal.exceptions import AnnealingError


def test_states_cover_every_integer_once_in_bit_order():
    states = binary_states(4)
    np.testing.assert_array_equal(states @ (2 ** np.arange(4)), np.arange(16))
    np.testing.assert_array_equal(binary_states(4, 5, 9), states[5:9])
    highs = np.array(list(iterate_high_states(5, 2)))
    np.testing.assert_array_equal(highs, binary_states(3))
    assert chunk_bits(20, 100) == 14 and chunk_bits(3, 100) == 3 and chunk_bits(20, 10, 2**5) == 5


def test_chunk_size_must_be_a_power_of_two():
    rbm = BernoulliRBM(np.zeros((3, 2)), np.zeros(3), np.zeros(2))
    with pytest.raises(AnnealingError, match="chunk_size must be a power of two"):
        rbm.exact_log_z(chunk_size=3)


def test_uniform_models_have_closed_form_log_z():
    rbm = BernoulliRBM(np.zeros((7, 5)), np.zeros(7), np.zeros(5))
    np.testing.assert_allclose(rbm.exact_log_z(), 12 * np.log(2), rtol=1e-15)
    grbm = GaussianRBM(np.zeros((4, 3)), np.ones(4), np.zeros(3), sigma=2.0)
    np.testing.assert_allclose(grbm.exact_log_z(), 3 * np.log(2) + 2 * np.log(2 * np.pi) + 4 * np.log(2.0))


def test_above_the_limit_raises_with_the_count_the_limit_and_the_fix():
    rbm = BernoulliRBM(np.zeros((30, 21)), np.zeros(30), np.zeros(21))
    with pytest.raises(AnnealingError, match=r"2\^21 = 2,097,152 states.*max_states = 1,048,576.*pymc_anneal\.ais"):
        rbm.exact_log_z()
    grbm = GaussianRBM(np.zeros((5, 200)), np.zeros(5), np.zeros(200), sigma=1.0)
    with pytest.raises(AnnealingError, match=r"2\^200 states"):
        grbm.exact_log_z()
    with pytest.raises(AnnealingError, match=r"2\^200 states"):
        grbm.exact_moments()
    small = BernoulliRBM(np.zeros((4, 3)), np.zeros(4), np.zeros(3))
    with pytest.raises(AnnealingError, match=r"2\^3 = 8 states.*max_states = 4"):
        small.exact_log_z(max_states=4)
    with pytest.raises(AnnealingError, match="max_states must be a positive integer"):
        small.exact_log_z(max_states=0)
    with pytest.raises(AnnealingError, match="layer must be one of"):
        small.exact_log_z(layer="both")
    assert DEFAULT_MAX_STATES == 2**20


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def test_two_to_the_twenty_states(record_property):
    """2^20 hidden states: finite, equal to the sum over the (smaller) visible layer, and
    timed (reported with ``-rP``; not asserted)."""
    rng = np.random.default_rng(0)
    grbm = GaussianRBM(0.1 * rng.normal(size=(108, 20)), rng.normal(size=108), rng.normal(size=20), sigma=1.0)
    log_z_grbm, seconds_grbm = _timed(grbm.exact_log_z)
    assert np.isfinite(log_z_grbm)
    rbm = BernoulliRBM(0.1 * rng.normal(size=(12, 20)), rng.normal(size=12), rng.normal(size=20))
    log_z_rbm, seconds_rbm = _timed(lambda: rbm.exact_log_z(layer="hidden"))
    np.testing.assert_allclose(log_z_rbm, rbm.exact_log_z(layer="visible"), rtol=1e-13)
    record_property("seconds_grbm_108x20", seconds_grbm)
    record_property("seconds_rbm_12x20_hidden", seconds_rbm)
    print(f"2^20 states: GaussianRBM 108x20 {seconds_grbm:.2f} s, BernoulliRBM 12x20 (hidden) {seconds_rbm:.2f} s")


def test_two_to_the_twenty_states_binary_rbm_digits_size():
    """64 visible x 20 hidden (binarized digits with 20 hidden units): about 2^20 x 64
    softplus evaluations, a few seconds."""
    rng = np.random.default_rng(1)
    rbm = BernoulliRBM(0.1 * rng.normal(size=(64, 20)), rng.normal(size=64), rng.normal(size=20))
    log_z, seconds = _timed(rbm.exact_log_z)
    assert np.isfinite(log_z)
    print(f"2^20 states, BernoulliRBM 64x20: {seconds:.2f} s")
