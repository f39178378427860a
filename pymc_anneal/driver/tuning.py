r"""The pilot tuner: per-step kernel parameters chosen without biasing the estimate.

A pilot population, separate from the particles that make the estimate, anneals through
the same schedule (thinned when it is long and fixed: :data:`PILOT_MAX_STEPS`) in
temperature bands, resampling at each band's end (SMC-style). At each
band's start the kernel's state is rebuilt at the pilot's positions (``kernel.init``: an
auxiliary variable such as a momentum starts from its distribution under the band's
parameters). Within a band, per the kernel's declared :class:`StepParameter` rules,

- a parameter tuned to ``"acceptance"`` (a step size) is searched multiplicatively until
  the pilot's mean acceptance rate is within 0.1 of the kernel's target;
- a parameter tuned to ``"variance"`` (a diagonal inverse mass) is set to the variances
  of the pilot's particles, resampled at the end of the band before (``mass_matrix="adapt"``;
  when that band's weights had fewer than :func:`min_variance_ess` effective particles, the
  particles before resampling, unweighted), the base's variances (``"base"``) or one
  (``"identity"``);

and derived parameters follow. The values are then frozen, so the main run is an exact AIS
whose transitions do not depend on its own particles. The pilot also records the variance of
the log-density slope along the path, from which :func:`equal_length_schedule` re-spaces an
adaptive schedule.

**Choosing K** (``num_steps="auto"``) follows from the same measurements: a :class:`Pilot`
holds them, :meth:`Pilot.schedule` gives the first run's temperatures (the pilot's grid,
re-spaced, or :func:`auto_num_steps` of them) and :meth:`Pilot.rerun` those of a repeat
(:func:`auto_rerun_steps`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.special import gammaincinv

from pymc_anneal.driver.scan import CompiledLoop
from pymc_anneal.estimators import effective_sample_size, systematic_resample
from pymc_anneal.exceptions import AnnealingError

__all__ = [
    "AUTO_MAX_RERUNS",
    "AUTO_MAX_STEPS",
    "AUTO_MIN_STEPS",
    "AUTO_PILOT_STEPS",
    "AUTO_RERUN_FACTOR",
    "AUTO_VARIANCE",
    "PILOT_MAX_STEPS",
    "Pilot",
    "TuningOptions",
    "ZeroWeightError",
    "auto_cap_message",
    "auto_miss_message",
    "auto_num_steps",
    "auto_rerun_steps",
    "auto_variance",
    "bands",
    "equal_length_schedule",
    "needs_pilot",
    "step_arrays",
    "thermodynamic_length",
    "tune",
]


class ZeroWeightError(AnnealingError):
    """Every particle of a pilot has zero weight: the likelihood is -inf or NaN wherever the
    base drew them (an entry point that knows the model names the terms)."""


TRIAL_STEPS = 20
"""Steps of a trial run of the step-size search (a loop of static length, JAX's, runs as
many as one call holds instead: it computes them anyway)."""
VARIANCE_FLOOR = 0.3
"""The least fraction of its true variance that a band's inverse mass may take in any
coordinate, with odds of 1 in 100 over the model's coordinates (:func:`min_variance_ess`)."""
MASS_OUTLIER_SCALES = 8.0
"""Particles further than this many robust standard deviations from the median in a
coordinate do not enter that coordinate's inverse mass (:func:`_variance`). A mixture
base's defensive share (10 % of draws from the prior, tens to thousands of the fit's
standard deviations wide in its whitened coordinates) had set the first band's inverse
mass for every particle: its step size came out 20-400 times too small, and the first
fifth to quarter of the run's temperatures barely moved the other 90 %. A Gaussian's
particles lie this far out with odds under 1e-11 each (the robust scale of 250 of them is
within 15 % of the true one); at 5, one of 7,500 draws did (a test's seed)."""
PILOT_MAX_STEPS = 4096
"""With a schedule the pilot does not measure (``num_steps`` fixed, ``adapt_schedule`` off),
the most temperatures the pilot anneals through: a longer schedule is thinned for the pilot,
evenly within each band, and the main run keeps every temperature. The pilot needs particles
near each band's distribution (for the step-size search and the variances), not every
temperature: at the HAIS paper's N = 100,000 it cost as much as the main run."""
AUTO_PILOT_STEPS = 256
"""With ``num_steps="auto"``, the temperatures of the pilot that measures the path."""
AUTO_VARIANCE = 0.7
"""With ``num_steps="auto"``, the target variance of the log weights, unless ``dlogz`` asks
for less: log-normal weights of variance 0.7 leave a weight ESS of about half the particles
(:math:`e^{-0.7}`), where the delta-method standard error is reliable. The pilot measures
the path's thermodynamic length and the kernel's inefficiency on it, and K follows
(:func:`auto_num_steps`); a run that misses the target by
:data:`AUTO_RERUN_FACTOR` is repeated with more steps, at most
twice (:data:`AUTO_MAX_RERUNS`), judged on an extra check chain
that is not reported.
Measured (2026-11-24, HAIS, 4 x 1000 particles, seven models up to d = 10): the pilot's
inefficiency is 2.3-6.7 and the realized one 1.0-1.6 times that, so runs land at ESS
35-50%, the linear-model exception at the rerun line."""
AUTO_MIN_STEPS = 20
"""The fewest temperatures ``num_steps="auto"`` chooses."""
AUTO_MAX_STEPS = 20_000
"""The most temperatures ``num_steps="auto"`` chooses."""
AUTO_RERUN_FACTOR = 1.7
r"""With ``num_steps="auto"``: when the realized variance of the log weights,
:math:`\log(N / \mathrm{ESS})`, exceeds the target by this factor (the pilot under-rated
the kernel's lag), the run is repeated, independently, with K scaled by their ratio; the
last run alone makes the estimate. The variance is measured on an extra *check* chain that
runs in the same batch and is never reported (:func:`auto_rerun_steps`)."""
AUTO_MAX_RERUNS = 2
"""The most such repeats (where the weights' variance falls more slowly than 1/K, one
repeat can fall short); a run still off target then raises an
:class:`~pymc_anneal.exceptions.AnnealingWarning`, as does a run whose target cannot be met
within :data:`AUTO_MAX_STEPS` temperatures."""


