#!/usr/bin/env python
"""Benchmark: what compiling the package's Numba loops without fast math costs (issue 39).

PyTensor compiles Numba code with LLVM's fast-math flags by default (``numba__fastmath``:
reassociation, contraction into fused multiply-adds, approximate functions). With them, the
same seeded run gave other last bits in a process that found the loop in PyTensor's disk
cache than in the one that compiled it; the package now compiles its loops with the flags
off (``pymc_anneal.backends.NUMBA_FASTMATH``). This script measures the price.

For two models, the eight schools (hierarchical, centred: 10 parameters) and the change
point of ``tests/discrete_models.py`` (Poisson counts, the switch point summed out: 22
terms per particle and step), with BLAS at one thread, each round (``--rounds``) takes a new
empty PyTensor compile directory and runs:

1. **cold**, per setting (fast math on, PyTensor's default; off, the package's; the order
   alternates between rounds): a new process, its first ``pa.sample_ais(backend="numba")``
   call, compile included (Numba compiles at the first call, so the call is the figure),
   wall and CPU time; both settings compile into the round's directory (PyTensor's keys of
   the cached functions include the setting, so neither finds the other's code);
2. **warm**, one new process for both settings: the first call of each (its loop loaded
   from the disk cache), then ``--reps`` calls of each on the same models, the settings
   alternating call by call (paired, so that the machine's load, which drifts over
   minutes, weighs on both alike): the median of their ``sampling`` timings (the annealing
   run, without the pilot) and of their CPU time.

Printed per model: each figure for both settings, the ratio off / on measured in this run,
and whether the seeded first call gave the same bits (a digest of every number of the
result) in the cold and in the warm process.

    .venv/bin/python benchmarks/bench_numba_fastmath.py             # about 10 minutes
    .venv/bin/python benchmarks/bench_numba_fastmath.py --rounds 3  # more cold compiles
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
MODELS = ("eight_schools", "change_point")
KW = {"draws": 1000, "chains": 2, "num_steps": 200, "progressbar": False, "backend": "numba"}

CHILD = r"""
import hashlib, json, sys, time, warnings
import numpy as np
sys.path.insert(0, {root!r})
import pymc_anneal as pa
from pymc_anneal import backends

def build(name):
    if name == "change_point":
        from tests import discrete_models
        return discrete_models.change_point().build()
    from tests import eight_schools as es
    return es.build_model()  # centered

def digest(tree):
    h = hashlib.sha256()
    for group in sorted(tree.children):
        ds = tree[group].to_dataset()
        for name in sorted(ds.data_vars):
            a = np.asarray(ds[name].values)
            if a.dtype.kind in "fiub":
                h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]

def call(model, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wall, cpu = time.perf_counter(), time.process_time()
        result = pa.sample_ais(model=model, random_seed=seed, **{kw!r})
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {{"wall": wall, "cpu": cpu, "digest": digest(result),
            "sampling": json.loads(result.attrs["timings"])["sampling"],
            "log_evidence": pa.log_evidence(result).log_evidence.hex()}}

models, out = {{}}, {{}}
for fastmath in {settings!r}:  # each loop compiled (or loaded) under its setting
    backends.NUMBA_FASTMATH = fastmath
    models[fastmath] = build({model!r})  # a model object of its own: a loop of its own
    out[fastmath] = [call(models[fastmath], 1)]
for seed in range(2, {reps} + 2):
    for fastmath in (list(models) if seed % 2 else list(models)[::-1]):
        out[fastmath].append(call(models[fastmath], seed))
print("RESULT" + json.dumps({{str(k): v for k, v in out.items()}}))
"""


def child(model: str, settings: list[bool], compiledir: str, reps: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTENSOR_FLAGS"}
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTENSOR_FLAGS=f"base_compiledir={compiledir}")
    code = CHILD.format(root=str(REPO_ROOT), settings=settings, model=model, reps=reps,
                        kw=KW)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO_ROOT,
                         capture_output=True, text=True, check=False, timeout=1800)
    if out.returncode:
        raise RuntimeError(f"{model} {settings}: {out.stderr[-3000:]}")
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT"))
    return {k == "True": v for k, v in json.loads(line[len("RESULT"):]).items()}


def measure(model: str, order: tuple[bool, bool], reps: int) -> dict[bool, dict]:
    """One round: a cold process per setting, then one warm process for both."""
    with tempfile.TemporaryDirectory(prefix="fastmath-") as compiledir:
        cold = {fastmath: child(model, [fastmath], compiledir, 0)[fastmath][0]
                for fastmath in order}
        warm = child(model, list(order), compiledir, reps)
    return {fastmath: {"cold": cold[fastmath]["wall"], "cold_cpu": cold[fastmath]["cpu"],
                       "warm": warm[fastmath][0]["wall"],
                       "sampling": statistics.median(c["sampling"] for c in warm[fastmath][1:]),
                       "call_cpu": statistics.median(c["cpu"] for c in warm[fastmath][1:]),
                       "same_bits": cold[fastmath]["digest"] == warm[fastmath][0]["digest"],
                       "log_evidence": cold[fastmath]["log_evidence"]}
            for fastmath in order}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reps", type=int, default=6)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    args = parser.parse_args()
    print(f"{KW['draws']} x {KW['chains']} particles, {KW['num_steps']} temperatures, HAIS; "
          f"BLAS at one thread; {args.rounds} round(s), {args.reps} paired calls each")
    for model in args.models:
        runs: dict[bool, list[dict]] = {True: [], False: []}
        for r in range(args.rounds):
            for fastmath, m in measure(model, (True, False) if r % 2 == 0 else (False, True),
                                       args.reps).items():
                runs[fastmath].append(m)
        print(f"\n{model}")
        print(f"  {'':34} {'fast math on':>13} {'off':>8} {'off / on':>9}")
        for key, label in (("cold", "first call, empty cache, wall (s)"),
                           ("cold_cpu", "  CPU (s)"),
                           ("warm", "first call, warm cache, wall (s)"),
                           ("sampling", "later calls: sampling (s)"),
                           ("call_cpu", "  CPU of the whole call (s)")):
            on = statistics.median(m[key] for m in runs[True])
            off = statistics.median(m[key] for m in runs[False])
            print(f"  {label:34} {on:13.2f} {off:8.2f} {off / on:9.2f}")
        for fastmath in (True, False):
            same = [m["same_bits"] for m in runs[fastmath]]
            values = sorted({m["log_evidence"] for m in runs[fastmath]})
            print(f"  fast math {'on ' if fastmath else 'off'}: cold and warm processes gave "
                  f"the same bits in {sum(same)} of {len(same)} round(s); log Z {values}")


if __name__ == "__main__":
    main()
