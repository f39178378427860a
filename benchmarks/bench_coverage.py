"""Does "no warning" mean "the interval holds"? Coverage of log Z-hat ± 1.96 max(SE, chains'
spread) among seeded replicates that raised no AnnealingWarning, per path and K, under
today's warning rule (pymc_anneal.diagnostics) and under the old one (ESS below 5%).

    python benchmarks/bench_coverage.py [--replicates 250] [--draws 100 1000]

Paths and setup: tests/coverage.py. Prints, per path, size and K: the median weight ESS,
the coverage of all runs, the fraction warned and the coverage of the unwarned runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np

from tests.coverage import PATHS, simulate

NUM_STEPS = (1, 2, 4, 8, 16, 64, 256)


def _cover(r, mask):
    return f"{np.mean(r.covered()[mask]):.3f}" if mask.any() else "  -  "


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=250)
    parser.add_argument("--draws", type=int, nargs="+", default=[100, 1000])
    args = parser.parse_args()
    print(f"{'path':6s} {'particles':>9s} {'K':>4s} {'ESS':>6s} {'cover(all)':>10s} "
          f"{'warned':>7s} {'cover(no warning)':>17s} {'old rule: warned, cover':>24s}")
    for draws in args.draws:
        for path in PATHS:
            t0 = time.perf_counter()
            r = simulate(path, NUM_STEPS, args.replicates, draws, seed=2026)
            old = r.ess_fraction < 0.05
            for k in NUM_STEPS:
                m = r.num_steps == k
                print(f"{path:6s} {4 * draws:9d} {k:4d} {np.median(r.ess_fraction[m]):6.3f} "
                      f"{np.mean(r.covered()[m]):10.3f} {np.mean(r.warned[m]):7.2f} "
                      f"{_cover(r, m & ~r.warned):>17s} {np.mean(old[m]):16.2f}, {_cover(r, m & ~old)}")
            print(f"{path:6s} {4 * draws:9d}  all: no warning {(~r.warned).sum()} runs, coverage "
                  f"{_cover(r, ~r.warned)}; old rule {(~old).sum()} runs, coverage "
                  f"{_cover(r, ~old)}   ({time.perf_counter() - t0:.0f} s)\n", flush=True)


if __name__ == "__main__":
    main()
