"""BernoulliRBM against brute force over the joint (v, h) space, exact Gibbs invariance and
seeded sampling checks with derived error bars."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
import scipy.stats
from scipy.special import expit

from pymc_anneal.energy import BernoulliRBM
from pymc_anneal.exceptions import AnnealingError
from tests.energy.models import (
    all_states,
    brute_log_unnormalized,
    brute_rbm_log_z,
    rbm_joint_energy,
    tiny_rbm,
)

SEED = 20240603


@pytest.mark.parametrize("shape", [(5, 4), (3, 7), (6, 6)])
def test_exact_log_z_matches_joint_brute_force_for_both_layers(shape):
    rbm = tiny_rbm(*shape, scale=1.5, seed=shape[0])
    expected = brute_rbm_log_z(rbm)
    for layer in ("auto", "visible", "hidden"):
        np.testing.assert_allclose(rbm.exact_log_z(layer=layer), expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("layer", ["visible", "hidden"])
def test_chunked_enumeration_equals_unchunked(layer):
    rbm = tiny_rbm(9, 8, scale=2.0, seed=3)
    whole = rbm.exact_log_z(layer=layer, chunk_size=2**9)
    for chunk_size in (1, 2, 8, 64):
        np.testing.assert_allclose(rbm.exact_log_z(layer=layer, chunk_size=chunk_size), whole,
                                   rtol=0, atol=1e-11)
    np.testing.assert_allclose(rbm.exact_log_z(layer="visible"), rbm.exact_log_z(layer="hidden"),
                               rtol=0, atol=1e-11)


def test_log_z_is_finite_for_large_parameters():
    rbm = tiny_rbm(6, 4, scale=200.0, seed=1)
    np.testing.assert_allclose(rbm.exact_log_z(), brute_rbm_log_z(rbm), rtol=1e-13)


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 1e-5)])
def test_log_unnormalized_pytensor_numpy_and_brute_force_agree(dtype, rtol):
    rbm = tiny_rbm(5, 4, scale=1.5, seed=2, dtype=dtype)
    v = all_states(5)
    x = pt.matrix("v", dtype=dtype)
    graph = rbm.log_unnormalized(x)
    assert graph.dtype == dtype and graph.ndim == 1
    # FAST_COMPILE: PyTensor's Python implementations evaluate the same graph without a Numba
    # compile (seconds per fresh graph); the annealing tests run the compiled backends.
    compiled = pytensor.function([x], graph, mode="FAST_COMPILE")(v.astype(dtype))
    assert compiled.dtype == dtype
    numpy_value = rbm.log_unnormalized_numpy(v)
    assert numpy_value.dtype == np.float64
    brute = brute_log_unnormalized(rbm_joint_energy, rbm, v)
    np.testing.assert_allclose(numpy_value, brute, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(compiled, brute, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(rbm.free_energy(v), -brute, rtol=1e-12, atol=1e-12)


def test_float32_parameters_are_stored_rounded_and_read_only():
    rbm = tiny_rbm(dtype="float32")
    for p in (rbm.W, rbm.visible_bias, rbm.hidden_bias):
        assert p.dtype == np.float32 and not p.flags.writeable
    assert rbm.num_dims == rbm.n_visible == 5 and rbm.n_hidden == 4
    with pytest.raises(ValueError, match="read-only"):
        rbm.W[0, 0] = 1.0


def test_log_likelihood_normalizes_over_all_visible_states():
    rbm = tiny_rbm(5, 4, seed=4)
    log_p = rbm.log_likelihood(all_states(5), rbm.exact_log_z())
    np.testing.assert_allclose(np.exp(log_p).sum(), 1.0, rtol=1e-13)


def test_conditionals_match_bayes_rule_on_the_joint():
    rbm = tiny_rbm(4, 3, scale=1.5, seed=5)
    v_all, h_all = all_states(4), all_states(3)
    joint = np.exp(-rbm_joint_energy(rbm, v_all, h_all))  # (16, 8)
    p_h_given_v = joint / joint.sum(axis=1, keepdims=True)
    p_v_given_h = joint / joint.sum(axis=0, keepdims=True)
    # marginal P(h_j = 1 | v) and P(v_i = 1 | h) from the joint table
    np.testing.assert_allclose(rbm.hidden_probability(v_all), p_h_given_v @ h_all, rtol=1e-12)
    np.testing.assert_allclose(rbm.visible_probability(h_all), p_v_given_h.T @ v_all, rtol=1e-12)


def _gibbs_transition_matrix(rbm: BernoulliRBM) -> np.ndarray:
    """P[v, v'] of one sweep h ~ p(h|v), v' ~ p(v'|h), from the model's conditionals."""
    v_all, h_all = all_states(rbm.n_visible), all_states(rbm.n_hidden)

    def factorized(prob, states):  # prob (N, n) of each unit being 1 -> (N, 2^n) over states
        return np.prod(np.where(states[None] == 1, prob[:, None], 1 - prob[:, None]), axis=2)

    return factorized(rbm.hidden_probability(v_all), h_all) @ factorized(rbm.visible_probability(h_all), v_all)


def test_one_gibbs_sweep_leaves_the_exact_distribution_invariant():
    rbm = tiny_rbm(5, 4, scale=1.5, seed=6)
    P = _gibbs_transition_matrix(rbm)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-13)
    pi = np.exp(rbm.log_unnormalized_numpy(all_states(5)) - rbm.exact_log_z())
    np.testing.assert_allclose(pi.sum(), 1.0, rtol=0, atol=1e-13)
    np.testing.assert_allclose(pi @ P, pi, rtol=0, atol=1e-12)
    # power: a perturbed distribution is not invariant
    other = pi * np.linspace(0.5, 1.5, pi.size)
    other /= other.sum()
    assert np.abs(other @ P - other).max() > 1e-3


def test_sample_draws_match_exact_visible_distribution():
    """num_steps=1: every returned state comes from its own chain after burn_in + 1 sweeps,
    so the draws are independent; the burn-in is long enough that their law is the exact
    one to 1e-9 (bounded through the second eigenvalue of the transition matrix)."""
    rbm = tiny_rbm(5, 4, scale=1.5, seed=7)
    burn_in = 60
    P = _gibbs_transition_matrix(rbm)
    second = np.sort(np.abs(np.linalg.eigvals(P)))[-2]
    assert second**burn_in < 1e-9, second
    num = 20000
    draws = rbm.sample(num, np.random.default_rng(SEED), num_steps=1, burn_in=burn_in)
    assert draws.shape == (num, 5) and set(np.unique(draws)) <= {0.0, 1.0}
    pi = np.exp(rbm.log_unnormalized_numpy(all_states(5)) - rbm.exact_log_z())
    # visible marginals within 4 binomial standard errors
    marginal = pi @ all_states(5)
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - marginal),
                                 4 * np.sqrt(marginal * (1 - marginal) / num))
    mean, cov = rbm.exact_moments()
    np.testing.assert_allclose(mean, marginal, rtol=1e-12)
    np.testing.assert_allclose(np.diag(cov), marginal * (1 - marginal), rtol=1e-12)
    # the whole 32-state histogram: chi-square goodness of fit
    index = draws @ (2 ** np.arange(4, -1, -1))  # all_states order
    counts = np.bincount(index.astype(int), minlength=32)
    assert scipy.stats.chisquare(counts, num * pi).pvalue > 1e-3


def test_sample_from_data_and_long_chains_match_exact_moments():
    rbm = tiny_rbm(5, 4, scale=1.0, seed=8)
    data = (np.random.default_rng(0).random((50, 5)) < 0.5).astype(float)
    draws = rbm.sample(30000, np.random.default_rng(SEED), num_steps=3000, burn_in=20, data=data)
    assert draws.shape == (30000, 5)
    mean, cov = rbm.exact_moments()
    # autocorrelated chains: allow 10 iid standard errors
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - mean), 10 * np.sqrt(np.diag(cov) / 30000))


def test_exact_moments_match_enumeration_of_the_visible_layer():
    rbm = tiny_rbm(4, 6, scale=1.5, seed=9)  # enumerates the visible layer
    v = all_states(4)
    pi = np.exp(rbm.log_unnormalized_numpy(v) - rbm.exact_log_z())
    mean, cov = rbm.exact_moments()
    np.testing.assert_allclose(mean, pi @ v, rtol=1e-12)
    np.testing.assert_allclose(cov, (v * pi[:, None]).T @ v - np.outer(pi @ v, pi @ v), atol=1e-13)
    rbm_t = BernoulliRBM(rbm.W[:, :3], rbm.visible_bias, rbm.hidden_bias[:3])  # hidden layer
    v_pi = np.exp(rbm_t.log_unnormalized_numpy(v) - rbm_t.exact_log_z())
    mean_t, cov_t = rbm_t.exact_moments()
    np.testing.assert_allclose(mean_t, v_pi @ v, rtol=1e-12)
    np.testing.assert_allclose(cov_t, (v * v_pi[:, None]).T @ v - np.outer(v_pi @ v, v_pi @ v), atol=1e-13)


def test_gibbs_and_conditional_samplers_have_the_right_means():
    rbm = tiny_rbm(5, 4, seed=10)
    rng = np.random.default_rng(SEED)
    v = np.tile(all_states(5)[[3]], (40000, 1))
    h = rbm.sample_hidden(v, rng)
    p = rbm.hidden_probability(v[:1])[0]
    np.testing.assert_array_less(np.abs(h.mean(axis=0) - p), 4 * np.sqrt(p * (1 - p) / 40000))
    hv = np.tile(all_states(4)[[5]], (40000, 1))
    q = rbm.visible_probability(hv[:1])[0]
    np.testing.assert_array_less(np.abs(rbm.sample_visible(hv, rng).mean(axis=0) - q),
                                 4 * np.sqrt(q * (1 - q) / 40000))
    np.testing.assert_array_equal(rbm.gibbs(v[:3], rng, num_steps=0), v[:3])


def test_from_sklearn_matches_sklearn():
    sklearn_rbm = pytest.importorskip("sklearn.neural_network").BernoulliRBM
    rng = np.random.default_rng(0)
    data = (rng.random((200, 7)) < 0.3).astype(float)
    est = sklearn_rbm(n_components=3, n_iter=3, random_state=0).fit(data)
    rbm = BernoulliRBM.from_sklearn(est)
    assert (rbm.n_visible, rbm.n_hidden) == (7, 3)
    np.testing.assert_allclose(rbm.hidden_probability(data), est.transform(data), rtol=1e-12)
    # sklearn's free energy: -v.b - sum softplus(v W^T + c)
    expected = -(data @ est.intercept_visible_) - np.logaddexp(
        0, data @ est.components_.T + est.intercept_hidden_).sum(axis=1)
    np.testing.assert_allclose(rbm.free_energy(data), expected, rtol=1e-12)
    with pytest.raises(AnnealingError, match="fitted sklearn"):
        BernoulliRBM.from_sklearn(sklearn_rbm(n_components=3))


def test_hidden_probability_is_the_logistic_of_the_input():
    rbm = tiny_rbm(5, 4, seed=11)
    v = all_states(5)
    np.testing.assert_allclose(
        rbm.hidden_probability(v), expit(v @ rbm.W + rbm.hidden_bias), rtol=1e-14)


def test_float32_overflow_is_refused_after_the_cast():
    """Issue 23: 1e39 is finite in float64, so the finiteness check passed, and then the cast
    to float32 made it inf: exact_log_z() returned nan. The largest float32 is accepted."""
    W = np.full((10, 8), 1e39)
    with pytest.raises(AnnealingError, match=r"W overflow float32: 80 values exceed its largest "
                                             r"number 3\.4e\+38 in magnitude\. Rescale them or "
                                             r"use dtype='float64'\."):
        BernoulliRBM(W, np.zeros(10), np.zeros(8), dtype="float32")
    with pytest.raises(AnnealingError, match=r"hidden_bias overflow float32: 1 values"):
        BernoulliRBM(np.zeros((10, 8)), np.zeros(10), np.r_[np.zeros(7), -1e39], dtype="float32")
    largest = float(np.finfo(np.float32).max)
    rbm = BernoulliRBM(np.zeros((2, 2)), np.array([largest, 0.0]), np.zeros(2), dtype="float32")
    assert np.isfinite(rbm.exact_log_z())
