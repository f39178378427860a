#!/usr/bin/env python
"""Benchmark: the JAX loop's XLA backend optimization level, 1 (the package's) against 3
(XLA's default), on posteriordb posteriors (PATH: a local copy of twiecki/posteriordb).

The package compiles its JAX annealing loops with ``xla_backend_optimization_level=1``
(``pymc_anneal.backends.XLA_OPTIONS``): LLVM's cheaper pipeline, a shorter compile. The
level may change the last bits of some operations (a seeded run is deterministic at each
level): the script says whether each posterior's log weights have the same bits at both
levels, and how far apart the estimates are.

Each round runs, per posterior and per level (the order alternating between rounds), a new
process with an empty ``HOME`` (cold caches: the JAX loops compile, as at a user's first
call) and BLAS at one thread: ``pa.sample_ais(random_seed=1)`` at the defaults. Printed:
the median wall time of the call at each level, the median of the pairwise ratios
level 1 / level 3 (pairs from the same round), whether the log weights have the same bits,
and how far apart the log evidences are.

    .venv/bin/python benchmarks/bench_xla_level.py /path/to/posteriordb
    .venv/bin/python benchmarks/bench_xla_level.py /path/to/posteriordb --rounds 5 \\
        --only Rate_3_data-Rate_3_model,bones_data-bones_model
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
DEFAULT = ("Rate_3_data-Rate_3_model", "eight_schools-eight_schools_noncentered",
           "dogs-dogs_hierarchical", "bones_data-bones_model", "diamonds-diamonds",
           "radon_mn-radon_hierarchical_intercept_noncentered")

CHILD = r"""
import hashlib, json, sys, time, warnings
import numpy as np
sys.path.insert(0, {bench!r})
import bench_posteriordb as bp
entry = [e for e in bp.corpus(bp.corpus_root({path!r})) if e["name"] == {name!r}][0]
model, _ = bp.build(entry)
import pymc_anneal as pa
from pymc_anneal import backends
backends.XLA_OPTIONS = {{**backends.XLA_OPTIONS, "xla_backend_optimization_level": {level}}}
warnings.simplefilter("ignore")
start = time.perf_counter()
idata = pa.sample_ais(model=model, random_seed=1, progressbar=False)
wall = time.perf_counter() - start
log_w = np.ascontiguousarray(idata["particles"]["log_weight"].values)
print(json.dumps({{"wall": wall, "log_z": float(pa.log_evidence(idata).log_evidence),
                  "digest": hashlib.sha256(log_w.tobytes()).hexdigest(),
                  "backend": idata.attrs.get("backend")}}))
"""


def child(path: str, name: str, level: int) -> dict:
    env = {**os.environ, "HOME": tempfile.mkdtemp(prefix="xla-level-"),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    code = CHILD.format(bench=str(REPO_ROOT / "benchmarks"), path=path, name=name, level=level)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, cwd=REPO_ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"{name} at level {level} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", help="a local copy of twiecki/posteriordb")
    parser.add_argument("--only", default=",".join(DEFAULT), help="NAME[,NAME...]")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    print(f"{'posterior':58s} {'backend':7s} {'level 1 s':>9s} {'level 3 s':>9s} "
          f"{'1/3':>6s}  the same log weights")
    for name in args.only.split(","):
        walls: dict[int, list[float]] = {1: [], 3: []}
        digests: set[str] = set()
        log_z: dict[int, set[float]] = {1: set(), 3: set()}
        ratios, backend = [], None
        for round_ in range(args.rounds):
            pair = {}
            for level in ((1, 3) if round_ % 2 == 0 else (3, 1)):
                result = child(args.path, name, level)
                pair[level] = result["wall"]
                walls[level].append(result["wall"])
                digests.add(result["digest"])
                log_z[level].add(result["log_z"])
                backend = result["backend"]
            ratios.append(pair[1] / pair[3])
        gap = max(abs(a - b) for a in log_z[1] for b in log_z[3])
        print(f"{name:58s} {backend:7s} {statistics.median(walls[1]):9.2f} "
              f"{statistics.median(walls[3]):9.2f} {statistics.median(ratios):6.2f}  "
              f"{'yes' if len(digests) == 1 else 'no'} (log Z {gap:.1e} apart)", flush=True)


if __name__ == "__main__":
    main()
