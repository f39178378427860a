r"""Reflection at lower bounds (HAIS §2.3): the leapfrog map stays reversible and volume
preserving, and the HAIS kernel keeps a truncated Gaussian invariant (KS test)."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

from pymc_anneal.driver import RunOptions, TuningOptions, run_annealing
from pymc_anneal.kernels.integrators import leapfrog
from pymc_anneal.paths import Path

BOUND = 0.5  # x_0 >= 0.5: a bound away from 0 checks 2b - x, not just -x


def _truncated_path(bounded: bool = True, coupling: float = 0.0) -> Path:
    """Standard normal in 2-d truncated to x_0 >= BOUND; the log ratio couples the two
    coordinates (0 by default: then every tempered density is the base itself)."""

    def build(x):
        inside = pt.ge(x[:, 0], BOUND)
        log_base = pt.switch(inside, -0.5 * pt.sum(x**2, axis=1), -np.inf)
        return log_base, coupling * x[:, 0] * x[:, 1] - 0.1 * coupling * x[:, 0] ** 4

    def sample(rng, n):
        x0 = stats.truncnorm.rvs(BOUND, np.inf, size=n, random_state=rng)
        return np.column_stack([x0, rng.standard_normal(n)])

    return Path(num_dims=2, build_log_densities=build, sample_base=sample, name="truncated",
                lower_bounds=np.array([BOUND, -np.inf]) if bounded else None)


def _leapfrog_fn(path, num_steps):
    x = pt.dmatrix("x")
    v = pt.dmatrix("v")
    beta, eps = np.float64(1.0), pt.dscalar("eps")
    here = path.evaluate(x)
    g = here.grad_log_base + beta * here.grad_log_ratio
    x_new, v_new, _ = leapfrog(path, x, v, g, beta, eps, np.ones(2), num_steps)
    return pytensor.function([x, v, eps], [x_new, v_new], mode="FAST_COMPILE")


def test_reflected_leapfrog_is_reversible_and_stays_in_the_support():
    path = _truncated_path(coupling=0.4)
    rng = np.random.default_rng(5)
    x0 = path.sample_base(rng, 64)
    v0 = rng.standard_normal(x0.shape) * 2.0
    step = _leapfrog_fn(path, 10)
    free = _leapfrog_fn(_truncated_path(bounded=False, coupling=0.4), 10)
    x1, v1 = step(x0, v0, 0.2)
    x_free, _ = free(x0, v0, 0.2)
    assert np.all(x1[:, 0] >= BOUND)
    assert np.mean(np.any(x_free != x1, axis=1)) > 0.2  # many trajectories were reflected
    x2, v2 = step(x1, -v1, 0.2)
    np.testing.assert_allclose(x2, x0, rtol=0, atol=1e-10)
    np.testing.assert_allclose(v2, -v0, rtol=0, atol=1e-10)


def _jacobian_fn(path):
    z = pt.dvector("z")
    x, v = z[:2][None, :], z[2:][None, :]
    here = path.evaluate(x)
    x_new, v_new, _ = leapfrog(path, x, v, here.grad_log_base + here.grad_log_ratio, 1.0,
                               np.float64(0.5), np.ones(2), 3)
    out = pt.concatenate([x_new[0], v_new[0]])
    return pytensor.function([z], [out, pt.stack([pt.grad(out[i], z) for i in range(4)])],
                             mode="FAST_COMPILE")


def test_reflected_map_preserves_volume():
    reflected = _jacobian_fn(_truncated_path(coupling=0.4))
    free = _jacobian_fn(_truncated_path(bounded=False, coupling=0.4))
    # starts that cross the bound within three steps (moving fast towards it)
    for point in ([0.7, 0.1, -2.0, 0.3], [0.55, -0.4, -1.5, 1.0]):
        image, jacobian = reflected(np.array(point))
        assert image[0] >= BOUND
        assert not np.allclose(image, free(np.array(point))[0])  # it was reflected
        assert np.linalg.det(jacobian) == pytest.approx(1.0, abs=1e-10)


def _invariance_run(bounded):
    run = run_annealing(_truncated_path(bounded=bounded), betas=np.linspace(0.0, 1.0, 41),
                        draws=4000, chains=1, rng=np.random.default_rng(11),
                        options=RunOptions(kernel="hais", progressbar=False, tuning=TuningOptions(
                            fixed={"step_size": 1.2}, mass_matrix="identity")))
    return run.positions.reshape(-1, 2), float(np.mean(run.step_stats["acceptance_rate"]))


def test_hais_keeps_a_truncated_gaussian_invariant():
    """From exact draws, 40 HAIS steps at a large step size (so that moves cross the bound
    often) leave the truncated Gaussian in place: Kolmogorov-Smirnov on both coordinates.
    Declaring the bound reflects the moves; without it they are rejected, which is also
    invariant but accepts far fewer (measured: about 0.69 against 0.34)."""
    acceptance = {}
    for bounded in (True, False):
        x, acceptance[bounded] = _invariance_run(bounded)
        assert np.all(x[:, 0] >= BOUND)
        assert stats.kstest(x[:, 0], stats.truncnorm(BOUND, np.inf).cdf).pvalue > 0.001
        assert stats.kstest(x[:, 1], stats.norm.cdf).pvalue > 0.001
    assert acceptance[True] > acceptance[False] + 0.2, acceptance
