"""The cost of ``num_steps="auto"``'s check chain: one small model, before and after.

The check chain (one extra chain of ``draws`` particles whose weights alone decide a repeat,
dropped from the result) adds a chain's worth of annealing to the main run. This times
``sample_ais`` at its defaults (4 x 1000 particles, HAIS, JAX) on a 3-coefficient Gaussian
linear regression with the code of this tree and with the code of a commit before the
change (``--base``, extracted with ``git archive`` into a temporary folder), each in its own
process, after one warm-up call (compiles), the median of ``--repeats`` calls, same seed:
the whole call's wall and CPU time (the process's, all threads: steadier than wall time on
a shared machine) and the annealing phase's wall time (``timings["sampling"]``).

Then, in one process, interleaved: the annealing alone (``run_annealing`` with a fixed step
size and mass matrix, so that no pilot runs) through the K the auto run chose, with 4 chains
and with 5, which is what the check chain adds; CPU and wall time, median of ``--repeats``
pairs. On a shared machine the wall times of separate processes vary by 2x from one call
to the next; this pairing is the steadier figure.

    OMP_NUM_THREADS=1 python benchmarks/bench_auto_check.py --base 62a64fe
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]

MODEL = r"""
import numpy as np, pymc as pm
rng = np.random.default_rng(0)
x = rng.standard_normal((50, 3))
y = x @ np.array([0.5, -1.0, 0.3]) + 0.5 * rng.standard_normal(50)
with pm.Model() as model:
    b = pm.Normal("b", 0, 1, shape=3)
    pm.Normal("y", pm.math.dot(x, b), 0.5, observed=y)
"""

MEASURE = MODEL + r"""
import json, sys, time
import pymc_anneal as pa
def call():
    t, c = time.perf_counter(), time.process_time()
    idata = pa.sample_ais(model=model, random_seed=1, progressbar=False)
    return time.perf_counter() - t, time.process_time() - c, idata
call()
rows = []
for _ in range(int(sys.argv[1])):
    wall, cpu, idata = call()
    rows.append({"wall": wall, "cpu": cpu, **json.loads(idata.attrs["timings"]),
                 "num_steps": int(idata.attrs["num_steps"]),
                 "reruns": int(idata.attrs["auto_reruns"]),
                 "log_z": float(pa.log_evidence(idata).log_evidence)})
print(json.dumps(rows))
"""


def paired(repeats: int) -> None:
    """4 chains against 5 at the auto run's K, interleaved in this process."""
    import time

    import pymc_anneal as pa
    from pymc_anneal.driver import RunOptions, TuningOptions, run_annealing
    from pymc_anneal.pymc.adapter import model_path

    scope: dict = {}
    exec(MODEL, scope)
    model = scope["model"]
    idata = pa.sample_ais(model=model, random_seed=1, progressbar=False)
    betas = idata["annealing_stats"]["beta"].values[0]
    betas = np.concatenate([[0.0], betas])
    step = float(np.median(idata["annealing_stats"]["step_size"].values))
    path = model_path(model).path
    tuning = TuningOptions(fixed={"step_size": step}, mass_matrix="base")
    times: dict[int, list] = {4: [], 5: []}
    for i in range(repeats + 1):
        for chains in (4, 5):
            t, c = time.perf_counter(), time.process_time()
            run_annealing(path, betas=betas, draws=1000, chains=chains,
                          rng=np.random.default_rng(i),
                          options=RunOptions(tuning=tuning, progressbar=False))
            if i:  # the first pair compiles
                times[chains].append((time.perf_counter() - t, time.process_time() - c))
    for j, what in enumerate(("wall", "cpu")):
        with_, without = (float(np.median([r[j] for r in times[n]])) for n in (5, 4))
        print(f"annealing alone, K = {betas.size - 1}, median {what}: {with_:.3f} s with 5 "
              f"chains / {without:.3f} s with 4 = {with_ / without:.2f}")


def measure(code_root: pathlib.Path, repeats: int) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    out = subprocess.run([sys.executable, "-c", MEASURE, str(repeats)], env=env, cwd=code_root,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base", default="62a64fe", help="a commit before the check chain")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as old_root:
        archive = subprocess.run(["git", "archive", args.base, "pymc_anneal"], cwd=ROOT,
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", old_root], input=archive, check=True)
        results = {"without (base)": measure(pathlib.Path(old_root), args.repeats),
                   "with check chain": measure(ROOT, args.repeats)}
    best = {}
    for name, rows in results.items():
        print(name)
        for row in rows:
            print("  " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                   for k, v in row.items()))
        best[name] = {k: float(np.median([r[k] for r in rows])) for k in ("wall", "cpu", "sampling")}
    without, with_ = best["without (base)"], best["with check chain"]
    for k in ("wall", "cpu", "sampling"):
        print(f"median {k}: {with_[k]:.2f} s with / {without[k]:.2f} s without = "
              f"{with_[k] / without[k]:.2f}")
    paired(args.repeats)


if __name__ == "__main__":
    main()
