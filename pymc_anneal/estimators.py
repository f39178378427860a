r"""NumPy-only estimators on AIS log weights.

For N importance weights :math:`w_i` (given as :math:`\log w_i`):

- :math:`\log \hat Z = \operatorname{logsumexp}(\log w) - \log N`; :math:`\hat Z` is unbiased
  for Z, so :math:`\log \hat Z` is a stochastic lower bound on :math:`\log Z` (Jensen).
- weight ESS :math:`= (\sum w)^2 / \sum w^2`.
- delta-method standard error of :math:`\log \hat Z`:
  :math:`\sqrt{\widehat{\mathrm{Var}}(w) / (N \bar w^2)}`, with the unbiased sample variance.
- the average of n independent estimates :math:`\bar L = \frac1n \sum_i \hat L_i` (a
  test set's per-point log-likelihoods) has the standard error
  :math:`\sqrt{\sum_i s_i^2} / n` (:func:`pooled_mean`).
- Pareto :math:`\hat k` of the weights' right tail (Vehtari et al., 2024, PSIS): the tail
  index of the fitted generalized Pareto distribution. From 1/2 on the weights' variance is
  infinite and the delta-method standard error means nothing; the samplers warn above
  :data:`pymc_anneal.diagnostics.HEAVY_TAIL_K` (1/2), which measurably bounds how often a
  run is silently wrong but cannot make the runs without a warning cover when the true
  tail index is between 1/2 and 0.7 (see :mod:`pymc_anneal.diagnostics`).

Particles whose log weight is ``-inf`` carry zero weight; ``NaN`` is never produced here.
"""

from __future__ import annotations

import sys
import threading
from typing import NamedTuple

import numpy as np

__all__ = [
    "LogZEstimate",
    "effective_sample_size",
    "estimate_log_z",
    "load_pareto_fit",
    "log_mean_exp",
    "pareto_k",
    "pooled_mean",
    "prefetch_pareto_fit",
    "systematic_resample",
]

_PARETO_MODULE = "arviz_stats.base"
_prefetch: threading.Thread | None = None


class LogZEstimate(NamedTuple):
    """A log normalizing constant estimate from one set of weighted particles."""

    log_z: float
    standard_error: float
    ess: float
    num_particles: int


def _logsumexp(log_w: np.ndarray, axis=-1) -> np.ndarray:
    m = np.max(log_w, axis=axis, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(log_w - m_safe), axis=axis, keepdims=True)) + m_safe
    return np.squeeze(out, axis=axis)


def log_mean_exp(log_w, axis=-1) -> np.ndarray:
    """``log(mean(exp(log_w)))`` along ``axis``, stable and ``-inf`` when all weights are 0."""
    log_w = np.asarray(log_w, dtype=np.float64)
    return _logsumexp(log_w, axis=axis) - np.log(log_w.shape[axis])


def effective_sample_size(log_w, axis=-1) -> np.ndarray:
    """Kish's weight ESS ``(sum w)^2 / sum w^2`` (0 when every weight is 0)."""
    log_w = np.asarray(log_w, dtype=np.float64)
    lse = _logsumexp(log_w, axis=axis)
    lse2 = _logsumexp(2.0 * log_w, axis=axis)
    with np.errstate(invalid="ignore"):
        ess = np.exp(2.0 * lse - lse2)
    return np.where(np.isfinite(lse), ess, 0.0)


def estimate_log_z(log_w) -> LogZEstimate:
    """Pool a 1-D array of log weights into :class:`LogZEstimate`."""
    log_w = np.asarray(log_w, dtype=np.float64).ravel()
    n = log_w.size
    log_z = float(log_mean_exp(log_w))
    if not np.isfinite(log_z):
        return LogZEstimate(log_z, float("nan"), 0.0, n)
    w = np.exp(log_w - np.max(log_w))
    mean = w.mean()
    var = w.var(ddof=1) if n > 1 else np.inf
    se = float(np.sqrt(var / (n * mean**2)))
    return LogZEstimate(log_z, se, float(effective_sample_size(log_w)), n)


