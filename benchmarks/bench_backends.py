#!/usr/bin/env python
"""Benchmark: why Numba's annealing loop was 4x slower than JAX's on a logistic regression,
and what each backend costs per step and at its first call.

For two models, a Gaussian linear regression (3 parameters, n = 36; cheap arithmetic) and a
Bayesian logistic regression (3 parameters, n = 100; a softplus per observation), the script
times in one run, with BLAS capped at one thread:

1. the vectorized log-likelihood and its gradient at 4000 particles, compiled by Numba and
   by JAX, and written by hand in NumPy (the floor of what NumPy's SIMD loops reach);
2. one annealing step (``sample_ais``'s compiled loop, HAIS, 4000 particles) per backend,
   from the ``timings`` of a warm call with a fixed number of temperatures;
3. the count of transcendental functions the log-likelihood graph evaluates per
   observation (read off the compiled Numba graph).

Printed ratios are against JAX, measured in this run. ``--steps`` sets the temperatures of
part 2 (default 500).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
import pytensor  # noqa: E402
import pytensor.tensor as pt  # noqa: E402

import pymc_anneal as pa  # noqa: E402
from pymc_anneal.pymc.adapter import model_path  # noqa: E402

TRANSCENDENTAL = ("exp", "log", "softplus", "sigmoid", "log1p", "expm1", "log1mexp")


def models():
    rng = np.random.default_rng(0)
    x = rng.normal(size=36)
    y = 1.0 + 0.5 * x + rng.normal(0.0, 0.5, 36)
    with pm.Model() as linear:
        a = pm.Normal("a", 0.0, 5.0)
        b = pm.Normal("b", 0.0, 2.0)
        s = pm.HalfNormal("s", 1.0)
        pm.Normal("y", a + b * x, s, observed=y)
    design = np.column_stack([np.ones(100), rng.normal(size=(100, 2))])
    labels = rng.random(100) < 1.0 / (1.0 + np.exp(-design @ [1.0, -0.5, 0.2]))
    with pm.Model() as logistic:
        beta = pm.Normal("beta", 0.0, 2.0, shape=3)
        pm.Bernoulli("y", logit_p=design @ beta, observed=labels)
    return {"linear": (linear, None), "logistic": (logistic, (design, labels))}


def numpy_logistic(positions, design, labels):
    eta = positions @ design.T
    log_lik = -np.logaddexp(0.0, np.where(labels, -eta, eta)).sum(axis=1)
    grad = (labels - 1.0 / (1.0 + np.exp(-eta))) @ design
    return log_lik, grad


def best_of(fn, repeats=20):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        np.asarray(out[0])
        times.append(time.perf_counter() - t0)
    return min(times)


def count_transcendental(fn) -> int:
    """Scalar transcendental calls per element in the compiled graph's elementwise loops."""
    text = pytensor.printing.debugprint(fn, file="str", print_type=False)
    return sum(text.count(f"{name} ") + text.count(f"{name}(") for name in TRANSCENDENTAL)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(1)
    results = {}
    for name, (model, data) in models().items():
        path = model_path(model).path
        positions = pt.tensor("positions", dtype="float64", shape=(None, path.num_dims))
        point = path.evaluate(positions, params={})
        outputs = [point.log_ratio, point.grad_log_ratio]
        x = rng.normal(size=(4000, path.num_dims)) * 0.3
        row = {}
        for backend, mode in (("numba", "NUMBA"), ("jax", "JAX")):
            fn = pytensor.function([positions], outputs, mode=mode)
            fn(x)
            row[f"logp+grad {backend} ms"] = 1e3 * best_of(lambda fn=fn, x=x: fn(x))
            if backend == "numba":
                row["transcendental ops in the graph"] = count_transcendental(fn)
        if data is not None:
            row["logp+grad numpy ms"] = 1e3 * best_of(lambda x=x, data=data:
                                                      numpy_logistic(x, *data))
        for backend in ("numba", "jax"):
            with model:
                pa.sample_ais(num_steps=args.steps, random_seed=0, progressbar=False,
                              backend=backend)  # compile
                idata = pa.sample_ais(num_steps=args.steps, random_seed=1, progressbar=False,
                                      backend=backend)
            sampling = json.loads(idata.attrs["timings"])["sampling"]
            row[f"step {backend} us"] = 1e6 * sampling / args.steps
        results[name] = row
        print(f"{name}:")
        for key, value in row.items():
            print(f"  {key:<34} {value:10.3f}")
        print(f"  {'ratio numba / jax, logp+grad':<34} "
              f"{row['logp+grad numba ms'] / row['logp+grad jax ms']:10.2f}")
        print(f"  {'ratio numba / jax, annealing step':<34} "
              f"{row['step numba us'] / row['step jax us']:10.2f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
