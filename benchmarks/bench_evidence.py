#!/usr/bin/env python
"""Benchmark: ``pa.sample_ais`` at its defaults against ``pm.sample_smc``, first call and
steady state, on models whose log evidence is known.

What a user meets first is the **first call in a new process with empty caches**: for each
model and each method, the script starts a new Python process with a temporary ``HOME``
(which empties PyTensor's compile directory and Numba's cache; JAX keeps no cache unless
asked) and times the first call on a freshly built model, and that whole process. The two
methods are run alternately (ours, SMC, ours, SMC, ...) so that load on the machine hits
both alike. Then, in this process, the **steady state**: after one warm-up call of each
method on the model, ``--reps`` calls of each, interleaved, with new seeds.

* ours: ``pa.sample_ais()`` at its defaults (``draws=1000, chains=4``, prior base,
  ``num_steps="auto"``, ``backend="auto"``: JAX when installed);
* SMC: ``pm.sample_smc(draws=2000, chains=2, cores=1)``.

Every model has an exact log evidence (``tests/analytic.py``; the logistic regression's by
Gauss-Hermite quadrature to 1e-9 nat), so every error is exact. The report gives, per
model, the first-call times and their ratio ours/SMC against the two targets of the issue
(1.0: no slower than SMC; 0.2: the longer-term aim), the steady-state ratio, and the errors.
``--high-dim`` adds the 100-parameter linear regression (accuracy aim: 0.1 nat, and at
most 3x SMC's time), at the defaults (``base="auto"``, which takes the fitted mixture there)
and with ``base="gaussian"``; ``--high-dim-prior`` adds ``base="prior"`` too (about 4-5
minutes a call on 2 cores: K of 6,000-9,000). ``benchmarks/bench_highdim.py`` breaks the
100-d model's time down.

BLAS threads are capped at 1 in every process (OpenBLAS on 2 cores otherwise makes timings
swing 3-8x); JAX/XLA uses its own thread pool on both cores, as a user gets it; each row
also shows the process CPU time, so the cores used are visible. Speed claims are ratios
measured in one run: absolute seconds drift with the load of the machine.

Run ``python benchmarks/bench_evidence.py --help``; ``--quick`` is a smoke mode (two models,
one repetition, about two minutes).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime as _dt  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

MODELS = {
    "normal_mean": "analytic.normal_mean()",
    "beta_binomial": "analytic.beta_binomial()",
    "beta_binomial4": "analytic.beta_binomial(num_groups=4)",
    "logistic": "analytic.logistic_regression()",
    "nig": "analytic.nig_regression()",
    "polynomial": "analytic.polynomial_regression()",
    "linreg10": "analytic.linear_regression(num_features=10, n=50)",
}
HIGH_DIM = {"linreg100": "analytic.linear_regression(num_features=100, n=200)"}
QUICK_MODELS = ["normal_mean", "logistic"]
TARGETS = (1.0, 0.2)  # first-call ratio ours/SMC: the aim, and its longer-term aim
SMC_KWARGS = {"draws": 2000, "chains": 2, "cores": 1}
HIGH_DIM_TOLERANCE = 0.1

# One method's first call in a new process: prints a JSON line. The import of pymc and
# the package is timed separately from the call (a user pays both once per process).
SNIPPET = """
import json, logging, os, sys, time, warnings
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
import numpy as np
import pymc as pm
import pymc_anneal as pa
from scipy.special import logsumexp
from tests import analytic
logging.getLogger("pymc").setLevel(logging.ERROR)
t_import = time.perf_counter() - t0
target = {factory}
model = target.build()
caught = []
t1, c1 = time.perf_counter(), time.process_time()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with model:
        if {method!r} == "smc":
            idata = pm.sample_smc(random_seed=1, progressbar=False,
                                  compute_convergence_checks=False, **{smc!r})
        else:
            idata = pa.sample_ais(random_seed=1, progressbar=False, **{kwargs!r})
wall, cpu = time.perf_counter() - t1, time.process_time() - c1
if {method!r} == "smc":
    lml = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values, dtype=object)
    last = [np.asarray([float(x) for x in np.ravel(row) if np.isfinite(float(x))])[-1]
            for row in lml.reshape(lml.shape[0], -1)]
    log_z, se = float(logsumexp(last) - np.log(len(last))), float("nan")
else:
    est = pa.log_evidence(idata)
    log_z, se = est.log_evidence, est.standard_error
print(json.dumps({{"import": t_import, "wall": wall, "cpu": cpu, "log_z": log_z, "se": se,
                  "exact": target.log_evidence,
                  "warned": any(issubclass(w.category, pa.AnnealingWarning) for w in caught),
                  "attrs": {{k: idata.attrs.get(k) for k in ("backend", "num_steps")}}}}))
