"""Coverage of :func:`pymc_anneal.bridge_sampling`'s error bar on exact posterior draws.

For each case (``tests/bridge_cases.py``: a Gaussian posterior, and a skewed one on the
logit scale), proposal and autocorrelation ``rho`` (0: independent draws; 0.9: an ESS of
about 5% of the draws, like slow MCMC), ``--reps`` replicates of 4 x 1000 draws: the share
of runs whose nominal 95% interval (1.96 se, and 1.96 max(se, chain_sd) as compare uses)
covers the exact log evidence among runs without a warning, the share warned, and the
mean |z|. ``python benchmarks/measure_bridge_coverage.py --reps 200``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, ".")

import pymc_anneal as pa
from pymc_anneal.exceptions import AnnealingWarning
from tests.bridge_cases import CASES, exact_idata


def replicate(name, model, proposal, rho, seed, draws=1000):
    idata = exact_idata(name, draws=draws, seed=seed, rho=rho)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AnnealingWarning)
        result = pa.bridge_sampling(idata, model, proposal=proposal, random_seed=seed + 10**6)
    est = pa.log_evidence(result)
    se = est.standard_error
    wide = max(se, est.chain_sd)
    return est.log_evidence, se, wide, bool(caught)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    for name, target in CASES.items():
        model = target.build()
        for proposal in ("normal", "warp3"):
            for rho in (0.0, 0.9):
                start = time.perf_counter()
                rows = np.array([replicate(name, model, proposal, rho, seed)
                                 for seed in range(args.reps)])
                log_z, se, wide, warned = rows.T
                ok = warned == 0
                z = (log_z - target.log_evidence) / se
                cover = np.mean(np.abs(z[ok]) < 1.96)
                cover_wide = np.mean(np.abs(log_z - target.log_evidence)[ok] < 1.96 * wide[ok])
                print(f"{name:6s} {proposal:6s} rho={rho:.1f}: covered {cover:.3f} "
                      f"(compare's se: {cover_wide:.3f}) of {ok.sum()} unwarned, warned "
                      f"{1 - ok.mean():.3f}, sd(z) {np.std(z):.2f}, mean se {se.mean():.2g}, "
                      f"{(time.perf_counter() - start) / args.reps * 1e3:.0f} ms/run",
                      flush=True)


if __name__ == "__main__":
    main()
