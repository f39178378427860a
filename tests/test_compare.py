"""compare / bayes_factor against closed forms, the propagation of the standard errors, and
clear errors on bad input.

Ground truth: two conjugate models for the same data (``analytic.normal_mean``'s y, known
noise sd 1.5, n = 20): mu ~ N(0.5, 2) ("wide") and mu ~ N(0.5, 0.3) ("narrow"), whose log
evidences are Gaussian log densities. Each model is annealed once with many chains; groups
of 4 chains are independent replicate runs, so one compile gives many runs.
"""

from __future__ import annotations

import doctest
import functools
import math
import sys
import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr
from scipy import stats

import pymc_anneal as pa
from tests import analytic

SEED = 20261122
CHAINS_PER_RUN = 4
NUM_RUNS = 200
NARROW_SD = 0.3


def _conjugate_pair():
    wide = analytic.normal_mean()
    y, noise_sd, prior_mean = (wide.params[k] for k in ("y", "noise_sd", "prior_mean"))
    build_narrow = functools.partial(analytic._build_normal_mean, y, prior_mean, NARROW_SD,
                                     noise_sd)
    cov = noise_sd**2 * np.eye(y.size) + NARROW_SD**2 * np.ones((y.size, y.size))
    narrow_log_evidence = analytic.exact_log_evidence_gaussian(y, prior_mean, cov)
    return {"wide": (wide.build, wide.log_evidence),
            "narrow": (build_narrow, narrow_log_evidence)}


@pytest.fixture(scope="module")
def runs():
    """name -> (DataTree with NUM_RUNS * CHAINS_PER_RUN chains, exact log evidence)."""
    out = {}
    for i, (name, (build, exact)) in enumerate(_conjugate_pair().items()):
        with build():
            idata = pa.sample_ais(draws=50, chains=NUM_RUNS * CHAINS_PER_RUN, num_steps=100,
                                  backend="jax", random_seed=SEED + i, progressbar=False)
        out[name] = (idata, exact)
    return out


def _run(idata, r):
    return idata.isel(chain=slice(r * CHAINS_PER_RUN, (r + 1) * CHAINS_PER_RUN))


def test_the_closed_forms_differ_decisively():
    """Keeps the ground-truth test meaningful: the Bayes factor is far from 1."""
    pair = _conjugate_pair()
    assert pair["wide"][1] - pair["narrow"][1] > 4.0


def test_bayes_factor_matches_the_closed_form(runs):
    (wide, wide_exact), (narrow, narrow_exact) = runs["wide"], runs["narrow"]
    exact = wide_exact - narrow_exact
    bf = pa.bayes_factor(wide, narrow, prob=0.997)  # a 3-standard-error interval
    assert bf.lower <= math.exp(exact) <= bf.upper, (bf, exact)
    assert bf.standard_error < 0.02  # the interval is tight enough to mean something
    assert bf.strength == pa.evidence_strength(exact) == "strong"
    # compare gives the same numbers, from the best model's side
    table = pa.compare({"narrow": narrow, "wide": wide}, prob=0.997)
    assert list(table.index) == ["wide", "narrow"]
    row = table.loc["narrow"]
    assert row["log_evidence_diff"] == pytest.approx(bf.log_bayes_factor, rel=1e-12)
    assert row["dse"] == pytest.approx(bf.standard_error, rel=1e-12)
    assert row["bf_low"] <= math.exp(exact) <= row["bf_high"]
    # posterior model probability of the narrow model under equal priors, exactly
    exact_probability = 1.0 / (1.0 + math.exp(exact))
    assert row["probability_low"] <= exact_probability <= row["probability_high"]


