r"""Statistical and deterministic tests of the annealing transition kernels.

Each kernel in :data:`pymc_anneal.kernels.KERNELS` must leave the tempered density
:math:`p_\beta` invariant. On the Gaussian path of :mod:`tests.gaussian_paths`, :math:`p_\beta`
is Gaussian with closed-form mean and covariance for every :math:`\beta`, so we

1. draw N exact iid samples from :math:`p_\beta` (plus an exact :math:`\mathcal N(0, M)`
   momentum for the HMC kernels),
2. apply many transitions at that fixed :math:`\beta` (``delta_beta = 0``, so the weights
   stay put) through the real compiled annealing loop
   (:func:`pymc_anneal.driver.cache.compiled_loop`, Numba backend),
3. test the output against the exact :math:`p_\beta`: a one-sample Kolmogorov-Smirnov test of
   every coordinate's marginal, of a fixed random projection, and of the squared Mahalanobis
   distance (chi-square with d degrees of freedom, which sees the whole covariance).

Particles evolve independently, so the N outputs are iid; if the kernel is exactly invariant
they are exact draws from :math:`p_\beta` and each p-value is uniform.

**Level.** Every p-value must exceed ``ALPHA = 0.001``. All seeds are fixed and the Numba
backend is deterministic, so each check has a fixed outcome: it is one draw of a test at
level 0.001 (per statistic) that was seen to pass, not a flaky test. Changing a seed
re-draws it; with 5 statistics per case and 8 cases a correct kernel fails some check with
probability about 4% for a fresh seed.

**Power.** A test that always passes proves nothing (the identity map is invariant too), so
each invariance case also asserts that the particles really moved, and a negative control
runs the same kernel at a *different* beta than the samples came from and requires the same
check to reject (p < ``ALPHA``).

The kernels come from the tests' kernel table (``tests/conftest.py``), so every kernel that
runs on a continuous path is covered. The first compilation of each kernel's graph by Numba
takes about a minute; PyTensor caches it on disk (each graph once per session, through the
:func:`compiled` fixture).
"""

from __future__ import annotations

import doctest
from typing import Any

import numpy as np
import pytest
import scipy.stats

import pymc_anneal as pa
import pymc_anneal.kernels
from pymc_anneal.driver.scan import pad_steps
from pymc_anneal.kernels import KERNELS
from tests.conftest import CONTINUOUS_KERNELS, CompiledKernel
from tests.gaussian_paths import DEFAULT as GAUSSIAN

ALPHA = 1e-3
NUM_PARTICLES = 4000
NUM_STEPS = 30
BETAS = (0.3, 1.0)
KERNEL_NAMES = sorted(CONTINUOUS_KERNELS)
SEED = 20_240_611
D = GAUSSIAN.num_dims


def _rng(*keys: Any) -> np.random.Generator:
    """A Generator seeded by SEED and the test-case keys (ints / short strings)."""
    ints = [SEED] + [k if isinstance(k, int) else sum(map(ord, str(k))) for k in keys]
    return np.random.default_rng(ints)


def _exact_start(ck: CompiledKernel, rng, beta, num=NUM_PARTICLES, inv_mass=None):
    """Exact draws from p_beta and, for HMC kernels, momentum ~ N(0, M = 1/inv_mass)."""
    position = GAUSSIAN.sample(rng, beta, num)
    momentum = None
    if ck.has_momentum:
        inv_mass = np.ones(D) if inv_mass is None else np.asarray(inv_mass)
        momentum = rng.standard_normal(position.shape) / np.sqrt(inv_mass)
    return ck.initial_state(position, momentum, inv_mass)


