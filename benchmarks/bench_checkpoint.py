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
    bench_checkpoint(args.steps, args.repeats)


def bench_checkpoint(steps: int = 1000, repeats: int = 3) -> None:
    """Print, per case, the median call times without and with a checkpoint (at the default
    interval, and written after every chunk) and the share of the call spent in the
    checkpoint's code (also called by ``benchmarks/bench_scale.py``)."""
    warnings.simplefilter("ignore")
    from pymc_anneal.driver.checkpoint import Checkpoint

    spent = {"save": 0.0}
    save = Checkpoint.save

    def timed_save(self, *a, **kw):  # the time inside the checkpoint's own code
        t0 = time.perf_counter()
        save(self, *a, **kw)
        spent["save"] += time.perf_counter() - t0

    Checkpoint.save = timed_save
    previous = os.environ.get("PYMC_ANNEAL_CHECKPOINT_INTERVAL")
    try:
        for name, call in _cases(steps).items():
            call()  # compile, warm
            times: dict[str, list[float]] = {"none": [], "default": [], "every chunk": []}
            shares: dict[str, list[float]] = {"default": [], "every chunk": []}
            with tempfile.TemporaryDirectory() as tmp:
                for i in range(repeats):
                    for mode, taken in times.items():
                        os.environ["PYMC_ANNEAL_CHECKPOINT_INTERVAL"] = \
                            "0" if mode == "every chunk" else ""
                        kw = {} if mode == "none" else {"checkpoint": Path(tmp) / f"{i}{mode}"}
                        spent["save"] = 0.0
                        t0 = time.perf_counter()
                        call(**kw)
                        taken.append(time.perf_counter() - t0)
                        if mode in shares:
                            shares[mode].append(spent["save"] / taken[-1])
                size = (Path(tmp) / "0default").stat().st_size
            a, b, c = (statistics.median(v) for v in times.values())
            print(f"{name}: K = {steps}, without {a:.2f} s; with a checkpoint {b:.2f} s "
                  f"(ratio {b / a:.3f}) at the default interval, {c:.2f} s (ratio {c / a:.3f}) "
                  f"written after every chunk; file {size / 2**20:.1f} MiB")
            print("  time inside the checkpoint's code (recording, copying, writing) / the "
                  "call's time (robust to a loaded machine): "
                  + ", ".join(f"{mode} {100 * statistics.median(v):.1f} %"
                              for mode, v in shares.items()))
    finally:
        Checkpoint.save = save
        if previous is None:
            os.environ.pop("PYMC_ANNEAL_CHECKPOINT_INTERVAL", None)
        else:
            os.environ["PYMC_ANNEAL_CHECKPOINT_INTERVAL"] = previous


if __name__ == "__main__":
    main()