def test_intervals_cover_the_closed_form_over_independent_runs(runs):
    """Coverage of the 95% intervals over NUM_RUNS independent pairs of 4-chain runs.

    If the propagated standard error were honest, the number of misses is Binomial(200,
    0.05) or fewer (``se`` takes the larger of two error estimates, so it errs wide); the
    threshold has probability < 0.1% of a false alarm. Leaving out the second model's error
    (a dse of se instead of sqrt(2) se) would cover about 83%, and fail. The z-scores' spread
    guards the other side: vacuously wide intervals would give a tiny spread."""
    (wide, wide_exact), (narrow, narrow_exact) = runs["wide"], runs["narrow"]
    exact = wide_exact - narrow_exact
    exact_probability = 1.0 / (1.0 + math.exp(-exact))
    covered_bf = covered_probability = 0
    z_scores = []
    for r in range(NUM_RUNS):
        w, n = _run(wide, r), _run(narrow, r)
        bf = pa.bayes_factor(w, n)
        covered_bf += bf.lower <= math.exp(exact) <= bf.upper
        z_scores.append((bf.log_bayes_factor - exact) / bf.standard_error)
        table = pa.compare({"wide": w, "narrow": n}, num_samples=2000, random_seed=r)
        covered_probability += (table.loc["wide", "probability_low"] <= exact_probability
                                <= table.loc["wide", "probability_high"])
    threshold = stats.binom.ppf(0.001, NUM_RUNS, 0.95)
    assert covered_bf >= threshold, (covered_bf, threshold)
    assert covered_probability >= threshold, (covered_probability, threshold)
    # E[max(1, chain spread / se)] is about 1.2 with 4 chains: sd(z) near 0.8, and 0.6 is
    # four sampling standard deviations (0.04) below
    assert 0.6 < np.std(z_scores) < 1.2, np.std(z_scores)
    assert abs(np.mean(z_scores)) < 4 * np.std(z_scores) / math.sqrt(NUM_RUNS)


# --------------------------------------------------------------------------- the table


def _est(log_z, se=0.05, chain_sd=0.04, ess=800.0, n=1000):
    return pa.EvidenceEstimate(log_z, se, chain_sd, ess, n)


def test_probabilities_sum_to_one_and_follow_bayes_rule():
    estimates = {"a": _est(-10.0), "b": _est(-11.0), "c": _est(-14.5), "d": _est(-10.2)}
    prior = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    equal = pa.compare(estimates)
    weighted = pa.compare(estimates, prior_probabilities=prior)
    for table in (equal, weighted):
        assert table["probability"].sum() == pytest.approx(1.0, abs=1e-12)
        assert table["prior_probability"].sum() == pytest.approx(1.0, abs=1e-12)
        assert np.all(table["probability_low"] <= table["probability"])
        assert np.all(table["probability"] <= table["probability_high"])
        assert list(table["rank"]) == [0, 1, 2, 3]
        assert list(table.index) == ["a", "d", "b", "c"]
    # posterior odds = prior odds x Bayes factor
    posterior_odds = weighted.loc["d", "probability"] / weighted.loc["b", "probability"]
    assert posterior_odds == pytest.approx(4.0 / 2.0 * math.exp(-10.2 + 11.0), rel=1e-12)
    assert weighted.loc["a", "prior_probability"] == pytest.approx(0.1)
    # the difference columns
    assert equal.loc["a", "log_evidence_diff"] == 0 and equal.loc["a", "dse"] == 0
    assert equal.loc["a", "strength"] == "best model"
    assert equal.loc["c", "log_evidence_diff"] == pytest.approx(4.5)
    assert equal.loc["c", "dse"] == pytest.approx(math.hypot(0.05, 0.05))
    assert equal.loc["c", "bayes_factor"] == pytest.approx(math.exp(4.5))
    z = stats.norm.ppf(0.975)
    assert equal.loc["c", "bf_low"] == pytest.approx(math.exp(4.5 - z * math.hypot(0.05, 0.05)))
    assert equal.attrs["prob"] == 0.95


