"""``sample_ais``: the evidence of a PyMC model by annealed importance sampling."""

from __future__ import annotations

import copy
import dataclasses
import functools
import time
import weakref
from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from pymc_anneal._digest import fingerprint
from pymc_anneal.backends import compile_one_off, interruptible
from pymc_anneal.diagnostics import check_weights, second_opinion_message
from pymc_anneal.driver import (
    AnnealingRun,
    RunOptions,
    check_run,
    run_annealing,
    run_options_from,
)
from pymc_anneal.driver.cache import choose_loop
from pymc_anneal.driver.checkpoint import open_checkpoint
from pymc_anneal.driver.memory import (
    MEMORY_LIMIT_VARIABLE,
    SPLIT_FRACTION,
    available_memory,
    check_num_steps_budget,
    estimate_memory,
    format_bytes,
)
from pymc_anneal.driver.run import run_pilot
from pymc_anneal.driver.tuning import (
    AUTO_PILOT_STEPS,
    AUTO_VARIANCE,
    Pilot,
    auto_num_steps,
    auto_variance,
)
from pymc_anneal.driver.tuning import bands as tuning_bands
from pymc_anneal.exceptions import AnnealingError, warn
from pymc_anneal.io import to_datatree
from pymc_anneal.kernels.compound import INNER_KERNELS, STATISTIC_PREFIX
from pymc_anneal.kernels.compound import build_kernel as build_compound_kernel
from pymc_anneal.paths import Path, check_gaussian_base, fit_gaussian, gaussian_base_path
from pymc_anneal.pymc.adapter import (
    DISCRETE_ROUTES,
    model_content,
    model_path,
    ordered_prior_mass,
)
from pymc_anneal.pymc.arviz_groups import add_arviz_groups
from pymc_anneal.pymc.bridge import _functions, _posterior, _unconstrained_draws
from pymc_anneal.pymc.laplace import (
    NUM_STARTS,
    draws_base_path,
    laplace_base_path,
    missed_modes,
)
from pymc_anneal.schedules import make_schedule
from pymc_anneal.validation import (
    check_chain_weights,
    check_choice,
    check_count,
    check_idata_kwargs,
    check_model,
    check_num_steps,
    check_random_seed,
)

__all__ = ["AUTO_BASE_STEPS", "AUTO_CENSUS_STEPS", "AUTO_LAPLACE_STEPS", "AUTO_LAPLACE_WORK",
           "AUTO_PILOT_STEPS", "AUTO_VARIANCE", "BASES", "check_run_weights", "nan_log_density",
           "sample_ais"]

BASES = ("auto", "prior", "gaussian", "laplace")
"""The bases ``sample_ais`` anneals from (``"auto"`` chooses one of the others)."""
AUTO_LAPLACE_STEPS = 100
"""With ``base="auto"`` and ``num_steps="auto"``: the Laplace base is fitted (and its pilot
run) only where the prior's pilot asks for more than this many temperatures. Below, the
prior's run costs about what the fit and a second pilot would (1.5-5 s), and the run is
``base="prior"``'s, bit for bit."""
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
AUTO_BASE_STEPS = 1000
"""With ``base="auto"`` and ``num_steps="auto"``: the prior stays the base while its pilot
asks for at most this many temperatures; a path that needs more gets the defensive mixture
of a fitted Gaussian and the prior (``base="gaussian"``) instead. Small models stay on the
prior (measured: K = 20-900 up to d = 10); the 100-d linear model (K = 6,000-9,000 from the
prior, 258 s) moves to the mixture (K = 61-65; see ``benchmarks/bench_highdim.py``), which
is kept only if its own pilot asks for no more temperatures than the prior's."""


