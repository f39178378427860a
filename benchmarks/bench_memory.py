#!/usr/bin/env python
"""Benchmark: the peak memory of a ``sample_ais`` call against its estimate (issue 25).

Each size runs in a fresh process (``resource.getrusage``'s ``ru_maxrss`` is the
process's peak resident set, and XLA's buffers live outside the Python heap, where
``tracemalloc`` does not see them). A process first runs the same call with 8 particles
(imports, compiles, the pilot: the fixed cost), records its peak, then the sized call; the
printed "measured" is the peak's growth over the fixed cost, against
:func:`pymc_anneal.driver.memory.estimate_memory` for the sized call (its particle and
step terms and the allowance for compiling the new shapes). The model: ``d`` independent
normals with ``obs`` observations each (the model's log density keeps ``d * obs`` values
per particle: a term of the peak that the estimate does not count), ``num_steps=64``
(and two long schedules on a 1-d model: per-step statistics of 400 chains, and K = 10^5).

.. code-block:: bash

    .venv/bin/python benchmarks/bench_memory.py            # 9 processes, about 8 minutes
    .venv/bin/python benchmarks/bench_memory.py --quick    # 2 processes

Results (2026-11-26, 2 shared cores, JAX 0.12 on CPU; MiB; ratio = measured / estimate)::

        kernel   d obs particles chains  steps state B fixed MiB  measured  estimate  ratio
          hais  10   1    100000      4     64     336       429     232.8     235.7   0.99
          hais  10   1    200000      4     64     336       431     401.3     383.3   1.05
          hais  50   1     40000      4     64    1616       504     364.8     366.8   0.99
    metropolis  10   1    200000      4     64      96       425     174.0     177.3   0.98
    metropolis  50   1     40000      4     64     416       481     146.3     160.8   0.91
          hais  10  20    100000      4     64     336       495     341.6     235.7   1.45
          hais   1   1     20000    400  20000      48       432     746.3     627.8   1.19
          hais   1   1        32      4 100000      48       438      44.8     119.3   0.38
          hais   2   3   1000000      4    100      80         -     573.0     466.0   1.23

(the two long schedules with ``STEP_COPIES`` = 1.75, since set to 2.0, the measured 2.1; the
20-observation row holds the model's per-particle intermediates, which the estimate leaves
out; the K = 10^5 row is below the 88 MiB allowance for a compile, which a tiny model does
not need; 10^6 particles took 50 s.)
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package

SIZES = [  # (kernel, d, observations per dimension, draws, chains, num_steps)
    ("hais", 10, 1, 25_000, 4, 64),
    ("hais", 10, 1, 50_000, 4, 64),
    ("hais", 50, 1, 10_000, 4, 64),
    ("metropolis", 10, 1, 50_000, 4, 64),
    ("metropolis", 50, 1, 10_000, 4, 64),
    ("hais", 10, 20, 25_000, 4, 64),
    ("hais", 1, 1, 50, 400, 20_000),
    ("hais", 1, 1, 8, 4, 100_000),
    ("hais", 2, 3, 250_000, 4, 100),
]
QUICK = [SIZES[1], SIZES[3]]


def _model(d: int, obs: int):
    import numpy as np
    import pymc as pm

    rng = np.random.default_rng(0)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1, shape=d)
        pm.Normal("y", mu, 1, observed=rng.normal(size=(obs, d)))
    return model


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def child(kernel: str, d: int, obs: int, draws: int, chains: int, num_steps: int) -> dict:
    """Run the fixed-cost call, then the sized one; the peaks and the estimate."""
    import pymc_anneal as pa
    from pymc_anneal.driver.memory import kernel_state_bytes, run_memory
    from pymc_anneal.kernels import resolve_kernel
    from pymc_anneal.pymc.adapter import model_path

    model = _model(d, obs)
    common = {"kernel": kernel, "num_steps": num_steps, "progressbar": False, "model": model,
              "random_seed": 1}
    pa.sample_ais(draws=8, chains=1, **common)
    fixed = _peak_mib()
    pa.sample_ais(draws=draws, chains=chains, **common)
    peak = _peak_mib()
    path = model_path(model).path
    built = resolve_kernel(kernel, path)
    state = kernel_state_bytes(built, path)
    estimate = run_memory(path, built, draws=draws, chains=chains, num_steps=num_steps)
    return {"kernel": kernel, "d": d, "obs": obs, "particles": draws * chains, "chains": chains,
            "steps": num_steps, "state_bytes": state, "fixed_mib": fixed,
            "measured_mib": peak - fixed, "estimate_mib": estimate / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=6)
    args = parser.parse_args()
    if args.child:
        kernel, *numbers = args.child
        print(json.dumps(child(kernel, *map(int, numbers))))
        return
    print(f"{'kernel':>10} {'d':>3} {'obs':>3} {'particles':>9} {'chains':>6} {'steps':>6} "
          f"{'state B':>7} {'fixed MiB':>9} {'measured':>9} {'estimate':>9} {'ratio':>6}")
    for size in QUICK if args.quick else SIZES:
        out = subprocess.run([sys.executable, __file__, "--child", *map(str, size)],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{r['kernel']:>10} {r['d']:>3} {r['obs']:>3} {r['particles']:>9} {r['chains']:>6} "
              f"{r['steps']:>6} {r['state_bytes']:>7} {r['fixed_mib']:>9.0f} "
              f"{r['measured_mib']:>9.1f} {r['estimate_mib']:>9.1f} "
              f"{r['measured_mib'] / r['estimate_mib']:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
