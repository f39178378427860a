r"""The Pareto :math:`\hat k` line keeps its documented promise (:mod:`pymc_anneal.diagnostics`,
measured in full by ``benchmarks/measure_pareto_k.py``): few warnings on benign weights, the
runs without a warning cover there, and on heavy-tailed weights few runs miss the truth
without a warning. Each check is a binomial proportion over seeded replicates of 4 x 1000
weights (the samplers' default), bounded by the documented rate plus three binomial
standard errors."""

from __future__ import annotations

import numpy as np

from pymc_anneal.diagnostics import HEAVY_TAIL_K, weight_warnings
from pymc_anneal.estimators import estimate_log_z, log_mean_exp

CHAINS, DRAWS = 4, 1000


def _replicates(log_weights, log_z: float, num: int, seed: int):
    """(warned, covered) per replicate; ``log_weights(rng)`` draws one (chains, draws) set."""
    rng = np.random.default_rng(seed)
    warned, covered = np.zeros(num, bool), np.zeros(num, bool)
    for i in range(num):
        log_w = log_weights(rng)
        pooled = estimate_log_z(log_w.ravel())
        chain_sd = log_mean_exp(log_w, axis=1).std(ddof=1) / np.sqrt(CHAINS)
        covered[i] = abs(pooled.log_z - log_z) < 1.96 * max(pooled.standard_error, chain_sd)
        warned[i] = bool(weight_warnings(log_w))
    return warned, covered


def _upper(rate: float, num: int) -> float:
    """``rate`` plus three binomial standard errors of a proportion over ``num`` trials."""
    return rate + 3.0 * np.sqrt(rate * (1.0 - rate) / num)


def test_benign_weights_rarely_warn_and_cover():
    """Log-normal weights with sigma = 1 (ESS about 37%): documented at most 0.7% warned;
    the runs without a warning cover at the 93% the promise states."""
    num = 200
    warned, covered = _replicates(lambda rng: rng.standard_normal((CHAINS, DRAWS)), 0.5, num,
                                  seed=11)
    assert warned.mean() <= _upper(0.01, num), warned.mean()
    quiet = ~warned
    assert covered[quiet].mean() >= 0.93 - 3.0 * np.sqrt(0.93 * 0.07 / quiet.sum())


def test_heavy_tail_rarely_misses_without_a_warning():
    """Pareto I weights w = U^(-0.65) (tail index 0.65, infinite variance; the issue's case):
    the runs that raise no warning and miss the truth are documented at most 8% of all runs
    (7.4% measured; 16% at the former line 0.7, which this bound rejects at 500 replicates)."""
    assert HEAVY_TAIL_K == 0.5
    num, k = 500, 0.65
    warned, covered = _replicates(lambda rng: -k * np.log(rng.uniform(size=(CHAINS, DRAWS))),
                                  -np.log1p(-k), num, seed=12)
    silent_miss = np.mean(~warned & ~covered)
    assert silent_miss <= _upper(0.08, num), silent_miss
    assert warned.mean() > 0.5  # the rule is exercised: most runs see the tail
