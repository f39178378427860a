#!/usr/bin/env python
"""Benchmark: the cost of one AIS step on a 784 x 500 binary RBM with 1000 chains, float32.

One AIS step is the weight update (log f at beta_k and beta_{k-1}, hidden units summed out)
and a Gibbs sweep (h | v, then v | h). Its floor is its two matrix products,
``v @ W`` (1000 x 784 x 500) and ``h @ W.T``; the issue's aim is at most 1.2x that floor.
Printed, all measured in this one run (the machines are noisy: compare ratios, not seconds):

* the two matrix products alone (NumPy/BLAS, float32);
* a plain NumPy reference AIS step (float32, the same arithmetic);
* ``pymc_anneal``'s compiled loop per backend: sampling time / number of steps;
* for comparison, the Numba loop with the weight update computed the plain way, as the
  difference of two log densities (two softplus per hidden unit, as before 2026-11-23),
  instead of the shared-exponential form of ``softplus_increment`` (energy/bernoulli.py).

Each timing is the median of ``--reps`` repetitions; the compiled loop's compile/JIT time is
excluded by a warm-up call. Run: ``python benchmarks/bench_rbm_step.py [--backends numba,jax]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymc_anneal as pa  # noqa: E402
from pymc_anneal.energy import BernoulliRBM  # noqa: E402
from pymc_anneal.energy.rbm import rbm_path  # noqa: E402

N_VISIBLE, N_HIDDEN, N_CHAINS = 784, 500, 1000


def median_time(fn, reps):
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def softplus(x):
    return np.logaddexp(np.float32(0.0), x)


def numpy_ais_step(rng, v, W, W_T, b, c, b_base, beta, beta_prev, log_w):
    """The reference: one AIS step in plain NumPy, float32 (log weights in float64)."""
    hidden = v @ W + c
    log_w += ((beta - beta_prev) * (v @ (b - b_base))
              + softplus(beta * hidden).sum(axis=1) - softplus(beta_prev * hidden).sum(axis=1))
    p_h = 1.0 / (1.0 + np.exp(-beta * hidden))
    h = (rng.random(p_h.shape, dtype=np.float32) < p_h).astype(np.float32)
    p_v = 1.0 / (1.0 + np.exp(-((1 - beta) * b_base + beta * (h @ W_T + b))))
    return (rng.random(p_v.shape, dtype=np.float32) < p_v).astype(np.float32)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="numba,jax")
    parser.add_argument("--steps", type=int, default=200, help="AIS steps per timed run")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-plain", action="store_true",
                        help="skip the loop with the plain weight update")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    W = (0.05 * rng.standard_normal((N_VISIBLE, N_HIDDEN))).astype(np.float32)
    W_T = np.ascontiguousarray(W.T)
    b = (0.1 * rng.standard_normal(N_VISIBLE)).astype(np.float32)
    c = (0.1 * rng.standard_normal(N_HIDDEN)).astype(np.float32)
    b_base = np.zeros(N_VISIBLE, dtype=np.float32)
    v = (rng.random((N_CHAINS, N_VISIBLE)) < 0.5).astype(np.float32)
    h = (rng.random((N_CHAINS, N_HIDDEN)) < 0.5).astype(np.float32)
    print(f"RBM {N_VISIBLE}x{N_HIDDEN}, {N_CHAINS} chains, float32; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")

    two_products = median_time(lambda: (v @ W, h @ W_T), args.reps * 10)
    log_w = np.zeros(N_CHAINS)
    state = {"v": v}

    def reference_step():
        state["v"] = numpy_ais_step(rng, state["v"], W, W_T, b, c, b_base, np.float32(0.5),
                                    np.float32(0.499), log_w)

    reference = median_time(reference_step, args.reps * 10)
    rows = [("two matrix products (floor)", two_products), ("NumPy reference AIS step", reference)]

    rbm = BernoulliRBM(W, b, c, dtype="float32", name="rbm784x500")
    plain = dataclasses.replace(rbm_path(rbm), build_log_increment=None,
                                structure=("bernoulli_rbm", "plain increment"))
    runs = [(f"backend={backend}", rbm, backend) for backend in args.backends.split(",")]
    if not args.no_plain:
        runs.append(("backend=numba, plain weight update", plain, "numba"))
    for label, target, backend in runs:
        kw = dict(draws=N_CHAINS, chains=1, num_steps=args.steps, progressbar=False,
                  backend=backend)
        start = time.perf_counter()
        pa.ais(target, random_seed=0, **kw)  # warm-up: compile / JIT
        first = time.perf_counter() - start
        per_step = []
        for rep in range(args.reps):
            idata = pa.ais(target, random_seed=rep + 1, **kw)
            per_step.append(json.loads(idata.attrs["timings"])["sampling"] / args.steps)
        rows.append((f"pymc_anneal, {label} (first call {first:.1f} s)",
                     statistics.median(per_step)))

    print(f"\n{'':72s} {'ms/step':>8s} {'/ floor':>8s}")
    for name, seconds in rows:
        print(f"{name:72s} {1e3 * seconds:8.2f} {seconds / two_products:8.2f}")
    print("\naim: pymc_anneal's step <= 1.2 x the floor")


if __name__ == "__main__":
    main()
