"""Non-centred coordinates for a funnel's Normal variables (``pymc/noncentered.py``): chosen
from the graph, a log density that is PyMC's at the mapped point plus the Jacobian, and
the evidence of funnels against quadrature."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats

import pymc_anneal as pa
from pymc_anneal.exceptions import AnnealingWarning
from pymc_anneal.pymc import adapter, bases, laplace
from pymc_anneal.pymc.noncentered import noncentered_variables


def test_the_candidates_are_read_from_the_graph():
    """A Normal whose scale reads a free variable, directly or through an expression or
    another candidate; not one whose location alone does, nor a transformed one, nor
    another family, nor a model with a discrete free variable."""
    with pm.Model() as model:
        s = pm.HalfNormal("s")
        pm.Normal("a", 0.0, s, shape=3)
        b = pm.Normal("b", 1.0, 2.0)
        pm.Normal("c", b, 2.0)  # location only: no funnel
        pm.Normal("d", 0.0, 2 * s + b**2)
        pm.Normal("e", 0.0, s, transform=pm.distributions.transforms.ordered, shape=2,
                  initval=[0.0, 1.0])
        pm.StudentT("f", nu=3, mu=0.0, sigma=s)
        pm.Normal("y", b, 1.0, observed=[0.5])
    assert noncentered_variables(model) == ("a", "d")
    with model:
        pm.Poisson("k", 3.0)
    assert noncentered_variables(model) == ()


def _two_levels():
    """Two non-centred levels, the second's location and scale reading the first, an
    interval-transformed scale, and data on both."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 3.0)
        tau = pm.HalfCauchy("tau", 2.0)
        theta = pm.Normal("theta", mu, tau, shape=4)
        width = pm.Uniform("width", 0.0, 10.0)
        eta = pm.Normal("eta", theta.sum(), width * tau, shape=2)
        pm.Normal("y", theta[[0, 1, 2, 3, 0]] + eta[[0, 1, 0, 1, 1]], 1.0,
                  observed=[0.3, -1.2, 2.0, 0.7, 1.1])
        pm.Deterministic("total", theta.sum() + eta.sum())
    return model


def test_the_log_density_is_pymcs_at_the_mapped_point_plus_the_jacobian():
    """At 64 wide random points of the path's coordinates: the path's log prior and
    log-likelihood are PyMC's at ``theta = mu + tau z``, ``eta = sum(theta) + width tau z'``,
    the prior plus ``log`` of the Jacobian (``4 log tau + 2 log(width tau)``); the map to
    the path's coordinates inverts it, and the outputs are the model's variables there."""
    model = _two_levels()
    mp = adapter.model_path(model, noncentered=True)
    assert mp.noncentered == ("theta", "eta")
    columns = {name: sl for name, sl, _ in mp.value_slices}
    assert list(columns) == ["mu", "tau_log__", "theta_noncentered__", "width_interval__",
                             "eta_noncentered__"]
    rng = np.random.default_rng(7)
    z = rng.standard_normal((64, mp.path.num_dims)) * rng.choice([0.3, 1.0, 4.0], (64, 1))
    x = pt.matrix("x", dtype="float64")
    lp, ll = mp.path.build_log_densities(x)
    path_lp, path_ll = pytensor.function([x], [lp, ll])(z)
    logp_prior = model.compile_logp(vars=model.free_RVs)
    logp_lik = model.compile_logp(vars=model.observed_RVs)
    values = np.empty_like(z)
    for i, row in enumerate(z):
        mu, log_tau, width_x = row[columns["mu"]][0], row[1], row[columns["width_interval__"]][0]
        tau, width = np.exp(log_tau), 10.0 / (1.0 + np.exp(-width_x))
        theta = mu + tau * row[columns["theta_noncentered__"]]
        eta = theta.sum() + width * tau * row[columns["eta_noncentered__"]]
        point = {"mu": mu, "tau_log__": log_tau, "theta": theta, "width_interval__": width_x,
                 "eta": eta}
        jacobian = 4 * np.log(tau) + 2 * np.log(width * tau)
        np.testing.assert_allclose(path_lp[i], logp_prior(point) + jacobian, rtol=1e-10)
        np.testing.assert_allclose(path_ll[i], logp_lik(point), rtol=1e-10)
        values[i] = np.concatenate([np.ravel(v) for v in point.values()])
    np.testing.assert_allclose(mp.coordinates(values), z, rtol=1e-9, atol=1e-9)
    out = mp.to_variables(z[None])
    np.testing.assert_allclose(out["theta"][0], values[:, 2:6], rtol=1e-12)
    np.testing.assert_allclose(out["total"][0], values[:, 2:6].sum(1) + values[:, 7:].sum(1),
                               rtol=1e-10, atol=1e-12)


