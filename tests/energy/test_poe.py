"""Products of experts (LaplacePOE, StudentTPOE) against ground truth that does not use the
formulas under test: numerical integration of the unnormalized density straight from
eqs. (37)-(38), scipy.stats densities of the experts, and seeded draws with error bars
derived from the experts' fourth moments. No AIS runs here."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.integrate
import scipy.stats

from pymc_anneal.energy import LaplacePOE, StudentTPOE
from pymc_anneal.exceptions import AnnealingError, AnnealingWarning

SEED = 20240611
F2 = np.array([[1.0, 0.5], [-0.3, 1.2]])


def random_filters(num_experts, num_dims, seed=0):
    return np.random.default_rng(seed).normal(size=(num_experts, num_dims))


MODELS = {
    "laplace-complete": lambda dtype: LaplacePOE(random_filters(3, 3), dtype=dtype),
    "laplace-overcomplete": lambda dtype: LaplacePOE(random_filters(5, 3, seed=1), dtype=dtype),
    "student-complete": lambda dtype: StudentTPOE(random_filters(3, 3), [0.7, 1.4, 3.0],
                                                  dtype=dtype),
    "student-overcomplete": lambda dtype: StudentTPOE(random_filters(5, 3, seed=1), 0.9,
                                                      dtype=dtype),
}


# -- the PyTensor graph and its NumPy twin ------------------------------------------------------


@pytest.mark.parametrize("kind", MODELS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_graph_matches_numpy(kind, dtype):
    model = MODELS[kind](dtype)
    x_sym = pt.matrix("x", dtype=dtype)
    out = model.log_unnormalized(x_sym)
    assert out.dtype == dtype and out.ndim == 1
    f = pytensor.function([x_sym], out, mode="FAST_COMPILE")
    x = 2.0 * np.random.default_rng(SEED).normal(size=(64, 3))
    got = f(x.astype(dtype))
    want = model.log_unnormalized_numpy(x.astype(dtype))
    assert want.dtype == np.float64 and want.shape == (64,)
    if dtype == "float64":
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    else:
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_numpy_twin_is_the_sum_of_expert_energies():
    x = np.random.default_rng(SEED).normal(size=(10, 2))
    u = x @ F2.T
    np.testing.assert_allclose(LaplacePOE(F2).log_unnormalized_numpy(x), -np.abs(u).sum(axis=1),
                               rtol=1e-14)
    alpha = np.array([0.8, 2.5])
    np.testing.assert_allclose(StudentTPOE(F2, alpha).log_unnormalized_numpy(x),
                               -(alpha * np.log(1 + u**2)).sum(axis=1), rtol=1e-14)


# -- exact log Z against numerical integration --------------------------------------------------


def _polar_log_z(filters, log_expert, eps=1e-8):
    r"""log of :math:`\int_{\mathbb R^2} \exp(-\sum_l E_l(f_l \cdot x))\,dx` by quadrature
    in polar coordinates, straight from the expert energies ``log_expert(l, u) = -E_l(u)``.

    Along the ray :math:`x = e^t \theta` (so :math:`r\,dr = e^{2t} dt`) the integrand
    changes regime where :math:`e^t |f_l \cdot \theta| = 1`: split there. :math:`p^*(-x) =
    p^*(x)`, so :math:`\theta` runs over :math:`[0, \pi)`, split where a response vanishes
    (kinks of the Laplace energy, integrable singularities of heavy-tailed Student-t experts).
    """
    opts = dict(epsabs=0.0, epsrel=eps, limit=200)

    def radial(theta):
        c = filters @ np.array([math.cos(theta), math.sin(theta)])

        def integrand(t):
            r = math.exp(t)
            return math.exp(2.0 * t + sum(log_expert(l, r * cl) for l, cl in enumerate(c)))

        # below the first cut the integrand decays like e^{2t}, above the last at least like
        # e^{-2t(sum(alpha) - 1)} (e^{-0.6 t} for the heaviest tails tested): truncate there
        cuts = sorted(-math.log(abs(cl)) for cl in c if cl != 0.0)
        edges = [cuts[0] - 40.0, *cuts, cuts[-1] + 300.0]
        return sum(scipy.integrate.quad(integrand, lo, hi, epsabs=1e-14, epsrel=eps * 1e-2,
                                        limit=200)[0] for lo, hi in zip(edges[:-1], edges[1:]))

    zeros = np.mod(np.arctan2(-filters[:, 0], filters[:, 1]), np.pi)
    edges = np.unique(np.concatenate([[0.0, np.pi], zeros]))
    total = sum(scipy.integrate.quad(radial, lo, hi, **opts)[0]
                for lo, hi in zip(edges[:-1], edges[1:]))
    return math.log(2.0 * total)


def _laplace(l, u):
    return -abs(u)


def _student(alpha):
    return lambda l, u: -alpha[l] * math.log1p(u * u)


def test_laplace_exact_log_z_matches_2d_integration():
    model = LaplacePOE(F2)
    np.testing.assert_allclose(model.exact_log_z(), _polar_log_z(F2, _laplace), rtol=0, atol=1e-6)


@pytest.mark.parametrize("alpha", [(0.8, 1.3), (2.5, 4.0)],
                         ids=["infinite-variance", "finite-variance"])
def test_student_t_exact_log_z_matches_2d_integration(alpha):
    model = StudentTPOE(F2, alpha)
    np.testing.assert_allclose(model.exact_log_z(), _polar_log_z(F2, _student(alpha)),
                               rtol=0, atol=1e-6)


def test_laplace_exact_log_z_matches_a_cartesian_grid():
    """A second, cruder route: a fine Cartesian Riemann sum (the density decays like
    exp(-|x|), so [-40, 40]^2 holds all but ~1e-16 of the mass)."""
    model = LaplacePOE(F2)
    grid = np.linspace(-40, 40, 2001)
    cell = (grid[1] - grid[0]) ** 2
    x = np.stack(np.meshgrid(grid, grid), axis=-1).reshape(-1, 2)
    log_z = np.log(np.exp(model.log_unnormalized_numpy(x)).sum() * cell)
    np.testing.assert_allclose(model.exact_log_z(), log_z, rtol=0, atol=2e-3)


@pytest.mark.parametrize("alpha", [0.55, 0.8, 1.0, 1.5, 3.7])
def test_1d_student_t_expert_integral_and_variance(alpha):
    scale = 2.5
    model = StudentTPOE([[scale]], alpha)

    def density(u):
        return (1.0 + (scale * u) ** 2) ** -alpha

    z = sum(scipy.integrate.quad(density, lo, hi, epsabs=0.0, epsrel=1e-12, limit=500)[0]
            for lo, hi in [(-np.inf, 0.0), (0.0, np.inf)])
    np.testing.assert_allclose(model.exact_log_z(), math.log(z), rtol=0, atol=1e-8)
    if alpha > 1.5:
        second = 2 * scipy.integrate.quad(lambda u: u * u * density(u), 0.0, np.inf,
                                          epsabs=0.0, epsrel=1e-12, limit=500)[0]
        _mean, cov = model.exact_moments()
        np.testing.assert_allclose(cov, [[second / z]], rtol=1e-8)
    else:
        with pytest.raises(AnnealingError, match="infinite variance"):
            model.exact_moments()


@pytest.mark.parametrize("kind", ["laplace", "student"])
def test_log_likelihood_matches_scipy_stats_change_of_variables(kind):
    """log p(x) = sum_l log p_l(f_l . x) + log|det F| for the normalized expert densities."""
    F = random_filters(3, 3, seed=4)
    x = np.random.default_rng(SEED).normal(size=(20, 3))
    u = x @ F.T
    if kind == "laplace":
        model = LaplacePOE(F)
        logpdf = scipy.stats.laplace.logpdf(u).sum(axis=1)
    else:
        alpha = np.array([0.6, 1.0, 2.2])
        model = StudentTPOE(F, alpha)
        nu = 2 * alpha - 1
        logpdf = scipy.stats.t.logpdf(u, df=nu, scale=1 / np.sqrt(nu)).sum(axis=1)
    want = logpdf + np.linalg.slogdet(F)[1]
    np.testing.assert_allclose(model.log_likelihood(x, model.exact_log_z()), want,
                               rtol=1e-12, atol=1e-12)


# -- invariances ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["laplace", "student"])
def test_exact_log_z_invariant_to_order_and_sign_of_experts(kind):
    F = random_filters(4, 4, seed=2)
    alpha = np.array([0.6, 1.2, 2.0, 5.0])

    def make(filters, a):
        return LaplacePOE(filters) if kind == "laplace" else StudentTPOE(filters, a)

    log_z = make(F, alpha).exact_log_z()
    order = np.array([2, 0, 3, 1])
    np.testing.assert_allclose(make(F[order], alpha[order]).exact_log_z(), log_z,
                               rtol=0, atol=1e-12)
    flipped = F.copy()
    flipped[1] *= -1
    np.testing.assert_allclose(make(flipped, alpha).exact_log_z(), log_z, rtol=0, atol=1e-12)


@pytest.mark.parametrize("c", [3.0, -0.25])
def test_laplace_exact_log_z_shifts_by_minus_log_c_when_a_filter_is_scaled(c):
    F = random_filters(4, 4, seed=3)
    scaled = F.copy()
    scaled[2] *= c
    np.testing.assert_allclose(LaplacePOE(scaled).exact_log_z(),
                               LaplacePOE(F).exact_log_z() - math.log(abs(c)), rtol=0, atol=1e-12)


def test_rank_check_is_blind_to_the_scale_of_each_filter():
    model = LaplacePOE([[1e200, 0.0], [0.0, 1e-200]])
    assert model.is_complete
    np.testing.assert_allclose(model.exact_log_z(), 2 * math.log(2), rtol=1e-14)
    with pytest.raises(AnnealingError, match=r"must span R\^2"):
        LaplacePOE([[1e200, 1e200], [1e-200, 1e-200]])
    with pytest.raises(AnnealingError, match=r"must span R\^2.*rank 1"):
        LaplacePOE([[0.0, 0.0], [0.0, 1.0]])


def test_closed_forms():
    np.testing.assert_allclose(LaplacePOE(np.eye(3)).exact_log_z(), 3 * math.log(2), rtol=1e-15)
    np.testing.assert_allclose(StudentTPOE(np.eye(2), 1.0).exact_log_z(), 2 * math.log(math.pi),
                               rtol=1e-14)


# -- exact draws and moments ---------------------------------------------------------------


def _expert_moments(kind, alpha):
    """Variance and fourth moment of each normalized expert."""
    if kind == "laplace":
        return np.full(3, 2.0), np.full(3, 24.0)
    nu = 2 * alpha - 1
    return 1 / (nu - 2), 3 / ((nu - 2) * (nu - 4))


@pytest.mark.parametrize("kind", ["laplace", "student"])
def test_sample_matches_exact_moments(kind):
    F = random_filters(3, 3, seed=5)
    alpha = np.array([5.0, 6.0, 7.5])  # nu > 8: the error bars below have finite variance
    model = LaplacePOE(F) if kind == "laplace" else StudentTPOE(F, alpha)
    n = 100_000
    x = model.sample(n, np.random.default_rng(SEED))
    assert x.shape == (n, 3) and x.dtype == np.float64
    mean, cov = model.exact_moments()
    var_u, fourth_u = _expert_moments(kind, alpha)
    np.testing.assert_allclose(cov, (np.linalg.inv(F) * var_u) @ np.linalg.inv(F).T, rtol=1e-12)
    np.testing.assert_array_equal(mean, np.zeros(3))

    # x = G u with G = F^{-1}: the standard errors of the sample mean and of the sample
    # second moment (mean known to be 0), from the experts' variances and fourth moments
    G = np.linalg.inv(F)
    se_mean = np.sqrt((G**2 @ var_u) / n)
    assert np.all(np.abs(x.mean(axis=0)) < 5 * se_mean)
    var_s = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            diag = sum((G[i, a] * G[j, a]) ** 2 * (fourth_u[a] - var_u[a] ** 2) for a in range(3))
            off = sum((G[i, a] * G[j, b] + G[i, b] * G[j, a]) ** 2 * var_u[a] * var_u[b]
                      for a in range(3) for b in range(a + 1, 3))
            var_s[i, j] = (diag + off) / n
    second = x.T @ x / n
    assert np.all(np.abs(second - cov) < 5 * np.sqrt(var_s)), (second - cov) / np.sqrt(var_s)


@pytest.mark.parametrize("kind", ["laplace", "student"])
def test_sample_marginals_of_filter_responses_are_the_experts(kind):
    F = random_filters(3, 3, seed=6)
    alpha = np.array([0.6, 1.0, 3.0])  # including infinite-mean and infinite-variance experts
    model = LaplacePOE(F) if kind == "laplace" else StudentTPOE(F, alpha)
    u = model.sample(20_000, SEED) @ F.T
    for l in range(3):
        if kind == "laplace":
            dist = scipy.stats.laplace()
        else:
            nu = 2 * alpha[l] - 1
            dist = scipy.stats.t(df=nu, scale=1 / math.sqrt(nu))
        assert scipy.stats.kstest(u[:, l], dist.cdf).pvalue > 1e-3
    # and the experts are independent: responses of different filters are uncorrelated in rank
    rho = scipy.stats.spearmanr(u).statistic
    assert np.all(np.abs(rho[np.triu_indices(3, 1)]) < 5 / math.sqrt(20_000))


def test_sample_is_reproducible_and_in_float64_for_float32_models():
    model = StudentTPOE(random_filters(2, 2), 2.0, dtype="float32")
    a = model.sample(5, np.random.default_rng(1))
    np.testing.assert_array_equal(a, model.sample(5, np.random.default_rng(1)))
    assert a.dtype == np.float64


# -- attributes -----------------------------------------------------------------------------------


def test_attributes_and_repr():
    model = StudentTPOE(random_filters(5, 3), [1.0, 2.0, 3.0, 4.0, 5.0], dtype="float32", name="t")
    assert (model.num_experts, model.num_dims, model.is_complete) == (5, 3, False)
    assert model.filters.dtype == np.float32 and model.alpha.dtype == np.float32
    assert not model.filters.flags.writeable and not model.alpha.flags.writeable
    assert repr(model) == "StudentTPOE(num_experts=5, num_dims=3, dtype='float32', name='t')"
    laplace = LaplacePOE(np.eye(2))
    assert laplace.is_complete and laplace.num_experts == 2 and laplace.name == "laplace_poe"
    assert StudentTPOE(np.eye(2), 1.0).name == "student_t_poe"
    np.testing.assert_array_equal(StudentTPOE(np.eye(2), 1.5).alpha, [1.5, 1.5])
    filters = np.eye(2)
    laplace = LaplacePOE(filters)
    filters[0, 0] = 5.0  # the model keeps its own copy
    assert laplace.filters[0, 0] == 1.0
    x = np.array([[1.0, 2.0], [3.0, -4.0]])
    np.testing.assert_array_equal(LaplacePOE(F2).responses(x), x @ F2.T)


@pytest.mark.parametrize("method", ["exact_log_z", "exact_moments", "sample"])
def test_overcomplete_sets_have_no_closed_form(method):
    model = LaplacePOE(random_filters(4, 2))
    args = (10, 0) if method == "sample" else ()
    match = r"over-complete \(4 experts for 2 dimensions\).*no closed form.*pymc_anneal\.ais"
    with pytest.raises(AnnealingError, match=match):
        getattr(model, method)(*args)


# -- bad input -----------------------------------------------------------------------------


BAD_PARAMETERS = [
    pytest.param(lambda: LaplacePOE([1.0, 2.0]),
                 r"must be a 2-D array of shape \(num_experts, num_dims\).*got shape \(2,\)",
                 id="filters-1d"),
    pytest.param(lambda: LaplacePOE(np.ones((2, 2, 2))), r"2-D array.*got shape \(2, 2, 2\)",
                 id="filters-3d"),
    pytest.param(lambda: LaplacePOE(np.ones((2, 0))), r"num_dims >= 1.*got shape \(2, 0\)",
                 id="no-dims"),
    pytest.param(lambda: LaplacePOE(np.ones((2, 3))),
                 r"give 2 experts for 3 dimensions, too few experts.*not normalizable",
                 id="too-few-experts"),
    pytest.param(lambda: StudentTPOE(np.ones((1, 2)), 1.0), r"too few experts",
                 id="too-few-experts-t"),
    pytest.param(lambda: LaplacePOE([[1.0, 2.0], [2.0, 4.0], [-1.0, -2.0]]),
                 r"the filters must span R\^2.*rank 1", id="rank-deficient"),
    pytest.param(lambda: LaplacePOE([[1.0, np.nan], [0.0, 1.0]]),
                 r"filters contains 1 NaN or infinite", id="filters-nan"),
    pytest.param(lambda: LaplacePOE([["a", "b"]]), r"filters must be a numeric array",
                 id="filters-strings"),
    pytest.param(lambda: LaplacePOE([[1e39, 0.0], [0.0, 1.0]], dtype="float32"),
                 r"filters overflow float32: 1 values", id="filters-overflow-float32"),
    pytest.param(lambda: StudentTPOE(np.eye(2), [1.0, 1e39], dtype="float32"),
                 r"alpha overflow float32", id="alpha-overflow-float32"),
    pytest.param(lambda: LaplacePOE(np.eye(2), dtype="int32"), r"dtype must be one of",
                 id="dtype"),
    pytest.param(lambda: StudentTPOE(np.eye(2), [1.0, np.inf]),
                 r"alpha contains 1 NaN or infinite", id="alpha-inf"),
    pytest.param(lambda: StudentTPOE(np.eye(2), [1.0, 2.0, 3.0]),
                 r"alpha of a StudentTPOE must be a scalar or have shape \(2,\).*got shape \(3,\)",
                 id="alpha-length"),
    pytest.param(lambda: StudentTPOE(np.eye(2), np.ones((2, 1))),
                 r"shape \(2,\).*got shape \(2, 1\)", id="alpha-2d"),
    pytest.param(lambda: StudentTPOE(np.eye(2), [1.0, 0.5]),
                 r"complete StudentTPOE is normalizable only if every alpha > 1/2.*"
                 r"not normalizable.*\[0\.5\] at experts \[1\]", id="alpha-half"),
    pytest.param(lambda: StudentTPOE(np.eye(3), [0.3, 1.0, 0.45]),
                 r"not normalizable.*\[0\.3, 0\.45\] at experts \[0, 2\]", id="alphas-small"),
    pytest.param(lambda: StudentTPOE(np.eye(2), 0.5 + 1e-12, dtype="float32"),
                 r"not normalizable \(alpha rounded to float32\)", id="alpha-rounds-to-half"),
    pytest.param(lambda: StudentTPOE(random_filters(4, 2), [1.0, -1.0, 1.0, 1.0]),
                 r"alpha must be > 0.*\[-1\.0\] at experts \[1\]", id="alpha-negative"),
    pytest.param(lambda: StudentTPOE(random_filters(4, 3), 0.3),
                 r"over-complete StudentTPOE is not normalizable.*2 sum\(alpha\) > num_dims = 3",
                 id="overcomplete-tails"),
]


@pytest.mark.parametrize(("make", "match"), BAD_PARAMETERS)
def test_bad_parameters_raise(make, match):
    with pytest.raises(AnnealingError, match=match):
        make()


@pytest.mark.parametrize("model", [LaplacePOE(F2), StudentTPOE(random_filters(4, 2), 1.0)],
                         ids=repr)
def test_bad_data_raises(model):
    with pytest.raises(AnnealingError, match=r"data must have shape \(N, 2\).*filters have shape "
                                             r".*got data of shape \(5, 3\)"):
        model.check_data(np.zeros((5, 3)))
    with pytest.raises(AnnealingError, match=r"filters have shape"):
        model.log_likelihood(np.zeros((5, 3)), 0.0)
    with pytest.raises(AnnealingError, match=r"for a single row use data.reshape"):
        model.check_data(np.zeros(2))
    with pytest.raises(AnnealingError, match=r"data contains 1 NaN"):
        model.log_likelihood([[0.0, np.inf]], 0.0)
    with pytest.raises(AnnealingError, match=r"x must have shape \(N, 2\)"):
        model.log_unnormalized_numpy(np.zeros((5, 3)))
    np.testing.assert_array_equal(model.check_data([[1, 2]]), [[1.0, 2.0]])


def test_bad_sampling_arguments_raise():
    model = LaplacePOE(np.eye(2))
    with pytest.raises(AnnealingError, match="num_draws must be a positive integer, got 0"):
        model.sample(0, 0)
    with pytest.raises(AnnealingError, match="rng must be a numpy.random.Generator or a seed"):
        model.sample(3, "seed")


# --------------------------------------------------------------------------- log Z by AIS

def _orthogonal_filters(num_dims, seed):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(num_dims, num_dims)))
    return q * rng.uniform(0.7, 1.5, size=(num_dims, 1))


def _check_log_z(model, exact, tolerance, **options):
    import pymc_anneal as pa

    est = pa.log_evidence(pa.ais(model, random_seed=11, progressbar=False, **options))
    err = est.log_evidence - exact
    se = max(est.standard_error, est.chain_sd)
    assert abs(err) < 3 * se and abs(err) < tolerance, (err, est)


@pytest.mark.parametrize("kind", ["laplace", "student"])
def test_complete_poe_log_z_at_the_ais_defaults(kind):
    filters = _orthogonal_filters(6, seed=1)
    model = LaplacePOE(filters) if kind == "laplace" else StudentTPOE(filters, 2.0)
    _check_log_z(model, model.exact_log_z(), 0.05)


@pytest.mark.slow
def test_36d_student_t_poe_with_infinite_variance_experts():
    """Half of the experts at alpha = 1.2 (infinite variance): a Gaussian base gives quietly
    wrong answers here (0.15 nat, 5 SE, no warning, at base_scale=2); the default
    heavy-tailed base does not."""
    model = StudentTPOE(_orthogonal_filters(36, seed=2), np.r_[np.full(18, 1.2), np.full(18, 3.0)])
    _check_log_z(model, model.exact_log_z(), 0.1)


def _log_z_on_a_grid(model, half_width=60.0, num=6001):
    grid = np.linspace(-half_width, half_width, num)
    xx, yy = np.meshgrid(grid, grid, indexing="ij")
    log_f = model.log_unnormalized_numpy(np.column_stack([xx.ravel(), yy.ravel()]))
    top = log_f.max()
    return top + np.log(np.exp(log_f - top).sum() * (grid[1] - grid[0]) ** 2)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["laplace", "student"])
def test_overcomplete_poe_log_z_against_a_grid(kind):
    filters = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.7], [0.6, -0.8]])
    model = LaplacePOE(filters) if kind == "laplace" else StudentTPOE(filters, [1.2, 0.9, 1.5, 2.0])
    exact = _log_z_on_a_grid(model)
    assert exact == pytest.approx(_log_z_on_a_grid(model, 90.0, 9001), abs=2e-3)  # converged
    _check_log_z(model, exact, 0.05)


def test_poe_base_options():
    import pymc_anneal as pa

    model = StudentTPOE(F2, 2.0)
    path, kernel = model.annealing_path()
    assert kernel == "hais" and path.info["base"] == "student_t"
    assert path.info["base_scale"] == 1.25
    x = np.random.default_rng(0).normal(size=(5, 2))
    log_base, log_ratio = (t.eval() for t in path.build_log_densities(pt.as_tensor(x)))
    np.testing.assert_allclose(log_base + log_ratio, model.log_unnormalized_numpy(x), rtol=1e-12)
    gaussian, _ = model.annealing_path(base="gaussian", base_scale=2.0)
    assert gaussian.info.get("base") != "student_t"
    with pytest.raises(AnnealingError, match=r"unknown base|base must be one of|'cauchy'"):
        pa.ais(model, base="cauchy", progressbar=False)
    with pytest.raises(AnnealingError, match=r"\['base_mean'\] do not apply to the student_t base"):
        model.annealing_path(base_mean=1.0)


@pytest.mark.parametrize("base", ["full", *(pytest.param(b, marks=pytest.mark.slow)
                                           for b in ("diagonal", "isotropic"))])
def test_gaussian_bases_fitted_to_data_or_moments(base):
    r"""The Gaussian bases of any energy model, fitted to exact draws (full, isotropic) or
    the exact moments (diagonal), on a correlated complete Laplace POE.

    A Gaussian base has lighter tails than Laplace experts, so the geometric path's last
    increment, :math:`\Delta\beta (\log p - \log q)` at particles of
    :math:`q^{1-\beta} p^{\beta}`, has a weight tail of index about 1 far out: the
    heavy-tail warning (Pareto k-hat > 0.5) is right in principle, and the sample shows it
    at some seeds (k-hat 0.5-0.6 at 2 of 12 runs, seeds 11-16 on the full and isotropic
    bases, and 4 of 12 after a change of the pilot's streams), with errors within 3 SE at
    all 24. It is allowed here; the estimate must still be right."""
    model = LaplacePOE(np.array([[1.0, 0.3, 0.0], [0.2, 2.0, 0.5], [0.0, -0.4, 0.7]]))
    fit = ({"moments": model.exact_moments()} if base == "diagonal"
           else {"data": model.sample(5000, rng=1)})
    path, _ = model.annealing_path(base=base, **fit)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "the weights have a heavy tail", AnnealingWarning)
        _check_log_z(model, model.exact_log_z(), 0.05, base=base, **fit)
    assert path.base_scale.shape == (3,)


def test_gaussian_base_bad_input():
    model = LaplacePOE(F2)
    with pytest.raises(AnnealingError, match=r"base='full' is fitted to the target: pass data"):
        model.annealing_path(base="full")
    with pytest.raises(AnnealingError, match="not both"):
        model.annealing_path(base="diagonal", data=np.zeros((5, 2)), base_scale=2.0)
    with pytest.raises(AnnealingError, match=r"moments must have shapes \(2,\) and \(2, 2\)"):
        model.annealing_path(base="full", moments=(np.zeros(3), np.eye(3)))
    with pytest.raises(AnnealingError, match="at least 2 rows"):
        model.annealing_path(base="full", data=np.zeros((1, 2)))
    with pytest.raises(AnnealingError, match="not positive definite"):
        model.annealing_path(base="full", moments=(np.zeros(2), np.zeros((2, 2))))


@pytest.mark.parametrize("base", ["gaussian", "isotropic"])
def test_gaussian_base_for_student_t_experts_warns_whatever_the_weights(base):
    """A Gaussian base against polynomial tails gives weights of infinite variance, which
    the sample need not show (examples/hais_poe.py --base isotropic: 0.35 nat low at
    N = 100,000 with no weight warning): ais says so from the model, before any draw.
    Laplace experts (exponential tails) carry no such caveat."""
    import warnings

    import pymc_anneal as pa
    from pymc_anneal import AnnealingWarning

    fit = ({"base_scale": 2.0} if base == "gaussian"
           else {"data": np.random.default_rng(0).normal(size=(50, 2))})
    student = StudentTPOE(F2, 2.0)
    path, _ = student.annealing_path(base=base, **fit)
    assert "infinite variance" in path.info["weight_caveat"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = pa.ais(student, base=base, num_steps=20, draws=50, chains=2, random_seed=0,
                       progressbar=False, **fit)
    messages = [str(w.message) for w in caught if issubclass(w.category, AnnealingWarning)]
    assert any("polynomial tails of Student-t experts" in m for m in messages), messages
    assert "infinite variance" in idata.attrs["weight_caveat"]

    laplace_path, _ = LaplacePOE(F2).annealing_path(base=base, **fit)
    assert "weight_caveat" not in laplace_path.info
    default_path, _ = student.annealing_path()
    assert "weight_caveat" not in default_path.info


def test_overcomplete_student_t_with_heavy_experts_has_no_default_base():
    """Issue 23, 1.9: three experts of alpha 0.3 on one dimension decay like |x|^(-1.8), so the
    model is normalizable, but the default base (a complete product with alpha0 = min(1.5,
    min alpha) = 0.3) is not: the error says so up front, names the fix, and the Gaussian base
    it names works (with its heavy-tail caveat)."""
    model = StudentTPOE(np.array([[1.0], [2.0], [0.5]]), alpha=[0.3, 0.8, 0.3])
    with pytest.raises(AnnealingError,
                       match=r"StudentTPOE 'student_t_poe' has no default base: .*alpha0 = "
                             r"min\(1\.5, min\(alpha\)\) = 0\.3, normalizable only for alpha0 > "
                             r"1/2, and this over-complete model \(3 experts for 1 dimension\) "
                             r"has alpha \[0\.3, 0\.3\] at experts \[0, 2\]\. Pass base='gaussian'"):
        model.annealing_path()
    path, kernel = model.annealing_path(base="gaussian")
    assert kernel == "hais" and "infinite variance" in path.info["weight_caveat"]
    # just above 1/2 the base exists, with the exponent min(alpha)
    path, _ = StudentTPOE(np.array([[1.0], [2.0], [0.5]]), alpha=0.6).annealing_path()
    assert path.info["base_alpha"] == pytest.approx(0.6)
