#!/usr/bin/env python
"""Benchmark: the 100-d Gaussian linear model (d = 100, n = 200, exact log evidence) at
``pa.sample_ais``'s defaults against ``pm.sample_smc(draws=2000, chains=2, cores=1)``, in one
process, interleaved (ours, SMC, ours, SMC), after one warm-up call of each (compiles).

It prints, per call, the wall and CPU time, the error against the exact log evidence, K and
the base that ``base="auto"`` chose, and the ratio of the medians ours/SMC (issue 27's aim:
within 0.1 nat at most 3x SMC's time). ``--profile`` adds where the prior base's time goes:
its pilot's K and inefficiency, the cost of one temperature of the main run (a batch of
``draws * (chains + 1)`` particles, one leapfrog step) against its floor, one batched log
density and gradient (the compiled PyTensor function, same backend), without the 258-s run
itself. ``--prior`` adds full runs with ``base="prior"`` (about 4-5 minutes each on 2 cores).

BLAS threads are capped at 1; timings on a loaded machine are rough ratios, run them in one
process. Usage: ``python benchmarks/bench_highdim.py [--reps 2] [--profile] [--prior]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import logging
import statistics
import sys
import time
import warnings
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

SMC_KWARGS = {"draws": 2000, "chains": 2, "cores": 1}


def one_call(model, exact: float, method: str, seed: int) -> dict:
    import numpy as np
    import pymc as pm
    from scipy.special import logsumexp

    import pymc_anneal as pa

    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if method == "smc":
            idata = pm.sample_smc(**SMC_KWARGS, model=model, random_seed=seed,
                                  progressbar=False, compute_convergence_checks=False)
            lml = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values,
                             dtype=object)
            last = [np.asarray([float(x) for x in np.ravel(row) if np.isfinite(float(x))])[-1]
                    for row in lml.reshape(lml.shape[0], -1)]
            log_z = float(logsumexp(last) - np.log(len(last)))  # as bench_evidence.py
            info = {}
        else:
            base = {"ours": "auto", "prior": "prior", "gauss": "gaussian"}[method]
            idata = pa.sample_ais(model=model, base=base, random_seed=seed, progressbar=False)
            est = pa.log_evidence(idata)
            log_z = est.log_evidence
            info = {k: idata.attrs.get(k) for k in ("base", "num_steps", "prior_num_steps",
                                                    "prior_num_steps_predicted")}
            info["timings"] = json.loads(idata.attrs.get("timings", "{}"))
            info["se"] = est.standard_error
    warned = [str(w.message)[:80] for w in caught
              if "AnnealingWarning" in type(w.message).__name__]
    return {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
            "error": log_z - exact, "warned": warned, **info}


def profile(model) -> None:
    """Where a prior-base run's time goes, without running it: K from the pilot, and one
    temperature of the main run against one batched log density + gradient."""
    import numpy as np
    import pytensor.tensor as pt

    from pymc_anneal.backends import compile_function
    from pymc_anneal.driver import run_options
    from pymc_anneal.driver.cache import compiled_loop
    from pymc_anneal.driver.run import run_pilot
    from pymc_anneal.driver.tuning import TuningOptions, step_arrays
    from pymc_anneal.kernels import resolve_kernel
    from pymc_anneal.pymc.adapter import model_path
    from pymc_anneal.pymc.sampling import AUTO_PILOT_STEPS, AUTO_VARIANCE
    from pymc_anneal.schedules import make_schedule

    path = model_path(model, "auto").path
    options = run_options(progressbar=False).replace(
        tuning=TuningOptions(auto_variance=AUTO_VARIANCE))
    rng = np.random.default_rng(7)
    t0 = time.perf_counter()
    pilot = run_pilot(path, betas=make_schedule("power", AUTO_PILOT_STEPS), draws=1000,
                      chains=4, rng=rng, options=options)
    betas, values, length = pilot.schedule(options.tuning)
    print(f"prior base: pilot {time.perf_counter() - t0:.1f} s, thermodynamic length "
          f"{length:.1f}, inefficiency {pilot.inefficiency:.2f}, K = {betas.size - 1}",
          flush=True)
    kernel = resolve_kernel("hais", path)
    loop = compiled_loop(path, kernel, "jax")
    n, steps = 5000, 64
    params = [path.parameters[k] for k in sorted(path.parameters)]
    positions = path.sample_base(rng, n)
    arrays = step_arrays(kernel.parameters, betas[:steps + 1],
                         {k: v[:steps] for k, v in values.items()}, {})
    _, state = loop.init(rng, positions, {k: v[0] for k, v in arrays.items()}, params)
    log_w = np.zeros(n)
    loop.run(rng, arrays, state, log_w, 5, params)  # compile
    t0 = time.perf_counter()
    loop.run(rng, arrays, state, log_w, 5, params)
    per_step = (time.perf_counter() - t0) / steps
    x = pt.matrix("x")
    point = path.evaluate(x)
    fn = compile_function([x], [point.log_base + point.log_ratio,
                                point.grad_log_base + point.grad_log_ratio], "jax")
    fn(positions)
    t0 = time.perf_counter()
    for _ in range(20):
        fn(positions)
    floor = (time.perf_counter() - t0) / 20
    print(f"one temperature of {n} particles: {1e3 * per_step:.1f} ms; one batched log "
          f"density + gradient: {1e3 * floor:.1f} ms (ratio {per_step / floor:.2f}); "
          f"K x per step = {(betas.size - 1) * per_step:.0f} s", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--prior", action="store_true", help="also base='prior' (minutes)")
    parser.add_argument("--gauss", action="store_true", help="also base='gaussian'")
    args = parser.parse_args(argv)
    logging.getLogger("pymc").setLevel(logging.ERROR)

    from tests import analytic

    target = analytic.linear_regression(num_features=100, n=200)
    model = target.build()
    print(f"linreg d=100 n=200, exact log Z = {target.log_evidence:.4f}; load average "
          f"{os.getloadavg()[0]:.2f}, cores {os.cpu_count()}, BLAS threads 1", flush=True)
    if args.profile:
        profile(model)
    methods = ["ours", "smc"] + ["prior"] * args.prior + ["gauss"] * args.gauss
    results: dict = {m: [] for m in methods}
    for m in methods[:2]:
        r = one_call(model, target.log_evidence, m, 0)
        print(f"  warm-up {m:<5} {r['wall']:6.1f} s error {r['error']:+.3f}", flush=True)
    for rep in range(args.reps):
        for m in (methods if rep % 2 == 0 else methods[::-1]):
            r = one_call(model, target.log_evidence, m, 100 + rep)
            results[m].append(r)
            extra = {k: r[k] for k in ("base", "num_steps", "prior_num_steps",
                                       "prior_num_steps_predicted", "se", "timings")
                     if k in r}
            print(f"  {m:<5} {r['wall']:6.1f} s (cpu {r['cpu']:6.1f}) error "
                  f"{r['error']:+.3f} {extra} {r['warned'] or ''}", flush=True)
    smc = statistics.median(r["wall"] for r in results["smc"])
    for m in methods:
        if m == "smc":
            continue
        med = statistics.median(r["wall"] for r in results[m])
        worst = max(abs(r["error"]) for r in results[m])
        print(f"{m}: median {med:.1f} s = {med / smc:.2f} x SMC ({smc:.1f} s); max |error| "
              f"{worst:.3f} nat (aim: <= 3x, <= 0.1 nat)")
    print(f"SMC max |error| {max(abs(r['error']) for r in results['smc']):.2f} nat; load "
          f"average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
