r"""Bases fitted to the posterior without annealing: a Laplace fit at each mode found by
optimization, or a Gaussian fitted to posterior draws that the user already has (issue 41).

AIS from any normalized base :math:`q` to the model's density as written,
:math:`\pi(\theta) = p(\theta)\,p(y \mid \theta)` in the unconstrained space (Jacobians
included), with the geometric path :math:`q^{1-\beta}\pi^\beta`, estimates
:math:`Z = \int \pi` without bias (``docs/design.md``, "The Laplace base"). :math:`q` is a
mixture of Gaussians, one at each distinct maximum of :math:`\log \pi` that L-BFGS finds
from a few dispersed starts (the census, :func:`fit_modes`), with the inverse of the
negative Hessian (central differences of the gradient) as its covariance, widened by the
width of :data:`WIDTHS` whose mixture best covers the target (:func:`choose_width`, an
inclusive KL), weighted by its Laplace mass; mixed with a defensive share of the prior, or,
where the prior cannot be drawn, of the first Gaussian :data:`DEFENSIVE_WIDTH` times wider
(Hesterberg 1995), so that a poor fit costs variance, never bias. :func:`missed_modes`
checks a run from another base against the census: a mode its particles left short is the
sign of tempering's blind spot. :func:`draws_base_path` fits the same kind of mixture to
draws of ``pm.sample`` (``sample_ais(base=idata)``): one Gaussian per group of chains that
found the same region.
"""

from __future__ import annotations

import math
import threading
import weakref

import numpy as np
import pytensor.tensor as pt
from scipy.linalg import solve_triangular
from scipy.optimize import minimize
from scipy.special import logsumexp

from pymc_anneal.backends import compile_repeated
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.paths import (
    Path,
    _floored_cholesky,
    component_offsets,
    fit_gaussian,
    mixture_base_path,
    one_off_graph,
)
from pymc_anneal.pymc.symmetry import MAX_COMPONENTS, find_symmetry, fold, unfold
from pymc_anneal.validation import missing_gradient

__all__ = ["DEFENSIVE_WIDTH", "EVALUATION_BATCH", "MAX_STEEPNESS", "MIN_MODE_SHARE",
           "NUM_STARTS", "VARIATIONAL_DRAWS", "VARIATIONAL_GAIN", "WIDTHS", "WIDTH_DRAWS",
           "choose_width", "draws_base_path", "fit_laplace", "fit_modes",
           "student_t_base_path", "laplace_base_path", "laplace_mass", "missed_modes",
           "mode_shares", "side_stream", "variational_modes"]

NUM_STARTS = 8
"""L-BFGS starts of each kind: ``sample_ais`` starts at the model's initial point, at this
many of the prior pilot's particles and at as many prior draws (where the prior can be
drawn; else at the initial point and draws around it)."""

WIDTHS = (1.0, 1.15, 1.3, 1.5)
"""The widths tried for the base's Gaussians (:func:`choose_width`): each component's
covariance is ``w**2`` times its fit's. A fixed 1.5 cost K = 338 temperatures on
posteriordb's 87-d radon_county_intercept where 1.0-1.15 took 68-75 (the mismatch of a base
``w`` times too wide grows as ``d (w**2 - 1 - 2 log w) / 2`` nats), and nothing on 2-3-d
posteriors (K = 20 either way)."""

WIDTH_DRAWS = 256
"""The draws, an equal share from each candidate width, on which :func:`choose_width`
scores the widths (one batch of the fit's log density)."""

DEFENSIVE_WIDTH = 4.0
"""The defensive component's scale, in units of the fit's (weight
:data:`~pymc_anneal.paths.DEFENSIVE_WEIGHT`)."""

MIN_MODE_SHARE = 0.05
"""A mode of the census is checked for particles (:func:`missed_modes`) where its Laplace
mass is at least this share of all the modes'."""

MAX_STEEPNESS = 1.0
"""An optimum whose gradient, in units of its Laplace scale, is steeper than this is no
mode (:func:`fit_modes`)."""

NEGLIGIBLE_LOG_MASS = -30.0
"""A mode whose Laplace mass is less than ``exp(-30)`` of the largest's gets no component
(its weight would underflow to zero: hmm_drive_1's census had modes 800 nats apart)."""


NEGLIGIBLE_ORBIT = float(np.log(1e-6))
"""Where the labels are exchangeable (:mod:`~pymc_anneal.pymc.symmetry`), a mode whose
Laplace mass is under 1e-6 of the highest's is left out with its mirror images (its
share of the evidence is below any error bar; a four-label mixture's census had local
modes 22-24 nats under its best, which would have made 96 components instead of 24)."""


EVALUATION_BATCH = 256
"""The most points the fit's log density is evaluated at in one call: the Hessian's central
differences take 2d points, which at posteriordb's d = 15,570 (ldaK5) would be gigabytes in
one batch, with the model's intermediates on top. The tuning pilot's particles are as many."""


