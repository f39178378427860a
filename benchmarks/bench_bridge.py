#!/usr/bin/env python
"""Benchmark: ``pa.bridge_sampling`` on existing NUTS draws, against ``pa.sample_ais`` and
``pm.sample_smc``, on the models of ``bench_evidence.py`` (exact log evidences).

For each model, in one process (BLAS at one thread): ``pm.sample`` (4 x 1000 draws, 1000
tuning steps; its time is printed apart: the user already paid for it), then
``bridge_sampling`` on those draws twice (the first call compiles the model's density, the
second reuses it), ``sample_ais`` at its defaults twice (first and warm), and
``pm.sample_smc(draws=2000, chains=2, cores=1)`` twice. Each row gives the error against
the exact log evidence, the reported standard error and the wall time; the ratios compare
bridge sampling's extra time with the two annealing methods' times. Goal (issue 26): within
0.05 nat in under a second of extra compute on models up to 10 parameters, with an error
bar that covers.

``python benchmarks/bench_bridge.py [--quick]`` (about 5 minutes; ``--quick``: two models).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_evidence import MODELS, QUICK_MODELS  # noqa: E402

SMC_KWARGS = {"draws": 2000, "chains": 2, "cores": 1}


def _timed(call):
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = call()
    return time.perf_counter() - start, value, caught


def _row(name, method, seconds, log_z, se, exact, caught):
    from pymc_anneal import AnnealingWarning

    warned = sum(issubclass(w.category, AnnealingWarning) for w in caught)
    se_text = "    -" if se is None else f"{se:.3f}"
    print(f"  {name:14s} {method:22s} {seconds:7.2f} s  error {log_z - exact:+.3f}  "
          f"se {se_text}  warnings {warned}", flush=True)


def _smc_log_z(idata) -> float:
    """SMC's pooled estimate (as ``bench_evidence.py`` reads it): the last finite stage of
    each chain, averaged in the exponent."""
    import numpy as np
    from scipy.special import logsumexp

    lml = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values, dtype=object)
    last = [np.asarray([float(x) for x in np.ravel(row) if np.isfinite(float(x))])[-1]
            for row in lml.reshape(lml.shape[0], -1)]
    return float(logsumexp(last) - np.log(len(last)))


def bench_model(name: str, seed: int = 1) -> dict:
    """One model's rows; returns the times."""
    import pymc as pm

    import pymc_anneal as pa
    from tests import analytic

    target = eval(MODELS[name], {"analytic": analytic})  # our own table
    model, exact = target.build(), target.log_evidence
    nuts, idata, _ = _timed(lambda: pm.sample(
        draws=1000, tune=1000, chains=4, random_seed=seed, model=model, progressbar=False,
        compute_convergence_checks=False))
    print(f"  {name:14s} {'NUTS (already paid)':22s} {nuts:7.2f} s", flush=True)
    times = {}
    for label in ("first", "again"):
        seconds, result, caught = _timed(lambda: pa.bridge_sampling(idata, model,
                                                                    random_seed=seed))
        est = pa.log_evidence(result)
        _row(name, f"bridge ({label})", seconds, est.log_evidence, est.standard_error, exact,
             caught)
        times[f"bridge {label}"] = seconds
    for label in ("first", "again"):
        seconds, result, caught = _timed(lambda: pa.sample_ais(
            model=model, random_seed=seed, progressbar=False))
        est = pa.log_evidence(result)
        _row(name, f"sample_ais ({label})", seconds, est.log_evidence, est.standard_error,
             exact, caught)
        times[f"ais {label}"] = seconds
    for label in ("first", "again"):
        seconds, result, caught = _timed(lambda: pm.sample_smc(
            model=model, random_seed=seed, progressbar=False, **SMC_KWARGS))
        log_z = _smc_log_z(result)
        _row(name, f"sample_smc ({label})", seconds, log_z, None, exact, caught)
        times[f"smc {label}"] = seconds
    print(f"  {name:14s} bridge's first call / sample_ais's: "
          f"{times['bridge first'] / times['ais first']:.3f}, / sample_smc's: "
          f"{times['bridge first'] / times['smc first']:.3f}", flush=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two models")
    args = parser.parse_args()
    for noisy in ("pymc", "pymc.sampling", "pymc.smc", "pytensor"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    for name in QUICK_MODELS if args.quick else MODELS:
        bench_model(name)


if __name__ == "__main__":
    main()