def test_a_scale_that_is_not_positive_gives_minus_infinity():
    """A scale written ``s - 1`` is negative for ``s < 1``: PyMC's log density is ``-inf``
    there, and so is the path's (not NaN: the Jacobian's log of a negative scale)."""
    with pm.Model() as model:
        s = pm.HalfNormal("s", 3.0)
        pm.Normal("theta", 0.0, s - 1.0, shape=3)
        pm.Normal("y", 0.0, 1.0, observed=[0.2])
    mp = adapter.model_path(model, noncentered=True)
    x = pt.matrix("x", dtype="float64")
    lp, ll = mp.path.build_log_densities(x)
    points = np.array([[np.log(0.5), 0.1, -0.2, 0.3], [np.log(3.0), 0.1, -0.2, 0.3]])
    values = pytensor.function([x], lp + ll)(points)
    assert values[0] == -np.inf and np.isfinite(values[1]), values


def test_prior_draws_map_to_standard_normals():
    """The path's base draws are the model's own prior draws mapped: each non-centred
    coordinate is N(0, 1) whatever the scales (2,000 draws; KS test at a fixed seed)."""
    mp = adapter.model_path(_two_levels(), noncentered=True)
    draws = mp.path.sample_base(np.random.default_rng(3), 2000)
    for name, sl, _ in mp.value_slices:
        if name.endswith("_noncentered__"):
            for column in draws[:, sl].T:
                assert stats.kstest(column, "norm").pvalue > 1e-3


def _groups(seed: int):
    """Groups of observations ``y_ij ~ N(theta_j, 1)``, ``theta_j ~ N(mu, tau)``,
    ``mu ~ N(0, 2)``, ``tau ~ HalfNormal(1)``, the data drawn with a small ``tau``: most of
    the posterior's mass lies in the funnel's neck. Exact evidence: ``theta`` and ``mu``
    integrated (Gaussian), ``tau`` by quadrature."""
    rng = np.random.default_rng(seed)
    groups, per = int(rng.integers(5, 9)), int(rng.integers(4, 12))
    index = np.repeat(np.arange(groups), per)
    y = rng.normal(0.5, 1.0, groups * per) + rng.normal(0, 0.05, groups)[index]
    member = np.eye(groups)[index]

    def log_given_tau(tau):
        cov = np.eye(y.size) + tau**2 * member @ member.T + 4.0
        return stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y)

    shift = log_given_tau(0.0)
    value = integrate.quad(lambda t: 2 * stats.norm.pdf(t) * np.exp(log_given_tau(t) - shift),
                           0, np.inf, epsabs=0, epsrel=1e-11, limit=200)[0]
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        tau = pm.HalfNormal("tau", 1.0)
        theta = pm.Normal("theta", mu, tau, shape=groups)
        pm.Normal("y", theta[index], 1.0, observed=y)
    return model, float(np.log(value) + shift)


@pytest.mark.parametrize("seed", [11, 12])
def test_a_funnels_evidence_in_non_centred_coordinates(seed):
    """At the defaults, a centred funnel whose Laplace fit runs into the neck takes
    non-centred coordinates and gets the exact evidence within 4 standard errors, without
    a warning."""
    model, exact = _groups(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AnnealingWarning)
        idata = pa.sample_ais(model=model, random_seed=seed, progressbar=False)
    assert idata.attrs["noncentered"] == ["theta"], dict(idata.attrs)
    assert "ran into a funnel's neck" in idata.attrs["noncentered_reason"]
    est = pa.log_evidence(idata)
    assert abs(est.log_evidence - exact) < 4 * est.standard_error, (est, exact)
    assert idata.posterior["theta"].shape[-1] == model["theta"].eval().shape[0]


