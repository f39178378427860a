#!/usr/bin/env python
"""Benchmark: particle-steps per second of one run on 1 and on 2 JAX CPU devices (issue 25),
and float32 against float64 for energy models on one device.

Each measurement runs in a fresh process started with
``XLA_FLAGS=--xla_force_host_platform_device_count=2`` (so both processes see the same two
devices) and ``PYMC_ANNEAL_JAX_DEVICES`` = 1 or all. A process first makes the call once
(the compile, the pilot), then again with the same shapes and another seed; the figure is
``particles x temperatures / sampling time`` of the second call (``attrs["timings"]``: the
annealing run alone, without the pilot). The runs: ``sample_ais`` on a 10-d Bayesian linear
regression (50 observations, HMC, 4 x 2,000 particles, K = 256) and ``ais`` on a 64 x 16
Bernoulli RBM (Gibbs, 4 x 2,000 particles, K = 512); for float32, ``ais`` on the 36-d
Student-t POE of ``bench_hais.py`` (HMC) and on the RBM, in each dtype.

On a machine with two cores, two CPU devices share them with each other (and with anything
else running): a ratio near 1 is what that machine can show; it says nothing of two GPUs.

.. code-block:: bash

    .venv/bin/python benchmarks/bench_sharding.py     # 16 processes, about 8 minutes

Results (2026-11-26, 2 cores shared with two other sessions, load average 2-7, JAX 0.12 on
CPU; particle-steps per second, ratio 2 devices / 1). Three runs of the script (the first
two with one pair per model, the third with three alternating pairs)::

    regression (HMC, 10-d)  ratios 0.94 | 1.28 | 0.96 0.55 0.95   (1 device: 0.43-0.89 M/s)
    rbm (Gibbs, 64 x 16)    ratios 2.24 | 1.03 | 0.71 1.80 2.23   (1 device: 0.17-0.70 M/s)
    float32 / float64, 1 device: POE (HMC, 36-d) 1.20, RBM (Gibbs) 1.50; log Z equal to
    0.002 (16.285 / 16.285, 60.270 / 60.272)

The load of the machine moved the figures more than the devices did: no speed-up of the
HMC regression; the Gibbs loop's median 1.8 suggests that one CPU device leaves the second
core idle there, which two devices use (a guess that a quiet machine would have to confirm).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent("""
    import json, sys, warnings
    sys.path.insert(0, {root!r})
    import numpy as np, pymc_anneal as pa
    warnings.simplefilter("ignore")
    kind, dtype = {kind!r}, {dtype!r}
    rng = np.random.default_rng(0)
    if kind == "regression":
        from tests.analytic import linear_regression
        target, steps = linear_regression(num_features=10, n=50), 256
        def call(seed):
            with target.build():
                return pa.sample_ais(draws=2000, chains=4, num_steps=steps, random_seed=seed,
                                     progressbar=False)
    else:
        if kind == "rbm":
            model = pa.energy.BernoulliRBM(rng.normal(0, 0.3, (64, 16)), np.zeros(64),
                                           np.zeros(16), dtype=dtype)
            steps = 512
        else:
            filters = np.linalg.qr(rng.standard_normal((36, 36)))[0] * rng.uniform(.5, 2, 36)
            model = pa.energy.StudentTPOE(filters, np.linspace(1.2, 3.0, 36), dtype=dtype)
            steps = 512
        def call(seed):
            return pa.ais(model, draws=2000, chains=4, num_steps=steps, random_seed=seed,
                          progressbar=False)
    call(1)
    result = call(2)
    seconds = json.loads(result.attrs["timings"])["sampling"]
    print("RESULT", json.dumps({{"rate": 8000 * steps / seconds, "seconds": seconds,
                                "log_z": pa.log_evidence(result).log_evidence}}))
""")


def measure(kind: str, devices: str, dtype: str = "float64") -> dict:
    """One run's particle-steps per second in a fresh process (see the module docstring)."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
           "PYMC_ANNEAL_JAX_DEVICES": devices, "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), kind=kind,
                                                             dtype=dtype)],
                         capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return json.loads(out.stdout.split("RESULT ", 1)[1])


def bench_sharding(repeats: int = 3) -> dict:
    """Particle-steps per second on 1 and 2 CPU devices for the regression (``sample_ais``)
    and the RBM Gibbs loop, and the ratio of their medians (2 devices / 1), printed and
    returned. The processes alternate (1, 2, 2, 1, 1, 2, ...), ``repeats`` of each, so that
    a change of the machine's load shows in the spread rather than in one side."""
    table = {}
    for kind in ("regression", "rbm"):
        rates: dict[str, list] = {"1": [], "all": []}
        for r in range(repeats):
            for devices in (("1", "all") if r % 2 == 0 else ("all", "1")):
                rates[devices].append(measure(kind, devices)["rate"])
        one, two = float(np.median(rates["1"])), float(np.median(rates["all"]))
        table[kind] = {"1 device": rates["1"], "2 devices": rates["all"], "ratio": two / one}
        print(f"{kind:>10}: {one:12,.0f} particle-steps/s on 1 device, {two:12,.0f} on 2 "
              f"(medians of {repeats}), ratio {two / one:.2f}; each run's ratio "
              + " ".join(f"{b / a:.2f}" for a, b in zip(rates["1"], rates["all"])))
    return table


def bench_float32() -> dict:
    """Particle-steps per second of float32 over float64 energy models on one CPU device."""
    table = {}
    for kind in ("poe", "rbm"):
        f64, f32 = measure(kind, "1", "float64"), measure(kind, "1", "float32")
        table[kind] = {"float64": f64["rate"], "float32": f32["rate"],
                       "ratio": f32["rate"] / f64["rate"],
                       "log_z": (f64["log_z"], f32["log_z"])}
        print(f"{kind:>10}: {f64['rate']:12,.0f} particle-steps/s in float64, "
              f"{f32['rate']:12,.0f} in float32, ratio {f32['rate'] / f64['rate']:.2f} "
              f"(log Z {f64['log_z']:.3f} / {f32['log_z']:.3f})")
    return table


if __name__ == "__main__":
    bench_sharding()
    bench_float32()
