"""RAISE (reverse AIS) against exact log p(v) of enumerable RBMs.

- The reverse weight: with one temperature (K = 1) the annealing model is
  p_ann(v) = sum_x0 p_0(x0) T_1(v | x0), computable by enumeration; the mean reverse weight
  must match it (this pins the formula down: a weight built from the wrong transition or
  the wrong ratio fails by far more than its error).
- The sandwich: at small K the RAISE average sits at or below the exact value and the AIS
  estimate at or above it (within 3 SE); as K grows RAISE comes within 0.1 nat. The test
  points are drawn from the model, like held-out data: RAISE bounds log p_ann(v), which at
  small K can exceed log p(v) for points the model finds unlikely (measured: uniform-ish
  random vectors, K = 10, 0.4 nat above the exact value; Burda et al. 2015, section 3.1).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pymc_anneal as pa
from pymc_anneal.energy import BernoulliRBM, FunctionEnergy


def _rbm(seed, n_visible, n_hidden, scale):
    rng = np.random.default_rng(seed)
    return BernoulliRBM(rng.normal(0, scale, (n_visible, n_hidden)),
                        rng.normal(0, 0.5, n_visible), rng.normal(0, 0.5, n_hidden))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _one_sweep_annealing_model(rbm, test, base_bias=None):
    """p_ann(v) = sum_x0 p_0(x0) T_1(v | x0) for K = 1 (exact); p_0 has independent pixels
    with log-odds ``base_bias`` (uniform if None)."""
    n, m = rbm.n_visible, rbm.n_hidden
    base_bias = np.zeros(n) if base_bias is None else base_bias
    states_v = np.array(list(itertools.product([0.0, 1.0], repeat=n)))
    states_h = np.array(list(itertools.product([0.0, 1.0], repeat=m)))
    p_h = _sigmoid(states_v @ rbm.W + rbm.hidden_bias)  # (2^n, m): p(h_j = 1 | x0)
    prob_h = np.prod(np.where(states_h[None], p_h[:, None], 1 - p_h[:, None]), axis=2)
    p_v = _sigmoid(states_h @ rbm.W.T + rbm.visible_bias)  # (2^m, n): p(v_i = 1 | h)
    prob_v = np.prod(np.where(test[None], p_v[:, None], 1 - p_v[:, None]), axis=2)  # (2^m, T)
    q = _sigmoid(base_bias)
    p0 = np.prod(np.where(states_v == 1, q, 1 - q), axis=1)  # (2^n,)
    return (p0 @ prob_h) @ prob_v


@pytest.mark.parametrize("base", ["uniform", "data"])
def test_reverse_weight_is_unbiased_for_the_annealing_model(base):
    rbm = _rbm(0, 6, 4, 1.0)
    rng = np.random.default_rng(1)
    test = (rng.random((4, 6)) < 0.5).astype(float)
    train = (rng.random((50, 6)) < np.linspace(0.1, 0.9, 6)).astype(float)
    result = pa.reverse_ais(rbm, test, num_steps=1, draws=20000, random_seed=2, base=base,
                            base_data=train, progressbar=False)
    w = np.exp(result["particles"]["log_weight"].values)  # (points, draws)
    rate = (train.sum(axis=0) + 1.0) / (train.shape[0] + 2.0)
    exact = _one_sweep_annealing_model(
        rbm, test, None if base == "uniform" else np.log(rate) - np.log1p(-rate))
    se = w.std(axis=1, ddof=1) / np.sqrt(w.shape[1])
    assert np.all(np.abs(w.mean(axis=1) - exact) < 3 * se), (w.mean(axis=1), exact, se)
    # K = 1 is far from the RBM itself: the check is not the trivial one
    assert np.max(np.abs(np.log(exact) - rbm.log_likelihood(test, rbm.exact_log_z()))) > 0.1


@pytest.mark.parametrize("base", ["uniform", "data"])
def test_raise_sits_below_and_ais_above_and_raise_converges(base):
    rbm = _rbm(3, 12, 8, 1.5)
    rng = np.random.default_rng(4)
    test = rbm.sample(30, rng, num_steps=1, burn_in=1000)
    train = rbm.sample(300, rng, num_steps=1, burn_in=1000)
    exact = rbm.log_likelihood(test, rbm.exact_log_z()).mean()
    log_f = rbm.log_unnormalized_numpy(test).mean()
    for k in (10, 1000):
        raise_ = pa.reverse_ais(rbm, test, num_steps=k, draws=100, base=base, base_data=train,
                                random_seed=k, progressbar=False)["sample_stats"]
        estimate = raise_["mean_log_likelihood"].item()
        se = raise_["mean_log_likelihood_se"].item()
        assert estimate <= exact + 3 * se, (k, estimate, exact, se)
        ais = pa.log_evidence(pa.ais(rbm, num_steps=k, draws=500, chains=4, base=base,
                                     data=train if base == "data" else None,
                                     random_seed=k + 1, progressbar=False))
        assert log_f - ais.log_evidence >= exact - 3 * ais.standard_error, (k, ais, exact)
        if k == 1000:
            assert abs(estimate - exact) < 0.1, (estimate, exact)


def test_result_layout():
    rbm = _rbm(5, 5, 3, 1.0)
    test = np.array([[0, 1, 0, 1, 1], [1, 1, 1, 0, 0]], dtype=float)
    result = pa.reverse_ais(rbm, test, num_steps=20, draws=10, random_seed=1, progressbar=False)
    stats = result["sample_stats"]
    assert stats["log_likelihood"].dims == ("point",) and stats.sizes["point"] == 2
    assert stats["mean_log_likelihood"].item() == pytest.approx(stats["log_likelihood"].values.mean())
    assert result["particles"]["log_weight"].shape == (2, 10)
    assert result.attrs["method"] == "raise" and result.attrs["num_steps"] == 20


def test_bad_input_gets_clear_errors():
    rbm = _rbm(5, 5, 3, 1.0)
    with pytest.raises(pa.AnnealingError, match=r"data must have shape \(N, 5\)"):
        pa.reverse_ais(rbm, np.zeros((3, 4)), progressbar=False)
    with pytest.raises(pa.AnnealingError, match="must be binary"):
        pa.reverse_ais(rbm, np.full((2, 5), 0.5), progressbar=False)
    with pytest.raises(pa.AnnealingError, match=r"num_steps must be an integer >= 1 or \"auto\", got 0"):
        pa.reverse_ais(rbm, np.zeros((2, 5)), num_steps=0, progressbar=False)
    energy = FunctionEnergy(lambda x: -(x**2).sum(axis=1), num_dims=2)
    with pytest.raises(pa.AnnealingError, match="RAISE needs a model whose hidden units"):
        pa.reverse_ais(energy, np.zeros((2, 2)), progressbar=False)
    with pytest.raises(pa.AnnealingError, match="needs an energy model"):
        pa.reverse_ais("rbm", np.zeros((2, 5)), progressbar=False)


def test_docstring_example_runs():
    import doctest

    import pymc_anneal.reverse as module

    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 7 and result.failed == 0, result


def test_gaussian_rbm_raise_converges_to_the_exact_value():
    """A Gaussian RBM (exact log Z by summing out the hidden units), ais_cov base."""
    from tests.energy.models import tiny_grbm

    grbm = tiny_grbm(n_visible=3, n_hidden=4, seed=2)
    rng = np.random.default_rng(5)
    test = grbm.sample(20, rng, num_steps=1, burn_in=500)
    exact = grbm.log_likelihood(test, grbm.exact_log_z()).mean()
    stats = pa.reverse_ais(grbm, test, num_steps=1000, draws=50, moments=None,
                           base_data=grbm.sample(500, rng, num_steps=1, burn_in=500),
                           random_seed=6, progressbar=False)["sample_stats"]
    estimate, se = stats["mean_log_likelihood"].item(), stats["mean_log_likelihood_se"].item()
    assert estimate <= exact + 3 * se, (estimate, exact, se)
    assert abs(estimate - exact) < 0.1, (estimate, exact, se)


def test_sandwich_brackets_the_exact_value_and_plots(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rbm = _rbm(3, 12, 8, 1.5)
    rng = np.random.default_rng(4)
    test = rbm.sample(30, rng, num_steps=1, burn_in=1000)
    exact = rbm.log_likelihood(test, rbm.exact_log_z()).mean()
    result = pa.sandwich(rbm, test, num_steps=[10, 1000], draws=100, random_seed=9,
                         progressbar=False)
    stats = result["sample_stats"]
    for i in range(2):
        assert stats["raise"].values[i] <= exact + 3 * stats["raise_se"].values[i]
        assert stats["ais"].values[i] >= exact - 3 * stats["ais_se"].values[i]
    np.testing.assert_allclose(stats["gap"].values, stats["ais"].values - stats["raise"].values)
    assert result.attrs["verdict"].startswith("AIS and RAISE agree: at K=1000")
    ax = pa.plots.plot_sandwich(result, reference=exact)
    ax.figure.savefig(tmp_path / "sandwich.png")
    assert len(ax.get_lines()) >= 3 and ax.get_xscale() == "log"
    plt.close("all")
    with pytest.raises(pa.AnnealingError, match="plot_sandwich needs the DataTree"):
        pa.plots.plot_sandwich(pa.reverse_ais(rbm, test[:2], num_steps=5, draws=5,
                                              progressbar=False))


VERDICTS = [  # (case, ais, ais_se, raise, raise_se, kind, words)
    ("agreement", -5.0, 0.01, -5.02, 0.01, "agree", "AIS and RAISE agree"),
    ("gap within noise", -5.0, 0.1, -5.2, 0.1, "noisy", "Too noisy to judge"),
    ("small gap, wide noise", -5.0, 0.1, -5.0, 0.1, "noisy", "Too noisy to judge"),
    ("gap beyond noise", -5.0, 0.01, -5.3, 0.01, "disagree", "AIS and RAISE disagree"),
    ("gap far beyond wide noise", -5.0, 0.09, -9.7, 0.02, "disagree",
     "AIS and RAISE disagree"),
    # the RBM (64 x 20, uniform base, K = 1000): 50 combined SEs, noise 0.28 > 0.1
    ("inverted far beyond noise", -37.26, 0.09, -32.52, 0.02, "inverted",
     "RAISE is above AIS"),
    ("inverted beyond small noise", -5.0, 0.01, -4.7, 0.01, "inverted", "RAISE is above AIS"),
    ("inverted within noise", -5.0, 0.1, -4.8, 0.1, "noisy", "Too noisy to judge"),
    ("inverted within tolerance", -5.0, 0.01, -4.95, 0.01, "agree", "AIS and RAISE agree"),
]


@pytest.mark.parametrize(("ais", "ais_se", "raise_", "raise_se", "kind", "words"),
                         [case[1:] for case in VERDICTS], ids=[case[0] for case in VERDICTS])
def test_verdict_table(ais, ais_se, raise_, raise_se, kind, words):
    from pymc_anneal.reverse import AGREEMENT, bracket_kind, sandwich_verdict

    assert bracket_kind(ais, ais_se, raise_, raise_se, AGREEMENT) == kind
    verdict = sandwich_verdict(ais, ais_se, raise_, raise_se, AGREEMENT, num_steps=1000)
    assert verdict.startswith(f"{words}: at K=1000, AIS gives {ais:.3f}"), verdict
    if kind == "inverted":
        assert "over-rates the test data" in verdict and "Increase num_steps" in verdict


def test_verdict_tolerance_is_an_argument():
    from pymc_anneal.reverse import bracket_kind

    assert bracket_kind(-5.0, 0.01, -5.3, 0.01, tolerance=0.5) == "agree"
    assert bracket_kind(-5.0, 0.01, -5.3, 0.01, tolerance=0.1) == "disagree"


def test_reverse_ais_warns_when_above_the_ais_implied_value():
    """RAISE errs low for the annealing model: an average above the AIS-implied one, beyond
    the errors, is implausible. Exact log Z (SE 0) gives no warning at K = 200 on these random
    test points; a log Z one nat too high puts the AIS-implied value 1 nat low,
    far beyond RAISE's error, and must warn."""
    rbm = _rbm(5, 5, 3, 1.0)
    test = (np.random.default_rng(2).random((4, 5)) < 0.5).astype(float)
    log_z = rbm.exact_log_z()
    options = dict(num_steps=200, draws=50, random_seed=3, progressbar=False)
    result = pa.reverse_ais(rbm, test, log_z=log_z, **options)
    assert result.attrs["bracket"] in ("agree", "noisy")
    with pytest.warns(pa.AnnealingWarning, match="lies above the AIS-implied value"):
        result = pa.reverse_ais(rbm, test, log_z=log_z + 1.0, **options)
    assert result.attrs["bracket"] == "inverted"
    with pytest.raises(pa.AnnealingError, match="log_z must be a float, a pymc_anneal"):
        pa.reverse_ais(rbm, test, log_z="big", **options)
    with pytest.raises(pa.AnnealingError, match="quantity 'log_partition_function'"):
        pa.reverse_ais(rbm, test, log_z=result, **options)


