#!/usr/bin/env python
"""Benchmark: JAX's normal draws split in two fusions (``backends._split_normal``) against
JAX's fused ``jax.random.normal``, on this machine's CPU, in one process.

Printed: (1) one (5,000, 90) float64 draw, jitted, fused and split (median of 50 calls
each, alternating), with their ratio, and whether the bits are equal; (2) the annealing
loop's time per step on a 90-d model with a cheap likelihood (``sample_ais`` at the
prior's base, HAIS, 4 x 1,000 particles and the check chain), K = 100 and K = 400, with
the rewrite and with it replaced by one that does nothing; the per-step time is the
difference over the 300 extra steps (the loop's compile and pilot cancel), and the
ratio split / fused. BLAS at one thread.

    .venv/bin/python benchmarks/bench_split_normal.py
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402


def draws() -> None:
    import jax
    import pytensor.link.jax.dispatch  # noqa: F401  (float64 on, as in the loops)

    from pymc_anneal.backends import split_standard_normal

    key = jax.random.key(0, impl="rbg")
    shape = (5000, 90)
    fused = jax.jit(lambda k: jax.random.normal(k, shape, "float64"))
    split = jax.jit(lambda k: split_standard_normal(k, shape, "float64"))
    same = np.array_equal(np.asarray(fused(key)), np.asarray(split(key)))
    times = {"fused": [], "split": []}
    for _ in range(50):
        for name, fn in (("fused", fused), ("split", split)):
            start = time.perf_counter()
            jax.block_until_ready(fn(key))
            times[name].append(time.perf_counter() - start)
    f, s = (statistics.median(times[k]) * 1e3 for k in ("fused", "split"))
    print(f"(5000, 90) float64 draw: fused {f:.2f} ms, split {s:.2f} ms, "
          f"split / fused {s / f:.2f}, the same bits: {same}")


def steps() -> None:
    import pymc as pm
    from pytensor.graph.rewriting.basic import in2out, node_rewriter
    from pytensor.tensor.random.basic import NormalRV

    import pymc_anneal as pa
    from pymc_anneal import backends

    @node_rewriter([NormalRV])
    def nothing(fgraph, node):
        return None

    split_rewrite = backends._split_normal
    per_step = {}
    for variant in ("split", "fused", "split", "fused"):
        backends._split_normal = split_rewrite if variant == "split" else (
            lambda: in2out(nothing))
        with pm.Model() as model:  # a new model: its loop compiled for this variant
            x = pm.Normal("x", 0, 1, shape=90)
            pm.Normal("y", x.sum(), 1, observed=0.3)
        sampling = {}
        for k in (100, 400):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idata = pa.sample_ais(model=model, random_seed=1, progressbar=False,
                                      base="prior", num_steps=k)
            sampling[k] = json.loads(idata.attrs["timings"])["sampling"]
        per_step.setdefault(variant, []).append((sampling[400] - sampling[100]) / 300)
    backends._split_normal = split_rewrite
    s, f = (statistics.median(per_step[k]) * 1e3 for k in ("split", "fused"))
    print(f"90-d cheap model, loop step: fused {f:.2f} ms, split {s:.2f} ms, "
          f"split / fused {s / f:.2f}")


if __name__ == "__main__":
    draws()
    steps()