@dataclass(frozen=True)
class TuningOptions:
    """How per-step kernel parameters are chosen.

    Parameters
    ----------
    fixed : mapping of str to float
        Parameters the user fixes for every temperature, by name (e.g. ``{"step_size":
        0.1}``); each must be one of the kernel's parameters. A fixed parameter is neither
        tuned nor derived.
    mass_matrix : {"adapt", "base", "identity"}
        For parameters tuned to ``"variance"``: the pilot particles' weighted variances in
        each band (default), the base distribution's variances, or one.
    num_bands : int
        Number of temperature bands with their own tuned values.
    num_pilot : int
        Pilot particles (independent of the estimate's particles).
    target_acceptance : float or None
        ``None`` uses the kernel's own target (0.8 for HAIS, 0.65 HMC, 0.57 MALA, 0.3
        Metropolis).
    adapt_schedule : bool
        Re-space the schedule to equal thermodynamic length from the pilot's estimates of
        the slope's variance along the path (:func:`equal_length_schedule`), then freeze it.
    auto_variance : float or None
        Choose the number of temperatures too (``num_steps="auto"``): the schedule given to
        the driver is the pilot's grid, and the run gets the K of :func:`auto_num_steps`
        for this target variance of the log weights, spaced to equal thermodynamic length.
    """

    fixed: Mapping[str, float] = field(default_factory=dict)
    mass_matrix: str = "adapt"
    num_bands: int = 8
    num_pilot: int = 250
    target_acceptance: float | None = None
    adapt_schedule: bool = False
    auto_variance: float | None = None


