#!/usr/bin/env python
"""Benchmark: AIS evidence (``pymc_anneal.sample_ais``) against PyMC's SMC evidence.

Every model here has a closed-form log evidence (``tests/analytic.py``), so the error of
each estimate is known exactly. For each model the script runs

* ``pm.sample_smc(draws=2000, chains=2, cores=1)``: the reference,
* ``pa.sample_ais`` at its defaults (``draws=1000, chains=4``, prior base,
  ``num_steps=2000``),
* ``pa.sample_ais(base="gaussian")`` at its defaults (a fitting run of 500 temperatures,
  then ``num_steps=200`` from the fitted Gaussian),
* optionally cheaper settings of both (``num_steps=500``; ``draws=500, num_steps=100``;
  ``base="gaussian", draws=500, num_steps=50, fit_steps=100``) and any ``--ais-extra``
  settings,

``R`` times each with different seeds, after one warm-up call of each method on the same
model object so that compile/JIT time is excluded from the steady-state wall time. The
repetitions of the methods are interleaved (the order alternates) so that background load
on the machine hits all methods alike; every speed claim is a ratio of wall times measured
in this one run (project rule: the 2-core machines are noisy, absolute seconds are not
comparable across runs).

SMC evidence: PyMC stores ``sample_stats.log_marginal_likelihood`` as an object array of
shape (chain, stage) that is NaN at every stage but the last one (beta = 1), where it holds
that chain's cumulative estimate. We take the last finite value per chain and pool the
chains in probability space, ``logsumexp(chain_estimates) - log(chains)``, which is the
estimate from all particles of all chains since every chain has the same number of draws
(the mean of the per-chain logs is also kept in the ``--json`` output).

Run ``python benchmarks/bench_evidence.py --help`` for the options; ``--quick`` is a smoke
mode of about a minute. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import inspect
import datetime as _dt
import json
import logging
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402
import pymc as pm  # noqa: E402
from scipy.special import logsumexp  # noqa: E402

import pymc_anneal as pa  # noqa: E402
from pymc_anneal.pymc.sampling import DEFAULT_NUM_STEPS  # noqa: E402
from tests import analytic  # noqa: E402

# ---------------------------------------------------------------------------------------
# models and settings

MODELS = {
    "normal_mean": lambda: analytic.normal_mean(),
    "linreg10": lambda: analytic.linear_regression(num_features=10, n=50),
    "beta_binomial": lambda: analytic.beta_binomial(),
    "nig": lambda: analytic.nig_regression(),
    "linreg100": lambda: analytic.linear_regression(num_features=100, n=200),
}
QUICK_MODELS = ["normal_mean", "beta_binomial"]
SMALL_DIM = 10  # the aim "at least as accurate in at most a fifth of the time" is for d <= 10
HIGH_DIM_TOLERANCE = 0.1  # nat; the aim for the 100-d model
SPEED_AIM = 0.2  # ours / SMC wall-time ratio

SMC_KWARGS = dict(draws=2000, chains=2, cores=1)
AIS_DEFAULT = dict(draws=1000, chains=4, num_steps=2000)  # the package defaults
GAUSS_DEFAULT = dict(draws=1000, chains=4, base="gaussian", num_steps=200, fit_steps=500)
AIS_500 = dict(draws=1000, chains=4, num_steps=500)
AIS_CHEAP = dict(draws=500, chains=4, num_steps=100)
GAUSS_CHEAP = dict(draws=500, chains=4, base="gaussian", num_steps=50, fit_steps=100)


@dataclass
class Run:
    method: str
    seed: int
    log_evidence: float
    error: float
    wall: float
    cpu: float
    standard_error: float = float("nan")
    chain_sd: float = float("nan")
    ess: float = float("nan")
    timings: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------
# single runs


def smc_log_evidence(idata) -> tuple[float, np.ndarray]:
    """Pooled SMC log evidence and the per-chain estimates (last finite stage per chain)."""
    lml = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values, dtype=object)
    lml = lml.reshape(lml.shape[0], -1) if lml.ndim >= 1 else lml.reshape(1, 1)
    per_chain = []
    for row in lml:
        vals = np.array([float(x) for v in row for x in np.ravel(np.asarray(v, dtype=float))])
        finite = vals[np.isfinite(vals)]
        per_chain.append(finite[-1] if finite.size else np.nan)
    per_chain = np.asarray(per_chain, dtype=float)
    return float(logsumexp(per_chain) - np.log(per_chain.size)), per_chain


def run_smc(model, seed: int, exact: float, draws: int, chains: int) -> Run:
    t0, c0 = time.perf_counter(), time.process_time()
    with model:
        idata = pm.sample_smc(draws=draws, chains=chains, cores=1, progressbar=False,
                              random_seed=seed, compute_convergence_checks=False)
    log_z, per_chain = smc_log_evidence(idata)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    chain_sd = float(per_chain.std(ddof=1) / np.sqrt(per_chain.size)) if per_chain.size > 1 \
        else float("nan")
    stages = int(np.asarray(idata["sample_stats"]["beta"].values).shape[-1])
    return Run("smc", seed, log_z, log_z - exact, wall, cpu, chain_sd=chain_sd,
               extra={"per_chain": per_chain.tolist(), "mean_log": float(per_chain.mean()),
                      "stages": stages})


def run_ais(model, seed: int, exact: float, name: str, kwargs: dict, backend: str) -> Run:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pa.AnnealingWarning)
        t0, c0 = time.perf_counter(), time.process_time()
        with model:
            idata = pa.sample_ais(random_seed=seed, progressbar=False, backend=backend, **kwargs)
        est = pa.log_evidence(idata)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    for w in caught:  # anything but the package's own warnings is shown as usual
        if not issubclass(w.category, pa.AnnealingWarning):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    messages = sorted({str(w.message) for w in caught
                       if issubclass(w.category, pa.AnnealingWarning)})
    timings = json.loads(idata.attrs.get("timings", "{}"))
    return Run(name, seed, float(est.log_evidence), float(est.log_evidence) - exact, wall, cpu,
               standard_error=float(est.standard_error), chain_sd=float(est.chain_sd),
               ess=float(est.ess), timings=timings, extra={"warnings": messages})


def warn_note(run: Run) -> str:
    """Short marker for a run during which pymc_anneal emitted an AnnealingWarning."""
    messages = run.extra.get("warnings", [])
    if not messages:
        return ""
    first = messages[0].split(":")[0]
    return f"  [AnnealingWarning: {first}{' ...' if len(messages) > 1 else ''}]"


# ---------------------------------------------------------------------------------------
# statistics and tables


def summarize(runs: list[Run]) -> dict:
    err = np.array([r.error for r in runs])
    walls = [r.wall for r in runs]
    return {
        "n": len(runs),
        "bias": float(err.mean()),
        "mae": float(np.abs(err).mean()),
        "max_abs": float(np.abs(err).max()),
        "rmse": float(np.sqrt(np.mean(err**2))),
        "se": float(np.mean([r.standard_error for r in runs])),
        "chain_sd": float(np.mean([r.chain_sd for r in runs])),
        "ess": float(np.mean([r.ess for r in runs])),
        "wall": float(statistics.median(walls)),
        "cpu_frac": float(statistics.median(r.cpu / r.wall for r in runs)),
        "warned": sum(bool(r.extra.get("warnings")) for r in runs),
        "timings": {k: float(statistics.median(r.timings.get(k, float("nan")) for r in runs))
                    for k in ("compile", "fit", "tuning", "sampling")},
    }


def table(headers: list[str], rows: list[list], align: str | None = None) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or "l" + "r" * (len(headers) - 1)

    def fmt(row):
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, a in zip(row, widths, align)).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(cells[0]), sep] + [fmt(r) for r in cells[1:]])


def f(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}f}"


def g(x: float) -> str:
    """Error-sized numbers: fixed point when readable, else 2 significant digits."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.4f}" if abs(x) >= 1e-3 or x == 0 else f"{x:.1e}"