DIFFERENCE_STEP = 1e-5
"""The step of the central differences that stand in for a missing gradient, relative to
``max(1, |x_j|)`` (about the cube root of the machine epsilon, which balances the
differences' truncation and rounding errors). An ODE solved by SciPy's ``solve_ivp``
(posteriordb's one_comp_mm_elim_abs, rtol 1e-6) is smooth at this scale: its second
differences at steps 1e-6-1e-2 agree to 1e-4 relative."""

MAX_DIFFERENCE_DIMS = 20
"""The most dimensions of a log density without a gradient that the fit takes on by central
differences (``2d + 1`` evaluations a gradient); beyond, the Laplace base is refused with
the reason."""


_EVALUATORS: dict[int, object] = {}
""":func:`_log_density_function` by the id of its path, while the path lives (the model's
path is cached with the model, so a repeated call fits without compiling; the function reads
``pm.Data`` when called, and ``pm.set_data`` that changes what the path depends on makes a
new path)."""


def _log_density_function(path: Path):
    """``x (n, d) -> (log pi (n,), grad (n, d))`` of the path's target, in Python mode (in
    JAX or C where the graph has a scan: :func:`~pymc_anneal.backends.compile_repeated`),
    at most :data:`EVALUATION_BATCH` points per call; compiled once per path."""
    evaluate = _EVALUATORS.get(id(path))
    if evaluate is None:
        evaluate = _EVALUATORS[id(path)] = _compile_log_density(path)
        weakref.finalize(path, _EVALUATORS.pop, id(path), None)
    return evaluate


def _compile_log_density(path: Path):
    x = pt.matrix("x", dtype="float64")
    with one_off_graph():  # a model path answers with its densities compiled once
        log_base, log_ratio = path.build_log_densities(x)
    total = log_base + log_ratio
    try:
        gradient = pt.grad(total.sum(), x)
    except (NotImplementedError, TypeError) as error:  # NullTypeGradError is a TypeError
        cause = missing_gradient(path)
        if cause is None:
            raise
        if path.num_dims > MAX_DIFFERENCE_DIMS:
            raise AnnealingError(
                f"the optimizer needs the log density's gradient, and this one has none: "
                f"{cause}; central differences stand in for it up to "
                f"MAX_DIFFERENCE_DIMS = {MAX_DIFFERENCE_DIMS} dimensions, and this model has "
                f"{path.num_dims}") from error
        return _DifferencedLogDensity(compile_repeated([x], [total]), path.num_dims, cause)
    return _LogDensity(compile_repeated([x], [total, gradient]))


class _LogDensity:
    """``evaluate(points (n, d)) -> (log pi (n,), gradient (n, d))``, at most
    :data:`EVALUATION_BATCH` points per call of the compiled function ``fn``. ``gradient=False``
    says the caller reads the values only (the gradient then may be NaN); ``differenced``:
    whether the gradient is the log density's own or central differences."""

    differenced = None

    def __init__(self, fn):
        self.fn = fn

    def _batches(self, points):
        parts = [[np.asarray(v, dtype=np.float64) for v in self.fn(points[i:i + EVALUATION_BATCH])]
                 for i in range(0, len(points), EVALUATION_BATCH)]
        return [np.concatenate(values) for values in zip(*parts)]

    def __call__(self, points, gradient: bool = True):
        return self._batches(np.asarray(points, dtype=np.float64))


class _DifferencedLogDensity(_LogDensity):
    r""":class:`_LogDensity` of a log density without a gradient (an ODE solver or a NumPy
    function wrapped as an op): the gradient by central differences,
    :math:`(\log\pi(x + h_j e_j) - \log\pi(x - h_j e_j)) / 2h_j` with
    :math:`h_j =` :data:`DIFFERENCE_STEP` :math:`\max(1, |x_j|)`, all ``2d`` shifted points of
    every row in one batched evaluation. ``differenced`` says why (the op)."""

    def __init__(self, fn, num_dims: int, cause: str):
        super().__init__(fn)
        self.num_dims, self.differenced = num_dims, cause

    def __call__(self, points, gradient: bool = True):
        x = np.asarray(points, dtype=np.float64).reshape(-1, self.num_dims)
        if not gradient:
            values = self._batches(x)[0]
            return values, np.full(x.shape, np.nan)
        n, d = x.shape
        step = DIFFERENCE_STEP * np.maximum(1.0, np.abs(x))
        up = x[:, None, :] + step[:, :, None] * np.eye(d)
        down = x[:, None, :] - step[:, :, None] * np.eye(d)
        values = self._batches(np.concatenate([x, up.reshape(-1, d), down.reshape(-1, d)]))[0]
        run = np.einsum("njj->nj", up) - np.einsum("njj->nj", down)  # the steps as rounded
        with np.errstate(invalid="ignore"):  # -inf - -inf: NaN, a point the fit avoids
            rise = values[n:n + n * d].reshape(n, d) - values[n + n * d:].reshape(n, d)
            return values[:n], rise / run