@pytest.mark.parametrize("kind", ["unit", "fitted"])
def test_control_variate_is_unbiased_and_lower_variance(kind):
    """20 of 400 test points give the average over all 400 within the reported error,
    with far less variance than the plain subsample mean."""
    rbm = _rbm(3, 12, 8, 1.5)
    test = rbm.sample(400, np.random.default_rng(8), num_steps=1, burn_in=1000)
    exact = rbm.log_likelihood(test, rbm.exact_log_z())
    result = pa.reverse_ais(rbm, test, num_steps=1000, draws=50, subsample=20,
                            control_variate=kind, random_seed=10, progressbar=False)
    stats = result["sample_stats"]
    estimate, se = stats["mean_log_likelihood"].item(), stats["mean_log_likelihood_se"].item()
    assert abs(estimate - exact.mean()) < 3 * se, (estimate, exact.mean(), se)
    # the plain subsample mean's standard error, for comparison
    plain_se = exact[stats["data_index"].values].std(ddof=1) / np.sqrt(20)
    assert se < plain_se / 3, (se, plain_se)
    assert stats["variance_reduction"].item() > 10
    assert stats.sizes["point"] == 20 and result.attrs["num_test_points"] == 400
    with pytest.raises(pa.AnnealingError, match="subsample must be at most the number"):
        pa.reverse_ais(rbm, test[:5], subsample=6, progressbar=False)
    with pytest.raises(pa.AnnealingError, match="unknown control_variate 'best'"):
        pa.reverse_ais(rbm, test[:5], subsample=3, control_variate="best", progressbar=False)
