r"""Coverage of the reported interval among runs that raised no warning (issue: "no warning
must mean the interval holds"), shared by ``tests/test_coverage.py`` and
``benchmarks/bench_coverage.py``.

Replicates are independent runs of ``chains`` chains; all replicates at one K anneal as the
chains of a single :func:`~pymc_anneal.driver.run_annealing` call (the chains of a run are
independent, so this is exactly ``replicates`` separate runs, compiled once). Each
replicate's log weights go through :func:`pymc_anneal.diagnostics.weight_warnings`, the
function behind the samplers' warnings, and its interval is
``log Z-hat ± 1.96 max(delta-method SE, chains' spread)``.

Paths (closed-form Gaussian, :math:`\log Z = 0`):

- ``light``: the base is wider than the target: bounded weights at K = 1.
- ``heavy``: the base is narrower than the target in two directions (scale 0.5 against
  about 1): at K = 1 the weights' tail index is :math:`k \approx 0.75` (infinite variance).
- ``far``: a wide base, the target three base scales off in one direction: light tails but
  an ESS of about 1% at K = 1.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pymc_anneal.diagnostics import weight_warnings
from pymc_anneal.driver import RunOptions, run_annealing
from pymc_anneal.estimators import effective_sample_size, estimate_log_z, log_mean_exp
from pymc_anneal.schedules import make_schedule
from tests.gaussian_paths import DEFAULT, GaussianPath, correlated_cov

__all__ = ["PATHS", "Replicates", "simulate"]

PATHS = {
    "light": DEFAULT,
    "heavy": GaussianPath(base_scale=np.array([0.5, 1.0, 2.0]),
                          target_mean=np.array([0.5, -0.5, 0.3]),
                          target_cov=correlated_cov([1.0, 1.2, 0.6], 0.5)),
    "far": GaussianPath(base_scale=np.array([1.0, 1.0, 1.0]),
                        target_mean=np.array([3.0, 0.0, 0.0]),
                        target_cov=correlated_cov([0.4, 0.5, 0.6], 0.3)),
}


class Replicates(NamedTuple):
    """One row per replicate (all arrays of shape (replicates,))."""

    num_steps: np.ndarray
    error: np.ndarray
    standard_error: np.ndarray
    ess_fraction: np.ndarray
    warned: np.ndarray

    def covered(self, z: float = 1.96) -> np.ndarray:
        return np.abs(self.error) < z * self.standard_error


def simulate(path: str, num_steps, replicates: int, draws: int, chains: int = 4,
             seed: int = 0) -> Replicates:
    """``replicates`` runs of ``chains`` x ``draws`` particles at each K in ``num_steps``."""
    gaussian = PATHS[path]
    rows = []
    for k in num_steps:
        run = run_annealing(gaussian.path, betas=make_schedule("linear", int(k)), draws=draws,
                            chains=replicates * chains, rng=np.random.default_rng([seed, int(k)]),
                            options=RunOptions(progressbar=False))
        log_w = run.log_weights.reshape(replicates, chains, draws)
        for lw in log_w:
            pooled = estimate_log_z(lw.ravel())
            chain_sd = log_mean_exp(lw, axis=1).std(ddof=1) / np.sqrt(chains)
            rows.append((k, pooled.log_z, max(pooled.standard_error, chain_sd),
                         effective_sample_size(lw.ravel()) / lw.size, bool(weight_warnings(lw))))
    columns = list(zip(*rows, strict=True))
    return Replicates(*(np.asarray(c) for c in columns))