@interruptible()  # Ctrl-C stops the call, even when Python would lose it
def sample_ais(
    draws: int = 1000,
    *,
    chains: int = 4,
    num_steps: int | str | None = None,
    schedule="power",
    base: str = "auto",
    kernel="auto",
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    model: pm.Model | None = None,
    num_leapfrog_steps: int | None = None,
    step_size: float | None = None,
    mass_matrix: str = "adapt",
    num_tuning_bands: int = 8,
    num_pilot: int = 256,
    target_acceptance: float | None = None,
    momentum_refresh: float | None = None,
    fit_steps: int = 500,
    fit_draws: int | None = None,
    dlogz: float | None = None,
    discrete: str = "auto",
    idata_kwargs: dict | None = None,
    checkpoint=None,
) -> xr.DataTree:
    r"""Estimate the log marginal likelihood (evidence) of a PyMC model with AIS.

    By default the base is the prior in the unconstrained value space and the path tempers
    the likelihood: :math:`f_\beta(\theta) = p(\theta)\, p(y \mid \theta)^\beta`.
    ``chains`` independent runs of ``draws`` particles each anneal from :math:`\beta = 0` to 1
    through ``num_steps`` temperatures, all in one compiled loop. Call it inside
    ``with pm.Model():`` or pass ``model=``.

    With ``base="auto"`` (the default) and ``num_steps="auto"``, the prior's pilot runs
    first, and on a model without annealed discrete variables a **Laplace base**
    (``base="laplace"``) is fitted too: L-BFGS from the model's initial point, 8 of the
    pilot's particles and 8 prior draws; the distinct modes found (a census: each optimum
    more than one standard deviation from a higher one), a Gaussian at each with 1.5 times
    the inverse negative Hessian's scale, weighted by its Laplace mass, mixed with 10 % of
    the prior (or, where the prior cannot be drawn, of the first Gaussian 4 times wider), so
    the estimate stays unbiased whatever the fit (only where the prior's pilot asks for more
    than :data:`AUTO_LAPLACE_STEPS` temperatures: below, the prior's run costs about what the
    fit would). Where this base's pilot asks for fewer temperatures than the prior's it
    runs: on real models with wide priors and many data,
    20-25 temperatures where the prior needs 700-20,000, and on two modes of unequal width
    that the census found, the right answer where tempering from the prior sees the broad
    mode only. Where another base runs and its particles (the prior's pilot's first, then
    the run's, by their weights) hold less than half the share of a mode that the census
    found, the Laplace base runs instead, or, where it cannot, an ``AnnealingWarning``
    names the mode. A mode that no start reaches is missed by this base as by the prior
    (and by SMC): a model's ``initval`` is one of the starts. The prior's pilot stops early
    where what it has measured already asks for a Laplace base (``prior_pilot`` says where,
    and ``prior_num_steps`` is then its K there). The attributes ``base_reason``,
    ``prior_num_steps``, ``laplace_num_steps``, ``laplace_modes`` and
    ``laplace_mode_weights`` record the choice (``laplace_reason`` why no Laplace base
    could run).

    Where the prior's path is long (``base="auto"``: more than
    :data:`AUTO_BASE_STEPS` temperatures; or ``base="gaussian"``) the base is instead a
    full-covariance Gaussian
    :math:`q` fitted to the posterior, and the path is geometric,
    :math:`f_\beta = q^{1-\beta}\,(p(\theta)\,p(y \mid \theta))^\beta`, run in
    coordinates whitened by :math:`q`. The fit comes from a separate, smaller AIS run from the
    prior (``fit_steps`` temperatures, ``fit_draws`` particles, its particles' mean and
    shrunk covariance), so the estimate stays unbiased whatever the fit's quality. For
    unimodal posteriors this needs about ten times fewer temperatures for the same accuracy
    and keeps working in 100 dimensions, where annealing from the prior falls behind (see
    the user guide). For multimodal posteriors keep the prior base: a Gaussian can miss a
    mode without any diagnostic noticing (the default mixes 10% of the prior into it for
    that reason, but a mode far from the prior's bulk is only found from the prior).

    Discrete free variables with a finite support (Bernoulli, Categorical, DiscreteUniform,
    Binomial or BetaBinomial with a fixed ``n``) are summed out of the path exactly, per
    element for labels independent given the rest and jointly otherwise, and drawn from
    their exact conditional at the end (:mod:`pymc_anneal.pymc.discrete`); the result's
    ``summed_discrete`` attribute names them. A model with only such variables gets its
    evidence as one exact sum (standard error 0). The others (a Poisson count, a support too
    large to enumerate) stay on the path and are annealed: after each HMC transition each of
    them is drawn from its exact tempered conditional when its support has at most 32
    values, and otherwise moved by a Metropolis step of up to its prior standard deviation
    (:mod:`pymc_anneal.kernels.compound`); ``annealed_discrete`` names them. With
    ``base="gaussian"`` the fitted Gaussian covers the continuous variables only, and the
    annealed discrete ones keep their prior (given the rest) as their base. ``discrete``
    chooses the route.

    Parameters
    ----------
    draws : int, default 1000
        Particles per chain (>= 2).
    chains : int, default 4
        Independent runs; their spread is an honest check of the standard error.
    num_steps : int or "auto", default "auto"
        Number of temperatures K (>= 1), or ``"auto"`` (the default when ``schedule`` is a
        name), so that the effort follows the problem: a pilot on ``AUTO_PILOT_STEPS``
        temperatures of ``schedule`` measures the path's thermodynamic length
        :math:`\mathcal L` and how far the kernel lags behind perfect mixing on it (its
        inefficiency :math:`\tau`), and the run takes :math:`K = \lceil \tau
        \mathcal L^2 / \sigma^2 \rceil` temperatures of equal thermodynamic length
        (between 20 and 20,000), with :math:`\sigma^2` = ``AUTO_VARIANCE`` (0.7) the target
        variance of the log weights (:func:`pymc_anneal.driver.tuning.auto_num_steps`). A
        run whose weights miss the target by the factor
        :data:`~pymc_anneal.driver.tuning.AUTO_RERUN_FACTOR` is repeated independently
        with K scaled up, at most twice; only the last run makes the estimate. The miss is
        judged on one extra chain of ``draws`` particles run beside the others and then
        dropped, so the weights that decide are never the weights reported (which would
        bias the estimate low). A run still off target (at 20,000 temperatures, or after
        two repeats) warns. K, :math:`\mathcal L`, :math:`\tau`, the number of repeats and
        the check chain's variance (``auto_check_variance``) are in the result's
        attributes. ``num_steps=1`` is plain importance sampling from the base. Leave it
        ``None`` when ``schedule`` is an array.
    schedule : str or array, default "power"
        One of :data:`pymc_anneal.schedules.SCHEDULES` or an array of inverse temperatures
        strictly increasing from 0 to 1.
    base : {"auto", "prior", "gaussian", "laplace"} or DataTree, default "auto"
        Anneal from the prior (robust), from a Gaussian fitted to the posterior by a short
        AIS run, mixed with 10% of the prior (fast and accurate for unimodal posteriors,
        also in high dimensions), or from the Laplace base described above (fastest where
        the posterior is close to a mixture of Gaussians; continuous variables only).
        ``"auto"`` (with ``num_steps="auto"``; otherwise the prior) takes the Laplace base
        where its pilot asks for fewer temperatures than the prior's (its loop is built
        only where the prior's run would be expensive for the model's data,
        :data:`AUTO_LAPLACE_WORK`, or a mode of its census was left short); else it keeps the
        prior unless the K it asks for exceeds
        :data:`AUTO_BASE_STEPS` (1000), where the fitted mixture takes over (the prior's
        share keeps a mode that the Gaussian misses reachable, and the fitting run gives a
        second opinion), unless the pilot on the mixture's path asks for more temperatures
        than the prior's (a poor fit): then the prior runs. Posterior draws you already
        have (the DataTree of ``pm.sample``, NUTS or any sampler) make the base instead:
        a Gaussian fitted to each group of chains that went to the same region (mean and
        shrunk covariance), weighted by their draws, mixed with 10 % of the prior (of a
        wide Gaussian where the prior cannot be drawn), so the estimate stays unbiased
        whatever the draws (draws that did not mix, or of other data, only cost
        temperatures); ``base`` is then ``"draws"``, ``base_draws`` counts them and
        ``base_draws_group`` gives each chain's group. The result's ``base``
        attribute says which base ran, ``prior_num_steps`` the prior pilot's K and
        ``gaussian_num_steps`` the mixture's.
    kernel : {"auto", "hais", "hmc", "mala", "metropolis"} or callable, default "auto"
        HMC with persistent momentum (Sohl-Dickstein & Culpepper 2012), HMC with a fresh
        momentum each step, Metropolis-adjusted Langevin, random-walk Metropolis, or a
        kernel builder ``path -> Kernel`` of your own (see :mod:`pymc_anneal.kernels`).
        ``"auto"`` is ``"hais"``, or ``"metropolis"`` where the log density has no gradient
        (an op without one, such as an ODE solver or a NumPy function wrapped with
        ``pytensor.compile.ops.as_op``): then the result's ``kernel_fallback`` attribute
        says so, with PyTensor's reason. A gradient kernel asked for by name on such a
        model is refused before anything is compiled.
    random_seed : int, Generator or None
        Seed; the same seed gives the same result on a given backend.
    progressbar : bool, default True
    backend : {"auto", "jax", "numba", "c"}, default "auto"
        The compiler of the annealing loop; ``"auto"`` is JAX when it is installed (it
        compiles a new model's loop in about a second), else Numba (whose first compile of
        a model takes 15-60 s, then runs from its disk cache); see
        :mod:`pymc_anneal.backends`. A ``pytensor.scan`` in the model (a GARCH variance, an
        HMM's forward algorithm) runs as one scan over all particles
        (:mod:`pymc_anneal.pymc.batched_scan`), on every backend. A model that JAX cannot
        trace with static shapes (a ``while`` scan, a gradient with a shape computed inside
        the graph, an op without a JAX implementation) runs on Numba under ``"auto"``,
        found before anything runs: the result's ``backend`` attribute names the backend
        that ran and ``backend_fallback`` why; with ``backend="jax"`` it is refused with
        the cause.
    model : pm.Model, optional
        Defaults to the model on the context stack.
    num_leapfrog_steps : int, optional
        Leapfrog steps per transition of the HMC kernels (default 1).
    step_size : float, optional
        Fix the step size; by default it is tuned per temperature band in a pilot run and
        then frozen (the estimate stays unbiased).
    mass_matrix : {"adapt", "base", "identity"}, default "adapt"
        Diagonal mass matrix from the pilot particles per band, from the prior's scale, or
        the identity.
    num_tuning_bands, num_pilot, target_acceptance, momentum_refresh
        Tuning details; see :class:`pymc_anneal.driver.TuningOptions`. ``momentum_refresh``
        fixes HAIS's refresh fraction (by default ``1 - 2**-step_size``).
    fit_steps : int, default 500
        With ``base="gaussian"``: temperatures of the fitting run from the prior.
    dlogz : float, optional
        With ``num_steps="auto"``: a target standard error of the log evidence, like nested
        samplers' ``dlogz``. The target variance of the log weights becomes
        :math:`\min(0.7, \log(1 + N\,\mathrm{dlogz}^2))` for N particles in all, since
        the standard error is about :math:`\sqrt{(e^{\sigma^2} - 1)/N}` for log-normal
        weights. A target that 20,000 temperatures cannot reach warns.
    fit_draws : int, optional
        With ``base="gaussian"``: particles of the fitting run; default
        ``min(max(num_pilot, 10 * d), 4000)`` for ``d`` parameters.
    discrete : {"auto", "sum", "anneal"}, default "auto"
        Discrete free variables: sum out those that can be summed and anneal the rest
        (``"auto"``), sum all (an error where one cannot be), or anneal all. Summing tempers
        the likelihood of the summed model, :math:`p(y \mid \theta)^\beta`; annealing
        tempers the likelihood given the discrete values, :math:`p(y \mid \theta,
        z)^\beta`. Both start from the normalized prior, so both estimate the same
        evidence; summing has the lower variance.
    idata_kwargs : dict, optional
        As for :func:`pymc.sample`: ``{"log_likelihood": True}`` adds the group
        ``log_likelihood`` (pointwise, at the posterior draws), which :func:`arviz.loo`
        reads and :func:`pymc_anneal.compare` then shows beside the evidence.
    checkpoint : str or os.PathLike, optional
        A file (``.npz`` with a JSON header, no pickle) that holds the whole state of the
        run after every chunk of temperatures (particles, momenta, log weights, RNG
        states, tuned parameters, the schedule). Calling again with the same file and the
        same arguments resumes from the last chunk written, after a crash, a kill or
        Ctrl-C, and returns what the uninterrupted call would have returned, bit for bit.
        A file written by another model, other data or other arguments is refused, and so
        is a damaged one (checksum). With ``random_seed=None`` the seed drawn by the first
        call is stored and reused. The file stays after the run (delete it, or give
        another path, to run afresh; calling again with it returns the stored result).

    Returns
    -------
    xarray.DataTree
        Groups ``posterior`` (resampled, equally weighted), ``particles`` (with
        ``log_weight``), ``sample_stats`` (``log_marginal_likelihood`` per chain, its
        standard error ``log_marginal_likelihood_se`` and weight ``ess``),
        ``annealing_stats`` (per chain and step), and, as :func:`pymc.sample` writes them,
        ``observed_data``, ``constant_data`` and (on request) ``log_likelihood``. Use
        :func:`pymc_anneal.log_evidence` for the estimate pooled over all chains.

    References
    ----------
    Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11.
    Sohl-Dickstein, J. & Culpepper, B. J. (2012). Hamiltonian annealed importance sampling
    for partition function estimation. arXiv:1205.1925.

    Examples
    --------
    >>> import pymc as pm, pymc_anneal as pa
    >>> with pm.Model():
    ...     mu = pm.Normal("mu", 0, 1)
    ...     pm.Normal("y", mu, 1, observed=[0.3, -0.2, 0.5])
    ...     idata = pa.sample_ais(draws=200, chains=2, num_steps=50, progressbar=False,
    ...                           random_seed=1)
    >>> est = pa.log_evidence(idata)
    >>> round(est.log_evidence, 1)
    -3.5
    """
    arguments = dict(locals())
    model = check_model(model)
    base, base_draws = _base_choice(base)
    if base_draws is not None:  # the checkpoint is keyed on the draws themselves
        arguments["base"] = {name: np.asarray(var.values)
                             for name, var in base_draws.data_vars.items()}
    auto_kernel = isinstance(kernel, str) and kernel.lower() == "auto"
    auto_backend = backend is None or (isinstance(backend, str) and backend.lower() == "auto")
    kernel = "hais" if auto_kernel else kernel
    draws = check_count("draws", draws, 2)
    chains = check_count("chains", chains, 1)
    num_steps, dlogz = check_num_steps(num_steps, schedule, dlogz)
    check_num_steps_budget(num_steps, draws=draws, chains=chains)  # before the schedule
    auto = num_steps == "auto"
    betas = make_schedule(schedule, AUTO_PILOT_STEPS if auto else num_steps)
    fit_steps = check_count("fit_steps", fit_steps, 1)
    if fit_draws is not None:
        fit_draws = check_count("fit_draws", fit_draws, 2)
    options = run_options_from(locals())
    discrete = check_choice("discrete", discrete, DISCRETE_ROUTES)
    log_likelihood = check_idata_kwargs(idata_kwargs).get("log_likelihood", False)
    mp = model_path(model, discrete)
    ckpt, random_seed = open_checkpoint(checkpoint, lambda: model_content(model), arguments,
                                        random_seed)
    rng, seed_attr = check_random_seed(random_seed)
    if mp.path is None:
        return add_arviz_groups(_exact_sum(model, mp, draws, chains, rng, options.backend,
                                           seed_attr), model, log_likelihood=log_likelihood)
    annealed = _annealed_discrete(mp)
    if annealed:
        options = _compound_kernel(options, annealed)
    # the fit (base="gaussian") keeps its own schedule; only the estimate is sized
    main_options = options.replace(tuning=dataclasses.replace(
        options.tuning, auto_variance=auto_variance(dlogz, draws * chains))) if auto else options
    path, fit_info, timings = mp.path, {}, {"choose_base": time.perf_counter()}
    if base_draws is not None:  # a base fitted to the user's posterior draws
        route, routed = _draws_base(model, mp, base_draws, rng), "draws"
    else:  # asked for, or the prior cannot be drawn: a base found by optimization
        route, routed = _laplace_route(model, mp, base, rng), "laplace"
    if route is not None:
        path, fit_info = route
    # a kernel or backend that cannot build this model's loop is replaced (if "auto") or
    # refused here, before any run
    main_options, fallbacks = choose_loop(path, main_options, draws=draws, chains=chains,
                                          auto_kernel=auto_kernel, auto_backend=auto_backend)
    options = options.replace(kernel=main_options.kernel, backend=main_options.backend)
    census = laplace = None  # the Laplace fit where the prior's route made one, its modes
    if route is not None:
        base, pilot, choice = routed, None, {}
    else:
        base, pilot, choice, laplace = _choose_base(model, mp, base, auto, main_options,
                                                    betas, draws, chains, rng, auto_backend)
        census = None if laplace is None else laplace.modes
        if base == "laplace":
            path, fit_info, main_options = laplace.path, laplace.info, laplace.options
    timings = {"choose_base": time.perf_counter() - timings["choose_base"]} if choice else {}
    if base == "gaussian":
        t0 = time.perf_counter()
        base, path, pilot, rng, fit_info, fit_log_w = _gaussian_base(
            mp.path, options, main_options, schedule, (fit_steps, fit_draws), betas,
            (draws, chains), rng, ckpt, pilot, choice, laplace)
        timings["fit"] = time.perf_counter() - t0
        if base == "laplace":  # the fewest temperatures: its loop's options
            main_options = laplace.options

    def anneal(path, pilot):
        result = run_annealing(path, betas=betas, draws=draws, chains=chains, rng=rng,
                               options=main_options, checkpoint=ckpt, pilot=pilot)
        check_run_weights(path, result)
        _name_discrete_acceptance(result, mp.value_slices)
        result.positions = path.to_model(result.positions)
        return result

    result = anneal(path, pilot)
    if base == "gaussian":
        _second_opinion(result.log_weights, fit_log_w, fit_steps)
    missed = [] if census is None or base == "laplace" else missed_modes(
        census, result.positions, result.log_weights)
    if missed and laplace.options is None and ckpt is None:  # the census alone: its loop now
        laplace, more = _laplace_pilot(model, mp, main_options, betas, draws, chains,
                                       _side_stream(rng), pilot.positions, auto_backend)
        choice.update(more)
        laplace = laplace or _LaplaceFit(None, {}, census, None, None)
    if missed and laplace.pilot is not None and ckpt is None:  # again, from the census's base
        t0 = time.perf_counter()
        choice["base_reason"] = (
            f"the {base} base's run left short {_modes_text(missed, census)} of the "
            "optimizer's census; run again from the Laplace base, which has a component there")
        base, path, fit_info, main_options = "laplace", laplace.path, laplace.info, laplace.options
        result = anneal(path, laplace.pilot)
        timings["rerun"] = time.perf_counter() - t0
    elif missed:
        _warn_modes_missed(missed, census)
    result.timings.update(timings)
    variables = mp.to_variables(result.positions, rng)
    tree = _to_datatree(model, result, variables, rng, {
        "schedule": schedule if isinstance(schedule, str) else "custom", "base": base,
        "model_fingerprint": fingerprint(model_content(model)),
        **fit_info, **choice, **fallbacks, "random_seed": seed_attr,
        "model": model.name or None,
        "summed_discrete": list(mp.summed) or None, "annealed_discrete": annealed or None,
        "discrete_notes": list(mp.discrete_notes) or None})
    return add_arviz_groups(tree, model, log_likelihood=log_likelihood)


