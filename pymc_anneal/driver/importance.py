r"""Importance sampling from a path's base: AIS with one temperature step and no transition.

Where a base is already close to the target (a Laplace fit's mixture on a posterior that
is nearly Gaussian in its unconstrained space), the weights :math:`\ell(x) + \log Z_0` of
exact base draws :math:`x \sim f_0` have a small variance, and their mean is unbiased for
:math:`Z` as AIS's is: this is AIS with the schedule ``(0, 1)`` and without the final
transition, which cannot change a weight. No loop is compiled: the path's log densities are
evaluated in Python mode (for a PyMC model, the op of its densities compiled once per path,
:func:`~pymc_anneal.paths.one_off_graph`).

:func:`importance_check` decides whether it is enough, on a *check* batch of its own
(independent of the reported draws, so that the decision cannot select a lucky batch: given
the decision, the reported weights are fresh draws and their mean is unbiased, as for the
check chain of :func:`~pymc_anneal.driver.tuning.auto_rerun_steps`); :func:`run_importance`
draws the reported batch.
"""

from __future__ import annotations

import time
import weakref

import numpy as np
import pytensor.tensor as pt

from pymc_anneal.backends import compile_repeated
from pymc_anneal.diagnostics import weight_warnings
from pymc_anneal.driver.memory import check_memory, estimate_memory
from pymc_anneal.driver.run import AnnealingRun
from pymc_anneal.estimators import effective_sample_size, estimate_log_z, pareto_k
from pymc_anneal.paths import one_off_graph

__all__ = ["BATCH_ROWS", "FIRST_DRAWS", "HOPELESS", "KERNEL", "MAX_PARETO_K", "MAX_SKEWNESS",
           "importance_check", "importance_weights", "run_importance"]

BATCH_ROWS = 2048
"""Base draws evaluated per call of the compiled log densities (bounds the memory of a
model with many data: each row evaluates the whole likelihood)."""

MAX_SKEWNESS = 0.1
"""The largest skewness of the estimate's sampling distribution (the weights' skewness over
:math:`\\sqrt N`) at which importance sampling is taken. Weights bounded above whose low
values come from a small share of the draws (a fit's light tail, the defensive share's
draws where the posterior has no mass) make the mean's distribution skewed and its
standard error too small exactly when the mean is too high: on a random Gamma-Poisson
model whose check passed at 400 draws (ESS 97 %, skewness -0.21) 0.7 % of 2,000 seeds had
z > 3 and one z = 6.3; at 4,000 draws (skewness -0.06) 0.4 %, the largest 3.4 in 500.
posteriordb's near-Gaussian posteriors: 0.006-0.04 at 4,000 draws."""

MAX_PARETO_K = 0.25
r"""The largest Pareto :math:`\hat k` of the check batch at which importance sampling is
taken: two standard errors of the fit below the weight warning's 1/2
(:data:`~pymc_anneal.diagnostics.HEAVY_TAIL_K`), so that the reported batch, whose weights
are checked again, rarely warns. Between batches of 4,000 draws from one fit the fit's
:math:`\hat k` moved by a standard deviation of 0.12-0.13 (posteriordb's kidscore_momiq
0.01-0.31, dogs_hierarchical 0.19-0.50); at 0.4 a logistic regression's check passed at
0.36 and its reported batch warned at 0.51 (1 of 6 such runs), and so did the quickstart's
quadratic regression (0.51). Gaussian components under-cover the tails of a regression
with an unknown scale (its coefficients' marginals are Student-t-like): there the check
fails and the run anneals."""

FIRST_DRAWS = 500
"""The check draws whose weights are evaluated first (:func:`importance_check`): where
they alone are :data:`HOPELESS` times over the target, the rest are not evaluated."""

HOPELESS = 3.0
r"""The factor over the target variance at which the first :data:`FIRST_DRAWS` check draws
end the check. A batch whose :math:`\log(N / \mathrm{ESS})` stays within the target
(:math:`\sigma^2 = 0.7`: ESS over half the draws) cannot hold a first share at
:math:`3 \sigma^2` (ESS under 12 % of it) unless a few of its weights dominate that share,
and those fail the whole batch's variance or skewness test anyway: one weight 70 times the
rest's in 500 draws of 4,000 leaves the whole batch an ESS of 46 %. On radon's 90-d
model the Laplace base's first share is at 3.4 (the whole batch at 5.6), and the check's
remaining 3,500 evaluations over 919 observations (0.23 s) and its Pareto fit's import
(0.3 s, which the main run then makes in the background) are saved."""

