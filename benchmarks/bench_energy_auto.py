"""``pa.ais(rbm)`` at its defaults (``num_steps="auto"``) on a hard binary RBM, against the
exact log Z and against the old default (a fixed K = 1000).

The RBM: 64 visible x 20 hidden units, trained on :func:`pymc_anneal.energy.binarized_digits`
(all 1797 digits) with scikit-learn's PCD (200 epochs, learning rate 1.0, seed 0), then with
all its parameters doubled (the trained model at half its temperature: sharper modes, the
hard case for AIS from the uniform base). Training takes about 15 s and its result depends
on scikit-learn's version, so the parameters are cached in
``benchmarks/data/hard_rbm_digits.npz`` (``--retrain`` makes them again). Its log Z is exact
(a sum over the 2^20 hidden states, :meth:`BernoulliRBM.exact_log_z`).

For each seed: the default call ``pa.ais(rbm, random_seed=seed)`` (4 x 1000 particles, Gibbs
sweeps, the pilot chooses K), and the old default ``num_steps=1000`` on the same seed. Printed,
all measured in this run: K, the error against the exact log Z, the reported standard error,
their ratio, the weight ESS, whether an ``AnnealingWarning`` was raised, and the wall time
(rough: measured on a shared machine).

**What was measured** (2026-11-26, 2 cores shared with other jobs, load about 7; about
5 minutes): exact log Z = 110.4355.

    call            seed  K     error    SE      error/SE  ESS   warnings  time
    default (auto)  0     2972  -0.0167  0.0185  -0.90     1688  0         169 s
    num_steps=1000  0     1000  +0.0187  0.0464  +0.40     417   0         27 s
    default (auto)  1     1746  -0.0020  0.0227  -0.09     1310  0         101 s
    num_steps=1000  1     1000  -0.0556  0.0467  -1.19     412   0         18 s

The default call is within 0.05 nat on both seeds, without a warning; its time is mostly
the repeats (2 and 1) of a first pass sized by a pilot that under-rates the Gibbs kernel's
lag here.

    OMP_NUM_THREADS=1 python benchmarks/bench_energy_auto.py [--seeds 2] [--retrain]
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # cap BLAS threads before NumPy loads

import argparse
import pathlib
import time
import warnings

import numpy as np

import pymc_anneal as pa
from pymc_anneal.energy import BernoulliRBM, binarized_digits, train_rbm

CACHE = pathlib.Path(__file__).resolve().parent / "data" / "hard_rbm_digits.npz"
SCALE = 2.0


def hard_rbm(retrain: bool = False) -> BernoulliRBM:
    """The hard digits RBM (cached; see the module docstring)."""
    if retrain or not CACHE.exists():
        trained = train_rbm(binarized_digits(), 20, method="pcd", num_epochs=200,
                            learning_rate=1.0, rng=0)
        CACHE.parent.mkdir(exist_ok=True)
        np.savez(CACHE, W=SCALE * trained.W, visible_bias=SCALE * trained.visible_bias,
                 hidden_bias=SCALE * trained.hidden_bias)
    with np.load(CACHE) as f:
        return BernoulliRBM(f["W"], f["visible_bias"], f["hidden_bias"], name="hard-digits")


def one_run(rbm, exact: float, seed: int, **kwargs) -> dict:
    """One ``pa.ais`` call: its K, error, standard error, ESS, warnings and wall time."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pa.AnnealingWarning)
        t0 = time.perf_counter()
        idata = pa.ais(rbm, random_seed=seed, progressbar=False, **kwargs)
        seconds = time.perf_counter() - t0
    est = pa.log_evidence(idata)
    error = est.log_evidence - exact
    return {"seed": seed, "K": int(idata.attrs["num_steps"]), "error": error,
            "se": est.standard_error, "ratio": error / est.standard_error,
            "ess": est.ess, "reruns": idata.attrs.get("auto_reruns", "-"),
            "warned": sum(issubclass(w.category, pa.AnnealingWarning) for w in caught),
            "seconds": seconds}


def main(seeds: int = 2, retrain: bool = False, baseline: bool = True) -> list[dict]:
    rbm = hard_rbm(retrain)
    exact = rbm.exact_log_z()
    print(f"hard digits RBM (64 x 20, PCD x {SCALE:g}): exact log Z = {exact:.4f}")
    rows = []
    for seed in range(seeds):
        rows.append({"call": "default (auto)", **one_run(rbm, exact, seed)})
        print(_format(rows[-1]), flush=True)
        if baseline:
            rows.append({"call": "num_steps=1000", **one_run(rbm, exact, seed, num_steps=1000)})
            print(_format(rows[-1]), flush=True)
    for call in dict.fromkeys(r["call"] for r in rows):
        mine = [r for r in rows if r["call"] == call]
        errors = np.array([r["error"] for r in mine])
        ratios = np.array([r["ratio"] for r in mine])
        print(f"{call}: {len(mine)} seeds, max |error| {np.abs(errors).max():.4f} nat, "
              f"RMS error/SE {np.sqrt(np.mean(ratios**2)):.2f}, "
              f"within 0.05 nat {np.mean(np.abs(errors) < 0.05):.0%}, "
              f"warned {sum(r['warned'] > 0 for r in mine)}, "
              f"median time {np.median([r['seconds'] for r in mine]):.1f} s")
    return rows


def _format(r: dict) -> str:
    return (f"{r['call']:>15}  seed {r['seed']}  K {r['K']:>6}  error {r['error']:+.4f}  "
            f"SE {r['se']:.4f}  error/SE {r['ratio']:+.2f}  ESS {r['ess']:7.1f}  "
            f"reruns {r['reruns']}  warnings {r['warned']}  {r['seconds']:6.1f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--retrain", action="store_true")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the fixed K = 1000 runs")
    args = parser.parse_args()
    main(args.seeds, args.retrain, not args.no_baseline)