def _base_choice(base) -> tuple[str, xr.Dataset | None]:
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


def _draws_base(model, mp, posterior: xr.Dataset, rng: np.random.Generator):
    """``base=idata``: ``(path, attrs)`` of a base fitted to the posterior draws
    (:func:`~pymc_anneal.pymc.laplace.draws_base_path`), their names and shapes checked
    against the model's (as :func:`pymc_anneal.bridge_sampling` checks them). Its defensive
    share is the prior where the prior can be drawn; where it cannot because of
    ``transform=ordered``, the warning that the prior as written is not normalized."""
    path = mp.path
    if path.discrete_dims:
        raise AnnealingError(
            "a base fitted to posterior draws covers continuous coordinates only, and this "
            f"model anneals the discrete variables {_annealed_discrete(mp)}; use "
            'base="prior" or base="gaussian".')
    draws = _unconstrained_draws(posterior, mp, _functions(mp, model), min_draws=2, needs=(
        "a base fitted to posterior draws needs at least {} draws per chain"))
    drawable = path.base_scale is not None
    base_path, info = draws_base_path(path, draws, prior_defensive=drawable)
    reason = "fitted to the posterior draws given (base=idata)"
    if not drawable:
        info.update(_ordered_note(model, mp, _side_stream(rng))[0])
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