def fit_modes(path: Path, starts: np.ndarray, rng: np.random.Generator,
              num_starts: int = NUM_STARTS
              ) -> tuple[list[tuple[float, np.ndarray, np.ndarray]], dict]:
    """The distinct modes of the path's target found by L-BFGS from ``starts`` (rows; the
    first ``num_starts`` of them, completed by points around the first), highest first.

    Returns ``(modes, info)``: each mode ``(log density, mean, cov)`` with ``cov`` the
    inverse negative Hessian there; an optimum within one standard deviation (in that
    covariance's metric) of a higher mode is the same mode. ``info`` holds
    ``laplace_log_density`` (at the highest), ``laplace_num_evaluations`` and
    ``laplace_modes`` (how many).

    An optimum where the gradient is still steep, more than :data:`MAX_STEEPNESS` in units
    of the Laplace scale there (``max |g_i| sqrt(cov_ii)``), is no mode: L-BFGS stopped
    where the density still climbs (a line search that fails in a narrowing valley). Where
    such a point is higher than every mode, the density grows without bound there (a
    funnel's neck, where the optimizer stops anywhere): refused, since no Gaussian there
    is a base. Measured: real modes 1e-7-1e-5 (radon_pooled, dogs_hierarchical,
    dugongs), eight schools centered's neck 5.7-12.4."""
    d = path.num_dims
    evaluate = _log_density_function(path)
    start = np.asarray(starts, dtype=np.float64).reshape(-1, d)
    points = list(start[:num_starts]) + [start[0] + rng.standard_normal(d)
                                          for _ in range(num_starts - len(start))]
    counts = []

    def objective(points):  # the negative log density and its gradient, batched
        counts.append(len(points))
        values, grads = evaluate(points)
        bad = ~np.isfinite(values) | ~np.all(np.isfinite(grads), axis=1)
        return (np.where(bad, 1e300, -values),
                np.where(bad[:, None], 0.0, -np.nan_to_num(grads)))

    finite = np.isfinite(evaluate(np.asarray(points), gradient=False)[0])
    fits = minimize_together(objective, [p for p, ok in zip(points, finite) if ok])
    optima = [(float(-fit.fun), fit.x) for fit in fits
              if np.isfinite(fit.fun) and fit.fun < 1e300]
    count = sum(counts)
    if not optima:
        raise AnnealingError(
            "the model's log density is not finite at its initial point nor around it, so no "
            "base can be fitted by optimization; give the free variables initial values "
            "(initval=) where the density is finite.")
    optima.sort(key=lambda o: -o[0])
    modes, ridge, steep, num_steep = [], None, None, 0
    for value, x in optima:
        if any(_within_one_sd(x, mean, cov) for _, mean, cov in modes):
            continue
        cov, maximum = _inverse_negative_hessian(evaluate, x)
        steepness = float(np.max(np.abs(evaluate(x[None, :])[1][0]) * np.sqrt(np.diag(cov))))
        if not steepness <= MAX_STEEPNESS:  # still climbing: no mode
            steep, num_steep = steep or (value, steepness), num_steep + 1
        elif maximum:  # a start where the gradient vanishes (a minimum, a saddle) is no mode
            modes.append((value, x, cov))
        else:
            ridge = ridge or (value, x, cov)
    highest = max([m[0] for m in modes[:1]] + [r[0] for r in [ridge] if r], default=-np.inf)
    if steep is not None and steep[0] > highest:
        raise NeckError(
            f"the optimizer's highest point (log density {steep[0]:.1f}) is no maximum: the "
            f"gradient there is still {steep[1]:.3g} in units of the curvature's scale (a "
            f"mode's is about 0): the density grows without bound there (a funnel's neck?), "
            "and no Gaussian at it is a base.")
    if not modes:  # no optimum is a maximum (a ridge): the highest, its spectrum floored
        modes.append(ridge)
    info = {"laplace_log_density": modes[0][0], "laplace_num_evaluations": count,
            "laplace_modes": len(modes), "laplace_steep_points": num_steep}
    if evaluate.differenced:
        info["laplace_gradient"] = (f"central differences (the log density has no gradient: "
                                    f"{evaluate.differenced})")
    return modes, info


