r"""Deterministic tests of the leapfrog integrator,
:func:`pymc_anneal.kernels.integrators.leapfrog`.

On the Gaussian path of :mod:`tests.gaussian_paths` the tempered energy
:math:`E_\beta(x) = \tfrac12 (x-\mu_\beta)^\top A (x-\mu_\beta) + c` (:math:`A = \Lambda_\beta`)
is a coupled harmonic oscillator. For :math:`H = E_\beta + \tfrac12 v^\top B v` with
:math:`B = M^{-1}` diagonal, the kick-drift-kick leapfrog of step :math:`\epsilon` conserves
the *shadow* Hamiltonian

.. math:: \tilde H = \tfrac12 v^\top B v
          + \tfrac12 y^\top \big(A - \tfrac{\epsilon^2}{4} A B A\big) y,
          \qquad y = x - \mu_\beta,

exactly (it is a quadratic invariant of the linear one-step map), so the true energy error
:math:`H - H_0 = \tfrac{\epsilon^2}{8}(y^\top ABA\, y - y_0^\top ABA\, y_0)` is
:math:`O(\epsilon^2)` and bounded for all time (no drift) while the step is stable. We check
that, time reversibility, and volume preservation (on the Gaussian path and on an
anharmonic, non-Gaussian path). Graphs are compiled with ``FAST_COMPILE`` (no code
generation); the module takes ~40 s on 2 cores, most of it compiling the symbolic
Jacobians of the volume-preservation test.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from pymc_anneal.kernels.integrators import leapfrog
from pymc_anneal.paths import Path

from tests.gaussian_paths import DEFAULT as GAUSSIAN

D = GAUSSIAN.num_dims
INV_MASS = np.array([0.5, 2.0, 1.0])
SEED = 31_415


def _anharmonic_path() -> Path:
    """A non-Gaussian 3-d path: standard normal base, quartic + coupling log ratio."""
    coupling = np.float64(0.5)

    def build(x):
        log_base = -0.5 * pt.sum(x**2, axis=1)
        log_ratio = -0.25 * pt.sum(x**4, axis=1) + coupling * x[:, 0] * x[:, 1] + pt.sin(x[:, 2])
        return log_base, log_ratio

    return Path(num_dims=3, build_log_densities=build,
                sample_base=lambda rng, n: rng.standard_normal((n, 3)), name="anharmonic")


ANHARMONIC = _anharmonic_path()


class Integrator:
    """``(x, v, g, beta, eps, inv_mass) -> (x', v', g', log_base', log_ratio')`` for n steps."""

    def __init__(self, path: Path, num_steps: int):
        x = pt.tensor("x", dtype="float64", shape=(None, path.num_dims))
        v = pt.tensor("v", dtype="float64", shape=(None, path.num_dims))
        g = pt.tensor("g", dtype="float64", shape=(None, path.num_dims))
        beta, eps = pt.dscalar("beta"), pt.dscalar("eps")
        inv_mass = pt.dvector("inv_mass")
        x_new, v_new, point = leapfrog(path, x, v, g, beta, eps, inv_mass, num_steps)
        g_new = point.grad_log_base + beta * point.grad_log_ratio
        self.step = pytensor.function(
            [x, v, g, beta, eps, inv_mass],
            [x_new, v_new, g_new, point.log_base, point.log_ratio], mode="FAST_COMPILE")
        here = path.evaluate(x)
        self.evaluate = pytensor.function(
            [x, beta],
            [here.log_base, here.log_ratio, here.grad_log_base + beta * here.grad_log_ratio],
            mode="FAST_COMPILE")
        self.num_steps = num_steps

    def grad(self, x, beta):
        return self.evaluate(x, beta)[2]

    def __call__(self, x, v, beta, eps, inv_mass=INV_MASS, g=None):
        """``(x', v')`` after ``num_steps`` steps (g computed from x when not given)."""
        g = self.grad(x, beta) if g is None else g
        x_new, v_new, *_ = self.step(x, v, g, beta, eps, inv_mass)
        return x_new, v_new


@pytest.fixture(scope="module")
def gaussian_one():
    return Integrator(GAUSSIAN.path, 1)


# Multi-step graphs stay at 10 leapfrog steps: PyTensor's canonicalizer merges the momentum
# updates into one n-ary Add, and FAST_COMPILE's Python Elemwise cannot evaluate more than 32
# operands (~15 steps). Longer runs loop over calls instead.
MANY = 10


@pytest.fixture(scope="module")
def gaussian_many():
    return Integrator(GAUSSIAN.path, MANY)


def _start(num=16, seed=SEED, beta=1.0):
    rng = np.random.default_rng(seed)
    return GAUSSIAN.sample(rng, beta, num), rng.standard_normal((num, D)) / np.sqrt(INV_MASS)


def _energy(x, v, beta, inv_mass=INV_MASS):
    return -GAUSSIAN.log_density(x, beta) + 0.5 * np.sum(inv_mass * v**2, axis=1)


def _shadow_energy(x, v, beta, eps, inv_mass=INV_MASS):
    mean, _ = GAUSSIAN.moments(beta)
    a = GAUSSIAN.precision(beta)
    q = a - 0.25 * eps**2 * a @ np.diag(inv_mass) @ a
    y = x - mean
    return 0.5 * np.einsum("ni,ij,nj->n", y, q, y) + 0.5 * np.sum(inv_mass * v**2, axis=1)


def _trajectory(integrator, x, v, beta, eps, num_calls):
    """Energies and shadow energies at every ``integrator.num_steps``-th step."""
    g = integrator.grad(x, beta)
    energies, shadows = [_energy(x, v, beta)], [_shadow_energy(x, v, beta, eps)]
    for _ in range(num_calls):
        x, v, g, *_ = integrator.step(x, v, g, beta, eps, INV_MASS)
        energies.append(_energy(x, v, beta))
        shadows.append(_shadow_energy(x, v, beta, eps))
    return np.array(energies), np.array(shadows)


# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0])
def test_one_step_matches_numpy_reference(gaussian_one, beta):
    """One step equals a hand-written KDK step on the closed-form gradient; the returned
    point (log densities and the gradient reused by the next step) is the path at x'."""
    x, v = _start(beta=beta)
    eps = 0.17
    mean, _ = GAUSSIAN.moments(beta)
    a = GAUSSIAN.precision(beta)

    def grad(z):
        return -(z - mean) @ a

    v_half = v + 0.5 * eps * grad(x)
    x_ref = x + eps * INV_MASS * v_half
    v_ref = v_half + 0.5 * eps * grad(x_ref)

    g0 = gaussian_one.grad(x, beta)
    np.testing.assert_allclose(g0, grad(x), rtol=1e-12, atol=1e-12)
    x1, v1, g1, log_base1, log_ratio1 = gaussian_one.step(x, v, g0, beta, eps, INV_MASS)
    np.testing.assert_allclose(x1, x_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v1, v_ref, rtol=1e-12, atol=1e-12)
    log_base_ref, log_ratio_ref, g_ref = gaussian_one.evaluate(x1, beta)
    np.testing.assert_allclose(g1, g_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(log_base1, log_base_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(log_ratio1, log_ratio_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(log_base1 + beta * log_ratio1, GAUSSIAN.log_density(x1, beta),
                               rtol=1e-12, atol=1e-12)


def test_multistep_equals_repeated_single_steps(gaussian_one, gaussian_many):
    """An n-step graph equals n one-step calls that pass the returned gradient along."""
    x, v = _start()
    beta, eps = 0.6, 0.2
    g = gaussian_one.grad(x, beta)
    x1, v1, g1 = x, v, g
    for _ in range(gaussian_many.num_steps):
        x1, v1, g1, *_ = gaussian_one.step(x1, v1, g1, beta, eps, INV_MASS)
    x2, v2, g2, *_ = gaussian_many.step(x, v, g, beta, eps, INV_MASS)
    np.testing.assert_allclose(x2, x1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(v2, v1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g2, g1, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("beta", [0.3, 1.0])
def test_shadow_hamiltonian_conserved_exactly(gaussian_many, beta):
    """2000 steps: the shadow energy is constant to round-off (1e-10 relative)."""
    x, v = _start(beta=beta)
    eps = 0.2
    _, shadows = _trajectory(gaussian_many, x, v, beta, eps, num_calls=2000 // MANY)
    np.testing.assert_allclose(shadows, np.broadcast_to(shadows[0], shadows.shape),
                               rtol=1e-10, atol=1e-12)


def test_energy_error_is_second_order_and_bounded(gaussian_many):
    """The energy error is O(eps^2) (halving eps divides it by ~4) and does not drift."""
    beta = 1.0
    x, v = _start(num=32, beta=beta)
    errors = {}
    for eps in (0.2, 0.1):
        energies, _ = _trajectory(gaussian_many, x, v, beta, eps, num_calls=2000 // MANY)
        err = np.abs(energies - energies[0])  # (calls + 1, particles)
        errors[eps] = err
        # no drift: the worst error (over all particles) of the second half of the run is no
        # worse than that of the first (per particle the maxima of a quasi-periodic error over
        # a finite window are too noisy to compare)
        half = err.shape[0] // 2
        first, second = err[:half].max(), err[half:].max()
        assert second <= 1.25 * first, (eps, first, second)
        # explicit O(eps^2) bound: |H - H0| = eps^2/8 |y'ABAy - y0'ABAy0| <= eps^2/8 max y'ABAy,
        # and y'ABAy <= lam_max(ABA) / lam_min(Q) * y'Qy <= lam * 2 H~ (H~ conserved, Q as in
        # the module docstring), so |H - H0| <= eps^2 / 4 * lam * H~ at every step
        a = GAUSSIAN.precision(beta)
        aba = a @ np.diag(INV_MASS) @ a
        lam = np.linalg.eigvalsh(aba).max() / np.linalg.eigvalsh(a - 0.25 * eps**2 * aba).min()
        bound = 0.25 * eps**2 * lam * _shadow_energy(x, v, beta, eps)
        assert np.all(err.max(axis=0) <= bound + 1e-12), (err.max(axis=0), bound)
    # second order: halving eps divides the RMS error (over particles and time) by ~4
    rms = {eps: np.sqrt(np.mean(err**2)) for eps, err in errors.items()}
    ratio = rms[0.2] / rms[0.1]
    assert 3.5 < ratio < 4.5, ratio
    assert errors[0.1].max() < 0.1  # small next to a typical energy (~d = 3 above the minimum)


@pytest.mark.parametrize("path", [GAUSSIAN.path, ANHARMONIC], ids=["gaussian", "anharmonic"])
def test_time_reversible(path):
    """Forward n steps, negate the momentum, forward n steps: back at (x0, -v0) to 1e-10."""
    integrator = Integrator(path, MANY)
    rng = np.random.default_rng(SEED + 1)
    x0 = path.sample_base(rng, 16) * 0.7
    v0 = rng.standard_normal(x0.shape) / np.sqrt(INV_MASS)
    beta, eps = 0.8, 0.1
    x, v = x0, v0
    for _ in range(100 // MANY):  # 100 steps
        x, v = integrator(x, v, beta, eps)
    assert np.max(np.abs(x - x0)) > 0.1  # it went somewhere
    v = -v
    for _ in range(100 // MANY):
        x, v = integrator(x, v, beta, eps)
    np.testing.assert_allclose(x, x0, rtol=0, atol=1e-10)
    np.testing.assert_allclose(v, -v0, rtol=0, atol=1e-10)


@pytest.mark.parametrize("path", [GAUSSIAN.path, ANHARMONIC], ids=["gaussian", "anharmonic"])
def test_volume_preserving(path):
    """The Jacobian of (x, v) -> (x', v') over 3 steps has determinant 1 (symplectic map)."""
    d = path.num_dims
    z = pt.dvector("z")
    beta, eps = np.float64(0.7), np.float64(0.3)
    x, v = z[:d][None, :], z[d:][None, :]
    g = path.evaluate(x)
    grad = g.grad_log_base + beta * g.grad_log_ratio
    x_new, v_new, _ = leapfrog(path, x, v, grad, beta, eps, INV_MASS, 3)
    out = pt.concatenate([x_new[0], v_new[0]])
    jac = pt.stack([pt.grad(out[i], z) for i in range(2 * d)])
    fn = pytensor.function([z], [out, jac], mode="FAST_COMPILE")
    rng = np.random.default_rng(SEED + 2)
    for _ in range(3):
        point = rng.standard_normal(2 * d)
        image, jacobian = fn(point)
        assert np.all(np.isfinite(image))
        assert not np.allclose(jacobian, np.eye(2 * d))
        assert np.linalg.det(jacobian) == pytest.approx(1.0, abs=1e-10)
        # symplectic in the canonical pair (x, v): J^T Omega J = Omega
        omega = np.block([[np.zeros((d, d)), np.eye(d)], [-np.eye(d), np.zeros((d, d))]])
        np.testing.assert_allclose(jacobian.T @ omega @ jacobian, omega, rtol=0, atol=1e-10)