def _laplace_route(model, mp, base: str, rng: np.random.Generator):
    """``base="auto"`` on a model whose prior cannot be drawn: ``(path, attrs)`` from a
    Laplace fit's base (:mod:`pymc_anneal.pymc.laplace`). Where that is because of
    ``transform=ordered``, with an ``AnnealingWarning`` that the prior as written is not
    normalized, and by how much; where draws overflow (a Normal whose scale has an
    ``InverseGamma(0.001, 0.001)`` prior), silently: the prior is normalized. None where the
    prior can be drawn (or another base was asked for: its route then raises the prior's
    named error)."""
    path = mp.path
    if base == "laplace":
        base_path, info, _ = _laplace_base(model, mp, rng)
        if path.base_scale is None:  # its note, from a stream the run never reaches
            info.update(_ordered_note(model, mp, _side_stream(rng))[0])
        return base_path, info
    if base != "auto" or path is None or path.base_scale is not None or path.discrete_dims:
        return None
    fit_rng, mass_rng = rng.spawn(2)
    note, names = _ordered_note(model, mp, copy.deepcopy(mass_rng), what=(
        " (The prior cannot be drawn, so the base is a Laplace fit found by optimization.)"))
    base_path, info, _ = _laplace_base(model, mp, fit_rng)
    if not note:  # draws that overflow where PyMC's transform cannot help: the prior is
        reason = "its draws overflow"  # normalized, only its draws are not to be had
        try:
            path.sample_base(mass_rng, 200)
        except AnnealingError as error:
            reason = str(error).split(": ", 1)[-1].split(". ")[0]
        return base_path, {**info, "base_reason": f"prior cannot be drawn ({reason})"}
    return base_path, {**info, **note,
                       "base_reason": f"prior cannot be drawn ({names}: transform=ordered)"}