KERNEL = "none (importance sampling)"
"""The ``kernel`` setting of an importance-sampling result: no transition runs."""

_COMPILED: dict = {}
"""Compiled ``x -> (log_base, log_ratio)`` per path, dropped with their path."""


def log_densities(path):
    """``x (N, d) -> (log_base, log_ratio)`` of ``path``, compiled once per path (dropped
    with it): in Python mode, or where the graph has a scan, as an optimizer's objective is
    (:func:`~pymc_anneal.backends.compile_repeated`)."""
    fn = _COMPILED.get(id(path))
    if fn is None:
        x = pt.matrix("x", dtype=path.dtype)
        with one_off_graph():  # a model path answers with its densities compiled once
            point = path.evaluate(x, gradients=False)
        fn = _COMPILED[id(path)] = compile_repeated([x], [point.log_base, point.log_ratio])
        weakref.finalize(path, _COMPILED.pop, id(path), None)
    return fn


def importance_weights(path, positions: np.ndarray) -> np.ndarray:
    """The log weights :math:`\\ell(x) + \\log Z_0` at base draws ``positions`` (N, d): NaN
    and ``+inf`` of the log ratio read as zero weight where the density is undefined (as
    the annealing loops read a NaN), so the checks see them as lost mass."""
    fn = log_densities(path)
    positions = np.asarray(positions, dtype=path.dtype)
    out = np.empty(positions.shape[0])
    for start in range(0, positions.shape[0], BATCH_ROWS):
        log_base, log_ratio = fn(positions[start:start + BATCH_ROWS])
        out[start:start + BATCH_ROWS] = np.asarray(log_ratio, dtype=np.float64)
    out = out + float(path.log_base_normalizer)
    out[np.isnan(out)] = -np.inf
    return out


def importance_check(path, *, draws: int, chains: int, rng: np.random.Generator,
                     target_variance: float) -> dict:
    """Whether importance sampling from ``path``'s base meets the run's target, judged on a
    check batch of ``chains x draws`` base draws from ``rng``: ``{"passed": bool,
    "variance": v, "ess_fraction": ..., "reason": str}``, with :math:`v = \\log(N /
    \\mathrm{ESS})` (the realized variance of the log weights, as the rerun rule measures
    it). It passes where :math:`v \\le` ``target_variance`` and the batch draws none of
    :func:`~pymc_anneal.diagnostics.weight_warnings`' findings (a low ESS, a heavy tail by
    Pareto :math:`\\hat k`, chains that disagree), and the skewness of the estimate's
    sampling distribution is at most :data:`MAX_SKEWNESS` (its standard error is then
    trustworthy at this number of draws). The first :data:`FIRST_DRAWS` draws are weighed
    first: where they are :data:`HOPELESS` times over the target, the check fails there."""
    t0 = time.perf_counter()
    check_importance_memory(path, draws=draws, chains=chains)
    positions = path.sample_base(rng, draws * chains)
    first = min(FIRST_DRAWS, positions.shape[0])
    head = importance_weights(path, positions[:first])
    head_variance = _log_n_over_ess(head)
    if first < positions.shape[0] and head_variance > HOPELESS * target_variance:
        return {"passed": False, "variance": head_variance, "skewness": float("nan"),
                "ess_fraction": float(np.exp(-head_variance)),
                "seconds": time.perf_counter() - t0,
                "reason": (f"importance weights of the first {first} of {positions.shape[0]} "
                           f"check draws from the base: log(N / ESS) = {head_variance:.3g}, "
                           f"over {HOPELESS:g} times the target {target_variance:.3g} (the "
                           "rest not evaluated)")}
    log_w = np.concatenate([head, importance_weights(path, positions[first:])])
    log_w = log_w.reshape(chains, draws)
    if not np.any(np.isfinite(log_w)):
        return {"passed": False, "variance": float("inf"), "ess_fraction": 0.0,
                "skewness": float("nan"), "seconds": time.perf_counter() - t0,
                "reason": f"importance weights of {log_w.size} check draws: none finite"}
    ess = float(effective_sample_size(log_w.ravel()))
    variance = float(np.log(log_w.size / ess)) if ess > 0 else float("inf")
    skewness = _mean_skewness(log_w.ravel())
    k_hat = pareto_k(log_w)
    findings = weight_warnings(log_w)
    passed = (variance <= target_variance and not findings and skewness <= MAX_SKEWNESS
              and not k_hat > MAX_PARETO_K)
    reason = (f"importance weights of {log_w.size} check draws from the base: ESS "
              f"{100 * ess / log_w.size:.3g}%, log(N / ESS) = {variance:.3g} (target "
              f"{target_variance:.3g}), Pareto k-hat {k_hat:.2f} (at most {MAX_PARETO_K:g}), "
              f"the estimate's skewness {skewness:.2g} (at most {MAX_SKEWNESS:g})")
    if findings:
        reason += "; " + findings[0].split(":")[0]
    return {"passed": bool(passed), "variance": variance, "ess_fraction": ess / log_w.size,
            "skewness": skewness, "pareto_k": k_hat, "reason": reason,
            "seconds": time.perf_counter() - t0}