# ---------------------------------------------------------------------------------------
# cold compile in a subprocess


COLD_SNIPPET = """
import json, sys, time, warnings
warnings.filterwarnings("ignore", category=RuntimeWarning)
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
import pymc_anneal as pa
from tests import analytic
t_import = time.perf_counter() - t0
model = analytic.normal_mean().build()
t1 = time.perf_counter()
with model:
    idata = pa.sample_ais(random_seed=1, progressbar=False, backend={backend!r})
print(json.dumps({{"import": t_import, "first_call": time.perf_counter() - t1,
                  "timings": json.loads(idata.attrs["timings"])}}))
"""


def cold_compile(backend: str) -> dict:
    """First call on normal_mean in a new process with an empty PyTensor/Numba cache."""
    with tempfile.TemporaryDirectory(prefix="bench_cold_") as tmp:
        env = dict(os.environ)
        flags = env.get("PYTENSOR_FLAGS", "")
        env["PYTENSOR_FLAGS"] = (flags + "," if flags else "") + f"base_compiledir={tmp}"
        env["NUMBA_CACHE_DIR"] = os.path.join(tmp, "numba_default")
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c",
                              COLD_SNIPPET.format(root=str(REPO_ROOT), backend=backend)],
                             env=env, capture_output=True, text=True, check=False)
        total = time.perf_counter() - t0
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1:] or ["failed"]}
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process_total"] = total
    return result


