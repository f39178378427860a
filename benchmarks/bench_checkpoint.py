#!/usr/bin/env python
"""Benchmark: the cost of ``checkpoint=`` (issue 25: goal at most 5 % of the run's time).

One warm process, BLAS capped at one thread. For each case the same call (same seed, fixed
``num_steps``) runs alternately without and with a checkpoint, ``--repeats`` times each; the
script prints the median wall times, their ratio, the checkpoint file's size and the time
of one write. The cases: a 10-parameter Gaussian regression (``sample_ais``, 4 x 1000
particles, HAIS) and a binary RBM (``ais``, Gibbs, 4 x 1000 particles). A checkpoint is
written after the pilot and after each of about twenty chunks, so its cost is about 21
writes of the state (particles x dimensions x state fields), whatever K.

Usage: ``python benchmarks/bench_checkpoint.py [--steps 2000] [--repeats 3]``
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402


def _regression():
    import pymc as pm

    rng = np.random.default_rng(0)
    x = rng.normal(size=(100, 10))
    y = x @ rng.normal(size=10) + rng.normal(size=100)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=10)
        pm.Normal("y", x @ beta, 1.0, observed=y)
    return model


def _cases(steps):
    import pymc_anneal as pa

    rng = np.random.default_rng(1)
    rbm = pa.energy.BernoulliRBM(rng.normal(0, 0.3, (64, 20)), np.zeros(64), np.zeros(20))
    model = _regression()
    common = {"draws": 1000, "chains": 4, "num_steps": steps, "random_seed": 1,
              "progressbar": False}
    return {
        "sample_ais, 10-d regression": lambda **kw: pa.sample_ais(model=model, **common, **kw),
        "ais, binary RBM 64 x 20": lambda **kw: pa.ais(rbm, **common, **kw),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    for name, call in _cases(args.steps).items():
        call()  # compile, warm
        plain, checked, size = [], [], 0
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(args.repeats):
                t0 = time.perf_counter()
                call()
                plain.append(time.perf_counter() - t0)
                path = Path(tmp) / f"{i}.ckpt"
                t0 = time.perf_counter()
                call(checkpoint=path)
                checked.append(time.perf_counter() - t0)
                size = path.stat().st_size
        a, b = statistics.median(plain), statistics.median(checked)
        print(f"{name}: K = {args.steps}, without {a:.2f} s, with a checkpoint {b:.2f} s, "
              f"ratio {b / a:.3f}; file {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
