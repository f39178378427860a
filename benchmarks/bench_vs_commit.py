#!/usr/bin/env python
"""Benchmark: a first call of ``sample_ais`` on posteriordb posteriors, this working tree
against another commit of the package (PATH: a local copy of twiecki/posteriordb).

For a change that moves every run a little (a tuning rule, a compile option), the question
is what a user's first call gains, measured in one run. The script checks ``--commit`` out
into a temporary git worktree and runs, per posterior and round, a new process of each
version (the order alternating between rounds; ``PYTHONPATH`` selects the version), each
with an empty ``HOME`` (cold caches, as at a user's first call) and BLAS at one thread:
``pa.sample_ais(random_seed=1)`` at the defaults (``--seeds``: round i runs the i-th seed
in both versions). Printed: each version's median wall
time of the call, the median of the pairwise ratios this / commit (pairs from the same
round), and both estimates.

    .venv/bin/python benchmarks/bench_vs_commit.py /path/to/posteriordb --commit HEAD~1
    .venv/bin/python benchmarks/bench_vs_commit.py /path/to/posteriordb --commit main \\
        --rounds 5 --only Rate_3_data-Rate_3_model,bones_data-bones_model
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
           "dogs-dogs_hierarchical", "bones_data-bones_model",
           "radon_mn-radon_hierarchical_intercept_noncentered")

CHILD = r"""
import json, sys, time, warnings
sys.path.insert(0, {bench!r})
import bench_posteriordb as bp
entry = [e for e in bp.corpus(bp.corpus_root({path!r})) if e["name"] == {name!r}][0]
model, _ = bp.build(entry)
import pymc_anneal as pa
assert pa.__file__.startswith({root!r}), pa.__file__
warnings.simplefilter("ignore")
start = time.perf_counter()
idata = pa.sample_ais(model=model, random_seed={seed}, progressbar=False)
wall = time.perf_counter() - start
estimate = pa.log_evidence(idata)
print(json.dumps({{"wall": wall, "log_z": float(estimate.log_evidence),
                  "se": float(estimate.standard_error)}}))
"""


def child(path: str, name: str, root: Path, seed: int = 1) -> dict:
    env = {**os.environ, "HOME": tempfile.mkdtemp(prefix="vs-commit-"),
           "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    code = CHILD.format(bench=str(REPO_ROOT / "benchmarks"), path=path, name=name,
                        root=str(root), seed=seed)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise RuntimeError(f"{name} at {root} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", help="a local copy of twiecki/posteriordb")
    parser.add_argument("--commit", required=True, help="the commit to compare against")
    parser.add_argument("--only", default=",".join(DEFAULT), help="NAME[,NAME...]")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seeds", default="1",
                        help="SEED[,SEED...]: round i runs random_seed SEEDS[i mod n] in "
                             "both versions (a paired ratio per round)")
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    other = Path(tempfile.mkdtemp(prefix="vs-commit-tree-")) / "tree"
    subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", "-q",
                    str(other), args.commit], check=True)
    try:
        print(f"this tree against {args.commit}")
        print(f"{'posterior':52s} {'this s':>7s} {'commit s':>8s} {'ratio':>6s}  "
              f"{'log Z (this)':>22s}  {'log Z (commit)':>22s}")
        for name in args.only.split(","):
            walls, ratios, last = {"this": [], "commit": []}, [], {}
            for round_ in range(args.rounds):
                order = ("this", "commit") if round_ % 2 == 0 else ("commit", "this")
                for which in order:
                    last[which] = child(args.path, name,
                                        REPO_ROOT if which == "this" else other,
                                        seeds[round_ % len(seeds)])
                    walls[which].append(last[which]["wall"])
                ratios.append(walls["this"][-1] / walls["commit"][-1])
            print(f"{name:52s} {statistics.median(walls['this']):7.2f} "
                  f"{statistics.median(walls['commit']):8.2f} "
                  f"{statistics.median(ratios):6.2f}  "
                  + "  ".join(f"{last[w]['log_z']:12.3f} +/- {last[w]['se']:.3f}"
                              for w in ("this", "commit")), flush=True)
    finally:
        subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force",
                        str(other)], check=False)


if __name__ == "__main__":
    main()