def check_importance_memory(path, *, draws: int, chains: int) -> None:
    """Refuse, before any draw, a batch of ``chains x draws`` base draws whose positions
    and weights cannot fit in memory (:func:`~pymc_anneal.driver.memory.check_memory`:
    the message says how to split the call): the importance check comes before any loop,
    and so before the run's own memory check."""
    def size(n, c, k):
        d = path.num_dims
        return estimate_memory(num_particles=n * c, num_dims=d, state_bytes=8 * d,
                               num_steps=1, num_chains=c, num_statistics=1)

    check_memory(size(draws, chains, 1), draws=draws, chains=chains, size=size,
                 what="importance sampling from the fitted base")


def _log_n_over_ess(log_w: np.ndarray) -> float:
    r""":math:`\log(N / \mathrm{ESS})` of ``log_w`` (infinite where no weight is finite)."""
    if not np.any(np.isfinite(log_w)):
        return float("inf")
    ess = float(effective_sample_size(log_w))
    return float(np.log(log_w.size / ess)) if ess > 0 else float("inf")


def _mean_skewness(log_w: np.ndarray) -> float:
    """The absolute skewness of the mean of the weights ``exp(log_w)`` (zero weights
    included): the weights' own skewness over :math:`\\sqrt N`."""
    w = np.exp(log_w - np.max(log_w[np.isfinite(log_w)]))
    centred = w - w.mean()
    m2 = np.mean(centred**2)
    if m2 <= 0:  # equal weights: a sampling distribution of one point
        return 0.0
    return float(abs(np.mean(centred**3) / m2**1.5) / np.sqrt(w.size))


def run_importance(path, *, draws: int, chains: int, rng: np.random.Generator,
                   backend: str = "python") -> AnnealingRun:
    """``chains x draws`` exact base draws and their importance weights, as the
    :class:`~pymc_anneal.driver.run.AnnealingRun` of AIS with the schedule ``(0, 1)`` and
    no transition (``kernel`` :data:`KERNEL`; the step statistics of its one step: no
    proposal was made, so its acceptance rate is NaN). ``positions`` are in the path's own
    coordinates, as :func:`~pymc_anneal.driver.run.run_annealing`'s."""
    t0 = time.perf_counter()
    check_importance_memory(path, draws=draws, chains=chains)
    positions = path.sample_base(rng, draws * chains)
    log_w = importance_weights(path, positions).reshape(chains, draws)
    per_chain = [estimate_log_z(w) for w in log_w]
    return AnnealingRun(
        positions=np.asarray(positions).reshape(chains, draws, path.num_dims),
        log_weights=log_w, betas=np.array([0.0, 1.0]), parameters={},
        step_stats={"acceptance_rate": np.full((chains, 1), np.nan),
                    "divergences": np.zeros((chains, 1), dtype=int),
                    "log_z": np.array([[e.log_z] for e in per_chain]),
                    "ess": np.array([[e.ess] for e in per_chain])},
        log_base_normalizer=float(path.log_base_normalizer),
        timings={"sampling": time.perf_counter() - t0},
        settings={"kernel": KERNEL, "num_steps": 1, "draws": draws, "chains": chains,
                  "backend": backend})
