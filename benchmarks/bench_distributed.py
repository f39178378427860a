#!/usr/bin/env python
"""Benchmark: ``pymc_anneal.distributed`` on 1 and 2 local Dask workers (issue 25, item 4).

For each case (a 10-parameter Gaussian regression with ``sample_ais``, HAIS; a binary RBM
64 x 20 with ``ais``, Gibbs) and each number of workers, a local cluster of that many
single-threaded processes is started (not timed), then the same call of ``runs`` tasks is
made twice with different seeds: the first (cold) includes each worker's compile of the
loop, the second (warm) is the throughput. Particle-steps per second = runs x chains x
draws x num_steps / warm wall time. The same runs made one after the other in this process
(no Dask) give the baseline. Also printed: the bytes sent per task (the pickled model) and
returned (the pickled result of one run).

The workers start without Dask's default ``MALLOC_TRIM_THRESHOLD_=65536``
(``distributed.nanny.pre-spawn-environ``): setting it turns off glibc's dynamic mmap
threshold, so every array above 128 kB is mapped and unmapped afresh, and the annealing
loop ran 3-3.5 times slower on a worker than in this process (measured 2026-11-26, numba).
``--dask-malloc`` keeps Dask's default to show it.

Usage: ``python benchmarks/bench_distributed.py [--steps 500] [--runs 4] [--dask-malloc]``;
or call :func:`bench_distributed` (``benchmarks/bench_scale.py`` does).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import pickle  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402


def regression_model(num_dims: int = 10, num_obs: int = 100):
    """A Bayesian linear regression with ``num_dims`` coefficients and known noise."""
    import pymc as pm

    rng = np.random.default_rng(0)
    x = rng.normal(size=(num_obs, num_dims))
    y = x @ rng.normal(size=num_dims) + rng.normal(size=num_obs)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=num_dims)
        pm.Normal("y", x @ beta, 1.0, observed=y)
    return model


def rbm_model(num_visible: int = 64, num_hidden: int = 20):
    import pymc_anneal as pa

    rng = np.random.default_rng(1)
    return pa.energy.BernoulliRBM(rng.normal(0, 0.3, (num_visible, num_hidden)),
                                  np.zeros(num_visible), np.zeros(num_hidden))


def cases(steps: int, draws: int, chains: int, backend: str) -> dict:
    """name -> (local entry point, distributed entry point, model, settings)."""
    import pymc_anneal as pa
    import pymc_anneal.distributed as dist

    common = {"draws": draws, "chains": chains, "num_steps": steps, "backend": backend}
    return {
        "sample_ais, 10-d regression": (
            lambda model, **kw: pa.sample_ais(model=model, **kw),
            lambda model, **kw: dist.sample_ais(model=model, **kw), regression_model(),
            common),
        "ais, binary RBM 64 x 20 (Gibbs)": (pa.ais, dist.ais, rbm_model(), common),
    }


def message_sizes(model, result) -> tuple[int, int]:
    """Bytes of the pickled model (sent to each worker once per call) and of the pickled
    result of one run (returned per task)."""
    import cloudpickle

    return len(cloudpickle.dumps(model)), len(pickle.dumps(result))


def _timed(call) -> tuple[float, object]:
    start = time.perf_counter()
    out = call()
    return time.perf_counter() - start, out


def bench_distributed(steps: int = 500, runs: int = 4, draws: int = 1000, chains: int = 2,
                      workers=(1, 2), backend: str = "numba", dask_malloc: bool = False) -> dict:
    """Particle-steps per second against the number of local workers; prints a table.

    Returns ``{case: {"local": rate, n: {"rate", "warm_s", "cold_s", "start_s"}, "sent",
    "returned"}}`` (rates in particle-steps per second).
    """
    import dask
    import distributed  # noqa: F401 (registers its configuration with dask)

    import pymc_anneal as pa

    if not dask_malloc:
        environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
        environ.pop("MALLOC_TRIM_THRESHOLD_", None)
        dask.config.set({"distributed.nanny.pre-spawn-environ": environ})

    warnings.simplefilter("ignore", pa.AnnealingWarning)
    work = runs * chains * draws * steps
    out = {}
    for name, (local, remote, model, settings) in cases(steps, draws, chains, backend).items():
        print(f"{name}: {runs} runs x {chains} x {draws} particles x {steps} steps")
        out[name] = row = _local_rate(local, model, settings, runs, work)
        for n in workers:
            row[n] = _cluster_rate(remote, model, settings, runs, work, n)
        ratio = row[workers[-1]]["rate"] / row[workers[0]]["rate"]
        print(f"  {workers[-1]} workers / {workers[0]}: {ratio:.2f}x; {workers[0]} worker / "
              f"in-process: {row[workers[0]]['rate'] / row['local']:.2f}x")
    return out


def _local_rate(local, model, settings, runs, work) -> dict:
    """The runs one after the other in this process (after a compile), and message sizes."""
    local(model, random_seed=0, progressbar=False, **settings)
    seconds, results = _timed(lambda: [local(model, random_seed=s, progressbar=False,
                                             **settings) for s in range(1, runs + 1)])
    sent, returned = message_sizes(model, results[0])
    print(f"  sent {sent} B per call and worker, returned {returned} B per run")
    print(f"  in this process, one after the other: {work / seconds:,.0f} particle-steps/s")
    return {"local": work / seconds, "sent": sent, "returned": returned}


def _cluster_rate(remote, model, settings, runs, work, num_workers) -> dict:
    """A cold and a warm call on a new local cluster of ``num_workers`` processes."""
    from distributed import Client, LocalCluster

    start, cluster = _timed(lambda: LocalCluster(
        n_workers=num_workers, threads_per_worker=1, processes=True, dashboard_address=":0"))
    with cluster, Client(cluster) as client:
        cold, _ = _timed(lambda: remote(model, runs=runs, random_seed=1, client=client,
                                        **settings))
        warm, _ = _timed(lambda: remote(model, runs=runs, random_seed=2, client=client,
                                        **settings))
    print(f"  {num_workers} worker(s): {work / warm:,.0f} particle-steps/s (warm call "
          f"{warm:.2f} s; first call, with the workers' compile, {cold:.2f} s; cluster "
          f"start {start:.1f} s)")
    return {"rate": work / warm, "warm_s": warm, "cold_s": cold, "start_s": start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--backend", default="numba")
    parser.add_argument("--dask-malloc", action="store_true",
                        help="keep Dask's MALLOC_TRIM_THRESHOLD_ on the workers")
    args = parser.parse_args()
    bench_distributed(steps=args.steps, runs=args.runs, draws=args.draws,
                      backend=args.backend, dask_malloc=args.dask_malloc)


if __name__ == "__main__":
    main()