def minimize_together(objective, starts: list, maxiter: int = 2000) -> list:
    """SciPy's L-BFGS-B from each of ``starts``, its objective calls evaluated together:
    ``objective(points (m, d)) -> (values (m,), gradients (m, d))`` is called once per round
    with the point that each unfinished optimizer asks for next. Returns each optimizer's
    ``OptimizeResult``, in the order of ``starts``.

    A log density in Python mode costs about the same for 17 points as for one (its cost
    is the dispatch of its operations), so the multi-start census costs what its longest
    optimizer does, not the sum of all (posteriordb's kidscore_momiq: 944 evaluations
    one at a time, 0.6 s). Each optimizer runs in a thread of its own, and only one at a
    time: a round's answers are handed out one by one, each after the optimizer before it
    has asked again or finished, so SciPy never runs in two threads at once and the
    rounds are the same at every call (the result does not depend on thread timing)."""
    asked: dict[int, np.ndarray] = {}
    answers: dict[int, tuple] = {}
    ready = [threading.Event() for _ in starts]  # optimizer i's answer is in
    settled = threading.Event()  # the optimizer let go last has asked again or finished
    results: list = [None] * len(starts)
    failed: list = []

    def run(i: int) -> None:
        def fun(x):
            asked[i] = np.array(x, dtype=np.float64)
            settled.set()
            ready[i].wait()
            ready[i].clear()
            if failed:
                raise _Stopped
            return answers.pop(i)
        try:
            results[i] = minimize(fun, starts[i], jac=True, method="L-BFGS-B",
                                  options={"maxiter": maxiter})
        except _Stopped:
            pass
        except BaseException as error:  # noqa: BLE001 - raised again by the caller's thread
            failed.append(error)
        finally:
            settled.set()

    def let_go(i: int, thread: threading.Thread | None = None) -> None:
        settled.clear()
        if thread is None:
            ready[i].set()
        else:
            thread.start()
        settled.wait()

    threads = [threading.Thread(target=run, args=(i,), daemon=True)
               for i in range(len(starts))]
    try:
        for i, thread in enumerate(threads):
            let_go(i, thread)
        while asked and not failed:
            keys = sorted(asked)
            values, grads = objective(np.stack([asked.pop(k) for k in keys]))
            for j, k in enumerate(keys):
                answers[k] = (float(values[j]), np.asarray(grads[j], dtype=np.float64))
                let_go(k)
    except BaseException as error:
        failed.append(error)
    finally:
        if failed:
            for event in ready:
                event.set()
        for thread in threads:
            if thread.is_alive():
                thread.join()
    if failed:
        raise failed[0]
    return results


class NeckError(AnnealingError):
    """The census's highest point is no maximum: the density grows without bound there (a
    funnel's neck), so no Gaussian there is a base."""


class _Stopped(Exception):
    """Ends an optimizer's thread of :func:`minimize_together` whose round failed."""


def fit_laplace(path: Path, starts: np.ndarray, rng: np.random.Generator,
                num_starts: int = NUM_STARTS) -> tuple[np.ndarray, np.ndarray, dict]:
    """The highest mode of :func:`fit_modes`: ``(mean, cov, info)``."""
    modes, info = fit_modes(path, starts, rng, num_starts)
    return modes[0][1], modes[0][2], info