def _laplace_base(model, mp, rng: np.random.Generator, positions=None) -> tuple:
    """``(path, attrs, modes)`` from the Laplace fit's base, started at the model's initial point
    and at ``positions`` (a pilot's particles: distinct ones, drawn at random) or, without
    them, where the prior can be drawn, at prior draws. The defensive share is the prior
    where it can be drawn, as ``base="gaussian"``'s is; else a Gaussian
    :data:`~pymc_anneal.pymc.laplace.DEFENSIVE_WIDTH` times wider than the fit."""
    path = mp.path
    if path.discrete_dims:
        raise AnnealingError(
            f'base="laplace" covers continuous coordinates only, and this model anneals the '
            f"discrete variables {_annealed_discrete(mp)}; use base=\"prior\" or "
            'base="gaussian".')
    point = model.initial_point()
    start = np.concatenate([np.ravel(point[name]) for name, _, _ in mp.value_slices])
    starts = np.where(np.isfinite(start), start, 0.0)[None, :]
    drawable = path.base_scale is not None
    if positions is not None:
        distinct = np.unique(np.asarray(positions, dtype=np.float64), axis=0)
        pick = rng.choice(len(distinct), size=min(NUM_STARTS, len(distinct)), replace=False)
        starts = np.concatenate([starts, distinct[pick]])
    if drawable:
        starts = np.concatenate([starts, path.sample_base(rng, NUM_STARTS)])
    return laplace_base_path(path, starts, rng, num_starts=max(len(starts), NUM_STARTS),
                             prior_defensive=drawable)


class _LaplaceFit(NamedTuple):
    """The Laplace base that ``base="auto"`` fitted: its path, attributes and census of
    modes, its pilot (None where it failed or was not run) and the run options its loop
    builds with (None where only the census was fitted: :func:`_census`)."""

    path: Path
    info: dict
    modes: list
    pilot: Pilot | None
    options: RunOptions


