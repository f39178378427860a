"""The ArviZ groups of a sample_ais result (observed_data, constant_data, log_likelihood),
checked against PyMC's layout and a closed form, and read by az.loo / az.compare beside the
evidence tools of pymc_anneal."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats

import pymc_anneal as pa
from pymc_anneal.pymc.arviz_groups import add_arviz_groups

SEED = 24
X = np.linspace(-1.0, 1.0, 8)
SLOPE, NOISE_SD = 0.7, 0.5
Y = np.array([-1.1, -0.4, -0.6, 0.2, 0.1, 0.9, 0.5, 1.3])
# K = 200: the poor prior's path (its posterior 5 prior sds from its mean) at K = 50 gave
# heavy-tailed weights (the AnnealingWarning) at 5-6 seeds of 48, whatever the pilot's
# streams; at K = 200, at none of 48
SETTINGS = {"draws": 300, "chains": 2, "num_steps": 200, "backend": "jax", "progressbar": False}


def _model(prior_mean: float, prior_sd: float) -> pm.Model:
    """``y_i ~ Normal(mu + slope x_i, noise_sd)`` with ``mu ~ Normal(prior_mean, prior_sd)``;
    ``x`` and the scalar ``slope`` are pm.Data, ``shift`` a Deterministic."""
    with pm.Model(coords={"obs": [f"o{i}" for i in range(X.size)]}) as model:
        x = pm.Data("x", X, dims="obs")
        slope = pm.Data("slope", SLOPE)
        mu = pm.Normal("mu", prior_mean, prior_sd)
        pm.Deterministic("shift", 2.0 * mu)
        pm.Normal("y", mu + slope * x, NOISE_SD, observed=Y, dims="obs")
    return model


@pytest.fixture(scope="module")
def good():
    model = _model(0.0, 1.0)
    result = pa.sample_ais(model=model, random_seed=SEED, **SETTINGS)
    return model, result, add_arviz_groups(result, model, log_likelihood=True)


@pytest.fixture(scope="module")
def poor():
    """The same data under a prior far from them: worse by evidence and by LOO."""
    model = _model(-2.0, 0.3)
    result = pa.sample_ais(model=model, random_seed=SEED + 1, **SETTINGS)
    return model, result, add_arviz_groups(result, model, log_likelihood=True)


def _closed_form_log_likelihood(posterior: xr.Dataset) -> np.ndarray:
    mu = posterior["mu"].transpose("chain", "draw").values[..., None]
    return stats.norm.logpdf(Y, mu + SLOPE * X, NOISE_SD)


def test_data_groups_have_pymc_layout(good):
    """sample_ais writes observed_data and constant_data itself, as pm.sample does, and
    log_likelihood only on request."""
    model, result, _ = good
    assert {"observed_data", "constant_data"} <= set(result.children)
    assert "log_likelihood" not in result.children
    extended = add_arviz_groups(result, model)
    observed = extended["observed_data"]
    assert observed["y"].dims == ("obs",)
    np.testing.assert_array_equal(observed["y"].values, Y)
    assert list(observed["obs"].values) == list(model.coords["obs"])
    constant = extended["constant_data"]
    assert constant["x"].dims == ("obs",) and constant["slope"].dims == ()
    np.testing.assert_array_equal(constant["x"].values, X)
    assert float(constant["slope"]) == SLOPE
    for name in result.children:  # the groups of sample_ais are untouched
        xr.testing.assert_equal(extended[name].dataset, result[name].dataset)


def test_sample_ais_writes_the_log_likelihood_on_request(good):
    """idata_kwargs={"log_likelihood": True}, as pm.sample takes it: the same group as
    add_arviz_groups writes on the same run."""
    model, result, extended = good
    asked = pa.sample_ais(model=model, random_seed=SEED, idata_kwargs={"log_likelihood": True},
                          **SETTINGS)
    xr.testing.assert_equal(asked["log_likelihood"].dataset,
                                extended["log_likelihood"].dataset)
    with pytest.raises(pa.AnnealingError, match=r"idata_kwargs takes the key\(s\) "
                                                r"\['log_likelihood'\], got \['loglik'\]"):
        pa.sample_ais(model=model, idata_kwargs={"loglik": True}, **SETTINGS)


def test_log_likelihood_is_pointwise_at_the_posterior_draws(good):
    _, result, extended = good
    log_lik = extended["log_likelihood"]["y"]
    assert log_lik.dims == ("chain", "draw", "obs")
    assert log_lik.shape == (SETTINGS["chains"], SETTINGS["draws"], X.size)
    # PyMC's compiled log-density and scipy's agree to round-off (about 1e-9 nat here)
    np.testing.assert_allclose(log_lik.values, _closed_form_log_likelihood(result["posterior"]),
                               rtol=0, atol=1e-7)


def test_loo_reads_the_result(good):
    """az.loo on the result equals az.loo on the same draws with the closed-form
    log-likelihood, built as ArviZ's own converter builds a tree."""
    _, result, extended = good
    posterior = result["posterior"]
    reference = az.from_dict({
        "posterior": {"mu": posterior["mu"].values},
        "log_likelihood": {"y": _closed_form_log_likelihood(posterior)},
    }, dims={"y": ["obs"]})
    loo, expected = az.loo(extended, pointwise=True), az.loo(reference, pointwise=True)
    # equal up to the round-off of the pointwise values (1e-7 nat each, 8 points)
    assert loo.elpd == pytest.approx(expected.elpd, rel=0, abs=1e-5)
    assert loo.se == pytest.approx(expected.se, rel=0, abs=1e-5)
    np.testing.assert_allclose(loo.pareto_k.values, expected.pareto_k.values, atol=1e-5)


def test_compare_ranks_loo_and_evidence_alike(good, poor):
    results = {"good": good[2], "poor": poor[2]}
    table = az.compare(results, round_to="none")
    assert list(table.index) == ["good", "poor"]
    evidence = pa.compare(results)  # the evidence tools read the extended trees
    assert list(evidence.index) == ["good", "poor"]
    # LOO beside the evidence, in one table: the same numbers as az.compare's
    np.testing.assert_allclose(evidence["elpd_loo"], table.loc[evidence.index, "elpd"],
                               rtol=1e-12)
    np.testing.assert_allclose(evidence["elpd_loo_se"], table.loc[evidence.index, "se"],
                               rtol=1e-12)
    assert "elpd_loo" not in pa.compare({"good": good[1], "poor": poor[1]}).columns
    for plain, extended in ((good[1], good[2]), (poor[1], poor[2])):
        assert pa.log_evidence(extended) == pa.log_evidence(plain)
    assert pa.bayes_factor(good[2], poor[2]) == pa.bayes_factor(good[1], poor[1])


def test_refuses_what_it_cannot_extend(good):
    model, result, _ = good
    with pytest.raises(pa.AnnealingError, match="needs the DataTree returned by .*got dict"):
        add_arviz_groups({}, model)
    with pytest.raises(pa.AnnealingError, match="needs the pymc.Model .*got str"):
        add_arviz_groups(result, "model")
    no_posterior = xr.DataTree.from_dict({"sample_stats": result["sample_stats"].dataset})
    with pytest.raises(pa.AnnealingError, match=r"needs the 'posterior' group .*\['sample_stats'"):
        add_arviz_groups(no_posterior, model, log_likelihood=True)
    with pm.Model() as prior_only:
        pm.Normal("mu")
    with pytest.raises(pa.AnnealingError, match=r"model with observed variables.*\['mu'\]"):
        add_arviz_groups(result, prior_only, log_likelihood=True)
