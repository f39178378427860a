r"""``num_steps="auto"``'s repeat rule, simulated: the reported estimate stays unbiased.

A run of ``num_steps="auto"`` is repeated with more temperatures when the variance of its log
weights misses the target (:func:`~pymc_anneal.driver.tuning.auto_rerun_steps`). If the
weights that decide were the weights reported, the runs kept would be those whose large
weights happened to be missing, and :math:`E[\hat Z] < Z`. The driver decides on an extra
check chain, run beside the reported chains with the same K, and drops it from the result.

Here the annealing run is replaced by draws of its weights, :math:`Z = 1`:

- log-normal weights whose variance falls as 1/K, :math:`\sigma^2(K) = c / K`, with the
  pilot's K at the repeat line (:math:`\sigma^2 = 1.7 \times 0.7`): a quarter of the runs
  are repeated (:math:`\log(N/\mathrm{ESS})` of 100 particles under-rates the variance);
- Pareto-tailed weights, :math:`w \propto (1 - U)^{-k}` with k = 0.55, which more
  temperatures do not cure (U is truncated at :math:`1 - 10^{-5}`: far beyond what a
  chain of 100 particles sees, so the decision sees the tail, while the variance stays
  finite and the simulation's standard error holds; the mean is exact for the truncation).

The rule is applied exactly as the driver applies it (the same function, the check chain
last). Reporting the chains that did not decide gives :math:`E[\hat Z]/Z = 1` within
3.5 simulation standard errors; reporting the deciding run (the old rule) is biased low by
more than 5 of them in the same simulation, which shows the test can fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from pymc_anneal.driver.tuning import AUTO_RERUN_FACTOR, auto_rerun_steps

CHAINS, DRAWS, REPLICATES, PILOT_STEPS = 4, 100, 1500, 100
TARGET = 0.7
PARETO_K, PARETO_TAIL = 0.55, 1e-5
# mean of (1 - U)^-k, U uniform on [0, 1 - tail]: the weights are divided by it (Z = 1)
PARETO_MEAN = (1 - PARETO_TAIL ** (1 - PARETO_K)) / (1 - PARETO_K) / (1 - PARETO_TAIL)


def _lognormal(rng, num_steps, shape):
    variance = AUTO_RERUN_FACTOR * TARGET * PILOT_STEPS / num_steps  # at the line at K0
    return -variance / 2 + np.sqrt(variance) * rng.standard_normal(shape)


def _pareto(rng, num_steps, shape):
    u = rng.random(shape) * (1 - PARETO_TAIL)
    return -PARETO_K * np.log1p(-u) - np.log(PARETO_MEAN)


def _simulate(draw_log_weights, seed, report_deciding_run):
    """Z-hat / Z of REPLICATES runs under the rule, and how many were repeated."""
    rng = np.random.default_rng(seed)
    z_hat, repeated = np.empty(REPLICATES), 0
    for i in range(REPLICATES):
        num_steps, reruns = PILOT_STEPS, 0
        while True:
            log_w = draw_log_weights(rng, num_steps, (CHAINS + 1, DRAWS))
            reported = log_w[:CHAINS]  # the driver drops the last chain, the check chain
            check = reported if report_deciding_run else log_w[CHAINS]
            _, next_steps = auto_rerun_steps(num_steps, check, TARGET, reruns)
            if next_steps is None:
                break
            num_steps, reruns = next_steps, reruns + 1
        z_hat[i] = np.exp(reported).mean()
        repeated += reruns > 0
    return z_hat, repeated / REPLICATES


@pytest.mark.parametrize(("weights", "seed"), [(_lognormal, 11), (_pareto, 12)],
                         ids=["lognormal", "pareto"])
def test_reporting_the_chains_that_did_not_decide_is_unbiased(weights, seed):
    z_hat, repeated = _simulate(weights, seed, report_deciding_run=False)
    assert 0.1 < repeated < 0.9, repeated  # the rule acts: the test can see a selection
    se = z_hat.std(ddof=1) / np.sqrt(z_hat.size)
    assert abs(z_hat.mean() - 1.0) < 3.5 * se, (z_hat.mean(), se)

    old, _ = _simulate(weights, seed, report_deciding_run=True)  # the power of the test
    se_old = old.std(ddof=1) / np.sqrt(old.size)
    assert old.mean() - 1.0 < -5 * se_old, (old.mean(), se_old)
