r"""Which Pareto :math:`\hat k` line should the samplers warn at? Coverage of the reported
interval among runs without a warning, on simulated weights of known mean (issue 23, 1.6).

    python benchmarks/measure_pareto_k.py [--fast] [--replicates 1000] [--seed 2026]

NumPy only (plus the package's NumPy core and arviz-stats' tail fit): no PyMC, no sampler.
Each replicate is ``chains`` x ``draws`` log weights (4 x 1000, ``sample_ais``' default)
drawn from a law whose mean Z is known:

- ``lognormal``: :math:`\log w \sim N(0, \sigma^2)`, :math:`\log Z = \sigma^2/2` (every
  moment finite; the weights of a well-mixed AIS run are close to this, with
  :math:`\sigma^2` the variance the run targets, 0.7 for ``num_steps="auto"``);
- ``gpd``: generalized Pareto, :math:`w = (U^{-k} - 1)/k`, :math:`Z = 1/(1 - k)`;
- ``pareto``: Pareto I, :math:`w = U^{-k}`, :math:`Z = 1/(1 - k)` (all weights above 1, so
  the weight ESS looks healthier than for ``gpd`` at the same tail index).

The tail index is k: the weights' variance is infinite for k >= 1/2. Every replicate goes
through :func:`pymc_anneal.diagnostics.weight_warnings`, the function behind the samplers'
warnings, and its interval is :math:`\log\hat Z \pm 1.96\,\max(\text{SE}, \text{chains'
spread})`, as :mod:`pymc_anneal.diagnostics` promises. Printed per law: the fraction warned,
the median :math:`\hat k` and ESS fraction, the coverage of all runs and of the runs without
a warning (with its binomial standard error), and the *silent-miss rate*, the fraction of
all runs that raise no warning and miss the truth (5% is the nominal rate). A second table
replays the rule with other :math:`\hat k` lines (the other warnings unchanged).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import numpy as np

from pymc_anneal.diagnostics import HEAVY_TAIL_K, weight_warnings
from pymc_anneal.estimators import estimate_log_z, log_mean_exp, pareto_k

LAWS = ([("lognormal", s) for s in (0.5, 1.0, 1.5, 2.0)]
        + [("gpd", k) for k in (0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9)]
        + [("pareto", k) for k in (0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9)])
FAST_LAWS = [("lognormal", 1.0), ("gpd", 0.4), ("gpd", 0.6), ("pareto", 0.65), ("gpd", 0.8)]
CANDIDATE_K = (0.7, 0.6, 0.5, 0.45)


def draw_log_weights(law: str, param: float, size, rng: np.random.Generator):
    """Log weights of the given law and the log of their exact mean."""
    if law == "lognormal":
        return param * rng.standard_normal(size), param**2 / 2
    log_u = np.log(rng.uniform(size=size))
    if law == "gpd":
        return np.log(np.expm1(-param * log_u) / param), -np.log1p(-param)
    if law == "pareto":
        return -param * log_u, -np.log1p(-param)
    raise ValueError(f"law must be one of lognormal, gpd, pareto, got {law!r}")


def simulate(law: str, param: float, replicates: int, chains: int = 4, draws: int = 1000,
             seed: int = 2026) -> dict[str, np.ndarray]:
    """One row per replicate: covered, warned (the package's rule), warned for a reason other
    than the tail, k-hat, ESS fraction, and z-score against the truth."""
    rng = np.random.default_rng([seed, ["lognormal", "gpd", "pareto"].index(law),
                                 round(100 * param)])
    rows = []
    for _ in range(replicates):
        log_w, log_z = draw_log_weights(law, param, (chains, draws), rng)
        pooled = estimate_log_z(log_w.ravel())
        chain_sd = log_mean_exp(log_w, axis=1).std(ddof=1) / np.sqrt(chains)
        s = max(pooled.standard_error, chain_sd)
        messages = weight_warnings(log_w)
        rows.append((abs(pooled.log_z - log_z) < 1.96 * s, bool(messages),
                     any("heavy tail" not in m for m in messages), pareto_k(log_w),
                     pooled.ess / log_w.size, (pooled.log_z - log_z) / s))
    names = ("covered", "warned", "warned_other", "k_hat", "ess_fraction", "z")
    return {name: np.asarray(col) for name, col in zip(names, zip(*rows, strict=True),
                                                         strict=True)}


def _coverage(covered: np.ndarray) -> str:
    if covered.size == 0:
        return "      -       "
    p = covered.mean()
    return f"{p:.3f} ± {np.sqrt(max(p * (1 - p), 1e-12) / covered.size):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="5 laws, 200 replicates")
    parser.add_argument("--replicates", type=int, default=None)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    laws = FAST_LAWS if args.fast else LAWS
    replicates = args.replicates or (200 if args.fast else 1000)
    print(f"{args.chains} x {args.draws} weights, {replicates} replicates per law; the package's "
          f"rule (k-hat line {HEAVY_TAIL_K:g})")
    print(f"{'law':>9s} {'param':>5s} {'k-hat':>5s} {'ESS':>5s} {'warned':>6s} "
          f"{'cover(all)':>10s} {'cover(no warning)':>17s} {'n':>5s} {'silent miss':>11s}")
    results = {}
    t0 = time.perf_counter()
    for law, param in laws:
        r = simulate(law, param, replicates, args.chains, args.draws, args.seed)
        results[law, param] = r
        quiet = ~r["warned"]
        print(f"{law:>9s} {param:5.2f} {np.median(r['k_hat']):5.2f} "
              f"{np.median(r['ess_fraction']):5.3f} {r['warned'].mean():6.2f} "
              f"{r['covered'].mean():10.3f} {_coverage(r['covered'][quiet]):>17s} "
              f"{quiet.sum():5d} {np.mean(quiet & ~r['covered']):11.3f}", flush=True)
    print(f"({time.perf_counter() - t0:.0f} s)\n\nOther k-hat lines (ESS and chain warnings "
          "unchanged): warned / coverage without a warning / silent-miss rate")
    print(f"{'law':>9s} {'param':>5s} " + " ".join(f"{f'k-hat > {a:g}':>24s}"
                                                   for a in CANDIDATE_K))
    for (law, param), r in results.items():
        cells = []
        for a in CANDIDATE_K:
            warned = r["warned_other"] | (r["k_hat"] > a)
            quiet = ~warned
            cover = f"{r['covered'][quiet].mean():.3f}" if quiet.any() else "  -  "
            cells.append(f"{warned.mean():.2f} / {cover} / {np.mean(quiet & ~r['covered']):.3f}")
        print(f"{law:>9s} {param:5.2f} " + " ".join(f"{c:>24s}" for c in cells))


if __name__ == "__main__":
    main()
