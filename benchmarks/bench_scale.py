#!/usr/bin/env python
"""Benchmark: how a run scales (issue 25), in one run of this script.

1. **Workers** (``pymc_anneal.distributed`` on a local Dask cluster of 1 and 2 processes,
   ``benchmarks/bench_distributed.py``): particle-steps per second of the same seeded runs,
   for a PyMC model (a 10-d Gaussian regression, ``sample_ais``, HAIS) and the RBM Gibbs loop
   (``ais`` on a 64 x 20 binary RBM), against the same runs one after the other in this
   process.
2. **Devices** (one run's particles split over 1 and 2 JAX CPU devices,
   ``benchmarks/bench_sharding.py``): particle-steps per second of the annealing run, for the
   same two kinds of model, each in a fresh process.
3. **Memory per particle**: the kernel's state per particle and the estimate's bytes per
   particle at the peak (``pymc_anneal.driver.memory``; the estimate follows the measured
   peak within 10 % on plain models, ``benchmarks/bench_memory.py``).
4. **Checkpoints**: the time spent in the checkpoint's code as a share of the call, at the
   default interval and written after every chunk (``benchmarks/bench_checkpoint.py``; goal
   at most 5 %).

BLAS is capped at one thread. On a machine with two cores, two workers or two CPU devices
share them: a ratio near 2 is the most this machine can show, and anything else running
lowers it.

.. code-block:: bash

    .venv/bin/python benchmarks/bench_scale.py            # about 10 minutes
    .venv/bin/python benchmarks/bench_scale.py --quick    # fewer steps, about 5 minutes

Results (``--quick``, 2026-11-26, 2 cores with nothing else running; particle-steps/s)::

    case                          in-process   1 worker   2 workers  2/1    1 device  2 devices  2/1
    10-d regression, sample_ais    1,417,604    941,159   1,732,357  1.84x  1,474,018  1,794,131  1.22x
    RBM 64 x 20, ais (Gibbs)         648,609    723,305   1,302,758  1.80x    568,108  1,048,509  1.85x

    sent per worker and call: 25 kB / 22 kB; returned per run of 2,000 particles: 0.38 / 2.1 MB
    memory per particle (estimated peak): 1,548 B (HAIS, d = 10), 2,340 B (RBM Gibbs)
    checkpoint, share of the call in its code: 0.4-0.6 % at the default interval,
    4.3-6.5 % written after every chunk (K = 500, 2-4 s calls)

(workers: Dask's local cluster, numba backend, first call with the workers' compile 6-11
s; devices: JAX, 4 x 2,000 particles, medians of 3 fresh processes each.)
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package


def memory_per_particle() -> None:
    """Print the state and the estimated peak bytes per particle of the two cases."""
    from bench_distributed import rbm_model, regression_model

    from pymc_anneal.driver import memory
    from pymc_anneal.kernels import resolve_kernel
    from pymc_anneal.pymc.adapter import model_path

    regression = model_path(regression_model()).path
    rbm_path, rbm_kernel = rbm_model().annealing_path()
    cases = {"10-d regression, HAIS": (regression, resolve_kernel("hais", regression)),
             "RBM 64 x 20, Gibbs": (rbm_path, resolve_kernel(rbm_kernel, rbm_path))}
    for name, (path, kernel) in cases.items():
        state = memory.kernel_state_bytes(kernel, path)
        big, small = (memory.run_memory(path, kernel, draws=n, chains=4, num_steps=1000)
                      for n in (250_000, 0))
        print(f"{name}: state {state} B per particle; estimated peak "
              f"{(big - small) / 1e6:.0f} B per particle ({(big - small) / 2**30:.2f} GiB "
              "per 10^6 particles)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and repeats")
    args = parser.parse_args()
    from bench_checkpoint import bench_checkpoint
    from bench_distributed import bench_distributed
    from bench_sharding import bench_sharding

    print("== workers (Dask, local processes)")
    bench_distributed(steps=200 if args.quick else 500)
    print("== devices (JAX, CPU devices)")
    bench_sharding()
    print("== memory per particle")
    memory_per_particle()
    print("== checkpoints")
    bench_checkpoint(steps=500 if args.quick else 1000, repeats=1 if args.quick else 3)


if __name__ == "__main__":
    main()