def pooled_mean(log_z, standard_error) -> tuple[float, float]:
    """The average of independent estimates ``log_z`` (1-D) and its standard error
    ``sqrt(sum(standard_error**2)) / n``; ``(-inf, nan)`` unless every estimate is finite."""
    log_z, standard_error = np.asarray(log_z), np.asarray(standard_error)
    if not np.all(np.isfinite(log_z)):
        return -np.inf, np.nan
    return float(log_z.mean()), float(np.sqrt(np.sum(standard_error**2)) / log_z.size)


MIN_PARETO_DRAWS = 25
"""Fewer finite weights than this give no tail fit (:func:`pareto_k` is NaN): the fit needs
at least 5 tail draws, min(N/5, 3 sqrt N)."""


def pareto_k(log_w) -> float:
    r"""Pareto :math:`\hat k` of the right tail of the importance weights ``exp(log_w)``.

    The generalized Pareto fit of PSIS (Vehtari, Simpson, Gelman, Yao & Gabry, 2024) by
    ``arviz_stats``, to the largest :math:`\min(N/5, 3\sqrt N)` weights. :math:`\hat k <
    1/2`: finite variance, the standard error can be trusted; :math:`\hat k \ge 1/2`: a heavy
    tail, the sample has not seen the weights that matter and the estimate is biased low
    (the samplers warn above :data:`pymc_anneal.diagnostics.HEAVY_TAIL_K`, 1/2). The fit
    itself is noisy, with a standard error of about :math:`(1 + k)/\sqrt{M}` for M tail
    draws (0.1 at 4 x 1000 particles), and biased up for light tails at small N
    (log-normal weights of :math:`\sigma = 1` give a median :math:`\hat k` of 0.26 with
    4,000 weights, 0.31 with 400): a :math:`\hat k` below 1/2 does not show that the true
    tail is light, only that the weights drawn do not show it heavy.
    Weights of zero are dropped; NaN with fewer than :data:`MIN_PARETO_DRAWS` left, or when
    all weights are equal up to rounding (a spread below 1e-9 nat).

    ``arviz_stats``' ``psislw`` follows the LOO convention: it takes the *log-likelihood*
    and smooths the weights ``exp(-log_lik)``, so it is called with ``-log_w``.
    """
    if _prefetch is not None:
        _prefetch.join()  # never two threads importing it at once
    from arviz_stats.base import array_stats

    log_w = np.asarray(log_w, dtype=np.float64).ravel()
    log_w = log_w[np.isfinite(log_w)]
    if log_w.size < MIN_PARETO_DRAWS or np.ptp(log_w) < 1e-9:  # equal up to rounding
        return float("nan")
    with np.errstate(over="ignore", invalid="ignore"):  # its quantiles of a very heavy tail
        return float(array_stats.psislw(-(log_w - log_w.max()), r_eff=1.0)[1])


def load_pareto_fit() -> None:
    """Import the library of :func:`pareto_k` now, in this thread (a job for a wait:
    :func:`~pymc_anneal.backends.add_waiting_jobs`)."""
    import importlib

    importlib.import_module(_PARETO_MODULE)


def prefetch_pareto_fit() -> None:
    """Import the library of :func:`pareto_k` (``arviz_stats``, about 0.3 s after JAX) in a
    background thread, once per process: the driver calls this as its main run starts, when
    the main thread mostly waits for compiled code, so the import that the run's weight
    check needs afterwards costs the first call nothing. :func:`pareto_k` waits for it."""
    global _prefetch
    if _prefetch is None and _PARETO_MODULE not in sys.modules:
        import importlib

        _prefetch = threading.Thread(target=importlib.import_module, args=(_PARETO_MODULE,),
                                     name="pymc_anneal-prefetch", daemon=True)
        _prefetch.start()


def systematic_resample(log_w, num_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``num_draws`` equally weighted draws by systematic resampling."""
    log_w = np.asarray(log_w, dtype=np.float64)
    w = np.exp(log_w - np.max(log_w))
    cdf = np.cumsum(w / w.sum())
    cdf[-1] = 1.0
    u = (rng.uniform() + np.arange(num_draws)) / num_draws
    return np.searchsorted(cdf, u, side="right").clip(0, log_w.size - 1)