def _within_one_sd(x: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> bool:
    """Whether ``x`` is within one standard deviation of ``mean`` in ``cov``'s metric."""
    diff = x - mean
    try:
        return float(diff @ np.linalg.solve(cov, diff)) < 1.0
    except np.linalg.LinAlgError:
        return bool(np.max(np.abs(diff)) <= 1e-3 * (1 + np.max(np.abs(mean))))


def laplace_mass(value: float, cov: np.ndarray) -> float:
    """The Laplace approximation of a mode's share of the integral, in logs:
    ``log pi(mode) + log det(2 pi cov) / 2``."""
    sign, log_det = np.linalg.slogdet(2.0 * np.pi * cov)
    return float(value + 0.5 * log_det) if sign > 0 else float(value)


def _inverse_negative_hessian(evaluate, mean: np.ndarray) -> tuple[np.ndarray, bool]:
    """Central differences of the gradient at ``mean`` (one batched evaluation of 2d
    points), symmetrized and inverted, with its spectrum floored (a flat direction gets a
    unit variance rather than none); and whether ``mean`` is a maximum (no direction of
    clearly negative curvature of the negative log density)."""
    d = mean.size
    step = 1e-4 * np.maximum(1.0, np.abs(mean))
    shifts = np.diag(step)
    _, grads = evaluate(np.concatenate([mean + shifts, mean - shifts]))
    hessian = (grads[:d] - grads[d:]) / (2.0 * step[:, None])
    precision = -0.5 * (hessian + hessian.T)
    if not np.all(np.isfinite(precision)):
        return np.eye(d), False
    values, vectors = np.linalg.eigh(precision)
    maximum = bool(values.min() > -1e-6 * max(1.0, values.max()))
    values = np.where(values > 1e-8, values, 1.0)
    return (vectors / values) @ vectors.T, maximum


def side_stream(rng: np.random.Generator, key: int = 2**32 - 41) -> np.random.Generator:
    """A stream independent of every one that ``rng`` spawns (a spawn key, ``key``, that
    no run reaches), made without advancing ``rng`` or spawning from it: what ``rng``
    draws afterwards is what it would have drawn without this stream. With the default
    key, where the Laplace base is not taken the run is the very one of
    ``base="prior"``, bit for bit; :func:`variational_modes` takes its own key, so that
    where it replaces nothing the Laplace base is the one it was before the step."""
    seq = rng.bit_generator.seed_seq
    return np.random.default_rng(np.random.SeedSequence(
        seq.entropy, spawn_key=(*seq.spawn_key, key), pool_size=seq.pool_size))


VARIATIONAL_DRAWS = 100
"""The standard-normal draws, fixed, of :func:`variational_modes`'s mean-field fit (DADVI:
Giordano, Liu, Jordan & Broderick 2023, who find 30 enough); as many fresh ones score it."""

VARIATIONAL_GAIN = 1.0
"""The fewest nats of ELBO (on fresh draws, and more than 3 of their standard errors) by
which the mean-field fit must beat a mode's Laplace Gaussian to replace it."""


def variational_modes(path: Path, modes: list, rng: np.random.Generator) -> tuple[list, int]:
    r"""The census's Gaussians, each replaced by a mean-field Gaussian fitted from it by
    maximizing the ELBO where that one is clearly the better picture of the posterior: a
    mode's Laplace Gaussian is exact for a Gaussian posterior, and far off where the
    mode is not where the mass is. A hierarchical model's joint mode is such a place: on
    posteriordb's 90-d radon model (non-centered), L-BFGS's only mode has
    :math:`\log\sigma_\alpha = 0.68`, where the posterior's mass is at -2.03 (its 85 group
    effects shrink there and gain volume): KL(posterior || Laplace) = 2,649 nats, and the
    Laplace base's path asked for K = 1,714 temperatures; the mean-field fit from that mode
    (0.5-1 s) finds -1.96, KL 10 nats, and K = 138-319 (three seeds).

    The fit is deterministic ADVI (DADVI: Giordano, Liu, Jordan & Broderick 2023):
    :math:`\max_{m,s} \frac1M \sum_j \log\pi(m + e^s \odot \epsilon_j) + \sum_i s_i`
    over :data:`VARIATIONAL_DRAWS` fixed draws :math:`\epsilon_j`, by L-BFGS, started at
    the mode and its Laplace scales. Both Gaussians are then scored by the ELBO on as many
    fresh draws, paired (the same :math:`\epsilon` through each): the fit replaces the
    Laplace Gaussian only where it gains more than :data:`VARIATIONAL_GAIN` nats and 3
    standard errors (a fit flatters itself on its own draws). Its mass for the mixture's
    weights is its ELBO (the mode's ``value`` is set so that :func:`laplace_mass` gives
    it). Whatever is chosen, the base stays normalized and the estimate unbiased.

    Returns the modes and how many were replaced (``laplace_variational``)."""
    evaluate = _log_density_function(path)
    if evaluate.differenced:  # its gradients, by differences, would cost 2d + 1 times more
        return modes, 0
    d = path.num_dims
    fixed, fresh = side_stream(rng, 2**32 - 42).standard_normal((2, VARIATIONAL_DRAWS, d))
    out, replaced = [], 0
    for value, mean, cov in modes:
        chol = _floored_cholesky(cov)
        scale = np.sqrt(np.diag(cov))
        fitted = _mean_field(evaluate, mean, scale, fixed)
        if fitted is None:
            out.append((value, mean, cov))
            continue
        m, sd = fitted
        laplace_elbo = (evaluate(mean + fresh @ chol.T, gradient=False)[0]
                        + np.sum(np.log(np.diag(chol))))
        field_elbo = evaluate(m + fresh * sd, gradient=False)[0] + np.sum(np.log(sd))
        if not np.all(np.isfinite(field_elbo)):
            out.append((value, mean, cov))
            continue
        gain = field_elbo - np.where(np.isfinite(laplace_elbo), laplace_elbo, -np.inf)
        if np.all(np.isfinite(gain)):
            mean_gain, se = float(np.mean(gain)), float(np.std(gain) / np.sqrt(gain.size))
        else:  # the Laplace Gaussian's draws leave the density's support
            mean_gain, se = np.inf, 0.0
        if not (mean_gain > VARIATIONAL_GAIN and mean_gain > 3.0 * se):
            out.append((value, mean, cov))
            continue
        elbo = float(np.mean(field_elbo)) + 0.5 * d * (1.0 + np.log(2.0 * np.pi))
        new_cov = np.diag(sd**2)
        out.append((elbo - 0.5 * np.linalg.slogdet(2.0 * np.pi * new_cov)[1], m, new_cov))
        replaced += 1
    return out, replaced


def _mean_field(evaluate, mean: np.ndarray, scale: np.ndarray, eps: np.ndarray,
                maxiter: int = 500) -> tuple[np.ndarray, np.ndarray] | None:
    """DADVI's mean-field fit (:func:`variational_modes`) started at ``(mean, scale)``:
    ``(m, sd)``, or None where the optimizer found no finite ELBO."""
    d = mean.size

    def objective(params):
        m, log_sd = params[:d], params[d:]
        sd = np.exp(log_sd)
        values, grads = evaluate(m + eps * sd)
        if not (np.all(np.isfinite(values)) and np.all(np.isfinite(grads))):
            return 1e300, np.zeros(2 * d)
        return (-(values.mean() + log_sd.sum()),
                np.concatenate([-grads.mean(0), -((grads * eps).mean(0) * sd + 1.0)]))

    start = np.concatenate([mean, np.log(np.clip(scale, 1e-8, None))])
    if objective(start)[0] >= 1e300:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        fit = minimize(objective, start, jac=True, method="L-BFGS-B",
                       options={"maxiter": maxiter})
    if not (np.isfinite(fit.fun) and fit.fun < 1e300):
        return None
    return fit.x[:d], np.exp(fit.x[d:])


def _squared_distances(x: np.ndarray, means: np.ndarray, chols: np.ndarray) -> np.ndarray:
    """``(n, K)``: each row of ``x``'s squared Mahalanobis distance to each Gaussian
    ``N(means[k], chols[k] chols[k]^T)``."""
    return np.stack([np.sum(solve_triangular(c, (x - m).T, lower=True) ** 2, axis=0)
                     for m, c in zip(means, chols)], axis=1)


def choose_width(path: Path, means: np.ndarray, covs: np.ndarray, weights: np.ndarray,
                 rng: np.random.Generator) -> tuple[float, list[float]]:
    r"""The width of :data:`WIDTHS` for a mixture base's Gaussians, and each width's score.

    Each width ``w`` gives the mixture :math:`q_w = \sum_k w_k \mathcal N(\mu_k, w^2
    \Sigma_k)`, scored by :math:`\mathrm{E}_\pi[\log q_w]` (the inclusive
    :math:`-\mathrm{KL}(\pi \| q_w)` up to a constant: how well :math:`q_w` covers the
    target), estimated by importance sampling: :data:`WIDTH_DRAWS` draws, an equal share
    from each width, weighted by :math:`\pi / \bar q` with :math:`\bar q` the widths'
    average density (the balance heuristic: draws of the narrowest keep their weight in
    many dimensions, where the widest's alone would leave a handful). The highest score
    wins (ties to the wider). Mass-covering on purpose: a base narrower than its target's
    tails costs AIS temperatures at the end of the path, a wider one only at its start. The
    mode-seeking ELBO (Pathfinder's choice among its approximations) picked the narrowest
    base on posteriordb's eight_schools_noncentered (its posterior's tail in log tau is
    exponential, the fit's Gaussian), whose pilot then asked for K = 411 against 149 at the
    widest. For a Gaussian target the score is highest at the fit's own width; the widths
    start there, never narrower. Where no draw has a finite density, the widest."""
    evaluate = _log_density_function(path)
    means = np.asarray(means, dtype=np.float64)
    num, d = means.shape
    weights = np.asarray(weights, dtype=np.float64)
    weights = weights / weights.sum()
    chols = np.array([_floored_cholesky(c) for c in np.asarray(covs, dtype=np.float64)])
    log_det = np.array([np.sum(np.log(np.diag(c))) for c in chols])
    component = rng.choice(num, size=WIDTH_DRAWS, p=weights)
    offsets = component_offsets(chols, component, rng.standard_normal((WIDTH_DRAWS, d)))
    scale = np.repeat(WIDTHS, -(-WIDTH_DRAWS // len(WIDTHS)))[:WIDTH_DRAWS]
    x = means[component] + scale[:, None] * offsets
    squares = _squared_distances(x, means, chols)

    def log_q(width):
        return (logsumexp(np.log(weights) - log_det - 0.5 * squares / width**2, axis=1)
                - d * np.log(width) - 0.5 * d * np.log(2.0 * np.pi))

    log_qs = [log_q(width) for width in WIDTHS]
    log_r = evaluate(x, gradient=False)[0] - (logsumexp(log_qs, axis=0) - np.log(len(WIDTHS)))
    finite = np.isfinite(log_r)
    if not finite.any():
        return WIDTHS[-1], [float("nan")] * len(WIDTHS)
    share = np.exp(log_r[finite] - log_r[finite].max())
    share /= share.sum()
    scores = [float(share @ values[finite]) for values in log_qs]
    best = max(range(len(WIDTHS)), key=lambda i: (scores[i], i))
    return WIDTHS[best], scores


def laplace_base_path(path: Path, starts: np.ndarray, rng: np.random.Generator,
                      num_starts: int = NUM_STARTS, prior_defensive: bool = False,
                      label_candidates=()) -> tuple[Path, dict, list]:
    """The path from the Laplace fit's base (see the module docstring), what to record of
    the fit, and the modes of :func:`fit_modes` (the census): one Gaussian per mode found,
    weighted by its Laplace mass (:func:`laplace_mass`), each ``w`` times wider than
    its fit, ``w`` of :data:`WIDTHS` by :func:`choose_width` (``laplace_width``).
    ``prior_defensive``: the defensive share is the path's own base (the prior, which must
    then be drawable) rather than the wide Gaussian. ``label_candidates``
    (:func:`~pymc_anneal.pymc.symmetry.label_symmetries`): where the model's labels are
    exchangeable, one mode of each orbit is fitted and the base gets a component at each
    of its mirror images too (``label_symmetry`` says what was found)."""
    modes, info = fit_modes(path, starts, rng, num_starts)
    symmetry = find_symmetry(label_candidates, _log_density_function(path), modes, starts,
                             rng) if label_candidates else None
    if symmetry is not None:
        orbits = fold(symmetry, modes, _within_one_sd)
        log_mass = np.array([laplace_mass(value, cov) for value, _, cov in orbits])
        orbits = [o for o, m in zip(orbits, log_mass) if m - log_mass.max() > NEGLIGIBLE_ORBIT]
        size = len(orbits) * math.factorial(symmetry.labels)
        if size <= MAX_COMPONENTS:
            modes = orbits
        else:  # a base on some of the mirror modes would miss the others' mass unseen
            raise AnnealingError(
                f"the model's posterior is invariant under relabelling ({symmetry.describe()})"
                f", and its {len(orbits)} modes up to relabelling would make {size} mirror "
                f"modes, more than the Laplace base holds (MAX_COMPONENTS = "
                f"{MAX_COMPONENTS}); a base on the few that the optimizer found would miss "
                'the others\' mass. Use base="prior" (whose draws are as symmetric as the '
                "posterior), or order one of the labelled variables "
                "(transform=pm.distributions.transforms.ordered) and add log(L!) to the "
                "evidence.")
    modes, info["laplace_variational"] = variational_modes(path, modes, rng)
    if symmetry is not None:
        modes, info["label_symmetry"] = unfold(symmetry, modes, _within_one_sd)
    log_mass = np.array([laplace_mass(value, cov) for value, _, cov in modes])
    keep = log_mass - log_mass.max() > NEGLIGIBLE_LOG_MASS  # else a weight of 0 (underflow)
    modes, log_mass = [m for m, k in zip(modes, keep) if k], log_mass[keep]
    info["laplace_modes"] = len(modes)
    weights = np.exp(log_mass - log_mass.max())
    means, covs = np.array([m for _, m, _ in modes]), np.array([c for _, _, c in modes])
    width, info["laplace_width_scores"] = choose_width(path, means, covs, weights, rng)
    info["laplace_width"] = width
    base = mixture_base_path(path, means, width**2 * covs, weights,
                             defensive_width=None if prior_defensive else DEFENSIVE_WIDTH)
    info["laplace_mode_weights"] = [float(w) for w in weights / weights.sum()]
    return base, info, modes


IMPORTANCE_DF = 5.0
"""Degrees of freedom of the Student-t components of :func:`student_t_base_path`."""


def student_t_base_path(path: Path, modes: list, info: dict,
                        prior_defensive: bool = False) -> Path:
    """The Laplace fit's base (:func:`laplace_base_path`'s ``modes`` and ``info``: its
    components' weights and width) with Student-t components of :data:`IMPORTANCE_DF`
    degrees of freedom in place of its Gaussians, for importance sampling from the base
    alone: a Gaussian under-covers the tails of many posteriors (a regression with an
    unknown scale, whose coefficients' marginals are Student-t-like), whose importance
    weights then have a heavy tail; a t's polynomial tails cover them. The defensive share
    as :func:`laplace_base_path`'s."""
    means = np.array([m for _, m, _ in modes])
    covs = np.array([c for _, _, c in modes]) * float(info["laplace_width"]) ** 2
    return mixture_base_path(path, means, covs, np.asarray(info["laplace_mode_weights"]),
                             defensive_width=None if prior_defensive else DEFENSIVE_WIDTH,
                             df=IMPORTANCE_DF)


def draws_base_path(path: Path, draws: np.ndarray, prior_defensive: bool = False,
                    rng: np.random.Generator | None = None) -> tuple[Path, dict]:
    """The path from a base fitted to posterior draws (``draws``: chains, draws, d, in the
    path's coordinates) and what to record of the fit.

    Chains are grouped by where they went: a chain whose mean is within one standard
    deviation (in the metric of the first chain of a group, as the census's modes are told
    apart) of a group's joins it, else it starts one (chains stuck in different modes of a
    mixture). Each group gets a Gaussian fitted to its draws (mean and Ledoit-Wolf-shrunk
    covariance, :func:`~pymc_anneal.paths.fit_gaussian`), weighted by its share of the
    draws, its width chosen as :func:`laplace_base_path`'s (``base_draws_width``; ``rng``
    draws the candidates), mixed with the defensive share as :func:`laplace_base_path`'s
    (the prior where ``prior_defensive``, else the first Gaussian :data:`DEFENSIVE_WIDTH`
    times wider). The draws make the base only (``base_draws`` counts them,
    ``base_draws_group`` gives each chain's group): the estimate is unbiased whatever they
    are, and draws of another model or other data only cost temperatures."""
    draws = np.asarray(draws, dtype=np.float64)
    groups: list[tuple[np.ndarray, np.ndarray, list[int]]] = []
    for c, chain in enumerate(draws):
        mean, cov = fit_gaussian(chain)
        for first_mean, first_cov, members in groups:
            if _within_one_sd(mean, first_mean, first_cov):
                members.append(c)
                break
        else:
            groups.append((mean, cov, [c]))
    fits = [fit_gaussian(draws[members].reshape(-1, draws.shape[-1]))
            for _, _, members in groups]
    weights = np.array([len(members) for _, _, members in groups], dtype=np.float64)
    means, covs = np.array([m for m, _ in fits]), np.array([c for _, c in fits])
    width, _ = choose_width(path, means, covs, weights,
                            np.random.default_rng(0) if rng is None else rng)
    base = mixture_base_path(path, means, width**2 * covs, weights,
                             defensive_width=None if prior_defensive else DEFENSIVE_WIDTH)
    group_of = [next(g for g, (_, _, members) in enumerate(groups) if c in members)
                for c in range(draws.shape[0])]
    return base, {"base_draws": int(draws.shape[0] * draws.shape[1]),
                  "base_draws_group": group_of, "base_draws_width": width}


def mode_shares(modes, positions: np.ndarray, log_weights: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, float]:
    """Each mode's share of the posterior by its Laplace mass, against its share of
    ``positions`` (rows; weighted by ``exp(log_weights)``, equally without): ``(predicted,
    observed, ess)``, with ``ess`` the weights' effective sample size (distinct rows where
    they are equal: resampled particles repeat). A particle belongs to the mode whose
    Gaussian (its Laplace fit, times its predicted share) is the highest there."""
    log_mass = np.array([laplace_mass(value, cov) for value, _, cov in modes])
    predicted = np.exp(log_mass - log_mass.max())
    predicted /= predicted.sum()
    x = np.asarray(positions, dtype=np.float64).reshape(-1, modes[0][1].size)
    chols = np.array([np.linalg.cholesky(cov) for _, _, cov in modes])
    log_det = np.array([np.log(np.diag(c)).sum() for c in chols])
    scores = (np.log(predicted) - log_det
              - 0.5 * _squared_distances(x, np.array([m for _, m, _ in modes]), chols))
    if log_weights is None:
        w, ess = np.full(x.shape[0], 1.0 / x.shape[0]), float(len(np.unique(x, axis=0)))
    else:
        log_w = np.where(np.isfinite(log_weights), log_weights, -np.inf).ravel()
        w = np.exp(log_w - log_w.max())
        w /= w.sum()
        ess = float(1.0 / np.sum(w * w))
    observed = np.bincount(np.argmax(scores, axis=1), weights=w, minlength=len(modes))
    return predicted, observed, ess


def missed_modes(modes, positions: np.ndarray, log_weights: np.ndarray | None = None,
                 factor: float = 2.0) -> list[tuple[int, float, float]]:
    """The modes of the census that ``positions`` left short: ``(index, predicted share,
    observed share)`` for each whose Laplace mass is at least :data:`MIN_MODE_SHARE` of
    the whole, where the particles hold less than ``1 / factor`` of it (a pilot's
    resampled particles, whose shares scatter more than independent ones', are checked
    with a factor of 10: a mode nearly empty), and too few for chance: more
    than 3 binomial standard errors below it at the weights' effective sample size. (Half:
    a Laplace mass can be that far from a skewed mode's; the estimate then lacks about
    ``log((1 - held) / (1 - share))`` nats.) The sign of tempering's blind spot (Woodard,
    Schmidler & Huber 2009): at small inverse temperature a broad mode holds the tempered
    mass, and few particles or none reach a narrow one that holds most of the
    posterior's."""
    if len(modes) < 2:
        return []
    predicted, observed, ess = mode_shares(modes, positions, log_weights)
    z = (observed - predicted) / np.sqrt(predicted * (1 - predicted) / ess)
    return [(k, float(predicted[k]), float(observed[k])) for k in range(len(modes))
            if predicted[k] >= MIN_MODE_SHARE and observed[k] < predicted[k] / factor
            and z[k] < -3]