def test_probability_intervals_are_reproducible_and_shrink_with_the_error():
    estimates = {"a": _est(-10.0, se=0.3, chain_sd=0.1), "b": _est(-10.5, se=0.3, chain_sd=0.1)}
    first, again = pa.compare(estimates), pa.compare(estimates)
    assert first.equals(again)
    precise = pa.compare({k: v._replace(standard_error=0.01, chain_sd=0.005)
                        for k, v in estimates.items()})
    width = first["probability_high"] - first["probability_low"]
    precise_width = precise["probability_high"] - precise["probability_low"]
    assert np.all(precise_width < width / 10)
    # the normal approximation of the log evidences, checked on one quantile in closed form:
    # P(a) = 1 / (1 + exp(-(d))) with d ~ N(0.5, 0.3^2 + 0.3^2)
    d_low = 0.5 - stats.norm.ppf(0.975) * math.hypot(0.3, 0.3)
    mc_error = 0.01  # 10000 draws: the 2.5% quantile's sd is about 0.002 here
    assert first.loc["a", "probability_low"] == pytest.approx(1 / (1 + math.exp(-d_low)),
                                                              abs=mc_error)


def test_the_larger_standard_error_is_propagated():
    table = pa.compare({"spread": _est(-1.0, se=0.02, chain_sd=0.05),
                        "delta": _est(-2.0, se=0.04, chain_sd=0.01),
                        "one_chain": _est(-3.0, se=0.03, chain_sd=float("nan"))})
    assert table.loc["spread", "se"] == 0.05
    assert table.loc["delta", "se"] == 0.04
    assert table.loc["one_chain", "se"] == 0.03
    assert table.loc["delta", "dse"] == pytest.approx(math.hypot(0.04, 0.05))
    bf = pa.bayes_factor(_est(-1.0, se=0.02, chain_sd=0.05), _est(-2.0, se=0.04, chain_sd=0.01))
    assert bf.standard_error == pytest.approx(math.hypot(0.05, 0.04))


def test_bayes_factor_is_antisymmetric():
    a, b = _est(-3.0, se=0.1), _est(-5.5, se=0.2)
    ab, ba = pa.bayes_factor(a, b, prob=0.9), pa.bayes_factor(b, a, prob=0.9)
    assert ab.log_bayes_factor == -ba.log_bayes_factor == 2.5
    assert ab.lower == pytest.approx(1 / ba.upper) and ab.upper == pytest.approx(1 / ba.lower)
    assert ab.strength == ba.strength == "positive"
    assert ab.prob == 0.9


@pytest.mark.parametrize(("log_bf", "words"), [
    (0.0, "not worth more than a bare mention"),
    (0.99, "not worth more than a bare mention"),
    (1.0, "positive"),
    (-2.9, "positive"),
    (3.0, "strong"),
    (4.99, "strong"),
    (5.0, "very strong"),
    (-40.0, "very strong"),
])
def test_kass_raftery_scale_on_two_log_bf(log_bf, words):
    assert pa.evidence_strength(log_bf) == words


def test_warning_column_uses_the_sampler_thresholds():
    from pymc_anneal.diagnostics import (
        CHAIN_DISAGREEMENT,
        HEAVY_TAIL_K,
        LOW_ESS_FRACTION,
        MIN_EFFECTIVE_PARTICLES,
    )

    n = 1000
    assert LOW_ESS_FRACTION * n > MIN_EFFECTIVE_PARTICLES
    table = pa.compare({
        "fine": _est(-1.0, ess=LOW_ESS_FRACTION * n + 1, n=n)._replace(pareto_k=HEAVY_TAIL_K),
        "low_ess": _est(-2.0, ess=LOW_ESS_FRACTION * n - 1, n=n),
        "few": _est(-2.5, ess=MIN_EFFECTIVE_PARTICLES - 1, n=MIN_EFFECTIVE_PARTICLES + 1),
        "tail": _est(-2.7)._replace(pareto_k=HEAVY_TAIL_K + 0.01),
        "disagree": _est(-3.0, se=0.01, chain_sd=CHAIN_DISAGREEMENT * 0.01 * 1.01),
        "both": _est(-4.0, se=0.01, chain_sd=0.5, ess=3.0, n=n),
    })
    assert table["warning"].to_dict() == {"fine": False, "low_ess": True, "few": True,
                                          "tail": True, "disagree": True, "both": True}
    assert table.loc["fine", "warning_reason"] == ""
    assert table.loc["low_ess", "warning_reason"].startswith(
        f"low ESS ({LOW_ESS_FRACTION * n - 1:.1f} of 1000")
    assert table.loc["few", "warning_reason"].startswith("low ESS")
    assert table.loc["tail", "warning_reason"].startswith(
        f"heavy-tailed weights (Pareto k-hat {HEAVY_TAIL_K + 0.01:.2f}")
    assert table.loc["disagree", "warning_reason"].startswith("chains disagree")
    assert "low ESS" in table.loc["both", "warning_reason"]
    assert "chains disagree" in table.loc["both", "warning_reason"]


