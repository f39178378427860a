#!/usr/bin/env python
"""Benchmark: the per-temperature cost of Hamiltonian AIS on a 36-d product of experts.

The HAIS paper's setting (Sohl-Dickstein & Culpepper 2012, §5): a complete 36-dimensional
Student-t POE, 200 particles, one leapfrog step per temperature, N = 100,000 temperatures
(the paper reports 170 s on 2011 hardware). For each backend, after a warm-up call (the
compile is excluded), ``pa.ais`` runs at N = 2,000 and N = 20,000; the per-temperature cost
is the difference of the two wall times over the 18,000 extra temperatures (fixed costs
cancel), for the whole call (which includes the pilot run that tunes the step size per
temperature band, 256 particles over the same temperatures) and for the annealing run
alone. Then the paper's N = 100,000 is timed whole on each backend. Ratios are against
Numba, measured in this one run. BLAS threads are capped at 1 for stable numbers.

``--quick``: N = 200 / 2,000 and the paper's setting at N = 10,000.
"""

from __future__ import annotations

import argparse
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json
import time
import warnings

import numpy as np

import pymc_anneal as pa
from pymc_anneal.energy import StudentTPOE

BACKENDS = ("numba", "c", "jax")


def model() -> StudentTPOE:
    rng = np.random.default_rng(0)
    filters = np.linalg.qr(rng.standard_normal((36, 36)))[0] * rng.uniform(0.5, 2.0, 36)
    return StudentTPOE(filters, alpha=np.linspace(1.2, 3.0, 36))


def timed(poe, backend: str, num_steps: int) -> tuple[float, float, float]:
    """(wall time of the call, of its annealing run alone, log Z estimate)."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pa.AnnealingWarning)  # N = 10 (compile) is rightly warned
        idata = pa.ais(poe, num_steps=num_steps, draws=100, chains=2, backend=backend,
                       random_seed=num_steps, progressbar=False)
    wall = time.perf_counter() - t0
    sampling = json.loads(idata.attrs["timings"])["sampling"]
    return wall, sampling, pa.log_evidence(idata).log_evidence


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    args = parser.parse_args(argv)
    small, large, paper = (200, 2000, 10_000) if args.quick else (2000, 20_000, 100_000)
    poe = model()
    exact = poe.exact_log_z()
    rows = []
    for backend in args.backends.split(","):
        t0 = time.perf_counter()
        timed(poe, backend, 10)  # compile
        compile_s = time.perf_counter() - t0
        t_small, s_small, _ = timed(poe, backend, small)
        t_large, s_large, _ = timed(poe, backend, large)
        per_step = (t_large - t_small) / (large - small)  # pilot tuning included
        per_step_annealing = (s_large - s_small) / (large - small)
        t_paper, s_paper, log_z = timed(poe, backend, paper)
        rows.append((backend, compile_s, per_step, t_paper, log_z - exact))
        print(f"{backend:6s} first call {compile_s:6.1f} s   per temperature "
              f"{1e6 * per_step:7.1f} us (annealing alone {1e6 * per_step_annealing:6.1f} us)   "
              f"N = {paper:,}: {t_paper:6.1f} s, annealing {s_paper:6.1f} s "
              f"(log Z error {log_z - exact:+.3f})", flush=True)
    reference = {r[0]: r for r in rows}.get("numba")
    if reference is not None:
        print("\nratios against numba (per temperature / whole call at the paper's N):")
        for backend, _, per_step, t_paper, _ in rows:
            print(f"  {backend:6s} {per_step / reference[2]:5.2f}   {t_paper / reference[3]:5.2f}")
    print("\n(the paper: 170 s for N = 100,000 with 200 particles, 2011 hardware)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
