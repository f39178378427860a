r"""Linear and bilinear generative models: per-point log-likelihoods from ``batched_ais``
against closed forms (Gaussian prior) and quadrature (Laplace prior, bilinear), and bad
input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

import pymc_anneal as pa
from pymc_anneal.energy import BilinearGenerative, LinearGenerative
from pymc_anneal.exceptions import AnnealingError


def _check_points(result, exact, tolerance=0.1):
    """Every point within 3 reported SEs and ``tolerance`` nat of its exact log-likelihood,
    and the test-set mean within 3 of its SE."""
    stats_ = result["sample_stats"]
    err = stats_["log_likelihood"].values - exact
    se = stats_["log_likelihood_se"].values
    assert np.all(np.abs(err) < 3 * se), (err, se)
    assert np.all(np.abs(err) < tolerance), err
    mean_err = stats_["mean_log_likelihood"].item() - exact.mean()
    assert abs(mean_err) < 3 * stats_["mean_log_likelihood_se"].item()


def test_linear_gaussian_per_point_at_the_defaults():
    rng = np.random.default_rng(0)
    model = LinearGenerative(rng.normal(size=(6, 4)), 0.5)
    x = model.sample(10, rng=1)
    result = pa.batched_ais(model, x, random_seed=2, progressbar=False)
    _check_points(result, model.exact_log_likelihood(x))
    assert result["particles"]["log_weight"].shape == (10, 2, 100)
    assert result.attrs["quantity"] == "test_log_likelihood"
    assert result.attrs["num_test_points"] == 10


def test_exact_log_likelihood_is_the_marginal_gaussian():
    rng = np.random.default_rng(3)
    basis = rng.normal(size=(3, 2))
    model = LinearGenerative(basis, 0.7)
    x = rng.normal(size=(5, 3))
    cov = basis @ basis.T + 0.49 * np.eye(3)
    np.testing.assert_allclose(model.exact_log_likelihood(x),
                               stats.multivariate_normal(np.zeros(3), cov).logpdf(x), rtol=1e-12)


def _laplace_quadrature(model, x):
    phi, s = model.basis[:, 0], model.noise_scale
    def log_p(xi):
        f = lambda a: np.exp(stats.norm(a * phi, s).logpdf(xi).sum() - abs(a) - np.log(2.0))
        return np.log(integrate.quad(f, -np.inf, 0)[0] + integrate.quad(f, 0, np.inf)[0])
    return np.array([log_p(xi) for xi in x])


def test_linear_laplace_prior_per_point_against_quadrature():
    model = LinearGenerative(np.array([[1.5], [-0.8]]), 0.4, prior="laplace")
    x = model.sample(6, rng=4)
    result = pa.batched_ais(model, x, num_steps=500, random_seed=5, progressbar=False)
    _check_points(result, _laplace_quadrature(model, x))


def test_bilinear_per_point_against_quadrature():
    """One c (Laplace) and one d >= 0 (exponential): a = (theta * psi) c d; the HMC kernel
    reflects d at 0."""
    model = BilinearGenerative(np.array([[1.0, 0.4], [-0.3, 0.9]]), np.array([[1.2], [0.5]]),
                               np.array([[0.8], [1.5]]), 0.5)
    x = model.sample(5, rng=6)
    assert model.evidence_path(x).lower_bounds.tolist() == [-np.inf, 0.0]

    v = model.basis @ (model.theta[:, 0] * model.psi[:, 0])  # x = v c d + noise
    s2 = model.noise_scale**2
    log_norm = -np.log(2.0) - x.shape[1] * 0.5 * np.log(2 * np.pi * s2)

    def log_p(xi):
        # the c integral in closed form: int_0^inf exp(-A c^2 + B c) dc
        # = sqrt(pi / A) erfcx(-B / (2 sqrt A)) / 2, for c > 0 (B = d x.v / s^2 - 1) and
        # c < 0 (B = -d x.v / s^2 - 1); then the d integral by quadrature
        xx, xv, vv = xi @ xi, xi @ v, v @ v

        def f(d):
            a = d * d * vv / (2 * s2)
            halves = sum(0.5 * np.sqrt(np.pi / a) * special.erfcx((1 - sign * d * xv / s2)
                                                                   / (2 * np.sqrt(a)))
                         for sign in (1.0, -1.0))
            return np.exp(-0.5 * xx / s2 - d + log_norm) * halves

        return np.log(integrate.quad(f, 1e-300, np.inf, epsabs=0, epsrel=1e-10)[0])

    exact = np.array([log_p(xi) for xi in x])
    result = pa.batched_ais(model, x, num_steps=1000, random_seed=7, progressbar=False)
    _check_points(result, exact)


def test_sample_matches_the_marginal_moments():
    """Covariances of 200,000 draws within 5 standard errors (each entry's SE from the
    products' sample spread): Phi Phi^T + s^2 I, and 2 Phi Phi^T + s^2 I for Laplace."""
    basis = np.random.default_rng(8).normal(size=(3, 2))
    for prior, scale in (("gaussian", 1.0), ("laplace", 2.0)):
        x = LinearGenerative(basis, 0.3, prior=prior).sample(200_000, rng=9)
        products = x[:, :, None] * x[:, None, :]
        se = products.std(axis=0) / np.sqrt(x.shape[0])
        expected = scale * basis @ basis.T + 0.09 * np.eye(3)
        assert np.all(np.abs(products.mean(axis=0) - expected) < 5 * se), prior


BAD = [
    (lambda: LinearGenerative(np.ones(3), 0.5), r"basis must be a 2-D array.*got shape \(3,\)"),
    (lambda: LinearGenerative(np.ones((3, 2)), 0.0), "noise_scale"),
    (lambda: LinearGenerative(np.ones((3, 2)), 0.5, prior="cauchy"), "prior"),
    (lambda: LinearGenerative(np.full((3, 2), np.nan), 0.5), "basis"),
    (lambda: BilinearGenerative(np.ones((3, 2)), np.ones((3, 1)), np.ones((2, 1)), 0.5),
     r"theta must be a 2-D array of shape \(2, k\).*got shape \(3, 1\)"),
]


@pytest.mark.parametrize(("make", "match"), BAD)
def test_bad_parameters_raise(make, match):
    with pytest.raises(AnnealingError, match=match):
        make()


def test_bad_data_and_models_raise():
    model = LinearGenerative(np.ones((3, 2)), 0.5)
    with pytest.raises(AnnealingError, match=r"data must have shape \(N, 3\).*got shape \(4, 2\)"):
        pa.batched_ais(model, np.zeros((4, 2)), progressbar=False)
    with pytest.raises(AnnealingError, match="data"):
        pa.batched_ais(model, np.full((2, 3), np.inf), progressbar=False)
    with pytest.raises(AnnealingError, match="reshape"):
        model.check_data(np.zeros(3))
    with pytest.raises(AnnealingError, match="no closed-form likelihood"):
        LinearGenerative(np.ones((3, 2)), 0.5, prior="laplace").exact_log_likelihood(np.zeros((1, 3)))
    with pytest.raises(AnnealingError, match="batched_ais needs a generative model"):
        pa.batched_ais(pa.energy.LaplacePOE(np.eye(2)), np.zeros((1, 2)), progressbar=False)
    with pytest.raises(AnnealingError, match="num_steps"):
        pa.batched_ais(model, np.zeros((1, 3)), num_steps=0, progressbar=False)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_log_joint_graph_matches_numpy(dtype):
    rng = np.random.default_rng(10)
    models = [LinearGenerative(rng.normal(size=(4, 3)), 0.6, dtype=dtype),
              LinearGenerative(rng.normal(size=(4, 3)), 0.6, prior="laplace", dtype=dtype),
              BilinearGenerative(rng.normal(size=(4, 3)), rng.normal(size=(3, 2)),
                                 rng.normal(size=(3, 2)), 0.6, dtype=dtype)]
    for model in models:
        x = rng.normal(size=(5, 4))
        z = np.abs(rng.normal(size=(5, model.num_latent)))
        graph = model.log_joint(x.astype(dtype), z.astype(dtype)).eval()
        assert graph.dtype == dtype
        np.testing.assert_allclose(graph, model.log_joint_numpy(x, z),
                                   rtol=1e-12 if dtype == "float64" else 1e-5)
    # the joint integrates to the marginal: Gaussian prior, by Monte Carlo over the prior
    model = models[0]
    x = model.sample(1, rng=11)
    z = model.sample_prior(200_000, rng=12)
    log_lik = model.log_joint_numpy(np.repeat(x, z.shape[0], axis=0), z) - model._log_prior_numpy(z)
    mc = np.log(np.mean(np.exp(log_lik - log_lik.max()))) + log_lik.max()
    assert mc == pytest.approx(model.exact_log_likelihood(x)[0], abs=0.02)


@pytest.mark.slow  # at the defaults ("auto": sizing runs), as the float64 test
def test_float32_model_per_point_log_likelihood():
    rng = np.random.default_rng(0)
    model = LinearGenerative(rng.normal(size=(6, 4)), 0.5, dtype="float32")
    x = model.sample(4, rng=1)
    # at batched_ais's defaults, as the float64 model above: float32 must not cost accuracy
    result = pa.batched_ais(model, x, random_seed=2, progressbar=False)
    _check_points(result, LinearGenerative(model.basis, 0.5).exact_log_likelihood(x))
