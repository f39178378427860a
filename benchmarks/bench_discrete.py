#!/usr/bin/env python
"""Benchmark: evidence of PyMC models with discrete free variables, ours against SMC.

PyMC's coal-mining change point (112 years, ``switchpoint ~ DiscreteUniform(1851, 1961)``,
Exponential(1) rates; exact evidence in closed form, ``tests/pymc/test_discrete_hoist.py``)
and three models with exact log evidences (``tests/discrete_models.py``): a change point
(Poisson counts, a DiscreteUniform switch point, Gamma rates), a two-component Gaussian
mixture with 40 explicit Bernoulli labels, and a latent count (N ~ Poisson, y ~ Binomial(N,
p)). For each, ``pa.sample_ais()`` at its defaults (the switch point and the labels summed
out, the unbounded count annealed) and ``pm.sample_smc(draws=2000, chains=2, cores=1)``
(discrete variables moved by rounding a continuous proposal) each run in a **fresh process
with an empty home directory** (cold PyTensor, Numba and JAX caches): the first call, then a
second call on the same model with another seed (the steady state: compiled code reused).
Printed: the error against the exact log evidence, the reported standard error, warnings,
and the wall times with their ratio ours / SMC measured in this run.

``--quick`` runs only the coal-mining model. Cap BLAS threads for stable numbers (the
script sets ``OMP_NUM_THREADS=1`` etc. in the children).
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
import numpy as np
sys.path.insert(0, {root!r})
from tests import discrete_models
from tests.pymc import test_discrete_hoist
case = (test_discrete_hoist.coal_case() if {model!r} == "coal"
        else getattr(discrete_models, {model!r})())
method = {method!r}
out = {{"model": case.name, "method": method, "exact": case.log_evidence, "runs": []}}
model = case.build()
for seed in (1, 2):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            if method == "ais":
                import pymc_anneal as pa
                with model:
                    idata = pa.sample_ais(random_seed=seed, progressbar=False)
                est = pa.log_evidence(idata)
                value, se = est.log_evidence, est.standard_error
            else:
                import pymc as pm
                from scipy.special import logsumexp
                with model:
                    idata = pm.sample_smc(draws=2000, chains=2, cores=1, random_seed=seed,
                                          progressbar=False, compute_convergence_checks=False)
                lml = idata.sample_stats["log_marginal_likelihood"].values
                last = [float([v for v in np.ravel(c) if np.isfinite(float(v))][-1]) for c in lml]
                value, se = float(logsumexp(last) - np.log(len(last))), float("nan")
            error = None
        except Exception as exc:  # a refusal is a result too
            value, se, error = float("nan"), float("nan"), f"{{type(exc).__name__}}: {{exc}}"
        wall = time.perf_counter() - t0
    names = sorted({{type(w.message).__name__ for w in caught
                    if "Annealing" in type(w.message).__name__}})
    out["runs"].append({{"seed": seed, "value": value, "se": se, "wall": wall,
                        "warnings": names, "error": error}})
print("RESULT" + json.dumps(out))
"""

MODELS = ["coal", "change_point", "label_mixture", "latent_count"]


def measure(model: str, method: str) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as home:
        env["HOME"] = home
        env.pop("PYTENSOR_FLAGS", None)
        env.pop("NUMBA_CACHE_DIR", None)
        proc = subprocess.run([sys.executable, "-c", CHILD.format(root=str(REPO_ROOT),
                                                                  model=model, method=method)],
                              capture_output=True, text=True, env=env, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT"):
            return json.loads(line[6:])
    raise RuntimeError(f"{model}/{method} failed:\n{proc.stderr[-3000:]}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--quick", action="store_true",
                        help="only the coal-mining change-point model")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    args = parser.parse_args(argv)
    models = MODELS[:1] if args.quick else MODELS
    results = []
    header = (f"{'model':<14} {'method':<6} {'error (nat)':>12} {'se':>7} {'first s':>8} "
              f"{'steady s':>9}  notes")
    print(header)
    print("-" * len(header))
    for model in models:
        pair = {}
        for method in ("ais", "smc"):
            r = measure(model, method)
            results.append(r)
            pair[method] = r
            first, steady = r["runs"]
            err = first["value"] - r["exact"]
            notes = first["error"] or ",".join(first["warnings"]) or ""
            print(f"{model:<14} {method:<6} {err:>+12.3f} {first['se']:>7.3f} "
                  f"{first['wall']:>8.1f} {steady['wall']:>9.1f}  {notes[:70]}")
        a, s = pair["ais"]["runs"], pair["smc"]["runs"]
        if a[0]["error"] is None:
            print(f"{'':<14} ratio ours/SMC: first call {a[0]['wall'] / s[0]['wall']:.2f}, "
                  f"steady {a[1]['wall'] / s[1]['wall']:.2f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