def test_docstring_examples():
    result = doctest.testmod(sys.modules["pymc_anneal.comparison"])
    assert result.attempted >= 8 and result.failed == 0, result


# --------------------------------------------------------------------------- bad input


def test_compare_refuses_a_datatree_without_evidence():
    posterior_only = az.from_dict({"posterior": {"mu": np.zeros((2, 10))}})
    with pytest.raises(pa.AnnealingError,
                       match=r"model 'mcmc' has no evidence estimate: .*groups \['posterior'\]"
                             r".*run pymc_anneal.sample_ais"):
        pa.compare({"ais": _est(-1.0), "mcmc": posterior_only})
    with pytest.raises(pa.AnnealingError, match="model 'idata2' has no evidence estimate"):
        pa.bayes_factor(_est(-1.0), posterior_only)


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    (([_est(-1.0), _est(-2.0)],), {}, r"needs a dict from model name.*got list"),
    (({"a": _est(-1.0)},), {}, r"at least two models, got 1"),
    ((az.from_dict({"posterior": {"mu": np.zeros((2, 10))}}),), {},
     r"needs a dict from model name.*got DataTree"),
    (({"a": _est(-1.0), "b": np.array([1.0])},), {},
     r"model 'b' must be a DataTree returned by pymc_anneal.sample_ais.*got ndarray"),
    (({"a": _est(-1.0), "b": _est(-np.inf)},), {}, r"model 'b' has a log evidence of -inf"),
    (({"a": _est(-1.0), "b": _est(-2.0)},), {"prior_probabilities": {"a": 1.0}},
     r"exactly the models' names.*missing \['b'\], unknown \[\]"),
    (({"a": _est(-1.0), "b": _est(-2.0)},), {"prior_probabilities": {"a": 1.0, "c": 1.0}},
     r"missing \['b'\], unknown \['c'\]"),
    (({"a": _est(-1.0), "b": _est(-2.0)},), {"prior_probabilities": {"a": 1.0, "b": 0.0}},
     r"positive finite numbers, got \{'b': 0.0\}"),
    (({"a": _est(-1.0), "b": _est(-2.0)},), {"prior_probabilities": [0.5, 0.5]},
     r"prior_probabilities must be a dict.*got list"),
    (({"a": _est(-1.0), "b": _est(-2.0)},), {"prob": 1.5},
     r"prob must be a number strictly between 0 and 1, got 1.5"),
    (({"a": _est(-1.0), "b": _est(-2.0)},), {"num_samples": 10},
     r"num_samples must be an integer >= 100, got 10"),
    (({1: _est(-1.0), "1": _est(-2.0)},), {}, r"model names must be distinct as strings"),
])
def test_compare_bad_input(args, kwargs, match):
    with pytest.raises(pa.AnnealingError, match=match):
        pa.compare(*args, **kwargs)


def test_evidence_strength_refuses_nan():
    with pytest.raises(pa.AnnealingError, match="must be a number, got nan"):
        pa.evidence_strength(float("nan"))