# ---------------------------------------------------------------------------------------
# main


def source_fingerprint() -> str:
    """Short hash of the package's .py sources: ties a table to the code it measured."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted((REPO_ROOT / "pymc_anneal").rglob("*.py")):
        digest.update(path.relative_to(REPO_ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def parse_extra(spec: str) -> tuple[str, dict]:
    """``NAME:key=value,key=value`` -> (NAME, kwargs) with int/float/str values."""
    name, _, rest = spec.partition(":")
    kwargs = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        for cast in (int, float):
            try:
                value = cast(value)
                break
            except ValueError:
                pass
        kwargs[key.strip()] = value
    base = {k: AIS_DEFAULT[k] for k in ("draws", "chains")}  # num_steps: the base's default
    return name.strip(), {**base, **kwargs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.dedent(f"""\
            models: {', '.join(MODELS)} (default: all; --quick: {', '.join(QUICK_MODELS)})
            example: python benchmarks/bench_evidence.py --models normal_mean,nig --reps 5"""))
    parser.add_argument("--quick", action="store_true",
                        help="smoke mode: 2 repetitions, two 1-parameter models")
    parser.add_argument("--models", help="comma-separated subset of the models")
    parser.add_argument("--reps", type=int, help="repetitions per method (default 3; quick 2)")
    parser.add_argument("--seed", type=int, default=20261122, help="base seed")
    parser.add_argument("--backend", default="numba", help="sample_ais backend")
    parser.add_argument("--no-cheap", action="store_true",
                        help=f"skip the cheaper AIS settings {AIS_500} and {AIS_CHEAP}")
    parser.add_argument("--ais-extra", action="append", default=[], metavar="NAME:k=v,...",
                        help="extra sample_ais setting, e.g. 'ais-5k:num_steps=5000' "
                             "(repeatable; unspecified options take the defaults)")
    parser.add_argument("--smc-warmup-draws", type=int, default=200,
                        help="draws of the 1-chain SMC warm-up call (same compiled graph, "
                             "cheaper than a full call; default 200)")
    parser.add_argument("--cold-compile", action="store_true",
                        help="also time a first call in a new process with empty "
                             "PyTensor/Numba caches (about a minute)")
    parser.add_argument("--blas-threads", type=int, metavar="N",
                        help="limit BLAS (OpenBLAS/MKL) threads with threadpoolctl, e.g. 1 "
                             "for a single-core comparison (default: leave as is)")
    parser.add_argument("--json", type=Path, help="write all raw results to this file")
    args = parser.parse_args(argv)

    names = args.models.split(",") if args.models else (
        QUICK_MODELS if args.quick else list(MODELS))
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {list(MODELS)}")
    reps = args.reps or (2 if args.quick else 3)
    # keep the "ais" and "gauss" rows honest: they must be what a user gets by default
    defaults = {k: v.default for k, v in inspect.signature(pa.sample_ais).parameters.items()}
    defaults["num_steps"] = DEFAULT_NUM_STEPS[defaults["base"]]
    gauss_defaults = {**defaults, "base": "gaussian",
                      "num_steps": DEFAULT_NUM_STEPS["gaussian"]}
    stale = {k: (v, defaults[k]) for k, v in AIS_DEFAULT.items() if defaults.get(k) != v}
    stale |= {k: (v, gauss_defaults[k]) for k, v in GAUSS_DEFAULT.items()
              if gauss_defaults.get(k) != v}
    if stale:
        raise SystemExit(f"AIS_DEFAULT/GAUSS_DEFAULT are stale, (ours, sample_ais's default): "
                         f"{stale}")
    ais_settings = {"ais": dict(AIS_DEFAULT), "gauss": dict(GAUSS_DEFAULT)}
    if not args.no_cheap:
        ais_settings["ais-500"] = dict(AIS_500)
        ais_settings["ais-cheap"] = dict(AIS_CHEAP)
        ais_settings["gauss-cheap"] = dict(GAUSS_CHEAP)
    ais_settings.update(parse_extra(s) for s in args.ais_extra)

    logging.getLogger("pymc").setLevel(logging.ERROR)
    for name in ("pymc.smc", "pymc.sampling"):
        logging.getLogger(name).setLevel(logging.ERROR)

    import numba
    import pytensor

    blas = "unknown"
    try:
        import threadpoolctl

        if args.blas_threads is not None:
            threadpoolctl.threadpool_limits(args.blas_threads, user_api="blas")
        counts = {i["num_threads"] for i in threadpoolctl.threadpool_info()
                  if i["user_api"] == "blas"}
        blas = ",".join(map(str, sorted(counts))) or "none"
    except ImportError:
        if args.blas_threads is not None:
            print("warning: --blas-threads needs threadpoolctl, which is not installed; "
                  "set OPENBLAS_NUM_THREADS/OMP_NUM_THREADS in the environment instead")

    load_start = os.getloadavg()
    started = _dt.datetime.now().isoformat(timespec="seconds")
    print(f"bench_evidence  {started}  {platform.node()}  cores={os.cpu_count()}  "
          f"loadavg={load_start[0]:.2f}")
    print(f"python {platform.python_version()}  pymc {pm.__version__}  pytensor "
          f"{pytensor.__version__}  numba {numba.__version__}  pymc_anneal {pa.__version__}  "
          f"(src {source_fingerprint()})  backend={args.backend}  BLAS threads={blas}")
    print(f"models={','.join(names)}  reps={reps}  SMC {SMC_KWARGS}  AIS settings: "
          + "; ".join(f"{k} {v}" for k, v in ais_settings.items()))
    print(flush=True)

    results = {}
    first_call_done = False
    bench_t0 = time.perf_counter()
    for m_index, name in enumerate(names):
        target = MODELS[name]()
        exact = float(target.log_evidence)
        model = target.build()
        print(f"[{name}] d={target.num_dims} exact log Z={exact:.4f}", flush=True)

        # warm-up: the AIS call on the fresh model is also the compile-latency measurement
        warm = {}
        for s_name, kwargs in ais_settings.items():
            r = run_ais(model, args.seed - 1, exact, s_name, kwargs, args.backend)
            warm[s_name] = {"wall": r.wall, "timings": r.timings,
                            "first_in_process": not first_call_done}
            first_call_done = True
            print(f"  warm-up {s_name:<10} {r.wall:8.2f} s  err={r.error:+.4f}  timings "
                  f"{r.timings}" + warn_note(r), flush=True)
        r = run_smc(model, args.seed - 1, exact, args.smc_warmup_draws, 1)
        warm["smc"] = {"wall": r.wall}
        print(f"  warm-up smc        {r.wall:8.2f} s  (draws={args.smc_warmup_draws}, "
              "chains=1)", flush=True)

        runs: dict[str, list[Run]] = {"smc": [], **{k: [] for k in ais_settings}}
        for rep in range(reps):
            seed = args.seed + 1000 * m_index + rep
            order = ["smc", *ais_settings]
            if rep % 2:
                order.reverse()
            for method in order:
                if method == "smc":
                    r = run_smc(model, seed, exact, SMC_KWARGS["draws"], SMC_KWARGS["chains"])
                else:
                    r = run_ais(model, seed, exact, method, ais_settings[method], args.backend)
                runs[method].append(r)
                print(f"  rep {rep} {method:<10} log Z={r.log_evidence:11.4f}  "
                      f"err={r.error:+9.4f}  wall={r.wall:8.2f} s  cpu/wall={r.cpu / r.wall:.2f}"
                      + warn_note(r), flush=True)
        summary = {k: summarize(v) for k, v in runs.items()}
        results[name] = {"num_dims": target.num_dims, "exact": exact, "warmup": warm,
                         "summary": summary,
                         "runs": {k: [asdict(r) for r in v] for k, v in runs.items()}}
        print(flush=True)

    cold = cold_compile(args.backend) if args.cold_compile else None
    bench_wall = time.perf_counter() - bench_t0
    load_end = os.getloadavg()

    # ---------------------------------------------------------------- accuracy and speed
    print("=" * 100)
    print(f"Accuracy and steady-state speed ({reps} repetitions per method, after warm-up; "
          "errors in nats vs the closed form)")
    print("=" * 100)
    rows = []
    for name, res in results.items():
        smc_wall = res["summary"]["smc"]["wall"]
        for method, s in res["summary"].items():
            rows.append([name if method == "smc" else "", res["num_dims"] if method == "smc"
                         else "", method, g(s["bias"]), g(s["mae"]), g(s["rmse"]),
                         g(s["se"]), g(s["chain_sd"]), f(s["ess"], 0),
                         "-" if method == "smc" else f"{s['warned']}/{s['n']}",
                         f(s["wall"], 2), f(s["cpu_frac"], 2), f(s["wall"] / smc_wall, 3)])
    print(table(["model", "d", "method", "bias", "mean|err|", "RMSE", "mean SE", "chain SD",
                 "ESS", "warned", "wall s", "cpu/wall", "wall/SMC"], rows,
                align="lrl" + "r" * 10))
    print()
    print("mean SE: pa.log_evidence standard_error (AIS only); chain SD: sd of the per-chain "
          "estimates / sqrt(chains);\nESS: weight ESS of the pooled particles; warned: reps "
          "in which sample_ais emitted an AnnealingWarning;\nwall s: median; cpu/wall < ~0.9 "
          "means the process waited for a core, > 1 that it ran threads on both cores.")
    print()

    # ---------------------------------------------------------------- verdicts
    print("=" * 100)
    print("Verdict per model (aim: d <= 10: RMSE <= SMC's and wall <= 1/5 of SMC's; "
          f"d = 100: |err| <= {HIGH_DIM_TOLERANCE} nat in every rep)")
    print("=" * 100)
    rows = []
    for name, res in results.items():
        smc = res["summary"]["smc"]
        for method in ais_settings:
            s = res["summary"][method]
            ratio = s["wall"] / smc["wall"]
            accurate = s["rmse"] <= smc["rmse"]
            if res["num_dims"] <= SMALL_DIM:
                aim = accurate and ratio <= SPEED_AIM
                cmp = "<=" if ratio <= SPEED_AIM else ">"
                why = "" if accurate else "less accurate; "
                aim_text = (f"{'MET' if aim else 'not met'} ({why}ratio {ratio:.3f} {cmp} "
                            f"{SPEED_AIM})")
            else:
                aim = s["max_abs"] <= HIGH_DIM_TOLERANCE
                cmp = "<=" if aim else ">"
                aim_text = (f"{'MET' if aim else 'not met'} (max|err| {s['max_abs']:.3g} {cmp} "
                            f"{HIGH_DIM_TOLERANCE})")
            rows.append([name, method, g(s["rmse"]), g(smc["rmse"]),
                         "yes" if accurate else "NO", f(ratio, 3), aim_text])
    print(table(["model", "method", "RMSE ours", "RMSE SMC", "at least as accurate",
                 "wall ours/SMC", "issue aim"], rows, align="llrrlrl"))
    print()

    # ---------------------------------------------------------------- compile latency
    print("=" * 100)
    print("Compile latency: first sample_ais call on a fresh model (the warm-up) vs steady "
          "state")
    print("=" * 100)
    rows = []
    for name, res in results.items():
        for method in ais_settings:
            w = res["warmup"][method]
            steady = res["summary"][method]["wall"]
            rows.append([name, method, "yes" if w["first_in_process"] else "no",
                         f(w["wall"], 2), f(w["timings"].get("compile", float("nan")), 2),
                         f(w["timings"].get("fit", float("nan")), 2),
                         f(w["timings"].get("tuning", float("nan")), 2),
                         f(w["timings"].get("sampling", float("nan")), 2), f(steady, 2),
                         f(w["wall"] - steady, 2)])
    print(table(["model", "setting", "1st in process", "first call s", "timings.compile",
                 "fit", "tuning", "sampling", "steady s", "overhead s"], rows,
                align="lllrrrrrrr"))
    print()
    print("first call s: wall time of the first call on a freshly built model (the on-disk "
          "Numba cache under\n~/.pytensor may already hold the compiled kernels from an "
          "earlier process; later settings on the\nsame model reuse the in-process compiled "
          "functions). fit: the Gaussian base's fitting run (base=\"gaussian\"), itself compiled\n"
          "on its first call. overhead s = first call - steady-state median.")
    if cold is not None:
        print()
        if "error" in cold:
            print(f"cold compile (empty caches, new process): FAILED {cold['error']}")
        else:
            print("cold compile, new process with empty PyTensor/Numba caches, normal_mean: "
                  f"import {cold['import']:.1f} s, first call {cold['first_call']:.1f} s "
                  f"(timings.compile {cold['timings'].get('compile', float('nan')):.1f} s), "
                  f"process total {cold['process_total']:.1f} s")
    print()
    print(f"total benchmark wall {bench_wall / 60:.1f} min; loadavg at start "
          f"{load_start[0]:.2f}, at end {load_end[0]:.2f} (cores={os.cpu_count()})")
    if max(load_start[0], load_end[0]) > (os.cpu_count() or 1):
        print("NOTE: the load average exceeded the core count: other processes competed for "
              "the cores, absolute times are inflated; the interleaved ratios are less "
              "affected.")

    if args.json:
        payload = {"started": started, "source_fingerprint": source_fingerprint(),
                   "host": platform.node(), "cores": os.cpu_count(),
                   "loadavg": [load_start, load_end], "reps": reps,
                   "smc": SMC_KWARGS, "ais_settings": ais_settings, "results": results,
                   "cold_compile": cold}
        args.json.write_text(json.dumps(payload, indent=1, default=float))
        print(f"raw results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
