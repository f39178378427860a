"""The random-model calibration of sample_ais: the figures of the user guide's calibration page.

Runs the slow suite's plan (:func:`tests.calibration.runner.slow_plan`: random models with
exact evidence from ``tests/calibration/generator.py``, every route on JAX, one case on
Numba and C) and prints: number of models and model-runs, routes, backends, coverage of the
nominal 95 % interval among unwarned runs, worst |z|, mean and sd of z, KS p-value of
z ~ N(0, 1), and every failure grouped by family, route and backend, with the date.

    python benchmarks/calibration_report.py                      # the whole plan
    python benchmarks/calibration_report.py --backends jax --models-per-family 1
    python benchmarks/calibration_report.py --json calibration.json   # every score
    python benchmarks/calibration_report.py --defaults               # sample_ais() as called

``--defaults`` scores the call a user makes, ``sample_ais()`` at its defaults (4 x 1000
particles, ``num_steps="auto"``, ``base="auto"``, ``discrete="auto"``) on JAX, instead of the
plan's fixed K = 200 per route: the same random models (``--models-per-family`` per family),
every dataset, ``--seeds`` seeds each.

Run with ``OMP_NUM_THREADS=1``; the plan is sized for about 15 minutes on 2 cores, cold.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np

from tests.calibration import runner


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["jax", *runner.OTHER_BACKENDS])
    parser.add_argument("--families", nargs="+", default=None)
    parser.add_argument("--models-per-family", type=int, default=runner.SLOW_MODELS_PER_FAMILY)
    parser.add_argument("--json", default=None, help="write every score to this file")
    parser.add_argument("--defaults", action="store_true",
                        help="sample_ais() at its defaults on JAX, one route per model")
    parser.add_argument("--seeds", type=int, default=len(runner.SLOW_SEEDS),
                        help="seeds per model and dataset")
    args = parser.parse_args(argv)
    runner.SLOW_MODELS_PER_FAMILY = args.models_per_family
    seeds = tuple(range(args.seeds))
    plan = [(case, routes, backend, seeds) for case, routes, backend, _ in
            runner.slow_plan(args.families) if backend in args.backends]
    options = {}
    if args.defaults:
        plan = [(case, [("auto", "auto")], "jax", seeds) for case, _, backend, _ in plan
                if backend == "jax"]
        options = {"draws": 1000, "chains": 4, "num_steps": "auto", "fit_steps": 500}  # 500: the default
    t0 = time.perf_counter()

    done = []

    def progress(case, backend, scores, seconds):
        done.extend(scores)
        if args.json:  # after every case, so that a partial run leaves its scores
            _write(args.json, done, time.perf_counter() - t0)
        bad = [s for s in scores if s.error or (s.scored and abs(s.z) > 5)]
        print(f"{case.name:30s} {backend:5s} {len(scores):3d} runs {seconds:6.1f} s"
              + (f"  {len(bad)} FAILED" if bad else ""), flush=True)

    scores = runner.run_plan(plan, progress=progress, **options)
    elapsed = time.perf_counter() - t0
    figures = runner.summarize(scores)
    print()
    print(f"date: {datetime.date.today().isoformat()}   wall time: {elapsed / 60:.1f} min")
    for key, value in figures.items():
        print(f"{key}: {value}")
    failures = [s for s in scores if s.error or (s.scored and not abs(s.z) <= 5)]
    print(f"\nfailures (error, or |z| > 5 without a warning): {len(failures)}")
    groups = Counter((s.family, f"discrete={s.discrete}, base={s.base}", s.backend,
                      "error" if s.error else "|z| > 5") for s in failures)
    for (family, route, backend, kind), count in sorted(groups.items()):
        print(f"  {family:22s} {route:34s} {backend:5s} {kind:8s} x{count}")
    for s in failures[:40]:
        print("   ", s.describe()[:300])
    warned = Counter((s.family, s.discrete, s.base) for s in scores if s.warned)
    if warned:
        print(f"\nwarned runs (excluded from the figures): {sum(warned.values())}")
        for key, count in sorted(warned.items()):
            print(f"  {key} x{count}")
    return 0


def _write(path, scores, elapsed):
    with open(path, "w") as fh:
        json.dump({"date": datetime.date.today().isoformat(), "elapsed_s": elapsed,
                   "figures": runner.summarize(scores), "scores": [s.to_dict() for s in scores]},
                  fh, default=lambda v: v.item() if isinstance(v, np.generic) else str(v))


if __name__ == "__main__":
    sys.exit(main())
