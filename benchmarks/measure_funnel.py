"""Funnels: does ``sample_ais`` at its defaults cover the exact log evidence of the centered
eight-schools model, and which weight diagnostic sees it when it does not? (issue 23, 1.8)

    python benchmarks/measure_funnel.py [--seeds 0 1 2] [--backend auto] [--out runs.npz]

The model and its exact evidence (two quadratures and a Monte Carlo check, -31.311347):
``tests/eight_schools.py``. ``--model noncentered`` runs the same evidence without the
funnel; the name of a closed-form model of ``tests/analytic.py`` runs a well-behaved
control. For each seed, prints the estimate, its errors, and the weight diagnostics of
:mod:`pymc_anneal.diagnostics`; the log weights are saved for offline study.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np

from tests.eight_schools import build_model, exact_log_evidence


def targets(name: str):
    """(builder, exact log evidence) for a model name: ``centered``, ``noncentered`` or the
    name of a closed-form model in tests/analytic.py (the well-behaved controls)."""
    if name in ("centered", "noncentered"):
        exact = {m: exact_log_evidence(m) for m in ("quad", "legendre", "monte_carlo")}
        print(f"exact log p(y): quad {exact['quad']:.6f}, Gauss-Legendre "
              f"{exact['legendre']:.6f}, Monte Carlo (20,000 prior draws of tau) "
              f"{exact['monte_carlo']:.4f}", flush=True)
        return (lambda: build_model(name == "centered")), exact["quad"]
    from tests.analytic import ALL_TARGETS

    target = {t.name: t for t in ALL_TARGETS}[name]
    return target.build, target.log_evidence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="centered",
                        help="centered, noncentered, or a model of tests/analytic.py")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--out", default=None, help="save the log weights (npz)")
    args = parser.parse_args()

    import pymc_anneal as pa
    from pymc_anneal.diagnostics import weight_warnings
    from pymc_anneal.estimators import estimate_log_z, log_mean_exp, pareto_k

    build, quad = targets(args.model)
    saved = {}
    for seed in args.seeds:
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            idata = pa.sample_ais(model=build(), random_seed=seed, progressbar=False,
                                  backend=args.backend)
        log_w = np.asarray(idata["particles"]["log_weight"].values, dtype=np.float64)
        saved[f"seed{seed}"] = log_w
        pooled = estimate_log_z(log_w.ravel())
        per_chain = log_mean_exp(log_w, axis=1)
        chain_sd = per_chain.std(ddof=1) / np.sqrt(per_chain.size)
        s = max(pooled.standard_error, chain_sd)
        divergences = np.asarray(idata["annealing_stats"]["divergences"].values)
        saved[f"divergences{seed}"] = divergences
        print(f"seed {seed}: K={idata.attrs.get('num_steps')} log Z {pooled.log_z:.4f} "
              f"error {pooled.log_z - quad:+.4f} se {pooled.standard_error:.4f} chain_sd "
              f"{chain_sd:.4f} z {(pooled.log_z - quad) / s:+.2f} ESS {pooled.ess:.0f}/"
              f"{log_w.size} divergent transitions {divergences.sum() / (log_w.size * divergences.shape[1]):.2%} k-hat {pareto_k(log_w):.2f} per-chain k-hat "
              f"{[round(pareto_k(c), 2) for c in log_w]} var(log w) {np.var(log_w):.3f} "
              f"warned {[str(w.message)[:60] for w in caught]} rule {weight_warnings(log_w)} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    if args.out:
        np.savez(args.out, exact=quad, **saved)


if __name__ == "__main__":
    main()