def _ks_pvalues(samples: np.ndarray, beta: float, seed: int = 7) -> dict[str, float]:
    """KS p-values of ``samples`` (N, d) against the exact p_beta.

    Each coordinate's marginal, one fixed random unit projection, and the squared Mahalanobis
    distance (chi-square, d dof).
    """
    mean, cov = GAUSSIAN.moments(beta)
    sd = np.sqrt(np.diag(cov))
    pvalues = {}
    for i in range(D):
        # a frozen distribution's cdf: kstest(x, "norm", args=(loc, scale)) raises TypeError
        # in SciPy 1.18.1 (it forwards the args to special.ndtr)
        marginal = scipy.stats.norm(mean[i], sd[i])
        pvalues[f"x{i}"] = scipy.stats.kstest(samples[:, i], marginal.cdf).pvalue
    u = np.random.default_rng(seed).standard_normal(D)
    u /= np.linalg.norm(u)
    proj = scipy.stats.norm(u @ mean, np.sqrt(u @ cov @ u))
    pvalues["projection"] = scipy.stats.kstest(samples @ u, proj.cdf).pvalue
    resid = samples - mean
    maha = np.einsum("ni,ij,nj->n", resid, np.linalg.inv(cov), resid)
    pvalues["mahalanobis"] = scipy.stats.kstest(maha, scipy.stats.chi2(D).cdf).pvalue
    return pvalues


# ---------------------------------------------------------------------------------------
# sanity of the helper itself


def test_ks_helper_accepts_exact_draws_and_rejects_other_beta():
    """The statistics accept exact draws of p_beta and reject draws of another beta."""
    rng = _rng("helper")
    for beta in BETAS:
        assert min(_ks_pvalues(GAUSSIAN.sample(rng, beta, NUM_PARTICLES), beta).values()) > ALPHA
    other = GAUSSIAN.sample(rng, 0.5, NUM_PARTICLES)
    assert min(_ks_pvalues(other, 0.3).values()) < ALPHA