def test_compare_refuses_to_mix_quantities(runs):
    """The issue's case: a PyMC model's log evidence against an RBM's log partition function
    gave a 'strong' log Bayes factor. Results carry the quantity they estimate."""
    from pymc_anneal.energy import BernoulliRBM

    rng = np.random.default_rng(0)
    rbm = BernoulliRBM(rng.normal(0, 0.5, (4, 3)), np.zeros(4), np.zeros(3))
    log_z = pa.ais(rbm, draws=200, chains=2, num_steps=100, random_seed=1, progressbar=False)
    evidence = runs["wide"][0]
    assert log_z.attrs["quantity"] == "log_partition_function"
    match = (r"different quantities: 'evidence' is a log evidence \(pymc_anneal.sample_ais\); "
             r"'rbm' is a log partition function \(pymc_anneal.ais\)")
    with pytest.raises(pa.AnnealingError, match=match):
        pa.compare({"evidence": evidence, "rbm": log_z})
    with pytest.raises(pa.AnnealingError, match=r"'idata1' is a log evidence.*'idata2' is a "
                                                r"log partition function"):
        pa.bayes_factor(evidence, log_z)
    # the same quantity on both sides, or an EvidenceEstimate (which carries none), passes
    assert pa.bayes_factor(log_z, log_z).log_bayes_factor == 0.0
    assert np.isfinite(pa.bayes_factor(evidence, _est(-40.0)).log_bayes_factor)
    assert list(pa.compare({"a": evidence, "b": runs["narrow"][0]}).index)


# --------------------------------------------------------------------------- misuse (issue 40)

Y = np.array([0.3, -0.2, 0.5])
"""The issue's data: mu ~ N(0, 1), y ~ N(mu, 1), exact log Z = -3.59496."""
TINY = {"draws": 100, "chains": 2, "num_steps": 20, "progressbar": False}


@pytest.fixture(scope="module")
def data_runs():
    """The issue's model on Y ("y"), on Y + 1 ("y_plus_1"), and on Y again, renamed,
    reshaped and split into two observed variables with dims ("split")."""
    import pymc as pm

    def fit(build, seed):
        with pm.Model(coords={"row": [0, 1], "col": [0]}) as model:
            build(pm.Normal("mu", 0.0, 1.0))
        return pa.sample_ais(model=model, random_seed=seed, **TINY)

    def split(mu):
        pm.Normal("first", mu, 1.0, observed=Y[:1])
        pm.Normal("rest", mu, 1.0, observed=Y[1:][::-1].reshape(2, 1), dims=("row", "col"))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)  # tiny runs
        return {"y": fit(lambda mu: pm.Normal("y", mu, 1.0, observed=Y), 1),
                "y_plus_1": fit(lambda mu: pm.Normal("y", mu, 1.0, observed=Y + 1), 2),
                "split": fit(split, 3)}


def test_compare_refuses_results_of_different_data(data_runs):
    """Issue 40, item 2: results on y and on y + 1 were ranked with no warning."""
    y, other = data_runs["y"], data_runs["y_plus_1"]
    assert list(y["observed_data"].data_vars) == ["y"]  # sample_ais carries its data
    match = (r"models 'y' and 'y_plus_1' were fitted to different observed data: 3 of their 3 "
             r"observed values differ \(sorted, the first that differs: -0.2 against 0.8\); "
             r"'y' observes y \(3 values\).*pass same_data=False")
    with pytest.raises(pa.AnnealingError, match=match):
        pa.compare({"y": y, "y_plus_1": other})
    with pytest.raises(pa.AnnealingError, match=r"'idata1' and 'idata2' were fitted to "
                                                r"different observed data"):
        pa.bayes_factor(y, other)
    # a merged result carries its data too
    halves = [y.isel(chain=[c]) for c in (0, 1)]
    with pytest.raises(pa.AnnealingError, match=r"'merged' and 'y_plus_1' were fitted to "
                                                r"different observed data"):
        pa.compare({"merged": pa.merge(halves), "y_plus_1": other})
    # more values, or fewer
    shorter = y.copy()
    shorter["observed_data"] = y["observed_data"].to_dataset().isel(y_dim_0=[0, 1])
    with pytest.raises(pa.AnnealingError, match=r"3 observed values against 2; 'y' observes "
                                                r"y \(3 values\), 'short' observes y \(2"):
        pa.compare({"y": y, "short": shorter})
    # the opt-out, for a user with a reason
    assert list(pa.compare({"y": y, "y_plus_1": other}, same_data=False).index)
    bf = pa.bayes_factor(y, other, same_data=False)
    assert math.isfinite(bf.log_bayes_factor)
    with pytest.raises(pa.AnnealingError, match=r"same_data must be True .* or False .*got 'no'"):
        pa.compare({"y": y, "y_plus_1": other}, same_data="no")


