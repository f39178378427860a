"""``bridge_sampling`` on 4 x 1000 NUTS draws of the closed-form targets of
``tests/analytic.py``: error against the exact log evidence, reported standard error, and
the extra wall time (the first call compiles the model's density; a second call reuses it).
The NUTS run is timed separately (the user already paid for it).
``python benchmarks/measure_bridge_nuts.py`` (about a minute on 2 cores).
"""

from __future__ import annotations

import sys
import time
import warnings

import pymc as pm

sys.path.insert(0, ".")

import pymc_anneal as pa
from tests.analytic import (
    beta_binomial,
    linear_regression,
    logistic_regression,
    nig_regression,
    normal_mean,
)


def main() -> None:
    targets = (normal_mean(), linear_regression(), beta_binomial(), nig_regression(),
               logistic_regression())
    for target in targets:
        model = target.build()
        start = time.perf_counter()
        idata = pm.sample(draws=1000, tune=1000, chains=4, random_seed=2026, model=model,
                          progressbar=False, compute_convergence_checks=False)
        nuts = time.perf_counter() - start
        for proposal in ("warp3", "normal"):
            times = []
            for _ in range(2):
                start = time.perf_counter()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", pa.AnnealingWarning)
                    result = pa.bridge_sampling(idata, model, proposal=proposal,
                                                random_seed=1)
                times.append(time.perf_counter() - start)
            est = pa.log_evidence(result)
            error = est.log_evidence - target.log_evidence
            columns = [f"{target.name:28s} d={target.num_dims:2d} {proposal:6s}",
                       f"error {error:+.4f} se {est.standard_error:.4f}",
                       f"z {error / est.standard_error:+.2f} k {est.pareto_k:.2f}",
                       f"warned {len(caught)} | bridge {times[0]:.2f} s first,",
                       f"{times[1]:.3f} s again | NUTS {nuts:.1f} s"]
            print(" ".join(columns), flush=True)


if __name__ == "__main__":
    main()
