"""The mcRBM (eq. 40): graph against its NumPy twin, log Z from ``ais`` at the defaults
against 2-d numerical integration, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pymc_anneal as pa
from pymc_anneal.energy import MCRBM
from pymc_anneal.exceptions import AnnealingError


def _model(num_dims=2, dtype="float64", seed=0):
    rng = np.random.default_rng(seed)
    return MCRBM(filters=rng.normal(size=(3, num_dims)),
                 pooling=-np.abs(rng.normal(size=(3, 2))),  # the mcRBM's P <= 0
                 cov_bias=rng.normal(size=2), mean_weights=rng.normal(size=(2, num_dims)),
                 mean_bias=rng.normal(size=2), visible_bias=0.3 * rng.normal(size=num_dims),
                 sigma=0.8, dtype=dtype)


def _energy_by_hand(model, x):
    """Eq. 40 term by term, one state at a time."""
    out = []
    for xi in x:
        norm = xi @ xi + 0.5
        e = 0.0
        for k in range(model.pooling.shape[1]):
            s = 0.5 * sum(model.pooling[l, k] * (model.filters[l] @ xi) ** 2 / norm
                          for l in range(model.filters.shape[0]))
            e -= np.log1p(np.exp(s + model.cov_bias[k]))
        for j in range(model.mean_weights.shape[0]):
            e -= np.log1p(np.exp(model.mean_weights[j] @ xi + model.mean_bias[j]))
        e += xi @ xi / (2 * model.sigma**2) - xi @ model.visible_bias
        out.append(-e)
    return np.array(out)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_graph_matches_numpy_and_eq_40(dtype):
    model = _model(num_dims=4, dtype=dtype)
    x = np.random.default_rng(1).normal(size=(7, 4)) * 2
    by_hand = _energy_by_hand(model, x)
    np.testing.assert_allclose(model.log_unnormalized_numpy(x), by_hand, rtol=1e-12)
    graph = model.log_unnormalized(x.astype(dtype)).eval()
    assert graph.dtype == dtype
    np.testing.assert_allclose(graph, by_hand, rtol=1e-12 if dtype == "float64" else 1e-5)


def _log_z_by_grid(model, half_width=8.0, num=1601):
    grid = np.linspace(-half_width, half_width, num)
    xx, yy = np.meshgrid(grid, grid, indexing="ij")
    log_f = model.log_unnormalized_numpy(np.column_stack([xx.ravel(), yy.ravel()]))
    m = log_f.max()
    h = grid[1] - grid[0]
    return m + np.log(np.exp(log_f - m).sum() * h * h)


@pytest.mark.slow  # num_steps="auto" chooses more temperatures than the old fixed 1000
def test_ais_at_the_defaults_matches_numerical_integration():
    model = _model()
    exact = _log_z_by_grid(model)
    assert exact == pytest.approx(_log_z_by_grid(model, 10.0, 2001), abs=1e-8)  # converged
    est = pa.log_evidence(pa.ais(model, random_seed=3, progressbar=False))
    err = est.log_evidence - exact
    assert abs(err) < 3 * max(est.standard_error, est.chain_sd) and abs(err) < 0.05, (err, est)


BAD = [
    (dict(filters=np.ones(3)), r"filters of an MCRBM must have shape \(rows, columns\), got shape \(3,\)"),
    (dict(pooling=np.ones((2, 2))), r"pooling of an MCRBM must have shape \(num_filters, num_cov_units\), got shape \(2, 2\)"),
    (dict(mean_weights=np.ones((2, 3))), r"mean_weights of an MCRBM must have shape \(num_mean_units, 2\)"),
    (dict(cov_bias=np.ones(3)), r"cov_bias of an MCRBM must have shape \(2,\), got shape \(3,\)"),
    (dict(visible_bias=np.array([0.0, np.nan])), "visible_bias"),
    (dict(sigma=-1.0), "sigma"),
]


@pytest.mark.parametrize(("change", "match"), BAD)
def test_bad_parameters_raise(change, match):
    model = _model()
    args = dict(filters=model.filters, pooling=model.pooling, cov_bias=model.cov_bias,
                mean_weights=model.mean_weights, mean_bias=model.mean_bias,
                visible_bias=model.visible_bias, sigma=model.sigma)
    with pytest.raises(AnnealingError, match=match):
        MCRBM(**{**args, **change})
