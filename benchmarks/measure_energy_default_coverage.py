"""Do the default calls of the energy entry points have honest error bars? Coverage of
``pa.ais(model)`` at its defaults (``num_steps="auto"``: K chosen by the pilot, repeats judged
on the check chain) against exact log Z, over many seeds.

Models: three binary RBMs (8 x 5, 12 x 8 and 16 x 10 units, weights of scale 1, 4 and 3,
so that K goes from the minimum of 20 to about 70; log Z by enumeration: Gibbs paths) and
two complete products of experts (Laplace and Student-t, 3 x 3 filters; analytic Z: HMC
paths). For each, ``--seeds`` calls with seeds
0, 1, ...: the share of unwarned runs whose interval log Z-hat +- 1.96 max(SE, chains'
spread) holds the exact value, the mean and sd of z = error / max(SE, spread), the warned
runs, and the K chosen (median, range).

    OMP_NUM_THREADS=1 python benchmarks/measure_energy_default_coverage.py --seeds 100
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np

import pymc_anneal as pa
from pymc_anneal.energy import BernoulliRBM, LaplacePOE, StudentTPOE
from tests.energy.test_poe import random_filters


def _rbm(seed, n_visible, n_hidden, scale):
    rng = np.random.default_rng(seed)
    return BernoulliRBM(rng.normal(0, scale, (n_visible, n_hidden)),
                        rng.normal(0, 0.5, n_visible), rng.normal(0, 0.5, n_hidden))


MODELS = {
    "rbm 8x5 scale 1": lambda: _rbm(0, 8, 5, 1.0),
    "rbm 12x8 scale 4": lambda: _rbm(4, 12, 8, 4.0),
    "rbm 16x10 scale 3": lambda: _rbm(5, 16, 10, 3.0),
    "laplace poe 3x3": lambda: LaplacePOE(random_filters(3, 3)),
    "student-t poe 3x3": lambda: StudentTPOE(random_filters(3, 3), [0.7, 1.4, 3.0]),
}


def measure(model, seeds: int, draws: int, chains: int) -> dict:
    exact = model.exact_log_z()
    z, warned, steps = [], 0, []
    for seed in range(seeds):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            idata = pa.ais(model, draws=draws, chains=chains, random_seed=seed,
                           progressbar=False)
        steps.append(int(idata.attrs["num_steps"]))
        if any(issubclass(w.category, pa.AnnealingWarning) for w in caught):
            warned += 1
            continue
        est = pa.log_evidence(idata)
        z.append((est.log_evidence - exact) / max(est.standard_error, est.chain_sd))
    z = np.asarray(z)
    return {"runs": seeds, "warned": warned, "covered": float(np.mean(np.abs(z) < 1.959964)),
            "mean_z": float(z.mean()), "sd_z": float(z.std(ddof=1)),
            "k": (int(np.median(steps)), min(steps), max(steps))}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--draws", type=int, default=1000, help="the default: 1000")
    parser.add_argument("--chains", type=int, default=4, help="the default: 4")
    args = parser.parse_args(argv)
    print(f"{datetime.datetime.now().isoformat(timespec='seconds')}  pa.ais() at its defaults "
          f"({args.chains} x {args.draws} particles), {args.seeds} seeds per model")
    print(f"{'model':20s} {'runs':>5s} {'warned':>6s} {'covered':>8s} {'mean z':>7s} "
          f"{'sd z':>5s}  {'K median (range)':18s} {'s':>5s}")
    for name, build in MODELS.items():
        t0 = time.perf_counter()
        r = measure(build(), args.seeds, args.draws, args.chains)
        print(f"{name:20s} {r['runs']:5d} {r['warned']:6d} {r['covered']:8.3f} "
              f"{r['mean_z']:+7.2f} {r['sd_z']:5.2f}  {r['k'][0]:5d} ({r['k'][1]}-{r['k'][2]})"
              f"{'':6s} {time.perf_counter() - t0:5.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
