#!/usr/bin/env python
"""Benchmark: a log density without a gradient, this working tree against another commit.

The model: ``mu ~ Normal(0, 100)`` and 300 observations ``y_i ~ Normal(mu, 1)`` whose
log-likelihood is a NumPy function wrapped as an op (``pytensor.wrap_py``: no gradient,
so the kernel falls back to Metropolis), with its closed-form evidence. Each version runs
``pa.sample_ais(random_seed=SEED)`` at the defaults in a new process (empty ``HOME``, BLAS
at one thread; ``PYTHONPATH`` selects the version), the order alternating between rounds.
Printed: each call's wall time, the paired ratio this / commit, each estimate's distance
from the closed form in its standard errors, and its base and kernel.

    .venv/bin/python benchmarks/bench_no_gradient.py --commit HEAD~1 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time, warnings
import numpy as np, pymc as pm, pytensor, pytensor.tensor as pt
from scipy import stats
import pymc_anneal as pa
assert pa.__file__.startswith({root!r}), pa.__file__
warnings.simplefilter("ignore")
y = np.random.default_rng(5).normal(3.0, 1.0, size=300)

@pytensor.wrap_py(itypes=[pt.dscalar], otypes=[pt.dscalar])
def normal_log_likelihood(mu):
    return np.asarray(stats.norm.logpdf(y, mu, 1.0).sum())

with pm.Model() as model:
    mu = pm.Normal("mu", 0.0, 100.0)
    pm.Potential("log_likelihood", normal_log_likelihood(mu))
exact = stats.multivariate_normal.logpdf(y, np.zeros(y.size), np.eye(y.size) + 100.0**2)
start = time.perf_counter()
idata = pa.sample_ais(model=model, random_seed={seed}, progressbar=False)
wall = time.perf_counter() - start
e = pa.log_evidence(idata)
print(json.dumps({{"wall": wall, "z": (float(e.log_evidence) - exact) / float(e.standard_error),
                  "base": idata.attrs["base"], "kernel": idata.attrs["kernel"],
                  "num_steps": int(idata.attrs["num_steps"])}}))
"""


def child(root: Path, seed: int) -> dict:
    env = {**os.environ, "HOME": tempfile.mkdtemp(prefix="no-gradient-"),
           "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(root), seed=seed)],
                         env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise RuntimeError(f"the run at {root} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commit", required=True, help="the commit to compare against")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    other = Path(tempfile.mkdtemp(prefix="no-gradient-tree-")) / "tree"
    subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", "-q",
                    str(other), args.commit], check=True)
    try:
        print(f"this tree against {args.commit}")
        for round_ in range(args.rounds):
            order = ("this", "commit") if round_ % 2 == 0 else ("commit", "this")
            runs = {which: child(REPO_ROOT if which == "this" else other, round_ + 1)
                    for which in order}
            for which in ("this", "commit"):
                r = runs[which]
                print(f"seed {round_ + 1} {which:6s} {r['wall']:7.1f} s  z {r['z']:+5.2f}  "
                      f"base {r['base']}, kernel {r['kernel']}, K {r['num_steps']}")
            print(f"seed {round_ + 1} ratio this / commit "
                  f"{runs['this']['wall'] / runs['commit']['wall']:.3f}", flush=True)
    finally:
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force",
                        str(other)], check=False)


if __name__ == "__main__":
    main()
