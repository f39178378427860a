"""NumPy estimators against direct formulas and brute-force Monte Carlo."""

import warnings

import numpy as np
import pytest

from pymc_anneal.estimators import (
    effective_sample_size,
    estimate_log_z,
    log_mean_exp,
    systematic_resample,
)


def test_log_mean_exp_is_stable_and_exact():
    log_w = np.array([1000.0, 1000.0 + np.log(3.0)])
    np.testing.assert_allclose(log_mean_exp(log_w), 1000.0 + np.log(2.0), rtol=1e-15)
    assert log_mean_exp(np.array([-np.inf, -np.inf])) == -np.inf
    np.testing.assert_allclose(log_mean_exp(np.array([0.0, -np.inf])), np.log(0.5))


def test_ess_matches_its_definition_and_ignores_zero_weights():
    rng = np.random.default_rng(0)
    log_w = rng.normal(size=500)
    w = np.exp(log_w)
    np.testing.assert_allclose(effective_sample_size(log_w), w.sum() ** 2 / (w**2).sum())
    assert effective_sample_size(np.zeros(10)) == pytest.approx(10.0)
    assert effective_sample_size(np.array([0.0, -np.inf, -np.inf])) == pytest.approx(1.0)
    assert effective_sample_size(np.full(3, -np.inf)) == 0.0


def test_delta_method_standard_error_matches_replicates():
    """Log-normal weights: the reported SE must match the spread of log Z-hat across
    independent replicates (within the sampling error of 400 replicates, about 7%)."""
    rng = np.random.default_rng(1)
    estimates = [estimate_log_z(rng.normal(0.0, 1.0, size=2000)) for _ in range(400)]
    spread = np.std([e.log_z for e in estimates], ddof=1)
    reported = np.mean([e.standard_error for e in estimates])
    assert abs(reported / spread - 1) < 0.2, (reported, spread)
    # and it is centred on the true log Z = log E[w] = 1/2
    mean = np.mean([e.log_z for e in estimates])
    assert abs(mean - 0.5) < 3 * spread / np.sqrt(400) + 1e-3  # bias ~ SE^2/2 is ~5e-4


def test_estimate_with_all_zero_weights_is_minus_inf_not_nan():
    est = estimate_log_z(np.full(5, -np.inf))
    assert est.log_z == -np.inf and est.ess == 0.0


def test_systematic_resampling_is_unbiased():
    rng = np.random.default_rng(2)
    log_w = np.log(np.array([0.1, 0.2, 0.3, 0.4]))
    counts = np.zeros(4)
    for _ in range(2000):
        counts += np.bincount(systematic_resample(log_w, 10, rng), minlength=4)
    np.testing.assert_allclose(counts / counts.sum(), [0.1, 0.2, 0.3, 0.4], atol=0.005)
    # zero-weight particles are never drawn
    idx = systematic_resample(np.array([0.0, -np.inf, 0.0]), 1000, rng)
    assert 1 not in idx


@pytest.mark.parametrize("k", [0.25, 0.6, 0.9])
def test_pareto_k_recovers_the_tail_index(k):
    """Weights w = U^(-k) have P(w > t) = t^(-1/k): tail index k. With 10^5 draws the
    fit uses 949 tail draws, SE about (1 + k) / sqrt(949) <= 0.062."""
    from pymc_anneal.estimators import pareto_k

    u = np.random.default_rng(3).uniform(size=100_000)
    assert abs(pareto_k(-k * np.log(u)) - k) < 3 * (1 + k) / np.sqrt(949)


def test_pareto_k_bounded_weights_and_too_few():
    from pymc_anneal.estimators import pareto_k

    rng = np.random.default_rng(4)
    assert pareto_k(np.log(rng.uniform(size=4000))) < 0  # bounded weights: k < 0
    assert np.isnan(pareto_k(rng.standard_normal(10)))
    assert np.isnan(pareto_k(np.zeros(100)))
    assert np.isfinite(pareto_k(np.r_[np.full(50, -np.inf), rng.standard_normal(100)]))


def test_pareto_k_of_extreme_tails_raises_no_numpy_warning():
    """Weights w = U^(-k) with k up to 500 (a run whose weights one particle dominates by
    hundreds of nats): the fit's quantiles overflow inside arviz_stats (a RuntimeWarning
    from its expm1 and divide, an error under ``-W error``); no NumPy warning leaves
    :func:`pareto_k`."""
    from pymc_anneal.estimators import pareto_k

    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in [2, 5, 10, 20, 50, 80, 100, 150, 200, 300, 500]:
            for n in [400, 1000, 4000]:
                assert isinstance(pareto_k(rng.exponential(size=n) * k), float)


def test_equal_weights_raise_no_warning():
    """A path whose log ratio is constant gives every particle the same weight up to
    rounding: the estimate is exact, so no warning, whatever the number of particles."""
    from pymc_anneal.diagnostics import weight_warnings

    log_w = np.full((2, 20), -56.25) + 1e-14 * np.random.default_rng(0).standard_normal((2, 20))
    assert weight_warnings(log_w) == []
    noisy = np.full((2, 20), -56.25) + 0.3 * np.random.default_rng(0).standard_normal((2, 20))
    assert weight_warnings(noisy)  # 40 particles with real spread: too few to trust


def test_the_pareto_fit_prefetched_in_a_fresh_process_gives_the_same_k():
    """``prefetch_pareto_fit`` (the driver's background import of ``arviz_stats`` while a
    run anneals) in a new process: ``pareto_k`` right after it waits for the import and
    gives the value of a plain call, and a second prefetch starts nothing."""
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from pymc_anneal import estimators as e\n"
        "assert e._PARETO_MODULE not in sys.modules\n"
        "e.prefetch_pareto_fit(); first = e._prefetch; e.prefetch_pareto_fit()\n"
        "assert e._prefetch is first and first is not None\n"
        "u = np.random.default_rng(3).uniform(size=100_000)\n"
        "print(repr(e.pareto_k(-0.6 * np.log(u))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    from pymc_anneal.estimators import pareto_k

    u = np.random.default_rng(3).uniform(size=100_000)
    assert float(out.stdout) == pareto_k(-0.6 * np.log(u))