def step_arrays(parameters, betas: np.ndarray, values: Mapping[str, np.ndarray],
                fixed: Mapping[str, float]) -> dict[str, np.ndarray]:
    """Per-step arrays for a run through ``betas`` (in run order, ``K + 1`` values).

    ``beta`` and ``delta_beta`` of steps 1..K, then each kernel parameter: fixed by the user,
    else derived from the others, else taken from ``values`` (one row per step).
    """
    betas = np.asarray(betas, dtype=np.float64)
    arrays = {"beta": betas[1:].copy(), "delta_beta": np.diff(betas)}
    num_steps = betas.size - 1
    for p in parameters:
        if p.name in fixed:
            shape = (num_steps, *values[p.name].shape[1:]) if p.name in values else (num_steps,)
            arrays[p.name] = np.broadcast_to(np.float64(fixed[p.name]), shape).copy()
        elif p.derive is None:
            arrays[p.name] = np.asarray(values[p.name], dtype=np.float64)
    for p in parameters:
        if p.derive is not None and p.name not in fixed:
            arrays[p.name] = np.asarray(p.derive(arrays), dtype=np.float64)
    return arrays


def _slice(arrays, start, stop):
    return {k: v[start:stop] for k, v in arrays.items()}


def bands(num_steps: int, num_bands: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each temperature band (about equal numbers of steps)."""
    edges = np.unique(np.linspace(0, num_steps, min(num_bands, num_steps) + 1).round().astype(int))
    return list(zip(edges[:-1], edges[1:]))


def _pilot_steps(start: int, stop: int, limit: int | None) -> np.ndarray:
    """The steps (indices into ``0..K-1``) the pilot runs in the band ``[start, stop)``:
    all of them, or ``limit`` spread evenly over it, its last step included."""
    if limit is None or stop - start <= limit:
        return np.arange(start, stop)
    return np.unique(np.linspace(start, stop - 1, limit).round().astype(int))


def _variance(positions):
    """Each coordinate's variance, in the arithmetic of the former weighted variance at
    equal weights, so that a band above :func:`min_variance_ess` keeps its bits; in a
    coordinate where some particles lie more than :data:`MASS_OUTLIER_SCALES` robust
    standard deviations (1.4826 median absolute deviations) from the median, the variance
    of the others."""
    w = np.full(positions.shape[0], 1.0 / positions.shape[0])
    mean = w @ positions
    var = w @ (positions - mean) ** 2
    median = np.median(positions, axis=0)
    scale = 1.4826 * np.median(np.abs(positions - median), axis=0)
    with np.errstate(invalid="ignore"):  # a scale of 0 times an infinite bound
        far = (np.abs(positions - median) > MASS_OUTLIER_SCALES * scale) & (scale > 0)
    # (a scale of 0: half the particles or more are copies of one, no robust scale)
    if not far.any():
        return var
    keep = ~far
    count = keep.sum(axis=0)
    kept_mean = np.where(keep, positions, 0.0).sum(axis=0) / count
    kept_var = np.where(keep, (positions - kept_mean) ** 2, 0.0).sum(axis=0) / count
    return np.where(far.any(axis=0), kept_var, var)


@lru_cache(maxsize=64)
def min_variance_ess(num_dims: int) -> float:
    r"""The effective sample size of a band's pilot weights below which the next band's
    inverse mass comes from the band's particles before resampling, unweighted.

    Resampling ``N`` particles of effective sample size ``m`` leaves about ``m`` distinct
    ones, whose variance in a coordinate is about :math:`\chi^2_{m-1}/(m-1)` times the
    true one. This is the least ``m`` at which that falls below :data:`VARIANCE_FLOOR` in
    any of ``num_dims`` coordinates with odds under 1 %: 14 in one dimension, 19 in four, 30
    in a hundred. Below it the copies of one or two particles gave a variance near zero in
    most coordinates of a high-dimensional model, an inverse mass that froze them for the
    rest of the run (the 100-d linear model at seed 1000: a fitted base 90x too wide, and a
    fallback to the prior's K = 3,500). The particles before resampling lag behind the
    narrowing target, so their variance is wider, which the step size search absorbs.
    """
    quantile = 0.01 / max(num_dims, 1)
    m = 2
    while 2.0 * gammaincinv((m - 1) / 2, quantile) / (m - 1) < VARIANCE_FLOOR:  # chi-square
        m += 1
    return float(m)


def _band_variance(options, positions, base_var):
    if options.mass_matrix == "adapt":
        var = _variance(positions)
        var = np.where(np.isfinite(var) & (var > 0), var, 1.0)
        return np.maximum(var, 1e-12 * var.max())
    return base_var if options.mass_matrix == "base" else 1.0


REJECTION_EXPONENT = 3.5
"""How fast a step's rejection rate grows with its size where it is small, as assumed by
:func:`step_factor`: ``1 - accept`` about proportional to the step size to this power. One
leapfrog step's energy error is of the step size cubed; measured on posteriordb's radon
model (HAIS, 256 particles x 32 steps per trial), rejection rates of 0.001-0.2 grew as the
2.7th to 3.7th power."""


def step_factor(accept: float, target: float) -> float:
    r"""The factor by which the step-size search (:func:`tune`) scales a step size whose
    trial accepted a fraction ``accept`` of its proposals, aiming at ``target``.

    :math:`\exp(3(a - a^*))` within ``[1/4, 2]``, the search's rule; but where nearly
    everything was accepted (a step far too small: the rule's at most 1.8x per trial took
    six trials on radon's 90-d model, 0.01 -> 0.2, each a band of steps), the step whose
    rejection rate would be the target's if it grows as a power of the step
    (:data:`REJECTION_EXPONENT`), at most 4x (where nothing was rejected), and never less
    than the rule's. A law of lower power (random-walk Metropolis) only makes that
    factor smaller than the one needed, never an overshoot."""
    factor = float(np.clip(np.exp(3.0 * (accept - target)), 0.25, 2.0))
    if accept <= target:
        return factor
    rejected = max(1.0 - accept, 0.0)
    law = 4.0 if rejected == 0.0 else ((1.0 - target) / rejected) ** (1.0 / REJECTION_EXPONENT)
    return max(factor, min(law, 4.0))


def needs_pilot(parameters, options: TuningOptions) -> bool:
    """Whether :func:`tune` runs a pilot (``options.num_pilot`` particles in one chain) for a
    kernel with these :class:`StepParameter` s: something must be measured on particles."""
    free = [p for p in parameters if p.name not in options.fixed]
    return (any(p.tuning == "acceptance" for p in free)
            or (options.mass_matrix == "adapt" and any(p.tuning == "variance" for p in free))
            or options.adapt_schedule or options.auto_variance is not None)


def tune(loop: CompiledLoop, path, betas: np.ndarray, options: TuningOptions,
         target_acceptance: float, rng: np.random.Generator,
         progress: Callable[[int], None],
         enough: Callable[[float, float], bool] | None = None,
         ) -> tuple[dict[str, np.ndarray], np.ndarray, float, np.ndarray | None]:
    r"""Pilot pass over the forward schedule ``betas`` (thinned to at most
    :data:`PILOT_MAX_STEPS` temperatures where the pilot does not measure the schedule).

    Returns the tuned values of the kernel's non-derived parameters, one row per step
    ``(K, ...)``; the slope's variance per step (NaN where the pilot did not run); and the
    kernel's inefficiency on this path: the variance of each band's log weights, measured
    as :math:`\log(N / \mathrm{ESS})` (which ignores particles of negligible weight),
    summed over the bands and divided by its value under perfect mixing,
    :math:`\sum_k \Delta\beta_k^2 \operatorname{Var}_{\beta_k}(\ell)` (at least 1;
    NaN where the pilot did not run). Transitions that lag behind the moving target make
    successive weight increments correlated, and the ratio is about their integrated
    autocorrelation time, in steps. Last, the pilot's particles at the end of its grid
    (resampled after each band, so equally weighted; ``None`` where the pilot did not run).

    ``enough``, given after each band but the last the thermodynamic length and the
    inefficiency measured so far, may stop the pilot there (:func:`~pymc_anneal.driver.run.
    run_pilot`): the values and ``ratio_var`` of the bands not run are then the initial
    values and NaN, and the particles those at the end of the last band run.
    """
    parameters = loop.parameters
    num_steps, d = betas.size - 1, path.num_dims
    values = {p.name: np.tile(p.initial(d), (num_steps,) + (1,) * p.per_dimension)
              for p in parameters if p.derive is None}
    ratio_var = np.full(num_steps, np.nan)
    searched = [p.name for p in parameters
                if p.tuning == "acceptance" and p.name not in options.fixed]
    scaled = [p.name for p in parameters if p.tuning == "variance" and p.name not in options.fixed]
    base_var = np.ones(d) if path.base_scale is None else np.asarray(path.base_scale) ** 2
    if not needs_pilot(parameters, options):
        for name in scaled:  # nothing needs the pilot's particles
            values[name][:] = _band_variance(options, None, base_var)
        return values, ratio_var, float("nan"), None

    np_rng, fn_rng = rng.spawn(2)
    path_parameters = [path.parameters[k] for k in sorted(path.parameters)]
    def first_step(start, stop):  # the parameters of a band's first step
        arrays = step_arrays(parameters, betas[start:stop + 1], _slice(values, start, stop),
                             options.fixed)
        return {k: v[0] for k, v in arrays.items()}

    np_rng, state = loop.init(np_rng, path.sample_base(np_rng, options.num_pilot),
                              first_step(0, 1), path_parameters)
    log_w = np.zeros(options.num_pilot)
    realized, predicted = [], []
    band_list = bands(num_steps, options.num_bands)
    measures_schedule = options.adapt_schedule or options.auto_variance is not None
    limit = None if measures_schedule else -(-PILOT_MAX_STEPS // len(band_list))
    spread = state["position"]  # the particles whose variance sets a band's inverse mass
    for start, stop in band_list:
        for name in scaled:
            values[name][start:stop] = _band_variance(options, spread, base_var)
        np_rng, state = loop.init(np_rng, state["position"], first_step(start, stop),
                                  path_parameters)
        steps = _pilot_steps(start, stop, limit)
        accepted = None  # a trial that ran the whole band with the value kept: its run
        for name in searched:
            value = values[name][start]
            trial_len = min(stop - start, loop.chunk_length or TRIAL_STEPS)
            for _ in range(6):
                values[name][start:stop] = value
                trial = step_arrays(parameters, betas[start:start + trial_len + 1],
                                    _slice(values, start, start + trial_len), options.fixed)
                fn_rng, *run, stats = loop.run(fn_rng, trial, state, log_w, 1,
                                               path_parameters)
                accept = float(stats["acceptance_rate"].mean())
                if abs(accept - target_acceptance) < 0.1:
                    accepted = (*run, stats) if trial_len == steps.size == stop - start \
                        and len(searched) == 1 else None
                    break
                value *= step_factor(accept, target_acceptance)
            values[name][start:stop] = value
            if stop < num_steps:  # the next band starts from this band's value
                values[name][stop:] = value
        band_betas = np.concatenate([[betas[start]], betas[steps + 1]])
        if accepted is not None:  # the band's very run (JAX: 32-step bands and trials)
            state, log_w, band_stats = accepted
        else:
            band = step_arrays(parameters, band_betas,
                               {k: v[steps] for k, v in values.items()}, options.fixed)
            fn_rng, state, log_w, band_stats = loop.run(fn_rng, band, state, log_w, 1,
                                                        path_parameters)
        ratio_var[steps] = band_stats["log_ratio_var"][:, 0]
        ess = effective_sample_size(log_w)
        if np.any(np.isfinite(log_w)):  # the band's weights against perfect mixing
            realized.append(float(np.log(log_w.size / ess)))
            predicted.append(float(np.sum(np.diff(band_betas) ** 2
                                          * np.nan_to_num(ratio_var[steps]))))
        if not np.any(np.isfinite(log_w)):
            raise ZeroWeightError(
                "every pilot particle has zero weight (log-likelihood -inf or NaN) during "
                "tuning; check that the likelihood is finite where the prior puts its mass."
            )
        before = state["position"][np.isfinite(log_w)]
        index = systematic_resample(log_w, log_w.size, np_rng)
        state = {k: v[index] for k, v in state.items()}
        spread = before if ess < min_variance_ess(d) else state["position"]
        log_w = np.zeros_like(log_w)
        progress(stop)
        if enough is not None and stop < num_steps and enough(
                thermodynamic_length(betas, ratio_var), _inefficiency(realized, predicted)):
            break
    return values, ratio_var, _inefficiency(realized, predicted), state["position"]


def _inefficiency(realized: list[float], predicted: list[float]) -> float:
    """The bands' realized variance of the log weights over its value under perfect mixing
    (at least 1; NaN where nothing was predicted): :func:`tune`'s inefficiency."""
    return max(sum(realized) / sum(predicted), 1.0) if sum(predicted) > 0 else float("nan")


@dataclass(frozen=True)
class Pilot:
    """What the pilot measured on the forward schedule it ran (:func:`tune`).

    Parameters
    ----------
    betas : array (K + 1,)
        The pilot's grid.
    values : dict of str to array (K, ...)
        The tuned values of the kernel's non-derived parameters, per step of the grid.
    ratio_var : array (K,)
        The slope's variance per step (NaN where the pilot did not run).
    inefficiency : float
        The kernel's lag behind perfect mixing (NaN where the pilot did not run).
    positions : array (num_pilot, d) or None
        The pilot's particles at the end of its grid, equally weighted (None where it did
        not run, or was restored from a checkpoint).
    stopped_at : int or None
        Where the pilot was stopped early (``run_pilot``'s ``enough``): the steps of the
        grid it ran; its measurements then cover ``betas[:stopped_at + 1]`` only, and it
        must not tune a run. None where it ran the whole grid.
    """

    betas: np.ndarray
    values: dict[str, np.ndarray]
    ratio_var: np.ndarray
    inefficiency: float
    positions: np.ndarray | None = None
    stopped_at: int | None = None

    def respace(self, num_steps: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """``num_steps`` temperatures of equal thermodynamic length
        (:func:`equal_length_schedule`), each step with the values the pilot tuned at the
        step of its grid that it falls in."""
        new = equal_length_schedule(self.betas, self.ratio_var, num_steps)
        index = np.searchsorted(self.betas[1:], new[1:], side="left")
        index = index.clip(0, self.betas.size - 2)
        return new, {k: v[index] for k, v in self.values.items()}

    def schedule(self, options: TuningOptions) -> tuple[np.ndarray, dict, float | None]:
        """The first run's temperatures and per-step values, and the path's thermodynamic
        length where K is chosen (``options.auto_variance``: K of :func:`auto_num_steps`),
        else ``None``. The pilot's grid as it is, unless the schedule is re-spaced
        (``adapt_schedule``) or sized."""
        num_steps, length = self.betas.size - 1, None
        if options.auto_variance is not None:
            length = thermodynamic_length(self.betas, self.ratio_var)
            num_steps = auto_num_steps(length, options.auto_variance, self.inefficiency)
        if options.adapt_schedule or options.auto_variance is not None:
            return (*self.respace(num_steps), length)
        return self.betas, self.values, length

    def rerun(self, num_steps: int, check_log_weights: np.ndarray, target_variance: float,
              reruns: int) -> tuple[float, tuple[np.ndarray, dict] | None]:
        """Whether a sized run of ``num_steps`` temperatures is repeated, by
        :func:`auto_rerun_steps` on its check chain's weights: the realized variance, and
        the repeat's temperatures and values (:meth:`respace`) or ``None``."""
        realized, next_steps = auto_rerun_steps(num_steps, check_log_weights, target_variance,
                                                reruns)
        return realized, None if next_steps is None else self.respace(next_steps)


def equal_length_schedule(betas: np.ndarray, ratio_var: np.ndarray, num_steps: int,
                          mix: float = 0.1) -> np.ndarray:
    r"""Re-space a schedule to equal thermodynamic length.

    With perfect transitions the variance of the log weights is
    :math:`\sum_k (\Delta\beta_k)^2 \operatorname{Var}_{\beta_k}(\ell)`; for a fixed number
    of steps it is smallest when every step has the same length
    :math:`\Delta\beta_k \operatorname{sd}_{\beta_k}(\ell)`. ``ratio_var`` holds the pilot's
    estimates on the grid ``betas[1:]``; a fraction ``mix`` of each step keeps the original
    spacing, so no region of the path is left without steps when an estimate is poor.
    """
    sd = np.sqrt(np.where(np.isfinite(ratio_var) & (ratio_var > 0), ratio_var, 0.0))
    floor = 1e-3 * (np.median(sd[sd > 0]) if np.any(sd > 0) else 1.0)
    length = np.maximum(sd, floor) * np.diff(betas)
    length = (1.0 - mix) * length / length.sum() + mix * np.diff(betas)
    cumulative = np.concatenate([[0.0], np.cumsum(length)])
    cumulative /= cumulative[-1]
    new = np.interp(np.linspace(0.0, 1.0, num_steps + 1), cumulative, betas)
    new[0], new[-1] = 0.0, 1.0
    return new


def thermodynamic_length(betas: np.ndarray, ratio_var: np.ndarray) -> float:
    r"""The path's thermodynamic length :math:`\mathcal L = \int_0^1
    \operatorname{sd}_\beta(\ell)\, d\beta`, from the pilot's variances of the log ratio
    :math:`\ell` on the grid ``betas[1:]`` (each taken before the step's transition, at
    :math:`\beta_{k-1}`: a left Riemann sum, an over-estimate where the spread falls)."""
    sd = np.sqrt(np.where(np.isfinite(ratio_var) & (ratio_var > 0), ratio_var, 0.0))
    return float(np.sum(sd * np.diff(betas)))


def auto_variance(dlogz: float | None, num_particles: int) -> float:
    r"""The target variance of the log weights of ``num_steps="auto"``: :data:`AUTO_VARIANCE`,
    or less where ``dlogz`` asks for it (the standard error of ``num_particles`` log-normal
    weights of variance :math:`\sigma^2` is about :math:`\sqrt{(e^{\sigma^2} - 1)/N}`)."""
    if dlogz is None:
        return AUTO_VARIANCE
    return min(AUTO_VARIANCE, float(np.log1p(num_particles * dlogz**2)))


def auto_num_steps(length: float, target_variance: float, inefficiency: float = 1.0) -> int:
    r"""The number of temperatures K that makes the variance of the log weights about
    ``target_variance``.

    With K steps of equal thermodynamic length and transitions that mix perfectly, each
    weight increment has variance :math:`(\mathcal L / K)^2` and the K increments add up
    to :math:`\operatorname{Var}(\log w) \approx \mathcal L^2 / K` (Neal 2001; Grosse
    et al. 2013). Real transitions lag behind the target, which multiplies that by the
    kernel's ``inefficiency`` :math:`\tau` (measured by :func:`tune`), so
    :math:`K = \lceil \tau \mathcal L^2 / \sigma^2 \rceil`, between
    :data:`AUTO_MIN_STEPS` and :data:`AUTO_MAX_STEPS`. For log-normal weights
    :math:`\sigma^2` sets the weight ESS, about :math:`e^{-\sigma^2}` of the particles.
    """
    if not np.isfinite(length):
        return AUTO_MAX_STEPS
    inefficiency = max(inefficiency, 1.0) if np.isfinite(inefficiency) else 1.0
    k = int(np.ceil(inefficiency * length**2 / target_variance))
    return int(np.clip(k, AUTO_MIN_STEPS, AUTO_MAX_STEPS))


def auto_rerun_steps(num_steps: int, check_log_weights: np.ndarray, target_variance: float,
                     reruns: int) -> tuple[float, int | None]:
    r"""The rule that decides whether a ``num_steps="auto"`` run is repeated.

    The realized variance of the log weights is measured as :math:`v = \log(N / \mathrm{ESS})`
    on ``check_log_weights``; when it exceeds ``target_variance`` by
    :data:`AUTO_RERUN_FACTOR`, the run is repeated with :math:`\lceil K v / \sigma^2
    \rceil` temperatures (at most :data:`AUTO_MAX_STEPS`), unless K is already at that cap
    or ``reruns`` repeats (:data:`AUTO_MAX_RERUNS`) were made.

    The weights that decide must not be the weights that are reported: a run kept because
    its own weights passed is biased low (its large weights, which make a high variance,
    are the ones that get it repeated). The driver therefore runs one extra *check* chain
    beside the reported ones, with the same K and the same frozen parameters, and passes
    only its weights here. Given K and the tuned values the reported particles are
    independent of the check chain, so whatever this rule decides,
    :math:`E[\hat Z] = Z` (``tests/test_auto_rerun_bias.py`` simulates the rule).

    Parameters
    ----------
    num_steps : int
        K of the run that was just made.
    check_log_weights : array
        The check chain's log weights (never the reported ones).
    target_variance : float
        :math:`\sigma^2`, the target variance of the log weights.
    reruns : int
        Repeats made so far.

    Returns
    -------
    realized : float
        :math:`v`, the check chain's :math:`\log(N / \mathrm{ESS})`.
    next_steps : int or None
        K of the repeat, or ``None`` when the run stands.
    """
    check_log_weights = np.asarray(check_log_weights, dtype=np.float64).ravel()
    ess = float(effective_sample_size(check_log_weights))
    realized = float(np.log(check_log_weights.size / max(ess, 1.0)))
    if (realized <= AUTO_RERUN_FACTOR * target_variance or num_steps >= AUTO_MAX_STEPS
            or reruns >= AUTO_MAX_RERUNS):
        return realized, None
    return realized, int(min(np.ceil(num_steps * realized / target_variance), AUTO_MAX_STEPS))


def auto_cap_message(length: float, target_variance: float, inefficiency: float) -> str | None:
    r"""The warning given *before* a ``num_steps="auto"`` run whose pilot puts the K it needs,
    :math:`\tau \mathcal L^2 / \sigma^2` (:func:`auto_num_steps` without its cap), above
    :data:`AUTO_MAX_STEPS`: the run goes on at the cap, and its own check then says by how
    much it missed (:func:`auto_miss_message`); else ``None``."""
    inefficiency = max(inefficiency, 1.0) if np.isfinite(inefficiency) else 1.0
    needed = inefficiency * length**2 / target_variance if np.isfinite(length) else np.inf
    if needed <= AUTO_MAX_STEPS:
        return None
    about = "an unbounded number" if not np.isfinite(needed) else f"about {needed:,.0f}"
    return (
        f'num_steps="auto": the pilot puts the temperatures needed for the target variance '
        f"{target_variance:.3g} of the log weights at {about} (thermodynamic length "
        f"{length:.3g}, inefficiency {inefficiency:.3g}), above the cap of "
        f"{AUTO_MAX_STEPS:,} (AUTO_MAX_STEPS). The run goes on at the cap and will likely "
        "miss its target. Ask for less (a larger dlogz), pass num_steps yourself, or start "
        "from a base closer to the target (the base= options of the function you called).")


def auto_miss_message(num_steps: int, realized: float, target_variance: float,
                      num_particles: int, check_draws: int) -> str | None:
    r"""The warning for a ``num_steps="auto"`` run that stands but missed its target.

    :func:`auto_rerun_steps` stops repeating at :data:`AUTO_MAX_STEPS` temperatures or after
    :data:`AUTO_MAX_RERUNS` repeats; a run whose check chain's variance ``realized`` is still
    above :data:`AUTO_RERUN_FACTOR` times the target (a ``dlogz`` that cannot be reached, a
    path the kernel cannot follow) gets this message, else ``None``. The target and the
    variance reached are also given as standard errors of :math:`\log Z` for the
    ``num_particles`` reported particles, :math:`\sqrt{(e^{\sigma^2} - 1) / N}` (log-normal
    weights).
    """
    if not realized > AUTO_RERUN_FACTOR * target_variance:
        return None
    def se(variance):
        return float(np.sqrt(np.expm1(variance) / num_particles))

    where = (f"the cap of {num_steps:,} temperatures (AUTO_MAX_STEPS)"
             if num_steps >= AUTO_MAX_STEPS else
             f"K = {num_steps:,} temperatures after {AUTO_MAX_RERUNS} repeats (AUTO_MAX_RERUNS)")
    return (
        f'num_steps="auto" missed its target: at {where} the variance of the log weights '
        f"is {realized:.3g} (log(N/ESS) of the {check_draws}-particle check chain), more "
        f"than {AUTO_RERUN_FACTOR:g} x the target {target_variance:.3g}. For {num_particles} "
        f"particles that is a standard error of about {se(realized):.2g} against the "
        f"{se(target_variance):.2g} asked for (by dlogz, or by the default target variance). "
        "Ask for less (a larger dlogz), use more particles (draws, chains: the error falls "
        'as 1/sqrt(N)), or a better path (base="gaussian", a better-mixing kernel).'
    )