def _choose_base(model, mp, base: str, auto: bool, options: RunOptions, betas: np.ndarray,
                 draws: int, chains: int, rng: np.random.Generator, auto_backend: bool):
    """``base="auto"``: the base whose pilot asks for the fewest temperatures. The prior's
    pilot runs first; where it asks for more than :data:`AUTO_LAPLACE_STEPS` temperatures,
    on a model without annealed discrete variables, its particles seed the Laplace fit's
    census of modes (:func:`_laplace_pilot`), and the Laplace base runs where its pilot
    asks for fewer temperatures than the prior's. Otherwise the prior,
    unless its pilot asks for more than :data:`AUTO_BASE_STEPS` temperatures and a Gaussian
    base can be built on the path (``base="gaussian"``, checked by its own pilot).

    Returns the base, the chosen base's pilot (its run then uses it: the same result as
    without it, bit for bit; the Gaussian's fitting run, from the prior too, takes the
    prior's tuned values), the attributes that record the choice, and the
    :class:`_LaplaceFit` where one was made (else None). Where the prior's pilot left a mode of the fit's census empty
    (:func:`~pymc_anneal.pymc.laplace.missed_modes`), the Laplace base runs whatever its
    pilot asks. Where the prior's run is cheap for the model's data
    (:data:`AUTO_LAPLACE_WORK`), the census alone is fitted: the prior runs unless its pilot
    left a mode short (and ``sample_ais`` builds the Laplace base's loop afterwards where
    the run's particles do). Without ``num_steps="auto"`` there is nothing measured to
    choose by: the prior."""
    path = mp.path
    if base != "auto":
        return base, None, {}, None
    if not auto:
        return "prior", None, {}, None
    try:
        check_gaussian_base(path)
    except AnnealingError:  # a Gaussian cannot cover this path: the prior it is
        return "prior", None, {}, None
    size = _data_size(model) + path.num_dims
    def prior_pilot(enough=None):
        return run_pilot(path, betas=betas, draws=draws, chains=chains, rng=rng,
                         options=options, label=f"{path.name} (choosing the base)",
                         enough=enough)

    found = None
    # the prior's pilot stops where the Laplace base's pilot runs whatever the rest measures
    pilot = prior_pilot(None if path.discrete_dims else _laplace_certain(
        options.tuning.auto_variance, size))
    if pilot.stopped_at is not None:
        found, more = _laplace_pilot(model, mp, options, betas, draws, chains,
                                     _side_stream(rng), pilot.positions, auto_backend)
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
        census = _census(model, mp, _side_stream(rng), pilot.positions)
        if census is not None and not missed_modes(census.modes, pilot.positions, factor=10):
            return "prior", pilot, {**choice, "laplace_reason": (
                f"not run: the prior's path is short for its data ({prior_steps} temperatures "
                f"x {work // prior_steps} elements <= AUTO_LAPLACE_WORK)")}, census
    if not path.discrete_dims and prior_steps > AUTO_LAPLACE_STEPS:
        found, more = _laplace_pilot(model, mp, options, betas, draws, chains,
                                     _side_stream(rng), pilot.positions, auto_backend)
        choice.update(more)
        steps = more.get("laplace_num_steps")
        laplace_pilot = None if found is None else found.pilot
        if laplace_pilot is not None:
            missed = missed_modes(found.modes, pilot.positions, factor=10)
            if missed:  # tempering's blind spot: the census's base includes the mode
                return "laplace", laplace_pilot, {**choice, "base_reason": (
                    f"the prior's pilot left short {_modes_text(missed, found.modes)} of "
                    f"the optimizer's census (the Laplace base's pilot asked for {steps} "
                    f"temperatures, the prior's for {prior_steps})")}, found
            if steps < prior_steps:
                if steps <= AUTO_BASE_STEPS:
                    return "laplace", laplace_pilot, {**choice, "base_reason": (
                        f"the Laplace base's pilot asked for {steps} temperatures, the "
                        f"prior's for {prior_steps}")}, found
                # both paths are long: the fitted mixture is tried too
                # (:func:`_gaussian_base` takes the base whose pilot asks for the fewest)
                return "gaussian", pilot, choice, found
    chosen = "gaussian" if prior_steps > AUTO_BASE_STEPS else "prior"
    return chosen, pilot, choice, found