"""


def first_call(factory: str, method: str, kwargs: dict | None = None) -> dict:
    """The first call of ``method`` on the model in a new process with an empty HOME."""
    with tempfile.TemporaryDirectory(prefix="bench_home_") as home:
        env = {**os.environ, "HOME": home}
        env.pop("PYTENSOR_FLAGS", None)
        env.pop("NUMBA_CACHE_DIR", None)
        code = SNIPPET.format(root=str(REPO_ROOT), factory=factory, method=method,
                              smc=SMC_KWARGS, kwargs=kwargs or {})
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=False)
        total = time.perf_counter() - t0
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["failed"])[-1]}
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process"] = total
    return result


def steady(model, exact: float, method: str, seed: int, kwargs: dict | None = None) -> dict:
    import numpy as np
    import pymc as pm
    from scipy.special import logsumexp

    import pymc_anneal as pa

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0, c0 = time.perf_counter(), time.process_time()
        with model:
            if method == "smc":
                idata = pm.sample_smc(random_seed=seed, progressbar=False,
                                      compute_convergence_checks=False, **SMC_KWARGS)
            else:
                idata = pa.sample_ais(random_seed=seed, progressbar=False, **(kwargs or {}))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if method == "smc":
        lml = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values, dtype=object)
        last = [np.asarray([float(x) for x in np.ravel(row) if np.isfinite(float(x))])[-1]
                for row in lml.reshape(lml.shape[0], -1)]
        log_z, se = float(logsumexp(last) - np.log(len(last))), float("nan")
    else:
        est = pa.log_evidence(idata)
        log_z, se = est.log_evidence, est.standard_error
    return {"wall": wall, "cpu": cpu, "error": log_z - exact, "se": se,
            "warned": any(issubclass(w.category, pa.AnnealingWarning) for w in caught),
            "num_steps": idata.attrs.get("num_steps")}


def table(headers: list[str], rows: list[list], align: str) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def fmt(row):
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, a in zip(row, widths, align)).rstrip()

    return "\n".join([fmt(cells[0]), "  ".join("-" * w for w in widths)]
                     + [fmt(r) for r in cells[1:]])


def fmt(x, digits=2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}"


def source_fingerprint() -> str:
    import hashlib

    digest = hashlib.sha256()
    for path in sorted((REPO_ROOT / "pymc_anneal").rglob("*.py")):
        digest.update(path.relative_to(REPO_ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two models, one repetition")
    parser.add_argument("--models", help=f"comma-separated subset of {list(MODELS)}")
    parser.add_argument("--reps", type=int, help="steady-state repetitions (default 3)")
    parser.add_argument("--cold-reps", type=int, default=1,
                        help="first calls in new processes per method and model (default 1)")
    parser.add_argument("--high-dim", action="store_true",
                        help="add the 100-d linear regression (several minutes)")
    parser.add_argument("--high-dim-prior", action="store_true",
                        help="with --high-dim, also base='prior' (4-5 minutes a call)")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    args = parser.parse_args(argv)
    names = args.models.split(",") if args.models else (
        QUICK_MODELS if args.quick else list(MODELS))
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {list(MODELS)}")
    reps = args.reps or (1 if args.quick else 3)

    import numba
    import pymc as pm
    import pytensor

    import pymc_anneal as pa
    from pymc_anneal.backends import default_backend
    from tests import analytic

    logging.getLogger("pymc").setLevel(logging.ERROR)
    started = _dt.datetime.now().isoformat(timespec="seconds")
    load_start = os.getloadavg()[0]
    print(f"bench_evidence {started} {platform.node()} cores={os.cpu_count()} "
          f"loadavg={load_start:.2f}")
    print(f"python {platform.python_version()} pymc {pm.__version__} pytensor "
          f"{pytensor.__version__} numba {numba.__version__} pymc_anneal {pa.__version__} "
          f"(src {source_fingerprint()}), backend auto = {default_backend()}, BLAS threads 1")
    print(f"ours: sample_ais() at its defaults; SMC: sample_smc({SMC_KWARGS})\n", flush=True)

    results: dict = {}
    t_start = time.perf_counter()
    settings = [(name, MODELS[name], "ais", {}) for name in names]
    if args.high_dim:
        settings += [("linreg100", HIGH_DIM["linreg100"], "ais", {}),
                     ("linreg100", HIGH_DIM["linreg100"], "gauss", {"base": "gaussian"})]
        if args.high_dim_prior:
            settings += [("linreg100", HIGH_DIM["linreg100"], "prior", {"base": "prior"})]
    for name, factory, label, kwargs in settings:
        target = eval(factory, {"analytic": analytic})
        print(f"[{name} / {label}] d={target.num_dims} exact log Z={target.log_evidence:.4f}",
              flush=True)
        res = results.setdefault(f"{name}/{label}", {"d": target.num_dims, "cold": {},
                                                      "steady": {}})
        for rep in range(args.cold_reps):
            order = [label, "smc"] if rep % 2 == 0 else ["smc", label]
            for method in order:
                if method == "smc" and label != "ais":
                    continue  # SMC once per model
                r = first_call(factory, method, kwargs if method != "smc" else None)
                res["cold"].setdefault(method, []).append(r)
                if "error" in r and "wall" not in r:
                    print(f"  cold {method:<5} FAILED: {r['error']}", flush=True)
                else:
                    print(f"  cold {method:<5} first call {r['wall']:6.2f} s (cpu {r['cpu']:5.2f} "
                          f"s), process {r['process']:6.2f} s, import {r['import']:.2f} s, "
                          f"error {r['log_z'] - r['exact']:+.4f}"
                          + ("  [warned]" if r["warned"] else ""), flush=True)
        model = target.build()
        methods = [label] if label != "ais" else [label, "smc"]
        for method in methods:  # warm-up
            steady(model, target.log_evidence, method, 0, kwargs)
        for rep in range(reps):
            for method in (methods if rep % 2 == 0 else methods[::-1]):
                r = steady(model, target.log_evidence, method, 1000 + rep,
                           kwargs if method != "smc" else None)
                res["steady"].setdefault(method, []).append(r)
                print(f"  steady {method:<5} {r['wall']:6.2f} s (cpu {r['cpu']:5.2f} s) "
                      f"error {r['error']:+.4f}" + (f" K={r['num_steps']}"
                                                    if method != "smc" else "")
                      + ("  [warned]" if r["warned"] else ""), flush=True)
        print(flush=True)

    # ---------------------------------------------------------------------- report
    print("=" * 96)
    print("First call in a new process with empty caches, and steady state (median of "
          f"{reps}); errors in nats")
    print("=" * 96)
    rows, ratios = [], []
    for key, res in results.items():
        name, label = key.split("/")
        ours = [r for r in res["cold"].get(label, []) if "wall" in r]
        smc_key = f"{name}/ais"
        smc = [r for r in results.get(smc_key, {}).get("cold", {}).get("smc", []) if "wall" in r]
        ours_first = statistics.median(r["wall"] for r in ours) if ours else float("nan")
        smc_first = statistics.median(r["wall"] for r in smc) if smc else float("nan")
        ratio = ours_first / smc_first
        if res["d"] <= 10 and label == "ais":
            ratios.append(ratio)
        st_ours = res["steady"].get(label, [])
        st_smc = results.get(smc_key, {}).get("steady", {}).get("smc", [])
        steady_ratio = (statistics.median(r["wall"] for r in st_ours)
                        / statistics.median(r["wall"] for r in st_smc)) if st_smc else math.nan
        err_ours = max((abs(r["error"]) for r in st_ours), default=math.nan)
        err_smc = max((abs(r["error"]) for r in st_smc), default=math.nan)
        verdict = " ".join(f"{'<=' if ratio <= t else '>'}{t}" for t in TARGETS)
        rows.append([name, res["d"], label, fmt(ours_first), fmt(smc_first), fmt(ratio),
                     verdict, fmt(steady_ratio), fmt(err_ours, 4), fmt(err_smc, 4),
                     sum(r["warned"] for r in st_ours)])
    print(table(["model", "d", "ours", "1st ours s", "1st SMC s", "ratio", "targets 1.0 / 0.2",
                 "steady ratio", "max|err| ours", "max|err| SMC", "warned"], rows,
                "lrlrrrlrrrr"))
    if ratios:
        geo = math.exp(statistics.fmean(math.log(r) for r in ratios))
        print(f"\nd <= 10, default call: first-call ratio ours/SMC geometric mean {geo:.2f}, "
              f"max {max(ratios):.2f} (targets {TARGETS[0]} and {TARGETS[1]})")
    for key, label in [("linreg100/ais", "the defaults"), ("linreg100/gauss", "base='gaussian'"),
                       ("linreg100/prior", "base='prior'")]:
        if key in results:
            worst = max(abs(r["error"]) for r in results[key]["steady"][key.split("/")[1]])
            print(f"d = 100, {label}: max |error| {worst:.3f} nat (aim <= {HIGH_DIM_TOLERANCE})")
    load_end = os.getloadavg()[0]
    print(f"\ntotal {(time.perf_counter() - t_start) / 60:.1f} min; load average "
          f"{load_start:.2f} at the start, {load_end:.2f} at the end")
    if args.json:
        args.json.write_text(json.dumps({"started": started, "results": results},
                                        indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
