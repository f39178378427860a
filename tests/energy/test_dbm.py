"""The two-layer deep Boltzmann machine: exact quantities against brute-force enumeration
of (v, h1, h2), forward AIS and RAISE (Algorithm 3, with heating) against them, and bad
input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pymc_anneal as pa
from pymc_anneal.energy import DeepBoltzmannMachine
from pymc_anneal.exceptions import AnnealingError


def _states(n):
    return np.array(list(itertools.product([0.0, 1.0], repeat=n)))


@pytest.fixture(scope="module")
def dbm():
    rng = np.random.default_rng(0)
    return DeepBoltzmannMachine(rng.normal(0, 1, (6, 4)), rng.normal(0, 1, (4, 3)),
                                rng.normal(0, 0.5, 6), rng.normal(0, 0.5, 4),
                                rng.normal(0, 0.5, 3))


@pytest.fixture(scope="module")
def brute_force(dbm):
    """log f(v) for all 2^6 visible vectors, summing exp(-E) over all (h1, h2)."""
    h1, h2 = _states(dbm.n_hidden1), _states(dbm.n_hidden2)
    v = _states(dbm.n_visible)
    neg_energy = (np.einsum("vi,ij,aj->va", v, dbm.W1, h1)[:, :, None]
                  + np.einsum("aj,jk,bk->ab", h1, dbm.W2, h2)[None]
                  + (v @ dbm.visible_bias)[:, None, None] + (h1 @ dbm.hidden1_bias)[None, :, None]
                  + (h2 @ dbm.hidden2_bias)[None, None, :])
    flat = neg_energy.reshape(v.shape[0], -1)
    top = flat.max(axis=1, keepdims=True)
    log_f = top[:, 0] + np.log(np.exp(flat - top).sum(axis=1))
    return v, log_f


@pytest.fixture(scope="module")
def test_points():
    return (np.random.default_rng(5).random((8, 6)) < 0.5).astype(float)


def test_exact_quantities_match_brute_force(dbm, brute_force):
    v, log_f = brute_force
    log_z = np.logaddexp.reduce(log_f)
    assert dbm.exact_log_z() == pytest.approx(log_z, abs=1e-10)
    np.testing.assert_allclose(dbm.log_unnormalized_numpy(v), log_f, rtol=0, atol=1e-10)
    np.testing.assert_allclose(dbm.log_unnormalized(v).eval(), log_f, rtol=0, atol=1e-10)
    # h1 summed out: log f(v, h2) summed over h2 is log f(v)
    h2 = _states(dbm.n_hidden2)
    joint = np.array([np.logaddexp.reduce(dbm.log_joint_numpy(np.repeat(row[None], 8, 0), h2))
                      for row in v])
    np.testing.assert_allclose(joint, log_f, rtol=0, atol=1e-10)


def test_importance_sampled_log_f(dbm, brute_force):
    v, log_f = brute_force
    est, se = dbm.estimate_log_unnormalized(v[:10], num_samples=500, rng=1)
    assert np.all(np.abs(est - log_f[:10]) < 4 * se + 1e-12)


def test_forward_ais_log_z(dbm):
    est = pa.log_evidence(pa.ais(dbm, random_seed=1, progressbar=False))
    err = est.log_evidence - dbm.exact_log_z()
    assert abs(err) < 3 * max(est.standard_error, est.chain_sd) and abs(err) < 0.05


@pytest.mark.parametrize("base", ["uniform", "data"])
def test_raise_algorithm_3_against_the_exact_test_log_likelihood(dbm, test_points, base):
    """RAISE with heating: at K = 3 at or below the exact average within 3 SE, within 0.1 nat
    (and 3 SE) at K = 1000; AIS's estimate of the average, log f(v) - log Z-hat, not below
    it beyond their errors."""
    exact = np.mean(dbm.log_unnormalized_numpy(test_points)) - dbm.exact_log_z()
    train = (np.random.default_rng(9).random((50, 6)) < 0.4).astype(float)
    options = {"base": base, "base_data": train} if base == "data" else {}
    results = {}
    for k in (3, 1000):
        r = pa.reverse_ais(dbm, test_points, num_steps=k, draws=200, random_seed=2,
                           progressbar=False, **options)
        assert r.attrs["algorithm"] == 3
        results[k] = (r["sample_stats"]["mean_log_likelihood"].item(),
                      r["sample_stats"]["mean_log_likelihood_se"].item())
    low, low_se = results[3]
    assert low < exact + 3 * low_se
    high, high_se = results[1000]
    assert abs(high - exact) < 0.1 and abs(high - exact) < 3 * high_se + 0.01
    # the sandwich at the same small K: AIS's estimate log f(v) - log Z-hat (biased up) is
    # not below RAISE's (biased down) beyond their joint error
    ais_options = {"base": base, "data": train} if base == "data" else {}
    forward = pa.log_evidence(pa.ais(dbm, num_steps=3, random_seed=3, progressbar=False,
                                     **ais_options))
    ais = np.mean(dbm.log_unnormalized_numpy(test_points)) - forward.log_evidence
    assert ais > low - 3 * np.hypot(low_se, max(forward.standard_error, forward.chain_sd))


def test_sandwich_on_a_dbm(dbm, test_points):
    result = pa.sandwich(dbm, test_points, num_steps=[1000], draws=100, random_seed=4,
                         progressbar=False)
    stats = result["sample_stats"]
    exact = np.mean(dbm.log_unnormalized_numpy(test_points)) - dbm.exact_log_z()
    ais, raised = float(stats["ais"].values[0]), float(stats["raise"].values[0])
    assert raised - 0.1 < exact < ais + 0.1


def test_bad_input(dbm):
    rng = np.random.default_rng(0)
    with pytest.raises(AnnealingError, match=r"W2\).*must match W of shape \(4, 3\)|biases of a DeepBoltzmannMachine \(W2\)"):
        DeepBoltzmannMachine(rng.normal(size=(6, 4)), rng.normal(size=(5, 3)), np.zeros(6),
                             np.zeros(4), np.zeros(3))
    with pytest.raises(AnnealingError, match="must be binary"):
        pa.reverse_ais(dbm, np.full((2, 6), 0.5), num_steps=10, progressbar=False)
    with pytest.raises(AnnealingError, match=r"data must have shape \(N, 6\)"):
        pa.reverse_ais(dbm, np.zeros((2, 5)), num_steps=10, progressbar=False)
    with pytest.raises(AnnealingError, match="num_steps"):
        pa.reverse_ais(dbm, np.zeros((2, 6)), num_steps=0, progressbar=False)
    big = DeepBoltzmannMachine(np.zeros((2, 2)), np.zeros((2, 20)), np.zeros(2), np.zeros(2),
                               np.zeros(20))
    with pytest.raises(AnnealingError, match="estimate_log_unnormalized"):
        big.log_unnormalized_numpy(np.zeros((1, 2)))


def _one_sweep_annealing_model(dbm, test, base_bias):
    """p_ann(v) = sum_{h2} sum_{x0} p_0(x0) T_1((v, h2) | x0) for K = 1, exactly: T_1 is one
    Gibbs sweep of the (v, h2)-RBM (h1 | x, then x | h1) at beta = 1, p_0 has independent
    units with log-odds ``base_bias``."""
    rbm = dbm.joint_rbm
    x = _states(rbm.n_visible)
    h1 = _states(rbm.n_hidden)
    sig = lambda a: 1.0 / (1.0 + np.exp(-a))  # noqa: E731
    p_h = sig(x @ rbm.W + rbm.hidden_bias)
    prob_h = np.prod(np.where(h1[None], p_h[:, None], 1 - p_h[:, None]), axis=2)  # (x0, h1)
    p_x = sig(h1 @ rbm.W.T + rbm.visible_bias)
    prob_x = np.prod(np.where(x[None], p_x[:, None], 1 - p_x[:, None]), axis=2)  # (h1, x)
    q = sig(base_bias)
    p0 = np.prod(np.where(x == 1, q, 1 - q), axis=1)
    p_ann_x = (p0 @ prob_h) @ prob_x  # over all (v, h2)
    v_part = x[:, :dbm.n_visible]
    return np.array([p_ann_x[np.all(v_part == row, axis=1)].sum() for row in test])


@pytest.mark.parametrize("base", ["uniform", "data"])
def test_algorithm_3_weight_is_unbiased_for_the_annealing_model(dbm, base):
    """The heating-plus-reverse weight of Algorithm 3 at K = 1: its mean over chains is
    p_ann(v) of the forward annealing model, enumerated exactly (h2 summed out at the end).
    A weight whose heating ratio is taken after the clamped sweep instead of before (the
    order as the paper prints it) over-rates p_ann here by about half a nat, far beyond
    the 3 SE allowed."""
    rng = np.random.default_rng(11)
    test = (rng.random((4, 6)) < 0.5).astype(float)
    train = (rng.random((50, 6)) < np.linspace(0.1, 0.9, 6)).astype(float)
    options = {"base": base, "base_data": train} if base == "data" else {}
    result = pa.reverse_ais(dbm, test, num_steps=1, draws=20000, random_seed=3,
                            progressbar=False, **options)
    assert result.attrs["algorithm"] == 3
    w = np.exp(result["particles"]["log_weight"].values)  # (points, draws)
    path, _ = dbm.annealing_path(**({"base": base, "data": train} if base == "data" else {}))
    exact = _one_sweep_annealing_model(dbm, test, np.asarray(path.info["base_visible_bias"]))
    se = w.std(axis=1, ddof=1) / np.sqrt(w.shape[1])
    assert np.all(np.abs(w.mean(axis=1) - exact) < 3 * se), (w.mean(axis=1), exact, se)
    # K = 1 is far from the DBM itself, so agreement is not the trivial one
    exact_model = dbm.log_unnormalized_numpy(test) - dbm.exact_log_z()
    assert np.max(np.abs(np.log(exact) - exact_model)) > 0.1