def _laplace_certain(target_variance: float, size: int):
    """``enough`` for the prior's pilot (:func:`~pymc_anneal.driver.run.run_pilot`): True
    once the K that the path measured so far asks for (its thermodynamic length only grows
    with the bands still to run) is one for which :func:`_choose_base` builds the Laplace
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
    if found is None or found.pilot is None or steps > AUTO_BASE_STEPS:
        return None
    partial = prior.schedule(tuning)[0].size - 1
    if steps >= partial:
        return None
    ran, bands = prior.stopped_at, tuning.num_bands
    done = sum(stop <= ran for _, stop in tuning_bands(prior.betas.size - 1, bands))
    return "laplace", found.pilot, {
        "prior_num_steps": partial, **more,
        "prior_pilot": (f"stopped after {done} of its {bands} bands (beta = "
                        f"{prior.betas[ran]:.3g}), where it asked for {partial} temperatures"),
        "base_reason": (f"the Laplace base's pilot asked for {steps} temperatures, the "
                        f"prior's for {partial} by beta = {prior.betas[ran]:.3g} (its pilot "
                        "stopped there: the rest of the path only adds to its length)")}


def _modes_text(missed, modes) -> str:
    """``missed`` (of :func:`~pymc_anneal.pymc.laplace.missed_modes`) in words."""
    return "; ".join(
        f"the mode at {np.array2string(modes[k][1], precision=2, threshold=6)} (about "
        f"{100 * share:.0f} % of the posterior by its Laplace mass, {100 * held:.1f} % of the "
        "particles' weight)" for k, share, held in missed)


def _warn_modes_missed(missed, modes) -> None:
    """Warn that a run's final particles left modes of the optimizer's census short
    (:func:`~pymc_anneal.pymc.laplace.missed_modes`), where it cannot run again from the
    Laplace base: the estimate lacks part of their mass, silently by its weights."""
    share = min(sum(share for _, share, _ in missed), 0.999)
    held = sum(held for _, _, held in missed)
    warn(f"the run's particles left short {_modes_text(missed, modes)}, a mode that the "
         "optimizer found: the estimate lacks part of its mass and is about "
         f"{np.log((1 - held) / (1 - share)):.2f} nats low (tempering's blind spot for modes "
         'of unequal width). Run with base="laplace", which puts a component of the base at '
         "each mode found.")


def _side_stream(rng: np.random.Generator) -> np.random.Generator:
    """A stream independent of every one that ``rng`` spawns for the run (a spawn key no
    run reaches), without advancing ``rng``: where the Laplace base is not taken, the run
    is the very one of ``base="prior"``, bit for bit."""
    seq = rng.bit_generator.seed_seq
    return np.random.default_rng(np.random.SeedSequence(
        seq.entropy, spawn_key=(*seq.spawn_key, 2**32 - 41), pool_size=seq.pool_size))


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
    """The Laplace fit's census of modes (:func:`_laplace_base`) as a :class:`_LaplaceFit`
    without its loop or pilot (``options`` None: :func:`_laplace_pilot` may still run it);
    None where the fit failed."""
    try:
        path, info, modes = _laplace_base(model, mp, rng, positions)
    except AnnealingError:
        return None
    return _LaplaceFit(path, info, modes, None, None)


def _laplace_pilot(model, mp, options, betas, draws, chains, rng, positions,
                   auto_backend: bool):
    """The Laplace fit's base (a component per mode found) and its pilot: ``(fit, attrs)``
    with ``fit`` a :class:`_LaplaceFit` (its pilot None, and the reason in ``attrs``, where
    its base cannot run), or None where the fit failed. With ``auto_backend`` a loop that
    the run's backend cannot build on this path (JAX: Mb's Alloc of a shape computed in
    the graph) is built on Numba or C (:func:`~pymc_anneal.driver.cache.choose_loop`;
    ``laplace_backend_fallback`` says so)."""
    try:
        path, info, modes = _laplace_base(model, mp, rng, positions)
    except AnnealingError as error:
        return None, {"laplace_reason": f"the fit failed: {error}"}
    attrs = {}
    try:
        if auto_backend:
            options, fallback = choose_loop(path, options, draws=draws, chains=chains,
                                            auto_backend=True)
            attrs.update({f"laplace_{k}": v for k, v in fallback.items()})
        pilot = run_pilot(path, betas=betas, draws=draws, chains=chains, rng=rng,
                          options=options, label=f"{mp.path.name} (choosing the base)")
    except AnnealingError as error:
        return _LaplaceFit(path, info, modes, None, options), {
            **attrs, "laplace_reason": f"its pilot failed: {error}"}
    attrs["laplace_num_steps"] = pilot.schedule(options.tuning)[0].size - 1
    return _LaplaceFit(path, info, modes, pilot, options), attrs


def _gaussian_base(path, options, main_options, schedule, fit, betas, size, rng, ckpt,
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
    ``laplace``, the :class:`_LaplaceFit` of a Laplace base whose path is long too, is a
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


def _compound_kernel(options: RunOptions, annealed: list[str]) -> RunOptions:
    """``options`` with its kernel wrapped in the compound kernel that also moves the
    annealed discrete variables ``annealed`` (only an HMC kernel can be wrapped)."""
    check_choice("kernel", options.kernel, INNER_KERNELS, what=(
        f"one of {list(INNER_KERNELS)} (an HMC kernel, composed with a Metropolis step that "
        f"moves the annealed discrete variables {annealed})"))
    return options.replace(kernel=functools.partial(build_compound_kernel, inner=options.kernel))


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


def _second_opinion(log_w: np.ndarray, fit_log_w: np.ndarray, fit_steps: int) -> None:
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


def _name_discrete_acceptance(result: AnnealingRun, value_slices) -> None:
    """The compound kernel's acceptance rates, one per integer coordinate, become one per
    variable (``{name}_acceptance_rate``, the mean over its coordinates), in place."""
    for name, sl, _ in value_slices:
        rates = [result.step_stats.pop(f"{STATISTIC_PREFIX}{j}", None)
                 for j in range(sl.start, sl.stop)]
        if rates and rates[0] is not None:
            result.step_stats[f"{name}_acceptance_rate"] = np.mean(rates, axis=0)


def _to_datatree(model, result: AnnealingRun, variables: dict, rng, attrs: dict):
    """The result as data, with the model's dims and coordinates."""
    var_dims = {name: list(dims) for name, dims in model.named_vars_to_dims.items()
                if name in variables and dims is not None}
    coords = {k: np.asarray(v) for k, v in model.coords.items() if v is not None}
    return to_datatree(result, variables, var_dims=var_dims, coords=coords, rng=rng,
                       attrs=attrs)


_NAN_CHECKS: dict = {}
"""Compiled log densities of :func:`nan_log_density`, by path, dropped with their path."""


def nan_log_density(path, positions, log_weights) -> np.ndarray:
    """Which particles sit where ``path``'s log density is NaN: bool, ``log_weights``' shape.

    The driver reads a NaN log density as zero likelihood (``-inf``), and the kernels never
    move a particle away from a NaN point (every proposal from it has a NaN acceptance ratio
    and is rejected), so a particle whose base draw lands on a NaN keeps zero weight and ends
    where it started. Only particles with zero weight are evaluated, so a run without any
    costs nothing; otherwise one Python-mode evaluation of the log densities (no code
    generation). Paths without ``evaluate`` (Gibbs paths) report none.

    Parameters
    ----------
    path : Path
        The path that was annealed (in its own coordinates, e.g. whitened ones).
    positions : array (chains, draws, num_dims)
        The particles' final positions.
    log_weights : array (chains, draws)

    Returns
    -------
    numpy.ndarray of bool
    """
    log_w = np.asarray(log_weights, dtype=np.float64)
    nan = np.zeros(log_w.shape, dtype=bool)
    dead = ~np.isfinite(log_w)
    if not dead.any() or "evaluate" not in getattr(path, "capabilities", ()):
        return nan
    fn = _NAN_CHECKS.get(id(path))
    if fn is None:  # compiled once per path (a repeated call on a model reuses it)
        x = pt.matrix("x", dtype=path.dtype)
        point = path.evaluate(x, gradients=False)
        fn = _NAN_CHECKS[id(path)] = compile_one_off([x], [point.log_base, point.log_ratio])
        weakref.finalize(path, _NAN_CHECKS.pop, id(path), None)
    log_base, log_ratio = fn(
        np.asarray(positions, dtype=path.dtype).reshape(-1, path.num_dims)[dead.ravel()])
    nan[dead] = np.isnan(log_base) | np.isnan(log_ratio)
    return nan


