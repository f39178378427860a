"""The AIS base of a PyMC model: exact prior draws in the unconstrained space, batched.

``adapter._prior_sampler`` draws all particles in one call of the model's forward graph
with a leading batch axis (``_batched_draws``). Its draws are compared with draws of the
unbatched graph called once per particle (the reference: PyMC's own ancestral sampling),
coordinate by coordinate (two-sample KS) and through the dependence between variables
(the correlations a hierarchy induces), on a model that mixes hierarchies, transforms with
random bounds, a simplex, and parameters of several batch shapes. The number of draws is
chosen equal to a dimension length of the model, where a misaligned batch axis would
broadcast silently instead of failing.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import scipy.stats
from pymc.initial_point import make_initial_point_expression
from pymc.pytensorf import compile as compile_pymc
from pymc.pytensorf import find_rng_nodes, reseed_rngs

from pymc_anneal.pymc import adapter

NUM_DRAWS = 8  # = theta's length: a batch axis that lined up with it would not fail


def mixed_model() -> pm.Model:
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        tau = pm.HalfNormal("tau", 1.0)
        pm.Normal("theta", mu, tau, shape=8)
        lower = pm.Normal("lower", 0.0, 1.0)
        pm.Uniform("u", lower=lower, upper=lower + 2.0, shape=3)
        pm.Dirichlet("w", np.ones(4))
        loc = pm.Normal("loc", mu, 1.0, shape=(2, 3))
        scale = pm.Gamma("scale", 2.0, 2.0, shape=3)
        pm.Normal("v", loc, scale, shape=(4, 2, 3))
        pm.Normal("y", mu, 1.0, observed=[0.1])
    return model


def _num_dims(model) -> int:
    point = model.initial_point()
    return int(sum(np.size(point[v.name]) for v in model.value_vars))


def _reference_draws(model, num_draws: int, seed: int) -> np.ndarray:
    """One call of the unbatched forward graph per draw."""
    exprs = make_initial_point_expression(
        free_rvs=model.free_RVs, rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies={}, default_strategy="prior", return_transformed=True)
    flat = pt.concatenate([pt.as_tensor(e).ravel().astype("float64") for e in exprs])
    fn = compile_pymc(inputs=[], outputs=flat, random_seed=False, mode="FAST_COMPILE")
    reseed_rngs(find_rng_nodes([flat]), np.random.default_rng(seed).integers(2**63, size=4))
    return np.stack([fn() for _ in range(num_draws)])


def test_the_mixed_model_is_batched_in_one_call():
    model = mixed_model()
    keep = [True] * len(model.free_RVs)
    exprs = make_initial_point_expression(
        free_rvs=model.free_RVs, rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies={}, default_strategy="prior", return_transformed=True)
    flat = pt.concatenate([pt.as_tensor(e).ravel().astype("float64") for e in exprs])
    assert adapter._batched_draws(flat, pt.lscalar("n")) is not None
    draws = adapter._prior_sampler(model, keep, _num_dims(model))(np.random.default_rng(0),
                                                                   NUM_DRAWS)
    assert draws.shape == (NUM_DRAWS, _num_dims(model))
    assert len(np.unique(draws[:, 0])) == NUM_DRAWS  # independent draws, not one repeated


def _draws_against_reference(model, seed: int):
    """20,000 batched draws and as many of the reference, after a two-sample KS test of
    each coordinate (Bonferroni over them); with the columns' variable names."""
    d = _num_dims(model)
    n = 20_000
    sampler = adapter._prior_sampler(model, [True] * len(model.free_RVs), d)
    batched = np.concatenate([sampler(np.random.default_rng(s), n // 4) for s in range(4)])
    reference = _reference_draws(model, n, seed=seed)
    p_values = [scipy.stats.ks_2samp(batched[:, j], reference[:, j]).pvalue for j in range(d)]
    assert min(p_values) > 0.001 / d  # Bonferroni over the coordinates
    names = []
    point = model.initial_point()
    for v in model.value_vars:
        names += [v.name] * int(np.size(point[v.name]))
    return batched, reference, names


@pytest.mark.slow
def test_batched_draws_have_the_prior_distribution():
    batched, reference, names = _draws_against_reference(mixed_model(), seed=99)
    # the dependence the hierarchy induces: corr(mu, theta_j) = 1 / sqrt(1 + E[tau^2]) ... is
    # compared with the reference (its sampling sd is about 1 / sqrt(n) = 0.007)
    mu, theta = names.index("mu"), names.index("theta")
    for j in range(theta, theta + 8):
        batched_r = np.corrcoef(batched[:, mu], batched[:, j])[0, 1]
        reference_r = np.corrcoef(reference[:, mu], reference[:, j])[0, 1]
        assert abs(batched_r - reference_r) < 0.05, (j, batched_r, reference_r)
        assert batched_r > 0.5  # theta_j ~ N(mu, tau): strongly tied to mu, not independent


def test_the_same_seed_gives_the_same_draws():
    model = mixed_model()
    sampler = adapter._prior_sampler(model, [True] * len(model.free_RVs), _num_dims(model))
    a = sampler(np.random.default_rng(3), 5)
    b = sampler(np.random.default_rng(3), 5)
    c = sampler(np.random.default_rng(4), 5)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def _flat_draw(model):
    exprs = make_initial_point_expression(
        free_rvs=model.free_RVs, rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies={}, default_strategy="prior", return_transformed=True)
    return pt.concatenate([pt.as_tensor(e).ravel().astype("float64") for e in exprs])


def symbolic_model() -> pm.Model:
    """PyMC's symbolic distributions (inner graphs of random variables), one of each kind,
    and a parameter drawn from one of them."""
    with pm.Model() as model:
        hc = pm.HalfCauchy("hc", 2.0)
        pm.LogNormal("ln", 0.0, hc, shape=3)
        pm.HalfStudentT("hst", nu=3.0, sigma=2.0)
        pm.Mixture("mix", w=[0.2, 0.3, 0.5],
                   comp_dists=[pm.Normal.dist(-3.0, 1.0), pm.StudentT.dist(nu=3.0, sigma=1.0),
                               pm.Normal.dist(3.0, 0.5)], shape=3)
        pm.ZeroSumNormal("zsn", sigma=hc, shape=4)
        pm.GaussianRandomWalk("grw", mu=0.0, sigma=1.0, init_dist=pm.Normal.dist(0.0, 1.0),
                              steps=4)
        pm.Truncated("trunc", pm.Normal.dist(0.0, 1.0), lower=-1.0, upper=2.0)
        pm.Normal("y", 0.0, 1.0, observed=[0.1])
    return model


def test_symbolic_distributions_are_batched_in_one_call():
    """HalfCauchy, mixtures and the rest are inner graphs of random variables: inlined and
    batched (eight schools' 5,000 prior draws: 0.55 s one call per draw)."""
    model = symbolic_model()
    assert adapter._batched_draws(_flat_draw(model), pt.lscalar("n")) is not None
    d = _num_dims(model)
    draws = adapter._prior_sampler(model, [True] * len(model.free_RVs), d)(
        np.random.default_rng(0), NUM_DRAWS)
    assert draws.shape == (NUM_DRAWS, d)
    for j in range(d):  # independent draws in every coordinate, not one repeated
        assert len(np.unique(draws[:, j])) == NUM_DRAWS, j


@pytest.mark.slow
def test_batched_symbolic_draws_have_the_prior_distribution():
    batched, reference, names = _draws_against_reference(symbolic_model(), seed=98)
    # ln's log-scale is hc: the spread of ln given hc ties the coordinates' log magnitudes
    hc, ln = names.index("hc_log__"), names.index("ln_log__")
    for draws in (batched, reference):
        r = scipy.stats.spearmanr(draws[:, hc], np.abs(draws[:, ln])).statistic
        assert r > 0.3, r  # |log ln| grows with hc: drawn from the same hc, not apart
    r_batched = scipy.stats.spearmanr(batched[:, hc], np.abs(batched[:, ln])).statistic
    r_reference = scipy.stats.spearmanr(reference[:, hc], np.abs(reference[:, ln])).statistic
    assert abs(r_batched - r_reference) < 0.05


def test_a_mixture_prior_is_drawn_exactly():
    with pm.Model() as model:
        pm.NormalMixture("m", w=[0.3, 0.7], mu=[-2.0, 2.0], sigma=[0.5, 0.5])
        pm.Normal("y", 0.0, 1.0, observed=[0.0])
    assert adapter._batched_draws(_flat_draw(model), pt.lscalar("n")) is not None
    draws = adapter._prior_sampler(model, [True], 1)(np.random.default_rng(0), 4000)[:, 0]
    assert draws.shape == (4000,)
    share_positive = np.mean(draws > 0)
    assert abs(share_positive - 0.7) < 4 * np.sqrt(0.7 * 0.3 / 4000)


def test_a_scan_of_draws_falls_back_to_one_draw_per_call():
    """An autoregression draws through a ``Scan`` that holds its random generator: not
    batched (one stream could be shared across the batch), but still drawn exactly."""
    with pm.Model() as model:
        pm.AR("ar", rho=[0.9], sigma=1.0, init_dist=pm.Normal.dist(0.0, 1.0), steps=3)
        pm.Normal("y", 0.0, 1.0, observed=[0.0])
    assert adapter._batched_draws(_flat_draw(model), pt.lscalar("n")) is None
    draws = adapter._prior_sampler(model, [True], 4)(np.random.default_rng(0), 4000)
    # the stationary start aside, x_1 = 0.9 x_0 + e: var 0.81 + 1
    assert abs(np.var(draws[:, 1]) - 1.81) < 4 * 1.81 * np.sqrt(2 / 4000)
    assert abs(np.corrcoef(draws[:, 0], draws[:, 1])[0, 1] - 0.9 / np.sqrt(1.81)) < 0.05


@pytest.mark.parametrize("num_draws", [0, 1])
def test_edge_counts(num_draws):
    model = mixed_model()
    sampler = adapter._prior_sampler(model, [True] * len(model.free_RVs), _num_dims(model))
    assert sampler(np.random.default_rng(0), num_draws).shape == (num_draws, _num_dims(model))