def test_gaussian_path_matches_closed_form():
    """The PyTensor path's log f_beta equals the closed-form Gaussian up to a constant."""
    import pytensor
    import pytensor.tensor as pt

    x = pt.matrix("x", dtype="float64")
    log_base, log_ratio = GAUSSIAN.path.build_log_densities(x)
    beta = pt.dscalar("beta")
    fn = pytensor.function([x, beta], log_base + beta * log_ratio, mode="FAST_COMPILE")
    points = _rng("closed-form").standard_normal((50, D)) * 2.0
    for b in (0.0, 0.3, 1.0):
        mean, cov = GAUSSIAN.moments(b)
        exact = scipy.stats.multivariate_normal(mean, cov).logpdf(points)
        diff = fn(points, b) - exact
        np.testing.assert_allclose(diff, diff[0], rtol=0, atol=1e-10)
    # beta = 0 is the normalized base, beta = 1 the normalized target (log Z_0 = log Z_1 = 0)
    base = scipy.stats.multivariate_normal(np.zeros(D), np.diag(GAUSSIAN.base_scale**2))
    target = scipy.stats.multivariate_normal(GAUSSIAN.target_mean, GAUSSIAN.target_cov)
    np.testing.assert_allclose(fn(points, 0.0), base.logpdf(points), rtol=0, atol=1e-10)
    np.testing.assert_allclose(fn(points, 1.0), target.logpdf(points), rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------------------
# invariance


@pytest.mark.parametrize("beta", BETAS)
@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_kernel_leaves_p_beta_invariant(compiled, name, beta):
    """30 transitions at fixed beta map exact draws of p_beta to draws of p_beta."""
    ck = compiled(name)
    rng = _rng("invariance", name, round(beta * 100))
    state = _exact_start(ck, rng, beta)
    start = state["position"].copy()
    out, log_w, acceptance, divergences = ck.run(
        state, beta=beta, step_size=CONTINUOUS_KERNELS[name].step_size, seed=int(rng.integers(2**32)))

    assert np.all(np.isfinite(out["position"]))
    np.testing.assert_array_equal(log_w, 0.0)  # delta_beta = 0: weights untouched
    assert divergences.sum() == 0
    # the kernel really moves (the identity map would pass any invariance check)
    assert acceptance.mean() > 0.2
    moved = np.any(out["position"] != start, axis=1).mean()
    assert moved > 0.95, moved
    pvalues = _ks_pvalues(out["position"], beta)
    assert min(pvalues.values()) > ALPHA, pvalues


@pytest.mark.parametrize("beta", BETAS)
@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_invariance_check_has_power(compiled, name, beta):
    """Negative control: samples of p_beta moved by the kernel at another beta are rejected.

    Every one of the five statistics must reject (observed p-values are all below 1e-6), so
    each of them is shown to have power against a wrong stationary distribution.
    """
    ck = compiled(name)
    other = 1.0 if beta != 1.0 else 0.3
    rng = _rng("power", name, round(beta * 100))
    state = _exact_start(ck, rng, beta)
    out, *_ = ck.run(state, beta=other, step_size=CONTINUOUS_KERNELS[name].step_size,
                     seed=int(rng.integers(2**32)))
    pvalues = _ks_pvalues(out["position"], beta)
    assert max(pvalues.values()) < ALPHA, pvalues


# ---------------------------------------------------------------------------------------
# robustness and acceptance


@pytest.mark.parametrize("step_size", [50.0, 1e200], ids=["eps50", "eps1e200"])
@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_huge_step_size_rejects_and_stays_finite(compiled, name, step_size):
    """A far too large step is (almost) always rejected; no NaN/inf ever enters the state.

    With eps = 1e200 the proposal overflows (inf / NaN log density): every proposal must be
    rejected and flagged divergent.
    """
    ck = compiled(name)
    rng = _rng("huge", name, int(np.log10(step_size)))
    num = 1000
    state = _exact_start(ck, rng, 1.0, num=num)
    start = state["position"].copy()
    out, log_w, acceptance, divergences = ck.run(
        state, beta=1.0, step_size=step_size, seed=int(rng.integers(2**32)))
    for field, value in out.items():
        assert np.all(np.isfinite(value)), field
    assert acceptance.mean() < 0.01, acceptance
    stuck = np.all(out["position"] == start, axis=1).mean()
    assert stuck > 0.99, stuck
    np.testing.assert_array_equal(log_w, 0.0)
    if step_size > 1e100:
        np.testing.assert_array_equal(acceptance, 0.0)
        np.testing.assert_array_equal(out["position"], start)
        np.testing.assert_array_equal(divergences, num)
    elif ck.has_momentum:
        # energy error far below -MAX_ENERGY_ERROR: flagged divergent
        assert divergences.mean() > 0.9 * num


def test_hais_acceptance_rate_high_at_good_step_size(compiled):
    ck = compiled("hais")
    rng = _rng("acceptance")
    for beta in BETAS:
        state = _exact_start(ck, rng, beta, num=1000)
        _, _, acceptance, divergences = ck.run(
            state, beta=beta, step_size=CONTINUOUS_KERNELS["hais"].step_size, seed=int(rng.integers(2**32)))
        assert acceptance.shape == (NUM_STEPS,)
        assert np.all((acceptance >= 0.0) & (acceptance <= 1.0))
        assert acceptance.mean() > 0.6, (beta, acceptance.mean())
        assert divergences.sum() == 0
    # and it collapses past the leapfrog stability limit eps < 2 / omega_max ~ 0.83 (beta = 1)
    state = _exact_start(ck, rng, 1.0, num=1000)
    _, _, acceptance_big, _ = ck.run(state, beta=1.0, step_size=1.5, seed=1)
    assert acceptance_big.mean() < 0.6


# ---------------------------------------------------------------------------------------
# momentum


def test_persistent_momentum_refresh_keeps_momentum_gaussian(compiled):
    """HAIS's partial refresh drives the momentum to, and keeps it at, N(0, M = 1/inv_mass).

    The momentum starts at zero (far from N(0, M)); after 100 steps the initial condition's
    weight is ~sqrt(1 - gamma)**100 ~ 1e-8, so each coordinate must be N(0, 1/inv_mass)
    (a refresh with gamma instead of sqrt(gamma) would give variance gamma / inv_mass).
    Positions, started from the exact p_beta, must stay p_beta with this non-trivial mass.
    """
    ck = compiled("hais")
    inv_mass = np.array([0.5, 2.0, 1.0])
    beta, eps, num_steps = 1.0, 0.5, 100
    rng = _rng("refresh")
    state = ck.initial_state(GAUSSIAN.sample(rng, beta, NUM_PARTICLES),
                             np.zeros((NUM_PARTICLES, D)))
    out, _, acceptance, divergences = ck.run(
        state, beta=beta, step_size=eps, num_steps=num_steps, inv_mass=inv_mass,
        seed=int(rng.integers(2**32)))
    assert divergences.sum() == 0
    assert 0.3 < acceptance.mean() < 1.0  # rejections (momentum flips) do happen
    momentum = out["momentum"]
    scaled_var = momentum.var(axis=0) * inv_mass
    # sd of a sample variance of N = 4000 normals is sqrt(2 / N) ~ 0.022 (relative)
    np.testing.assert_allclose(scaled_var, 1.0, atol=0.1)
    for i in range(D):
        exact = scipy.stats.norm(0.0, inv_mass[i] ** -0.5)
        p = scipy.stats.kstest(momentum[:, i], exact.cdf).pvalue
        assert p > ALPHA, (i, p)
    corr = np.corrcoef(momentum.T)[np.triu_indices(D, 1)]
    assert np.all(np.abs(corr) < 0.1), corr
    pvalues = _ks_pvalues(out["position"], beta)
    assert min(pvalues.values()) > ALPHA, pvalues


@pytest.mark.parametrize("name", ["hais", "hmc"])
def test_hmc_invariance_with_nontrivial_mass_matrix(compiled, name):
    """p_beta stays invariant with a non-identity diagonal mass matrix (both HMC variants)."""
    ck = compiled(name)
    inv_mass = np.array([0.5, 2.0, 1.0])
    rng = _rng("mass", name)
    state = _exact_start(ck, rng, 0.3, inv_mass=inv_mass)
    out, _, acceptance, _ = ck.run(state, beta=0.3, step_size=0.7, inv_mass=inv_mass,
                                   seed=int(rng.integers(2**32)))
    assert acceptance.mean() > 0.5
    pvalues = _ks_pvalues(out["position"], 0.3)
    assert min(pvalues.values()) > ALPHA, pvalues


# ---------------------------------------------------------------------------------------
# the padding no-op of pad_steps


def _noop_run(ck, num=64, num_steps=5, seed=3):
    """Run only padding steps: one real step's arrays padded with the kernel's declared
    no-op values (:func:`pymc_anneal.driver.scan.pad_steps`), the real step dropped."""
    rng = _rng("noop", ck.name)
    inv_mass = np.array([0.5, 2.0, 1.0])
    state = _exact_start(ck, rng, 0.3, num=num, inv_mass=inv_mass)
    log_w = rng.standard_normal(num)
    before = {k: v.copy() for k, v in state.items()}
    one = ck.arrays(beta=0.3, num_steps=1, delta_beta=0.1, step_size=0.5, inv_mass=inv_mass)
    padding = {k: v[1:] for k, v in pad_steps(ck.kernel.parameters, one, num_steps + 1).items()}
    out, log_w_out, acceptance, divergences = ck.run(
        state, beta=0.3, arrays=padding, log_weight=log_w.copy(), seed=seed)
    return before, out, log_w, log_w_out, acceptance, divergences


@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_padding_step_is_exact_noop(compiled, name):
    """``pad_steps``: delta_beta = 0 and each parameter's declared no-op value leave the state
    exactly unchanged.

    Position and log weight are bit-identical for every kernel; so is the momentum of the
    persistent-momentum kernel (HAIS: the zero-length move is accepted and the double
    negation cancels). The cached log densities may be recomputed at the same position, so
    they are compared to 1e-12 (the chunk graph and the init graph are compiled differently).
    """
    ck = compiled(name)
    before, out, log_w, log_w_out, acceptance, divergences = _noop_run(ck)
    np.testing.assert_array_equal(out["position"], before["position"])
    np.testing.assert_array_equal(log_w_out, log_w)
    if name == "hais":
        np.testing.assert_array_equal(out["momentum"], before["momentum"])
    for field in ck.fields:
        if field not in ("position", "momentum"):
            np.testing.assert_allclose(out[field], before[field], rtol=1e-12, atol=1e-12)
    assert divergences.sum() == 0
    np.testing.assert_allclose(acceptance, 1.0, rtol=0, atol=1e-12)


def test_momentum_scale_pushes_momentum_to_new_mass(compiled):
    """``momentum_scale = sqrt(inv_mass_prev / inv_mass)`` multiplies the HAIS momentum first.

    On a zero-length step (exact no-op otherwise) the stored momentum becomes exactly
    ``momentum * momentum_scale``, which maps N(0, 1/inv_mass_prev) onto N(0, 1/inv_mass).
    """
    ck = compiled("hais")
    rng = _rng("momentum-scale")
    inv_prev, inv_new = np.array([1.0, 0.5, 4.0]), np.array([0.5, 2.0, 1.0])
    scale = np.sqrt(inv_prev / inv_new)
    state = _exact_start(ck, rng, 0.3, num=NUM_PARTICLES, inv_mass=inv_prev)
    before = state["momentum"].copy()
    out, *_ = ck.run(state, beta=0.3, step_size=0.0, refresh=0.0, num_steps=1,
                     inv_mass=inv_new, momentum_scale=scale, seed=5)
    np.testing.assert_array_equal(out["momentum"], before * scale)
    np.testing.assert_allclose(out["momentum"].var(axis=0) * inv_new, 1.0, atol=0.1)


def test_padding_step_hmc_momentum_is_scratch(compiled):
    """For ``"hmc"`` (full refresh) the no-op step redraws the stored momentum.

    ``pad_steps``'s docstring says every kernel's state is unchanged; for plain HMC the momentum
    field is overwritten by a fresh draw, which is harmless because HMC never reads the
    stored momentum: we check that the next transitions do not depend on it.
    """
    ck = compiled("hmc")
    before, out, *_ = _noop_run(ck)
    assert not np.array_equal(out["momentum"], before["momentum"])  # redrawn, not kept
    state_a = {k: v.copy() for k, v in before.items()}
    other_momentum = 1e3 * _rng("scratch").standard_normal(state_a["momentum"].shape)
    state_b = {**state_a, "momentum": other_momentum}
    out_a, *_ = ck.run(state_a, beta=0.3, step_size=0.5, num_steps=3, seed=11)
    out_b, *_ = ck.run(state_b, beta=0.3, step_size=0.5, num_steps=3, seed=11)
    for field in ck.fields:
        np.testing.assert_array_equal(out_a[field], out_b[field])


# ---------------------------------------------------------------------------------------
# the kernels' initial point


def test_init_function_handles_log_density_with_many_terms():
    """The kernels' initial state for a path whose log density sums 40 separate terms."""
    import pytensor.tensor as pt

    from pymc_anneal.driver.scan import _build_init
    from pymc_anneal.paths import Path

    d = 40

    def build(x):
        log_base = pt.sum(pt.stack([-0.5 * x[:, i] ** 2 for i in range(d)], axis=0), axis=0)
        return log_base, -0.5 * pt.sum(x**2, axis=1)

    path = Path(num_dims=d, build_log_densities=build,
                sample_base=lambda rng, n: rng.standard_normal((n, d)), name="many-terms")
    kernel = KERNELS["hais"](path)
    x = _rng("many-terms").standard_normal((5, d))
    init = _build_init(path, kernel)
    params = {p.name: p.initial(d) for p in kernel.parameters}
    _, _, momentum, log_base, log_ratio, grad_base, grad_ratio = init(
        np.random.default_rng(0), x, *params.values())
    np.testing.assert_allclose(log_base, -0.5 * np.sum(x**2, axis=1), rtol=1e-12)
    np.testing.assert_allclose(grad_base, -x, rtol=1e-12)
    assert momentum.shape == x.shape


# ---------------------------------------------------------------------------------------
# the kernel contract


def test_contract_doctest_runs_a_custom_kernel():
    """The kernels package docstring writes a kernel from scratch and runs it through
    ``pa.ais`` on a Gaussian with known log Z."""
    result = doctest.testmod(pymc_anneal.kernels, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 10 and result.failed == 0, result


def test_every_registered_kernel_is_in_the_table_or_needs_conditionals():
    """The tests' kernel table covers every kernel that runs on a continuous path."""
    for name, build in KERNELS.items():
        try:
            build(GAUSSIAN.path)
        except pa.AnnealingError as err:
            assert "Gibbs conditionals" in str(err), (name, err)
            continue
        assert name in CONTINUOUS_KERNELS, name


def test_kernel_declaration_errors_are_clear():
    from pymc_anneal.kernels import resolve_kernel

    with pytest.raises(pa.AnnealingError, match=r"unknown kernel 'nuts'; must be one of"):
        resolve_kernel("nuts", GAUSSIAN.path)
    with pytest.raises(pa.AnnealingError, match=r"'metropolis' kernel takes no option.*num_leap"):
        resolve_kernel("metropolis", GAUSSIAN.path, num_leapfrog_steps=3)
    with pytest.raises(pa.AnnealingError, match=r"kernel 'gibbs' needs Gibbs conditionals"):
        resolve_kernel("gibbs", GAUSSIAN.path)
    with pytest.raises(pa.AnnealingError, match=r"must return a pymc_anneal.kernels.Kernel"):
        resolve_kernel(lambda path: None, GAUSSIAN.path)
    with pytest.raises(pa.AnnealingError, match=r"num_leapfrog_steps must be an integer >= 1"):
        resolve_kernel("hais", GAUSSIAN.path, num_leapfrog_steps=0)


# ---------------------------------------------------------------------------------------
# every continuous kernel against a closed-form normalizing constant


def test_every_kernel_estimates_a_closed_form_log_z(kernel_case):
    """``pa.ais`` on the Gaussian path (log Z = 0 exactly) at its defaults, with each kernel
    of the table: within 3 standard errors and 0.05 nat."""
    idata = pa.ais(GAUSSIAN.path, kernel=kernel_case.name, random_seed=5, progressbar=False)
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence) < 3 * est.standard_error, (kernel_case.name, est)
    assert abs(est.log_evidence) < 0.05, (kernel_case.name, est)


def test_metropolis_accept_rejects_bad_proposals_and_flags_divergences():
    """The one Metropolis test the kernels share: a proposal with a non-finite log density,
    a NaN ratio or one marked invalid is never accepted, and it is divergent only where the
    current state was finite; a ratio >= 0 is always accepted, one of -inf never."""
    import pytensor
    import pytensor.tensor as pt

    from pymc_anneal.kernels.base import metropolis_accept, select

    old, new, delta = pt.dvector("old"), pt.dvector("new"), pt.dvector("delta")
    invalid_in = pt.bvector("invalid")
    rng = pytensor.shared(np.random.default_rng(0))
    _, accepted, info = metropolis_accept(rng, old, new, delta, old.shape, pt.neq(invalid_in, 0))
    kept = select(accepted, (new, pt.stack([new, new], axis=1)),
                  (old, pt.stack([old, old], axis=1)))
    fn = pytensor.function([old, new, delta, invalid_in],
                           [accepted, info.acceptance_rate, info.is_divergent, *kept],
                           mode="FAST_COMPILE")
    inf, nan = np.inf, np.nan
    #             fine  -inf new  nan delta  invalid  old -inf  always  never
    old_v = np.array([0.0, 0.0, 0.0, 0.0, -inf, 0.0, 0.0])
    new_v = np.array([1.0, -inf, 1.0, 1.0, -inf, 2.0, -3.0])
    delta_v = np.array([1.0, -inf, nan, 1.0, nan, 0.0, -inf])
    invalid_v = np.array([0, 0, 0, 1, 0, 0, 0], dtype="int8")
    accepted_v, rate, divergent, kept_1, kept_2 = fn(old_v, new_v, delta_v, invalid_v)
    np.testing.assert_array_equal(accepted_v, [1, 0, 0, 0, 0, 1, 0])
    np.testing.assert_array_equal(rate, [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(divergent, [0, 1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(kept_1, np.where(accepted_v, new_v, old_v))
    np.testing.assert_array_equal(kept_2, np.stack([kept_1, kept_1], axis=1))