def check_run_weights(path, result: AnnealingRun, *, subject: str = "the log-likelihood",
                      fix: str | None = None) -> None:
    """A finished forward run's weight checks, in order: a NaN log density at some
    particles (:func:`nan_log_density`; :class:`AnnealingWarning` with their fraction),
    chains whose particles all have zero weight (an error,
    :func:`pymc_anneal.validation.check_chain_weights`), then
    :func:`pymc_anneal.diagnostics.check_weights` (every weight zero: an error; a low ESS, a
    heavy tail, chains that disagree: warnings).

    Parameters
    ----------
    path : Path
    result : AnnealingRun
    subject : str
        What is ``-inf`` or NaN at a zero weight, for the messages.
    fix : str, optional
        What to do about zero weights, for the messages.
    """
    log_w = np.asarray(result.log_weights, dtype=np.float64)
    nan = nan_log_density(path, result.positions, log_w)
    fix = fix or ("Check the observed data against the likelihood's support, and that the "
                  "priors put mass where the data are possible.")
    note = ""
    if nan.any():
        note = (f" {subject} is NaN (not -inf) at {int(nan.sum())} of {nan.size} particles "
                f"({100 * nan.mean():.3g}%), where the base (for a PyMC model, the prior) drew "
                "them: the model is undefined there (e.g. the square root or log of a value "
                "that can be negative), and AIS reads NaN as zero density, so the estimate is "
                "log Z of the model restricted to where it is defined. Make the model defined "
                "wherever the base puts mass (e.g. a positive prior for a value under a square "
                "root); a zero density stated on purpose is -inf, not NaN.")
    if not np.any(np.isfinite(log_w)):
        check_weights(log_w, zero_weight_message=(
            f"every particle has zero weight: {subject} is -inf or NaN at every particle's "
            f"base draw. {fix}{note}"))
    check_chain_weights(log_w, subject=subject, fix=(
        "Increase draws so that every chain has particles where it is finite (a particle "
        f"whose base draw has zero weight keeps it). {fix}{note}"))
    if nan.any():
        warn(note.strip())
    check_weights(log_w)


def _annealed_discrete(mp) -> list[str]:
    dims = set(mp.path.discrete_dims)
    return [name for name, sl, _ in mp.value_slices
            if dims.intersection(range(sl.start, sl.stop))]


def _check_exact_sum_memory(model, draws: int, chains: int) -> None:
    """Refuse, before they are made, exact posterior draws and weights that cannot fit
    (the sum itself is over the supports, whatever the number of draws)."""
    values = sum(int(np.prod(v.shape)) for v in model.initial_point().values())
    need = estimate_memory(num_particles=draws * chains, num_dims=values, state_bytes=0,
                           num_steps=0, num_chains=chains, num_statistics=0, fixed=0)
    available = available_memory()
    if available is not None and need > available:
        fit = max(int(SPLIT_FRACTION * available * draws * chains / need), 2)
        raise AnnealingError(
            f"the exact sum's {chains} x {draws} posterior draws and weights need about "
            f"{format_bytes(need)} of memory, but {format_bytes(available)} is available. "
            "The evidence is summed exactly over the supports, whatever the number of "
            f"draws: ask for fewer, draws * chains <= {fit} (the environment variable "
            f"{MEMORY_LIMIT_VARIABLE} overrides the available memory).")


def _exact_sum(model, mp, draws, chains, rng, backend, seed_attr) -> xr.DataTree:
    """A model whose free variables are all discrete and summable: the evidence is one
    exact sum, every particle carries it as its weight (standard error 0), and the draws
    come from the exact posterior."""
    t0 = time.perf_counter()
    _check_exact_sum_memory(model, draws, chains)
    positions = np.zeros((chains, draws, 0))
    log_z = float(mp.exact_log_evidence)
    if np.isnan(log_z):
        raise AnnealingError("the exact log evidence of the all-discrete model is nan: its "
                             "log density is NaN at some configuration of its discrete "
                             "variables, where the model is undefined (e.g. the log of a "
                             "negative value). Make it defined on every value of the supports.")
    if not np.isfinite(log_z):
        raise AnnealingError(f"the exact log evidence of the all-discrete model is {log_z}: "
                             "the data are impossible under every configuration of its "
                             "discrete variables. Check the data and the supports.")
    result = AnnealingRun(
        positions=positions, log_weights=np.full((chains, draws), log_z),
        betas=np.array([0.0, 1.0]), parameters={},
        step_stats={"acceptance_rate": np.ones((chains, 1)),
                    "divergences": np.zeros((chains, 1), dtype=int),
                    "log_z": np.full((chains, 1), log_z), "ess": np.full((chains, 1), 1.0)},
        log_base_normalizer=0.0, timings={"sampling": time.perf_counter() - t0},
        settings={"kernel": "exact sum", "num_steps": 0, "draws": draws, "chains": chains,
                  "backend": backend})
    return _to_datatree(model, result, mp.to_variables(positions, rng), rng, {
        "schedule": None, "base": "prior", "random_seed": seed_attr,
        "model": model.name or None, "summed_discrete": list(mp.summed)})
