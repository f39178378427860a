"""Coverage of ``bridge_sampling``'s interval on short NUTS runs of a tiny model
(``tests.analytic.normal_mean(n=5)`` and ``beta_binomial()``; 4 chains x ``--draws`` draws,
300 tuning steps, a fresh seed per replicate): the share of runs without a warning whose
nominal 95% interval covers the exact log evidence.
``python benchmarks/measure_bridge_nuts_coverage.py --reps 100``.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings

import numpy as np
import pymc as pm

sys.path.insert(0, ".")

import pymc_anneal as pa
from tests.bridge_cases import CASES


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--draws", type=int, default=500)
    args = parser.parse_args()
    logging.getLogger("pymc").setLevel(logging.ERROR)
    for name, target in CASES.items():
        model = target.build()
        rows, start = [], time.perf_counter()
        for seed in range(args.reps):
            idata = pm.sample(draws=args.draws, tune=300, chains=4, cores=1, random_seed=seed,
                              model=model, progressbar=False,
                              compute_convergence_checks=False)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", pa.AnnealingWarning)
                est = pa.log_evidence(pa.bridge_sampling(idata, model,
                                                         random_seed=seed + 10**6))
            rows.append((est.log_evidence, est.standard_error, bool(caught)))
        log_z, se, warned = np.array(rows).T
        ok = warned == 0
        z = (log_z - target.log_evidence) / se
        print(f"{name}: covered {np.mean(np.abs(z[ok]) < 1.96):.3f} of {ok.sum()} unwarned "
              f"(warned {1 - ok.mean():.3f}), mean z {z.mean():+.2f}, sd(z) {z.std():.2f}, "
              f"max |z| {np.abs(z).max():.1f}, {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
