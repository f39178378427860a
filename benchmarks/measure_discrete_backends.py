#!/usr/bin/env python
"""Measure: the annealed discrete routes on every backend against exact evidences.

Runs the cases of ``tests/pymc/test_discrete_backends.py`` (a Binomial drawn by Gibbs and a
Poisson and a huge DiscreteUniform moved by Metropolis, scalar and shape 3, each with
parameters that depend on a continuous x) with ``discrete="anneal"`` on one backend, from
the prior and from a fitted Gaussian, at the given seeds, and prints each estimate, its
z-score against the exact value (quadrature over x of the sum over the support), the
Pareto k, the discrete moves' rate and the wall time (the first call on a model includes
its compile).

    python benchmarks/measure_discrete_backends.py jax
    python benchmarks/measure_discrete_backends.py numba poisson,binomial prior 1,2,3
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.pymc import test_discrete_backends as cases


def main(argv):
    backend = argv[1]
    names = argv[2].split(",") if len(argv) > 2 else list(cases.CASES)
    bases = argv[3].split(",") if len(argv) > 3 else ["prior", "gaussian"]
    seeds = [int(s) for s in argv[4].split(",")] if len(argv) > 4 else [1]
    for name in names:
        exact = cases.exact_log_evidence(name)
        for base in bases:
            for seed in seeds:
                start = time.perf_counter()
                idata, est = cases.run(name, backend, base, seed)
                rate = float(idata["annealing_stats"]["z_acceptance_rate"].mean())
                z = (est.log_evidence - exact) / est.standard_error
                print(f"{name:16s} {backend:5s} {base:8s} seed={seed} "
                      f"est={est.log_evidence:.4f} exact={exact:.4f} "
                      f"se={est.standard_error:.4f} chain_sd={est.chain_sd:.4f} z={z:+.2f} "
                      f"k={est.pareto_k:.2f} rate={rate:.2f} "
                      f"t={time.perf_counter() - start:.1f}s", flush=True)


if __name__ == "__main__":
    main(sys.argv)
