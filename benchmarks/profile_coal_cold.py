#!/usr/bin/env python
"""Profile the coal-mining model's cold first ``sample_ais()`` call (issue 27, item 3).

Run in a fresh process with an empty HOME (cold PyTensor / JAX caches), BLAS capped:
``HOME=$(mktemp -d) OMP_NUM_THREADS=1 python benchmarks/profile_coal_cold.py [out.prof]``.
Prints the wall time, the result's own ``timings`` and the cumulative-time top of cProfile
restricted to the pieces named in the issue (rewrites, compiles, pilot, weight checks).
"""

import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

t0 = time.perf_counter()
import pymc_anneal as pa
from tests.pymc import test_discrete_hoist

t_import = time.perf_counter() - t0
case = test_discrete_hoist.coal_case()
model = case.build()
prof = cProfile.Profile()
t0 = time.perf_counter()
prof.enable()
with model:
    idata = pa.sample_ais(random_seed=1, progressbar=False)
prof.disable()
wall = time.perf_counter() - t0
est = pa.log_evidence(idata)
print(f"import {t_import:.1f} s; first call {wall:.1f} s; error "
      f"{est.log_evidence - case.log_evidence:+.3f} +/- {est.standard_error:.3f}")
print("attrs:", {k: v for k, v in idata.attrs.items() if "discrete" in k or "num_steps" in k})
out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/coal_cold.prof"
prof.dump_stats(out)
stats = pstats.Stats(prof)
stats.sort_stats("cumulative").print_stats(45)
