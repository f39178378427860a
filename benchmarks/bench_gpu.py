#!/usr/bin/env python
"""Benchmark: the JAX backend on a GPU (issue 27, item 5; issue 25's GPU runs).

Run on a machine with a CUDA GPU and ``jax[cuda]`` installed; every figure is also measured
on that machine's CPU (``JAX_PLATFORMS=cpu`` in a subprocess) so that the ratios come from
one run on one machine. Each case is timed twice in its process: the first call (compile
included) and a second call with another seed (the steady state). BLAS threads are capped at
1 on the CPU side.

Cases:

* ``hais``: the HAIS paper's setting (Sohl-Dickstein & Culpepper 2012, §5): the complete
  36-d Student-t product of experts of ``bench_hais.py``, 200 particles, one leapfrog step
  per temperature, N = 100,000 temperatures (``--quick``: 10,000); the exact log Z is known.
* ``hais-wide``: the same at N = 10,000 with 20,000 particles (what a GPU is for).
* ``linreg100``: ``pa.sample_ais`` at its defaults on the 100-d Gaussian linear regression
  (n = 200, exact evidence), and with ``base="gaussian"``.
* ``rbm-1e6``: 10^6 particles (4 chains x 250,000) of a 64 x 20 binary RBM, K = 50.

``python benchmarks/bench_gpu.py [--quick] [--cases hais,linreg100] [--platform gpu|cpu]``;
``--json FILE`` appends one line per case.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

CASES = ("hais", "hais-wide", "linreg100", "linreg100-gaussian", "rbm-1e6")


def _timed(call) -> tuple[float, object, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        result = call()
        wall = time.perf_counter() - t0
    import pymc_anneal as pa

    words = [str(w.message)[:120] for w in caught if issubclass(w.category, pa.AnnealingWarning)]
    return wall, result, words


def _case(name: str, quick: bool):
    """(calls for seeds 1 and 2, exact log Z or evidence)."""
    import numpy as np

    import pymc_anneal as pa

    if name.startswith("hais"):
        from bench_hais import model

        poe = model()
        steps = 10_000 if quick or name == "hais-wide" else 100_000
        draws = 10_000 if name == "hais-wide" else 100
        if quick and name == "hais-wide":
            draws = 1000

        def call(seed):
            return pa.ais(poe, num_steps=steps, draws=draws, chains=2, backend="jax",
                          random_seed=seed, progressbar=False)
        return call, poe.exact_log_z(), {"num_steps": steps, "particles": 2 * draws}
    if name.startswith("linreg100"):
        from tests import analytic

        target = analytic.linear_regression(num_features=20 if quick else 100,
                                            n=50 if quick else 200)
        kwargs = {"base": "gaussian"} if name.endswith("gaussian") else {}

        def call(seed):
            return pa.sample_ais(model=target.build(), backend="jax", random_seed=seed,
                                 progressbar=False, **kwargs)
        return call, target.log_evidence, {"dims": 20 if quick else 100, **kwargs}
    if name == "rbm-1e6":
        from pymc_anneal.energy import BernoulliRBM

        rng = np.random.default_rng(0)
        rbm = BernoulliRBM(rng.normal(0, 0.3, (64, 20)), rng.normal(0, 0.2, 64),
                           rng.normal(0, 0.2, 20))
        draws = 25_000 if quick else 250_000

        def call(seed):
            return pa.ais(rbm, num_steps=50, draws=draws, chains=4, backend="jax",
                          random_seed=seed, progressbar=False)
        return call, None, {"particles": 4 * draws, "num_steps": 50}
    raise SystemExit(f"unknown case {name!r}; choose from {CASES}")


def run_case(name: str, quick: bool) -> dict:
    import jax

    import pymc_anneal as pa

    call, exact, info = _case(name, quick)
    first, _, words1 = _timed(lambda: call(1))
    second, result2, words2 = _timed(lambda: call(2))
    row = {"case": name, "platform": jax.default_backend(),
           "device": str(jax.devices()[0]), "first_s": round(first, 2),
           "second_s": round(second, 2), **info}
    if "timings" in result2.attrs:
        row["timings"] = json.loads(result2.attrs["timings"])
    est = pa.log_evidence(result2)
    row.update(estimate=est.log_evidence, se=est.standard_error,
               num_steps_run=result2.attrs.get("num_steps"), warnings=words1 + words2)
    if exact is not None:
        row["error"] = est.log_evidence - exact
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--platform", choices=("gpu", "cpu", "both"), default="both")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.platform == "both":
        for platform in ("gpu", "cpu"):
            cmd = [sys.executable, __file__, "--cases", args.cases, "--platform", platform]
            cmd += ["--quick"] * args.quick + (["--json", str(args.json)] if args.json else [])
            env = {**os.environ, "JAX_PLATFORMS": "cuda" if platform == "gpu" else "cpu"}
            subprocess.run(cmd, env=env, check=False)
        return 0
    for name in args.cases.split(","):
        t0 = time.perf_counter()
        try:
            row = run_case(name, args.quick)
        except Exception as exc:  # noqa: BLE001 (a case that fails must not stop the others)
            row = {"case": name, "platform": args.platform, "error_text": repr(exc)[:400]}
        row["process_s"] = round(time.perf_counter() - t0, 1)
        print(json.dumps(row, default=str), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