def test_compare_takes_the_same_data_renamed_reshaped_or_split(data_runs):
    """The common case keeps working: the values are compared, as a multiset."""
    y, split = data_runs["y"], data_runs["split"]
    assert sorted(split["observed_data"].data_vars) == ["first", "rest"]
    table = pa.compare({"y": y, "split": split})
    assert table["log_evidence"].to_numpy() == pytest.approx(-3.59496, abs=0.2)
    assert math.isfinite(pa.bayes_factor(split, y).log_bayes_factor)
    # stored in float32 by one model: the same data to float32's precision
    single = y.copy()
    single["observed_data"] = xr.Dataset({"obs": ("i", Y.astype(np.float32))})
    assert list(pa.compare({"y": y, "single": single}).index)
    # results that carry no observed data cannot be checked, and are not refused
    no_data = data_runs["y_plus_1"].copy()
    del no_data["observed_data"]
    assert list(pa.compare({"y": y, "no_data": no_data, "estimate": _est(-4.0)}).index)


def test_bayes_factor_beyond_the_float_range():
    """Issue 40, item 7: |log BF| > 709, or an interval bound beyond it, raised a raw
    OverflowError; the log fields stay finite and the Bayes factor is inf (or 0)."""
    big = pa.bayes_factor(_est(-10.0, se=1.0, chain_sd=0.0), _est(-900.0, se=1.0, chain_sd=0.0))
    assert big.log_bayes_factor == 890.0 and big.bayes_factor == math.inf
    assert big.lower == big.upper == math.inf
    z = stats.norm.ppf(0.975)
    assert big.log_lower == pytest.approx(890.0 - z * math.sqrt(2), rel=1e-12)
    assert big.log_upper == pytest.approx(890.0 + z * math.sqrt(2), rel=1e-12)
    small = pa.bayes_factor(_est(-900.0), _est(-10.0))
    assert small.bayes_factor == small.lower == small.upper == 0.0
    assert small.log_bayes_factor == -890.0
    # only the upper bound overflows
    edge = pa.bayes_factor(_est(-1.0, se=2.0, chain_sd=0.0), _est(-706.0, se=2.0, chain_sd=0.0))
    assert math.isfinite(edge.bayes_factor) and math.isfinite(edge.lower)
    assert edge.upper == math.inf and math.isfinite(edge.log_upper)
    assert edge.strength == "very strong"
    # compare on the same inputs: no NumPy overflow warning (an error under this suite)
    table = pa.compare({"a": _est(-10.0), "b": _est(-900.0)})
    assert table.loc["b", "bayes_factor"] == math.inf
    assert table.loc["b", "log_evidence_diff"] == 890.0


def test_bridge_results_carry_their_data_for_the_same_data_check(data_runs):
    """bridge_sampling's result carries the model's observed data (as sample_ais's does),
    so comparing it with a result on other data is refused too."""
    from tests.bridge_cases import CASES, exact_idata

    model = CASES["normal"].build()
    bridge = pa.bridge_sampling(exact_idata("normal"), model, random_seed=1)
    observed = np.concatenate([np.ravel(v) for v in bridge["observed_data"].to_dataset()
                               .data_vars.values()])
    np.testing.assert_array_equal(np.sort(observed),
                                  np.sort(np.ravel(CASES["normal"].params["y"])))
    with pytest.raises(pa.AnnealingError, match=r"'bridge' and 'y' were fitted to different "
                                                r"observed data"):
        pa.compare({"bridge": bridge, "y": data_runs["y"]})