def test_a_model_without_a_neck_keeps_its_coordinates():
    """A hierarchical model whose data pin the group effects down has a mode as written:
    its path is the one it was (no ``noncentered`` attribute, the route's census drawn from
    a stream of its own), bit for bit the run of ``base="auto"`` without the route."""
    rng = np.random.default_rng(5)
    index = np.repeat(np.arange(4), 30)
    y = rng.normal(np.array([-3.0, 0.0, 2.0, 5.0])[index], 0.5)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 5.0)
        theta = pm.Normal("theta", mu, tau, shape=4)
        pm.Normal("y", theta[index], 0.5, observed=y)
    mp = adapter.model_path(model)
    assert bases.noncentered_route(model, mp, "auto", np.random.default_rng(0)) == (mp, {})
    with warnings.catch_warnings():  # the route is tested here, not the estimate: at 200 x 2
        # particles 4-6 of 30 seeds warn of a heavy tail (seed 1 among them since 5120b8d)
        warnings.simplefilter("ignore", pa.AnnealingWarning)
        idata = pa.sample_ais(model=model, random_seed=1, draws=200, chains=2,
                              progressbar=False)
    assert "noncentered" not in idata.attrs


def test_the_neck_is_found_on_the_model_as_written():
    """Centred eight schools: the census on the written coordinates stops where the
    gradient is still steep, and says so; in non-centred coordinates it finds a mode."""
    from tests.eight_schools import build_model

    model = build_model()
    written = adapter.model_path(model)
    with pytest.raises(laplace.NeckError, match="grows without bound"):
        bases._laplace_base(model, written, np.random.default_rng(0))
    mp, attrs = bases.noncentered_route(model, written, "auto", np.random.default_rng(0))
    assert mp.noncentered == ("theta",) and attrs["noncentered"] == ["theta"]
    bases._laplace_base(model, mp, np.random.default_rng(0))  # a mode: no error


def test_data_swapped_in_are_read_by_the_map_and_the_density():
    """A location that reads a ``pm.Data`` container: after ``pm.set_data`` the path's log
    density is PyMC's at the point mapped with the new data, and the map to the path's
    coordinates uses them too (at 32 random points, before and after)."""
    with pm.Model() as model:
        w = pm.Data("w", np.array([1.0, -2.0, 0.5]))
        y = pm.Data("y", np.array([0.4, -1.0, 0.9]))
        mu = pm.Normal("mu", 0.0, 2.0)
        tau = pm.HalfNormal("tau", 1.0)
        theta = pm.Normal("theta", mu * w, tau, shape=3)
        pm.Normal("obs", theta, 0.7, observed=y)
    x = pt.matrix("x", dtype="float64")
    rng = np.random.default_rng(21)
    for w_value in ([1.0, -2.0, 0.5], [3.0, 0.25, -4.0]):
        pm.set_data({"w": np.array(w_value), "y": rng.normal(size=3)}, model=model)
        mp = adapter.model_path(model, noncentered=True)
        lp, ll = mp.path.build_log_densities(x)
        z = rng.standard_normal((32, 5)) * 2.0
        got = pytensor.function([x], lp + ll)(z)
        logp = model.compile_logp()
        values = z.copy()
        values[:, 2:] = z[:, :1] * np.array(w_value) + np.exp(z[:, 1:2]) * z[:, 2:]
        for i in range(len(z)):
            point = {"mu": values[i, 0], "tau_log__": values[i, 1], "theta": values[i, 2:]}
            np.testing.assert_allclose(got[i], logp(point) + 3 * z[i, 1], rtol=1e-10)
        np.testing.assert_allclose(mp.coordinates(values), z, rtol=1e-9, atol=1e-9)
