"""GaussianRBM against brute force: the joint energy summed over h and integrated over v
numerically (a fine grid in 2-D, adaptive quadrature in 1-D), and seeded sampling checks of
its moments with derived error bars."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.integrate
from scipy.special import expit, logsumexp

from pymc_anneal.energy import GaussianRBM
from pymc_anneal.exceptions import AnnealingError
from tests.energy.models import (
    all_states,
    brute_log_unnormalized,
    grbm_grid,
    grbm_joint_energy,
    tiny_grbm,
)

SEED = 20240604


def test_exact_log_z_matches_grid_integration_of_the_joint_in_2d():
    grbm = tiny_grbm(2, 3, seed=0)
    grid, cell = grbm_grid(grbm, 700)
    # sum over h and v of exp(-E(v, h)) straight from eq. (1)
    log_z = logsumexp(-grbm_joint_energy(grbm, grid, all_states(3))) + np.log(cell)
    np.testing.assert_allclose(grbm.exact_log_z(), log_z, rtol=0, atol=1e-9)
    # and the free energy integrates to the same number
    log_z_free = logsumexp(grbm.log_unnormalized_numpy(grid)) + np.log(cell)
    np.testing.assert_allclose(grbm.exact_log_z(), log_z_free, rtol=0, atol=1e-9)


def test_exact_log_z_matches_adaptive_quadrature_in_1d():
    grbm = GaussianRBM([[1.3, -0.7, 2.1]], [0.4], [0.2, -1.0, 0.5], sigma=0.8)
    log_z = grbm.exact_log_z()

    def density(v):
        return np.exp(grbm.log_unnormalized_numpy(np.array([[v]]))[0] - log_z)

    mass, _err = scipy.integrate.quad(density, -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12, limit=200)
    np.testing.assert_allclose(mass, 1.0, rtol=1e-9)


def test_chunked_enumeration_equals_unchunked():
    rng = np.random.default_rng(1)
    grbm = GaussianRBM(0.5 * rng.normal(size=(7, 10)), rng.normal(size=7), rng.normal(size=10),
                       sigma=rng.uniform(0.5, 2.0, size=7))
    whole = grbm.exact_log_z(chunk_size=2**10)
    for chunk_size in (1, 4, 32, 256):
        np.testing.assert_allclose(grbm.exact_log_z(chunk_size=chunk_size), whole, rtol=0, atol=1e-11)
    # against a direct sum over all 2^10 hidden states of the closed form
    h = all_states(10)
    u = h @ np.asarray(grbm.W).T
    s = np.asarray(grbm.sigma)
    direct = (logsumexp(h @ grbm.hidden_bias + u @ (grbm.visible_bias / s) + 0.5 * (u * u).sum(axis=1))
              + 3.5 * np.log(2 * np.pi) + np.log(s).sum())
    np.testing.assert_allclose(whole, direct, rtol=0, atol=1e-11)


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 1e-5)])
def test_log_unnormalized_pytensor_numpy_and_brute_force_agree(dtype, rtol):
    grbm = tiny_grbm(3, 4, seed=2, dtype=dtype)
    v = np.random.default_rng(3).normal(size=(50, 3)) * 2
    x = pt.matrix("v", dtype=dtype)
    graph = grbm.log_unnormalized(x)
    assert graph.dtype == dtype and graph.ndim == 1
    # FAST_COMPILE: PyTensor's Python implementations evaluate the same graph without a Numba
    # compile (seconds per fresh graph); the annealing tests run the compiled backends.
    compiled = pytensor.function([x], graph, mode="FAST_COMPILE")(v.astype(dtype))
    assert compiled.dtype == dtype
    v = v.astype(dtype).astype(np.float64)  # the points the graph saw
    brute = brute_log_unnormalized(grbm_joint_energy, grbm, v)
    np.testing.assert_allclose(grbm.log_unnormalized_numpy(v), brute, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(compiled, brute, rtol=rtol, atol=rtol)
    for p in (grbm.W, grbm.visible_bias, grbm.hidden_bias, grbm.sigma):
        assert p.dtype == dtype and not p.flags.writeable


def test_conditionals_match_the_formulas():
    grbm = tiny_grbm(3, 4, seed=4)
    W, b, a, s = (np.asarray(p) for p in (grbm.W, grbm.visible_bias, grbm.hidden_bias, grbm.sigma))
    v = np.random.default_rng(5).normal(size=(6, 3))
    h = all_states(4)
    np.testing.assert_allclose(grbm.hidden_probability(v), expit((v / s) @ W + a), rtol=1e-13)
    np.testing.assert_allclose(grbm.visible_mean(h), b + s * (h @ W.T), rtol=1e-13)
    # the conditional of v given h from the joint energy is Gaussian: check its log density
    # differences against -E(v, h) at fixed h
    e = grbm_joint_energy(grbm, v, h)
    mean = grbm.visible_mean(h)
    log_normal = -0.5 * (((v[:, None, :] - mean[None]) / s) ** 2).sum(axis=2)
    diff = -e - log_normal  # must not depend on v
    np.testing.assert_allclose(diff - diff[:1], 0.0, atol=1e-12)


def test_sample_visible_has_the_conditional_mean_and_variance():
    grbm = tiny_grbm(3, 4, seed=6)
    h = np.tile(all_states(4)[[9]], (50000, 1))
    draws = grbm.sample_visible(h, np.random.default_rng(SEED))
    mean, s = grbm.visible_mean(h[:1])[0], np.asarray(grbm.sigma)
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - mean), 4 * s / np.sqrt(50000))
    # sample variance: sd of s^2 * chi2_{n-1}/(n-1) is s^2 sqrt(2/(n-1))
    np.testing.assert_array_less(np.abs(draws.var(axis=0, ddof=1) - s**2), 4 * s**2 * np.sqrt(2 / 49999))


def test_exact_moments_match_grid_integration():
    grbm = tiny_grbm(2, 3, seed=7)
    grid, cell = grbm_grid(grbm, 700)
    p = np.exp(grbm.log_unnormalized_numpy(grid) - grbm.exact_log_z()) * cell
    np.testing.assert_allclose(p.sum(), 1.0, rtol=1e-9)
    mean = p @ grid
    cov = (grid * p[:, None]).T @ grid - np.outer(mean, mean)
    exact_mean, exact_cov = grbm.exact_moments()
    np.testing.assert_allclose(exact_mean, mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(exact_cov, cov, rtol=0, atol=1e-8)


def test_sample_moments_match_exact_moments_within_error_bars():
    """Independent chains (num_steps=1) after a long burn-in: sample mean within 4 standard
    errors (from the exact covariance), sample covariance entries within 5 standard errors
    (from the plug-in fourth moments)."""
    grbm = tiny_grbm(3, 4, seed=8)
    mean, cov = grbm.exact_moments()
    num = 20000
    draws = grbm.sample(num, np.random.default_rng(SEED), num_steps=1, burn_in=200)
    assert draws.shape == (num, 3)
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - mean), 4 * np.sqrt(np.diag(cov) / num))
    centred = draws - mean
    products = centred[:, :, None] * centred[:, None, :]
    se = products.std(axis=0) / np.sqrt(num)
    np.testing.assert_array_less(np.abs(products.mean(axis=0) - cov), 5 * se)


def test_sample_from_data_starts_at_data():
    grbm = tiny_grbm(3, 4, seed=9)
    data = np.random.default_rng(0).normal(size=(10, 3))
    draws = grbm.sample(500, np.random.default_rng(1), num_steps=250, burn_in=0, data=data)
    assert draws.shape == (500, 3) and np.all(np.isfinite(draws))


def test_log_likelihood_is_log_density():
    grbm = tiny_grbm(2, 3, seed=10)
    data = np.random.default_rng(0).normal(size=(4, 2))
    log_z = grbm.exact_log_z()
    np.testing.assert_allclose(grbm.log_likelihood(data, log_z), grbm.log_unnormalized_numpy(data) - log_z)
    with pytest.raises(AnnealingError, match=r"shape \(N, 2\)"):
        grbm.log_likelihood(data[:, :1], log_z)
    with pytest.raises(AnnealingError, match="log_z must be finite"):
        grbm.log_likelihood(data, np.nan)


def test_scalar_sigma_is_broadcast():
    grbm = GaussianRBM(np.ones((3, 2)), np.zeros(3), np.zeros(2), sigma=0.5)
    np.testing.assert_array_equal(grbm.sigma, [0.5, 0.5, 0.5])
