r"""The bases that :func:`~pymc_anneal.pymc.sampling.sample_ais` anneals from, and the choice
among them (issue 41).

Every base is a normalized distribution :math:`q` over the model's unconstrained values, and
the path :math:`q^{1-\beta}\,\pi^\beta` to the model's density :math:`\pi` (the prior times
the likelihood, Jacobians included) keeps the estimate unbiased whatever :math:`q` is
(``docs/design.md``, "The Laplace base" and "The default base in high dimensions"):

* the **prior** (:attr:`pymc_anneal.paths.Path.sample_base`): tempering the likelihood, the
  path of the model itself;
* the **annealed fit** (``base="gaussian"``, :func:`gaussian_base`): a Gaussian fitted to
  the particles of a short AIS run from the prior, mixed with 10 % of the prior;
* the **Laplace base** (``base="laplace"``, :func:`laplace_route`, :func:`laplace_pilot`): a
  Gaussian at each mode that L-BFGS finds (:mod:`pymc_anneal.pymc.laplace`), mixed with a
  defensive share; it needs no prior draws, so it also serves a prior that cannot be drawn
  (``transform=ordered``, draws that overflow);
* **posterior draws** the user has (``base=idata``, :func:`draws_base`).

:func:`choose_base` is ``base="auto"``: the prior's pilot runs first (and stops early where
what it measured already asks for the Laplace base), then the base whose pilot asks for the
fewest temperatures runs. The driver knows none of this: each base is a
:class:`~pymc_anneal.paths.Path`, and the chosen base's pilot is handed to
:func:`~pymc_anneal.driver.run_annealing`.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

import numpy as np
import xarray as xr

from pymc_anneal.diagnostics import check_weights, second_opinion_message
from pymc_anneal.driver import RunOptions, check_run, run_annealing
from pymc_anneal.driver.cache import choose_loop
from pymc_anneal.driver.importance import importance_check, importance_weights
from pymc_anneal.driver.run import run_pilot
from pymc_anneal.driver.tuning import Pilot, ZeroWeightError, auto_num_steps
from pymc_anneal.driver.tuning import bands as tuning_bands
from pymc_anneal.exceptions import AnnealingError, warn
from pymc_anneal.paths import Path, check_gaussian_base, fit_gaussian, gaussian_base_path
from pymc_anneal.pymc.adapter import (
    initial_point,
    model_path,
    ordered_prior_mass,
    undefined_terms,
)
from pymc_anneal.pymc.bridge import _functions, _posterior, _unconstrained_draws
from pymc_anneal.pymc.laplace import (
    IMPORTANCE_DF,
    NUM_STARTS,
    NeckError,
    draws_base_path,
    fit_modes,
    laplace_base_path,
    missed_modes,
    side_stream,
    student_t_base_path,
)
from pymc_anneal.pymc.noncentered import noncentered_variables
from pymc_anneal.pymc.symmetry import label_symmetries
from pymc_anneal.schedules import make_schedule
from pymc_anneal.validation import check_choice

__all__ = ["AUTO_BASE_STEPS", "AUTO_CENSUS_STEPS", "AUTO_IMPORTANCE", "AUTO_IMPORTANCE_FIRST",
           "AUTO_LAPLACE_STEPS",
           "AUTO_LAPLACE_WORK", "BASES", "LaplaceFit", "annealed_discrete", "base_choice",
           "choose_base", "draws_base", "gaussian_base", "importance_base", "laplace_first",
           "laplace_pilot", "laplace_route", "modes_text", "noncentered_route",
           "predicted_prior_steps",
           "second_opinion", "side_stream", "warn_modes_missed"]

BASES = ("auto", "prior", "gaussian", "laplace")
"""The bases ``sample_ais`` anneals from (``"auto"`` chooses one of the others)."""
AUTO_LAPLACE_STEPS = 100
"""With ``base="auto"`` and ``num_steps="auto"``: the Laplace base is fitted (and its pilot
run) only where the prior's pilot asks for more than this many temperatures. Below, the
prior's run costs about what the fit and a second pilot would (1.5-5 s), and the run is
``base="prior"``'s, bit for bit (the fit's importance check alone comes before the prior's
pilot: :data:`AUTO_IMPORTANCE_FIRST`)."""
AUTO_CENSUS_STEPS = 500
"""With ``base="auto"`` and ``num_steps="auto"``: the most temperatures the prior's pilot may
ask for where the census alone is fitted (:data:`AUTO_LAPLACE_WORK`). Above, the prior's
K is not trusted to be cheap: under a ``Gamma(0.001, 0.001)`` precision prior its pilot
asked for about 900 and the runs, repeated, for 15,000 and more."""
AUTO_LAPLACE_WORK = 200_000
"""With ``base="auto"`` and ``num_steps="auto"``, where the prior's pilot asks for more than
:data:`AUTO_LAPLACE_STEPS` (and at most :data:`AUTO_CENSUS_STEPS`) temperatures: the Laplace
base's loop is built and piloted only where the prior's run would cost more than this, in
temperatures times the model's data (:func:`_data_size`, the elements of the arrays its
likelihood reads, plus d). That loop's compile and pilot cost 2-3 s on 2 cores at a first
call, more than a run from the prior on a small data set; a repeated call (the loop
compiled) gains what the shorter path saves. Below, the census of modes is still fitted
(a mode that the prior's particles left short still gets the Laplace base). Measured
(``bench_evidence.py``, 2 cores): nig (K = 171 from the prior x 204 elements), polynomial
(400 x 180) and logistic (105 x 403) took 1.1-1.2x SMC's first call with the Laplace loop,
0.6-0.8x without; linreg10 (900 x 560) keeps it: first call 1.1x SMC's either way, steady
state 0.7 s against the prior's 2.4 s; radon_pooled (800 x 2,800) 7 s against a minute."""
AUTO_IMPORTANCE = True
"""With ``base="auto"`` and ``num_steps="auto"`` (and no checkpoint, ``kernel="auto"``):
where the Laplace fit's base would be piloted, it is first checked for importance sampling
alone (:func:`~pymc_anneal.driver.importance.importance_check`: a batch of its own, the
run's size, with ``log(N / ESS)`` within the run's target, no weight warning, a light
tail and a nearly symmetric estimate); where it passes, the run is importance sampling
from that base (no loop is compiled); where not, the check cost one batch of the log
density. False: the annealed routes only."""
AUTO_IMPORTANCE_FIRST = True
"""With :data:`AUTO_IMPORTANCE`, on a continuous model whose prior's path is not predicted
long (:func:`laplace_first`): the Laplace fit and its importance check come first, before
any loop is built; where the check passes the run is importance sampling from the fit,
and the prior's loop is never compiled nor piloted (on posteriordb's small near-Gaussian
posteriors that build and pilot were most of a first call). Where it fails, the fit is
dropped and the prior's pilot chooses, as with False."""
AUTO_BASE_STEPS = 1000
"""With ``base="auto"`` and ``num_steps="auto"``: the prior stays the base while its pilot
asks for at most this many temperatures; a path that needs more gets the defensive mixture
of a fitted Gaussian and the prior (``base="gaussian"``) instead. Small models stay on the
prior (measured: K = 20-900 up to d = 10); the 100-d linear model (K = 6,000-9,000 from the
prior, 258 s) moves to the mixture (K = 61-65; see ``benchmarks/bench_highdim.py``), which
is kept only if its own pilot asks for no more temperatures than the prior's."""


def base_choice(base) -> tuple[str, xr.Dataset | None]:
    """``sample_ais``'s ``base``: a name of :data:`BASES`, or posterior draws (the result of
    ``pm.sample``), then ``("draws", their posterior group)``."""
    if isinstance(base, str):
        return check_choice("base", base, BASES), None
    if isinstance(base, xr.DataTree):
        return "draws", _posterior(base, who="sample_ais(base=...)")
    raise AnnealingError(
        f"base must be one of {list(BASES)} or posterior draws of the model (the DataTree "
        f"that pm.sample returns), got {type(base).__name__}. Pass base=pm.sample(...) to "
        "fit the base to draws you have.")


def draws_base(model, mp, posterior: xr.Dataset, rng: np.random.Generator):
    """``base=idata``: ``(path, attrs)`` of a base fitted to the posterior draws
    (:func:`~pymc_anneal.pymc.laplace.draws_base_path`), their names and shapes checked
    against the model's (as :func:`pymc_anneal.bridge_sampling` checks them). Its defensive
    share is the prior where the prior can be drawn; where it cannot because of
    ``transform=ordered``, the warning that the prior as written is not normalized."""
    path = mp.path
    if path.discrete_dims:
        raise AnnealingError(
            "a base fitted to posterior draws covers continuous coordinates only, and this "
            f"model anneals the discrete variables {annealed_discrete(mp)}; use "
            'base="prior" or base="gaussian".')
    draws = _unconstrained_draws(posterior, mp, _functions(mp, model), min_draws=2, needs=(
        "a base fitted to posterior draws needs at least {} draws per chain"))
    drawable = path.base_scale is not None
    base_path, info = draws_base_path(path, draws, prior_defensive=drawable,
                                      rng=side_stream(rng).spawn(1)[0])
    reason = "fitted to the posterior draws given (base=idata)"
    if not drawable:
        info.update(_ordered_note(model, mp, side_stream(rng))[0])
    return base_path, {**info, "base_reason": reason}


def _ordered_note(model, mp, rng: np.random.Generator, what: str = "") -> tuple[dict, str]:
    """Where the prior cannot be drawn because of ``transform=ordered``: an
    ``AnnealingWarning`` that the prior as written is not normalized, and by how much (then
    ``what``, the base that runs), the attributes that record it and the variables' names;
    else ``({}, "")``."""
    mass = ordered_prior_mass(model, mp, rng)
    if mass is None:
        return {}, ""
    names = ", ".join(repr(n) for n in mass["ordered"])
    warn(
        f"the prior as written is not normalized: {names} (transform=ordered) has the density "
        "of its unordered prior restricted to the ordered region, whose prior mass is "
        f"exp({mass['log_prior_mass']:.3f} +/- {mass['log_prior_mass_se']:.3f}). The log "
        "evidence reported is that of the model as written (the integral of its density); "
        f"with the prior normalized it is {-mass['log_prior_mass']:.3f} higher. Compare "
        f"models on the same footing.{what}")
    return {"log_prior_mass": mass["log_prior_mass"],
            "log_prior_mass_se": mass["log_prior_mass_se"]}, names


def laplace_route(model, mp, base: str, rng: np.random.Generator):
    """``base="auto"`` on a model whose prior cannot be drawn: ``(path, attrs)`` from a
    Laplace fit's base (:mod:`pymc_anneal.pymc.laplace`). Where that is because of
    ``transform=ordered``, with an ``AnnealingWarning`` that the prior as written is not
    normalized, and by how much; where draws overflow (a Normal whose scale has an
    ``InverseGamma(0.001, 0.001)`` prior), silently: the prior is normalized. None where the
    prior can be drawn (or another base was asked for: its route then raises the prior's
    named error)."""
    path = mp.path
    if base == "laplace":
        base_path, info, modes = _laplace_base(model, mp, rng)
        if path.base_scale is None:  # its note, from a stream the run never reaches
            info.update(_ordered_note(model, mp, side_stream(rng))[0])
        return base_path, info, modes
    if base != "auto" or path is None or path.base_scale is not None or path.discrete_dims:
        return None
    fit_rng, mass_rng = rng.spawn(2)
    note, names = _ordered_note(model, mp, copy.deepcopy(mass_rng), what=(
        " (The prior cannot be drawn, so the base is a Laplace fit found by optimization.)"))
    base_path, info, modes = _laplace_base(model, mp, fit_rng)
    if not note:  # draws that overflow where PyMC's transform cannot help: the prior is
        reason = "its draws overflow"  # normalized, only its draws are not to be had
        try:
            path.sample_base(mass_rng, 200)
        except AnnealingError as error:
            reason = str(error).split(": ", 1)[-1].split(". ")[0]
        return base_path, {**info, "base_reason": f"prior cannot be drawn ({reason})"}, modes
    return base_path, {**info, **note,
                       "base_reason": f"prior cannot be drawn ({names}: transform=ordered)"}, modes


NECK_KEY = 2**32 - 43
"""The spawn key of the stream that :func:`noncentered_route`'s census draws its starts
from (no run, and no other fit, reaches it)."""
FIRST_STARTS_KEY = 2**32 - 47
"""The spawn key of the stream of the prior draws that stand in for the prior pilot's
particles among the starts of :func:`_importance_first`'s fit (no run, and no other fit,
reaches it)."""
FIRST_POOL = 1024
"""The prior draws that :func:`tempered_starts` weighs (one batch of the log density)."""
FIRST_ESS = 0.05
"""The share of :data:`FIRST_POOL` that :func:`tempered_starts`' tempered weights keep."""
FIRST_STARTS = 3 * NUM_STARTS
"""The prior draws (:func:`tempered_starts`) that stand in for the prior pilot's particles
among the starts of :func:`_importance_first`'s fit. Measured on two modes of unequal
width in 3-d (seeds 200-235; ``docs/design.md``): the narrow one sd 0.3 holding 75 %, 4
apart, both found at 36 of 36 seeds (the fit after the prior's pilot: 30; 8 untempered
prior draws here: 25); sd 0.2, 5 apart, 18 of 24 (after the pilot: 8)."""


def noncentered_route(model, mp, discrete: str, rng: np.random.Generator) -> tuple:
    """``(mp, attrs)``: the model's path in non-centred coordinates
    (:mod:`pymc_anneal.pymc.noncentered`) where the model has Normal variables whose scale
    is a free variable, the Laplace fit's census on the model as written runs into a
    funnel's neck (an optimizer stopped where the density still climbs:
    :class:`~pymc_anneal.pymc.laplace.NeckError` where that point is the highest, else
    ``laplace_steep_points``), and the census in non-centred coordinates does not; else
    ``(mp, {})``, the path as written. Where the neck is seen only from some starts, the
    fit that ``base="auto"`` makes later, from other starts, may stop in it (and then
    takes no Laplace base): so any steep point counts, not only the highest. Both
    censuses start at the initial point and prior draws, from a stream of their own: what
    ``rng`` draws afterwards is unchanged, so a model kept as written runs bit for bit as
    before."""
    names = noncentered_variables(model)
    path = mp.path
    if (mp.noncentered or not names or path is None or path.discrete_dims
            or path.base_scale is None):
        return mp, {}
    neck = _neck(model, mp, rng)
    if neck is None:
        return mp, {}
    noncentered = model_path(model, discrete, noncentered=True)
    if _neck(model, noncentered, rng) is not None:
        return mp, {}
    return noncentered, {"noncentered": list(names), "noncentered_reason": (
        f"the Laplace fit on the model as written ran into a funnel's neck ({neck}); in "
        f"non-centred coordinates for {list(names)}, (value - mu) / sigma, it found a mode")}


def _neck(model, mp, rng: np.random.Generator) -> str | None:
    """What the census on ``mp``'s coordinates (:func:`noncentered_route`) found of a
    funnel's neck, or None (a mode and no steep point, or a fit that failed otherwise)."""
    stream = side_stream(rng, NECK_KEY)
    try:
        starts = _starts(model, mp, stream)
        _, info = fit_modes(mp.path, starts, stream, num_starts=max(len(starts), NUM_STARTS))
    except NeckError as error:
        return str(error)
    except AnnealingError:
        return None
    steep = info["laplace_steep_points"]
    return (f"{steep} of its {len(starts)} optimizers stopped where the density still "
            "climbs") if steep else None


def importance_base(mp, modes: list, info: dict) -> tuple[Path, dict]:
    """The Laplace fit's base with Student-t components
    (:func:`~pymc_anneal.pymc.laplace.student_t_base_path`), for importance sampling from
    it alone, and its attributes (``laplace_importance_df``)."""
    path = student_t_base_path(mp.path, modes, info,
                               prior_defensive=mp.path.base_scale is not None)
    return path, {**info, "laplace_importance_df": IMPORTANCE_DF}


def _laplace_base(model, mp, rng: np.random.Generator, positions=None,
                  num_positions: int = NUM_STARTS) -> tuple:
    """``(path, attrs, modes)`` from the Laplace fit's base, started at the model's initial point
    and at ``positions`` (a pilot's particles: distinct ones, drawn at random) or, without
    them, where the prior can be drawn, at prior draws. The defensive share is the prior
    where it can be drawn, as ``base="gaussian"``'s is; else a Gaussian
    :data:`~pymc_anneal.pymc.laplace.DEFENSIVE_WIDTH` times wider than the fit."""
    path = mp.path
    if path.discrete_dims:
        raise AnnealingError(
            f'base="laplace" covers continuous coordinates only, and this model anneals the '
            f"discrete variables {annealed_discrete(mp)}; use base=\"prior\" or "
            'base="gaussian".')
    starts = _starts(model, mp, rng, positions, num_positions)
    return laplace_base_path(path, starts, rng, num_starts=max(len(starts), NUM_STARTS),
                             prior_defensive=path.base_scale is not None,
                             label_candidates=label_symmetries(model, mp))


def _starts(model, mp, rng: np.random.Generator, positions=None,
            num_positions: int = NUM_STARTS) -> np.ndarray:
    """The Laplace fit's starts (:func:`_laplace_base`), in the path's coordinates: the
    initial point, ``num_positions`` of ``positions`` and :data:`NUM_STARTS` prior draws."""
    path = mp.path
    point = initial_point(model)
    names = mp.value_names if mp.noncentered else [name for name, _, _ in mp.value_slices]
    start = np.concatenate([np.ravel(point[name]) for name in names])
    start = mp.coordinates(np.where(np.isfinite(start), start, 0.0)[None, :])
    starts = np.where(np.isfinite(start), start, 0.0)
    drawable = path.base_scale is not None
    if positions is not None:
        distinct = np.unique(np.asarray(positions, dtype=np.float64), axis=0)
        pick = rng.choice(len(distinct), size=min(num_positions, len(distinct)),
                          replace=False)
        starts = np.concatenate([starts, distinct[pick]])
    if drawable:
        starts = np.concatenate([starts, path.sample_base(rng, NUM_STARTS)])
    return starts


class LaplaceFit(NamedTuple):
    """The Laplace base that ``base="auto"`` fitted: its path, attributes and census of
    modes, its pilot (None where it failed or was not run) and the run options its loop
    builds with (None where only the census was fitted: :func:`_census`)."""

    path: Path
    info: dict
    modes: list
    pilot: Pilot | None
    options: RunOptions
    importance: dict | None = None
    """Where importance sampling from the base passed its check
    (:func:`~pymc_anneal.driver.importance.importance_check`): the check's findings; the
    run is then :func:`~pymc_anneal.driver.importance.run_importance`, no loop is built
    and ``pilot`` is None."""


def choose_base(model, mp, base: str, auto: bool, options: RunOptions, betas: np.ndarray,
                 draws: int, chains: int, rng: np.random.Generator, auto_backend: bool,
                 importance: bool = True, gradient_free: bool = False):
    """``base="auto"``: the base whose pilot asks for the fewest temperatures. The prior's
    pilot runs first; where it asks for more than :data:`AUTO_LAPLACE_STEPS` temperatures,
    on a model without annealed discrete variables, its particles seed the Laplace fit's
    census of modes (:func:`laplace_pilot`), and the Laplace base runs where its pilot
    asks for fewer temperatures than the prior's. Otherwise the prior,
    unless its pilot asks for more than :data:`AUTO_BASE_STEPS` temperatures and a Gaussian
    base can be built on the path (``base="gaussian"``, checked by its own pilot).

    Returns the base, the chosen base's pilot (its run then uses it: the same result as
    without it, bit for bit; the Gaussian's fitting run, from the prior too, takes the
    prior's tuned values), the attributes that record the choice, and the
    :class:`LaplaceFit` where one was made (else None). Where the prior's pilot left a mode
    of the fit's census empty
    (:func:`~pymc_anneal.pymc.laplace.missed_modes`), the Laplace base runs whatever its
    pilot asks. Where the prior's run is cheap for the model's data
    (:data:`AUTO_LAPLACE_WORK`), the census alone is fitted: the prior runs unless its pilot
    left a mode short (and ``sample_ais`` builds the Laplace base's loop afterwards where
    the run's particles do). Without ``num_steps="auto"`` there is nothing measured to
    choose by: the prior.

    ``gradient_free``: the log density has no gradient, and the kernel, chosen by the
    package, is Metropolis (``kernel_fallback``). Its path from the prior is then the
    costliest route (a random walk's many steps per temperature, each evaluating what is
    often an ODE solver), so the Laplace fit's (its gradient by central differences)
    comes first (:func:`_gradient_free_first`)."""
    path = mp.path
    if base != "auto":
        return base, None, {}, None
    if not auto:
        return "prior", None, {}, None
    try:
        check_gaussian_base(path)
    except AnnealingError:  # a Gaussian cannot cover this path: the prior it is
        return "prior", None, {}, None
    if gradient_free and not path.discrete_dims:
        first = _gradient_free_first(model, mp, options, betas, draws, chains, rng,
                                     auto_backend, importance)
        if first is not None:
            return first
    size = _data_size(model) + path.num_dims
    def prior_pilot(enough=None):
        return run_pilot(path, betas=betas, draws=draws, chains=chains, rng=rng,
                         options=options, label=f"{path.name} (choosing the base)",
                         enough=enough)

    found = None
    certain = None if path.discrete_dims else _laplace_certain(options.tuning.auto_variance,
                                                                size)
    # the prior's pilot stops where the Laplace base's pilot runs whatever the rest measures
    try:
        pilot = prior_pilot(certain)
    except ZeroWeightError as error:  # the prior's path cannot run: a fit might
        return _after_a_lost_pilot(model, mp, options, betas, draws, chains, rng,
                                   auto_backend, importance, error)
    if pilot.stopped_at is not None:
        found, more = laplace_pilot(model, mp, options, betas, draws, chains,
                                     side_stream(rng), pilot.positions, auto_backend,
                                     importance)
        chosen = _stopped_choice(pilot, found, more, options.tuning)
        if chosen is not None:
            return (*chosen, found)
        # no shorter Laplace path: the whole pilot and a census from its particles, the
        # choice made as if the pilot had never stopped
        pilot, found = prior_pilot(), None
    prior_steps = pilot.schedule(options.tuning)[0].size - 1
    choice = {"prior_num_steps": prior_steps}
    work = prior_steps * size
    if (not path.discrete_dims and work <= AUTO_LAPLACE_WORK
            and AUTO_LAPLACE_STEPS < prior_steps <= min(AUTO_CENSUS_STEPS, AUTO_BASE_STEPS)):
        # a cheap run from the prior: the census alone
        census = _census(model, mp, side_stream(rng), pilot.positions)
        if census is not None and not missed_modes(census.modes, pilot.positions, factor=10):
            return "prior", pilot, {**choice, "laplace_reason": (
                f"not run: the prior's path is short for its data ({prior_steps} temperatures "
                f"x {work // prior_steps} elements <= AUTO_LAPLACE_WORK)")}, census
    if not path.discrete_dims and prior_steps > AUTO_LAPLACE_STEPS:
        found, more = laplace_pilot(model, mp, options, betas, draws, chains,
                                     side_stream(rng), pilot.positions, auto_backend,
                                     importance)
        choice.update(more)
        steps = more.get("laplace_num_steps")
        if found is not None and found.importance is not None:  # a component at each mode
            reason, missed = _importance_reason(found), missed_modes(
                found.modes, pilot.positions, factor=10)
            if missed:
                reason = (f"the prior's pilot left short {modes_text(missed, found.modes)} of "
                          f"the optimizer's census; {reason}")
            return "laplace", None, {**choice, "base_reason": reason}, found
        fitted_pilot = None if found is None else found.pilot
        if fitted_pilot is not None:
            missed = missed_modes(found.modes, pilot.positions, factor=10)
            if missed:  # tempering's blind spot: the census's base includes the mode
                return "laplace", fitted_pilot, {**choice, "base_reason": (
                    f"the prior's pilot left short {modes_text(missed, found.modes)} of "
                    f"the optimizer's census (the Laplace base's pilot asked for {steps} "
                    f"temperatures, the prior's for {prior_steps})")}, found
            if steps < prior_steps:
                if steps <= AUTO_BASE_STEPS:
                    return "laplace", fitted_pilot, {**choice, "base_reason": (
                        f"the Laplace base's pilot asked for {steps} temperatures, the "
                        f"prior's for {prior_steps}")}, found
                # both paths are long: the fitted mixture is tried too
                # (:func:`gaussian_base` takes the base whose pilot asks for the fewest)
                return "gaussian", pilot, choice, found
    chosen = "gaussian" if prior_steps > AUTO_BASE_STEPS else "prior"
    return chosen, pilot, choice, found


def named_zero_weights(model, error: ZeroWeightError) -> ZeroWeightError:
    """``error`` (every particle lost its weight) with the likelihood's terms that are
    ``-inf`` or NaN at most prior draws named (:func:`~pymc_anneal.pymc.adapter.
    undefined_terms`), or as it is where none is."""
    terms = undefined_terms(model)
    if not terms:
        return error
    named = ", ".join(f"'{name}' at {share:.0%}" for name, share in terms)
    return ZeroWeightError(
        f"{error} At 200 prior draws the log-likelihood's terms are -inf or NaN: {named}. "
        "The prior puts most of its mass where the likelihood is undefined (an ODE solver "
        "that fails, a parameter outside a likelihood's support): give those parameters "
        "priors where it is defined, or initial values there (initval=) and "
        'base="laplace".')


def _after_a_lost_pilot(model, mp, options, betas, draws, chains, rng, auto_backend,
                        importance, error: ZeroWeightError) -> tuple:
    """:func:`choose_base`'s choice where the prior's pilot lost every particle (the
    likelihood is undefined where the prior puts its mass): the Laplace base, where its
    fit (from the model's initial point and prior draws) passes the importance check or
    its pilot runs; else ``error`` with the undefined terms named."""
    chosen = _laplace_alone(model, mp, options, betas, draws, chains, rng, auto_backend,
                            importance, {"prior_pilot": f"lost every particle: {error}"})
    if chosen is None:
        raise named_zero_weights(model, error) from error
    return chosen


def _gradient_free_first(model, mp, options, betas, draws, chains, rng, auto_backend,
                         importance) -> tuple | None:
    """:func:`choose_base`'s choice on a log density without a gradient, made before the
    prior's pilot runs: the Laplace base where importance sampling from it passes its
    check, or where its pilot asks for at most :data:`AUTO_BASE_STEPS` temperatures; else
    None (the prior's pilot then runs, and the fit is made again from its particles).
    posteriordb's one_comp_mm_elim_abs (an ODE solved by SciPy, 8-24 ms a point): the
    prior's pilot ran past 10 minutes (its Laplace base's importance check fails too, and
    Metropolis's pilot from the fit runs as long)."""
    return _laplace_alone(model, mp, options, betas, draws, chains, rng, auto_backend,
                          importance, {"prior_pilot": (
                              "not run: the log density has no gradient, so the kernel is "
                              "Metropolis, whose path from the prior is the costliest "
                              "route; the Laplace base's first")}, AUTO_BASE_STEPS)


def _laplace_alone(model, mp, options, betas, draws, chains, rng, auto_backend, importance,
                   attrs: dict, max_steps: int | None = None) -> tuple | None:
    """The Laplace base as :func:`choose_base`'s choice without the prior's pilot
    (``attrs`` say why): where importance sampling from it passes its check, or its pilot
    asks for at most ``max_steps`` temperatures (any, without); else None."""
    found, more = laplace_pilot(model, mp, options, betas, draws, chains, side_stream(rng),
                                None, auto_backend, importance)
    if found is None:
        return None
    if found.importance is not None:
        return "laplace", None, {**more, **attrs,
                                 "base_reason": _importance_reason(found)}, found
    steps = more.get("laplace_num_steps")
    if found.pilot is not None and (max_steps is None or steps <= max_steps):
        return "laplace", found.pilot, {**more, **attrs, "base_reason": (
            f"the Laplace base's pilot asked for {steps} temperatures")}, found
    return None


def predicted_prior_steps(spread: float | None, num_dims: int,
                          target_variance: float) -> tuple[int, float] | None:
    r"""The K that the prior's path is predicted to need from the spread of the
    log-likelihood at prior draws (``ModelPath.prior_log_lik_spread``, a standard deviation
    from the interquartile range), as ``(K, length)`` with ``length`` the predicted
    thermodynamic length; None without a spread.

    A Gaussian likelihood that shrinks each of d prior scales by the same factor r (a
    posterior scale :math:`s_0/r`) has :math:`\mathrm{sd}_0(\ell) = \sqrt{d/2}\, r^2`
    at the prior's draws and a thermodynamic length of :math:`\sqrt{d/2} \log r^2`
    (:math:`\mathrm{Var}_\beta(\ell) = (d/2)/(r^{-2} + \beta)^2`), so the length is
    :math:`\sqrt{d/2}\,\log(\mathrm{sd}_0 / \sqrt{d/2})`. Real paths are longer (the
    kernel's inefficiency, a posterior's mean far out in the prior's tail), so the K of
    :func:`~pymc_anneal.driver.tuning.auto_num_steps` at an inefficiency of 1 is about a
    lower bound: on ``bench_evidence``'s seven models and the 17 small posteriors of
    posteriordb (d 1-15) whose prior pilot ran whole, it asked for 1-40 times the
    prediction, never less (``docs/design.md``, "The Laplace base").
    Only a decision rests on it (which base is piloted first), never the estimate."""
    if spread is None or not np.isfinite(spread):
        return None
    half = max(num_dims, 1) / 2.0
    length = float(np.sqrt(half) * np.log(max(spread / np.sqrt(half), 1.0)))
    return auto_num_steps(length, target_variance), length


def laplace_first(model, mp, base: str, auto: bool, options: RunOptions, betas: np.ndarray,
                  draws: int, chains: int, rng: np.random.Generator, auto_backend: bool,
                  importance: bool = True):
    """``base="auto"`` where the prior's path is predicted long (:func:`predicted_prior_steps`
    from the build's prior draws, where the prediction alone would stop the prior's pilot:
    :func:`_laplace_certain`): the Laplace base's loop and pilot, before the prior's loop is
    built. Returns :func:`choose_base`'s ``(base, pilot, attrs, fit)`` where that pilot asks
    for fewer temperatures than predicted (and at most :data:`AUTO_BASE_STEPS`); else None,
    and :func:`choose_base` chooses as without the prediction. Where the path is not
    predicted long, the fit's importance check alone (:func:`_importance_first`)."""
    path = mp.path
    if base != "auto" or not auto or path.discrete_dims:
        return None
    try:
        check_gaussian_base(path)
    except AnnealingError:
        return None
    tuning = options.tuning
    predicted = predicted_prior_steps(mp.prior_log_lik_spread, path.num_dims,
                                      tuning.auto_variance)
    size = _data_size(model) + path.num_dims
    # a perfect kernel's inefficiency, 1: the prediction is about a lower bound
    if predicted is None or not _laplace_certain(tuning.auto_variance, size)(predicted[1], 1.0):
        return _importance_first(model, mp, options, betas, draws, chains, rng, auto_backend,
                                 importance)
    found, more = laplace_pilot(model, mp, options, betas, draws, chains, side_stream(rng),
                                None, auto_backend, importance)
    steps = more.get("laplace_num_steps")
    if found is not None and found.importance is not None:
        return "laplace", None, {
            **more, "prior_num_steps_predicted": predicted[0],
            "prior_pilot": (f"not run: the log-likelihood's spread at 200 prior draws "
                            f"({mp.prior_log_lik_spread:.3g}) predicts {predicted[0]} "
                            "temperatures or more from the prior"),
            "base_reason": _importance_reason(found)}, found
    if (found is None or found.pilot is None or steps > AUTO_BASE_STEPS
            or steps >= predicted[0]):
        return None
    return "laplace", found.pilot, {
        **more, "prior_num_steps_predicted": predicted[0],
        "prior_pilot": (f"not run: the log-likelihood's spread at 200 prior draws "
                        f"({mp.prior_log_lik_spread:.3g}) predicts {predicted[0]} temperatures "
                        "or more from the prior"),
        "base_reason": (f"the Laplace base's pilot asked for {steps} temperatures, the "
                        f"prior's path is predicted to need {predicted[0]} or more")}, found


def _importance_first(model, mp, options, betas, draws, chains, rng, auto_backend,
                      importance: bool):
    """:func:`laplace_first`'s choice where the prior's path is not predicted long: the
    Laplace fit (from the initial point and :data:`FIRST_STARTS` + :data:`NUM_STARTS`
    prior draws: the prior's pilot's particles, which widen the census after it, are not
    there) and its importance check alone,
    before any loop is built (:data:`AUTO_IMPORTANCE_FIRST`). Importance sampling from the
    fit where the check passes, else None (the fit is dropped and the prior's pilot
    chooses, as without this step: the census is fitted again from its particles)."""
    if not (importance and AUTO_IMPORTANCE and AUTO_IMPORTANCE_FIRST):
        return None
    # tempered prior draws stand in for the prior pilot's particles
    stand_ins = tempered_starts(mp.path, side_stream(rng, FIRST_STARTS_KEY), FIRST_STARTS)
    found, more = laplace_pilot(model, mp, options, betas, draws, chains, side_stream(rng),
                                stand_ins, auto_backend, importance, loop=False,
                                num_positions=FIRST_STARTS)
    if found is None or found.importance is None:
        return None
    return "laplace", None, {
        **more, "prior_pilot": ("not run: importance sampling from the Laplace base, fitted "
                                "before any loop was built, passed its check"),
        "base_reason": _importance_reason(found)}, found


def tempered_starts(path, rng: np.random.Generator, count: int,
                    pool: int = FIRST_POOL, ess: float = FIRST_ESS) -> np.ndarray:
    """``count`` distinct starts for the optimizer, drawn as a pilot's particles are: ``pool``
    prior draws, weighted by their likelihood to the power beta (the largest beta in
    [0, 1] at which the weights' ESS is ``ess`` of the pool, by bisection), ``count`` of
    them picked by those weights without replacement. Where the likelihood is steep they
    sit where it is high, a narrow mode's basin included (a blind draw from the prior
    rarely lands there); where it is flat they are prior draws. Only the starts depend on
    it, never the estimate."""
    draws = path.sample_base(rng, pool)
    ell = importance_weights(path, draws)
    finite = np.isfinite(ell)
    if finite.sum() <= count:  # every draw where the likelihood is finite, then others
        return draws[np.argsort(~finite, kind="stable")[:count]]
    ell = np.where(finite, ell - ell[finite].max(), 0.0)

    def weights(beta):  # zero where the likelihood is not finite, at beta = 0 too
        w = np.where(finite, np.exp(beta * ell), 0.0)
        return w / w.sum()

    def share(beta):  # the weights' ESS over the pool
        w = weights(beta)
        return 1.0 / np.sum(w * w) / pool

    beta = 1.0
    if share(1.0) < ess:
        low, high = 0.0, 1.0
        for _ in range(40):
            middle = 0.5 * (low + high)
            low, high = (middle, high) if share(middle) >= ess else (low, middle)
        beta = low
    w = weights(beta)
    pick = rng.choice(pool, size=min(count, int(np.count_nonzero(w))), replace=False, p=w)
    return draws[pick]


def _laplace_certain(target_variance: float, size: int):
    """``enough`` for the prior's pilot (:func:`~pymc_anneal.driver.run.run_pilot`): True
    once the K that the path measured so far asks for (its thermodynamic length only grows
    with the bands still to run) is one for which :func:`choose_base` builds the Laplace
    base's loop and pilot whatever the rest measures: more than
    ``min(AUTO_CENSUS_STEPS, AUTO_BASE_STEPS)``, or more than :data:`AUTO_LAPLACE_STEPS`
    at a work above :data:`AUTO_LAPLACE_WORK` for ``size`` elements per log density."""
    def enough(length: float, inefficiency: float) -> bool:
        steps = auto_num_steps(length, target_variance, inefficiency)
        return steps > min(AUTO_CENSUS_STEPS, AUTO_BASE_STEPS) or (
            steps > AUTO_LAPLACE_STEPS and steps * size > AUTO_LAPLACE_WORK)
    return enough


def _stopped_choice(prior: Pilot, found, more: dict, tuning) -> tuple | None:
    """Where the prior's pilot stopped early (:func:`_laplace_certain`): ``(base, pilot,
    attrs)`` of the Laplace base where its pilot asks for fewer temperatures than the
    prior's part did (and at most :data:`AUTO_BASE_STEPS`), else None (the prior's whole
    pilot then decides, as without the stop)."""
    steps = more.get("laplace_num_steps")
    partial = prior.schedule(tuning)[0].size - 1
    ran, bands = prior.stopped_at, tuning.num_bands
    done = sum(stop <= ran for _, stop in tuning_bands(prior.betas.size - 1, bands))
    stopped = (f"stopped after {done} of its {bands} bands (beta = {prior.betas[ran]:.3g}), "
               f"where it asked for {partial} temperatures")
    if found is not None and found.importance is not None:
        return "laplace", None, {"prior_num_steps": partial, **more, "prior_pilot": stopped,
                                 "base_reason": _importance_reason(found)}
    if found is None or found.pilot is None or steps > AUTO_BASE_STEPS:
        return None
    if steps >= partial:
        return None
    return "laplace", found.pilot, {
        "prior_num_steps": partial, **more, "prior_pilot": stopped,
        "base_reason": (f"the Laplace base's pilot asked for {steps} temperatures, the "
                        f"prior's for {partial} by beta = {prior.betas[ran]:.3g} (its pilot "
                        "stopped there: the rest of the path only adds to its length)")}


def _importance_reason(found: LaplaceFit) -> str:
    """``base_reason`` where importance sampling from the Laplace base passed its check."""
    return ("importance sampling from the Laplace base, no annealing: "
            f"{found.importance['reason']}")


def modes_text(missed, modes) -> str:
    """``missed`` (of :func:`~pymc_anneal.pymc.laplace.missed_modes`) in words."""
    return "; ".join(
        f"the mode at {np.array2string(modes[k][1], precision=2, threshold=6)} (about "
        f"{100 * share:.0f} % of the posterior by its Laplace mass, {100 * held:.1f} % of the "
        "particles' weight)" for k, share, held in missed)


def warn_modes_missed(missed, modes) -> None:
    """Warn that a run's final particles left modes of the optimizer's census short
    (:func:`~pymc_anneal.pymc.laplace.missed_modes`), where it cannot run again from the
    Laplace base: the estimate lacks part of their mass, silently by its weights."""
    share = min(sum(share for _, share, _ in missed), 0.999)
    held = sum(held for _, _, held in missed)
    warn(f"the run's particles left short {modes_text(missed, modes)}, a mode that the "
         "optimizer found: the estimate lacks part of its mass and is about "
         f"{np.log((1 - held) / (1 - share)):.2f} nats low (tempering's blind spot for modes "
         'of unequal width). Run with base="laplace", which puts a component of the base at '
         "each mode found.")


def _data_size(model) -> int:
    """The elements of the arrays (constants and ``pm.Data``) that the model's likelihood
    reads, its observations included: a measure of the cost of one log density, for
    :data:`AUTO_LAPLACE_WORK`."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import graph_inputs

    graphs = [*model.observed_RVs, *model.potentials,
              *(model.rvs_to_values[v] for v in model.observed_RVs)]
    size = 0
    for var in set(graph_inputs(graphs)):
        if isinstance(var, Constant):
            size += int(np.size(var.data))
        elif isinstance(var, SharedVariable) and not isinstance(
                var.get_value(borrow=True), np.random.Generator):
            size += int(np.size(var.get_value(borrow=True)))
    return size


def _census(model, mp, rng, positions):
    """The Laplace fit's census of modes (:func:`_laplace_base`) as a :class:`LaplaceFit`
    without its loop or pilot (``options`` None: :func:`laplace_pilot` may still run it);
    None where the fit failed."""
    try:
        path, info, modes = _laplace_base(model, mp, rng, positions)
    except AnnealingError:
        return None
    return LaplaceFit(path, info, modes, None, None)


def laplace_pilot(model, mp, options, betas, draws, chains, rng, positions,
                   auto_backend: bool, importance: bool = True, loop: bool = True,
                   num_positions: int = NUM_STARTS):
    """The Laplace fit's base (a component per mode found) and its pilot: ``(fit, attrs)``
    with ``fit`` a :class:`LaplaceFit` (its pilot None, and the reason in ``attrs``, where
    its base cannot run), or None where the fit failed. With ``auto_backend`` a loop that
    the run's backend cannot build on this path (JAX: Mb's Alloc of a shape computed in
    the graph) is built on Numba or C (:func:`~pymc_anneal.driver.cache.choose_loop`;
    ``laplace_backend_fallback`` says so)."""
    try:
        path, info, modes = _laplace_base(model, mp, rng, positions, num_positions)
    except AnnealingError as error:
        return None, {"laplace_reason": f"the fit failed: {error}"}
    attrs, check = {}, {"passed": False}
    if importance and AUTO_IMPORTANCE:  # the same fit, with Student-t components
        t_path, t_info = importance_base(mp, modes, info)
        check = importance_check(t_path, draws=draws, chains=chains, rng=side_stream(rng),
                                 target_variance=options.tuning.auto_variance)
        attrs["laplace_importance_check"] = check["reason"]
    if check["passed"]:  # no loop to build: the base alone meets the target
        attrs["laplace_num_steps"] = 1
        return LaplaceFit(t_path, t_info, modes, None, options, check), attrs
    if not loop:  # the importance check alone was asked for
        return LaplaceFit(path, info, modes, None, None), attrs
    try:
        if auto_backend:
            options, fallback = choose_loop(path, options, draws=draws, chains=chains,
                                            auto_backend=True)
            attrs.update({f"laplace_{k}": v for k, v in fallback.items()})
        pilot = run_pilot(path, betas=betas, draws=draws, chains=chains, rng=rng,
                          options=options, label=f"{mp.path.name} (choosing the base)")
    except AnnealingError as error:
        return LaplaceFit(path, info, modes, None, options), {
            **attrs, "laplace_reason": f"its pilot failed: {error}"}
    attrs["laplace_num_steps"] = pilot.schedule(options.tuning)[0].size - 1
    return LaplaceFit(path, info, modes, pilot, options), attrs


def gaussian_base(path, options, main_options, schedule, fit, betas, size, rng, ckpt,
                   prior_pilot, choice: dict, laplace=None):
    """The run's inputs with the fitted mixture's base: ``(base, path, pilot, rng,
    fit_info, fit_log_w)``.

    Chosen by ``base="auto"`` (``choice`` holds the prior pilot's K), the mixture is kept
    only if the pilot of its own path asks for no more temperatures than the prior's: a
    fit that went wrong (its short run's particles are a poor picture of a 100-d posterior
    at some seeds: K = 5,228 against the prior's 3,521 on the 100-d linear model, seed 1000)
    would otherwise cost more than the prior. Then the prior runs as ``base="prior"`` would
    (its pilot and the generator as they were: the same result, bit for bit). The pilot of
    the mixture's path is the one its run would run first (``pilot=``: the same result).
    ``laplace``, the :class:`LaplaceFit` of a Laplace base whose path is long too, is a
    third candidate: the base whose pilot asks for the fewest temperatures runs (ties to
    the mixture), and ``base_reason`` lists the three."""
    draws, chains = size
    check_run(path, main_options, draws=draws, chains=chains,  # before the fit
              num_steps=betas.size - 1)
    prior_rng = copy.deepcopy(rng)
    fit_rng, rng = rng.spawn(2)
    mixture, fit_info, fit_log_w = _fit_gaussian_base(path, options, schedule, *fit, fit_rng,
                                                      ckpt, prior_pilot)
    if not choice:  # asked for: the mixture (the prior's pilot was tuned for the fit only)
        return "gaussian", mixture, None, rng, fit_info, fit_log_w
    pilot = run_pilot(mixture, betas=betas, draws=draws, chains=chains, rng=rng,
                      options=main_options, label=f"{path.name} (checking the base)")
    choice["gaussian_num_steps"] = pilot.schedule(main_options.tuning)[0].size - 1
    steps = {"gaussian": choice["gaussian_num_steps"], "prior": choice["prior_num_steps"]}
    if laplace is not None and laplace.pilot is not None:
        steps["laplace"] = choice["laplace_num_steps"]
    best = min(steps, key=lambda name: (steps[name], name != "gaussian"))
    choice["base_reason"] = ", ".join(f"{k}: {v}" for k, v in steps.items())
    choice["base_reason"] = f"the fewest temperatures ({choice['base_reason']})"
    if best == "gaussian":
        return "gaussian", mixture, pilot, rng, fit_info, fit_log_w
    if best == "laplace":
        return "laplace", laplace.path, laplace.pilot, prior_rng, laplace.info, None
    return "prior", path, prior_pilot, prior_rng, {}, None


def _fit_gaussian_base(path, options: RunOptions, schedule, fit_steps: int,
                      fit_draws: int | None, rng: np.random.Generator,
                      checkpoint=None, pilot: Pilot | None = None) -> tuple[Path, dict]:
    """``base="gaussian"``: the path from a Gaussian fitted to a short AIS run's particles.

    The fitting run anneals ``path`` from its prior base through ``fit_steps`` temperatures
    of ``schedule`` (``"power"`` for an array or ``"adaptive"``) with ``fit_draws`` particles
    (default ``min(max(num_pilot, 10 * d), 4000)``), equally weighted: a short run's
    particles are each close to the posterior (lagging a little, i.e. slightly too wide,
    which suits a base), while their weights are often degenerate in high dimensions (so a
    low ESS here is no warning). ``pilot``, a pilot from the prior on the same kind of
    schedule (``base="auto"``'s), gives the fitting run its tuned values (at the step of
    its grid that each temperature falls in) instead of a pilot of its own. The Gaussian
    covers the continuous coordinates; annealed discrete ones keep their prior given the
    rest as their base (:func:`pymc_anneal.paths.gaussian_base_path`).

    Returns
    -------
    path : Path
        In the Gaussian's whitened coordinates (:meth:`~pymc_anneal.paths.Path.to_model`
        maps them back).
    info : dict
        ``fit_steps``, ``fit_draws`` and ``fit_ess``, for the result's attributes.
    log_weights : ndarray (1, fit_draws)
        The fitting run's AIS weights: an estimate of the same evidence from the prior.
    """
    check_gaussian_base(path)  # before the fitting run, not after it
    d = path.num_dims
    fit_draws = fit_draws or min(max(options.tuning.num_pilot, 10 * d), 4000)
    fit_schedule = schedule if isinstance(schedule, str) and schedule != "adaptive" else "power"
    fit_betas = make_schedule(fit_schedule, fit_steps)
    if pilot is not None:
        index = np.searchsorted(pilot.betas[1:], fit_betas[1:], side="left")
        index = index.clip(0, pilot.betas.size - 2)
        pilot = Pilot(fit_betas, {k: v[index] for k, v in pilot.values.items()},
                      np.full(fit_steps, np.nan), pilot.inefficiency)
    fit = run_annealing(path, betas=fit_betas, draws=fit_draws, chains=1, rng=rng,
                        options=options, label=f"{path.name} (fitting the base)",
                        checkpoint=checkpoint, pilot=pilot)
    alive = np.isfinite(fit.log_weights[0])
    if not alive.any():
        check_weights(fit.log_weights)  # the clear error for all-zero weights
    continuous = np.setdiff1d(np.arange(d), path.discrete_dims)
    mean, cov = fit_gaussian(fit.positions[0][alive][:, continuous])
    return gaussian_base_path(path, mean, cov), {
        "fit_steps": fit_steps, "fit_draws": fit_draws,
        "fit_ess": float(np.sum(fit.settings["ess"]))}, fit.log_weights


def second_opinion(log_w: np.ndarray, fit_log_w: np.ndarray, fit_steps: int) -> None:
    """``base="gaussian"``: warn when the estimate is far below the fitting run's, an
    independent estimate of the same evidence from the prior
    (:func:`pymc_anneal.diagnostics.second_opinion_message`): the Gaussian base missed part of
    the posterior that the prior reached (a funnel's neck: the calibration suite found one
    0.10 nat low at a standard error of 0.017, with healthy-looking weights)."""
    message = second_opinion_message(
        log_w, fit_log_w, what="the run from the Gaussian base",
        reference=f"the run from the prior that fitted it ({fit_steps} temperatures)",
        fix='Use base="prior" for this model, or raise num_steps.')
    if message:
        warn(message)


def annealed_discrete(mp) -> list[str]:
    dims = set(mp.path.discrete_dims)
    return [name for name, sl, _ in mp.value_slices
            if dims.intersection(range(sl.start, sl.stop))]
