"""``sample_ais``: the evidence of a PyMC model by annealed importance sampling."""

from __future__ import annotations

import dataclasses
import functools
import time

import numpy as np
import pymc as pm
import xarray as xr

from pymc_anneal._digest import fingerprint
from pymc_anneal.backends import add_waiting_jobs, interruptible, waiting_jobs
from pymc_anneal.diagnostics import check_weights
from pymc_anneal.driver import (
    AnnealingRun,
    RunOptions,
    check_run,
    run_annealing,
    run_options_from,
)
from pymc_anneal.driver.cache import choose_loop
from pymc_anneal.driver.checkpoint import open_checkpoint
from pymc_anneal.driver.importance import importance_check, log_densities, run_importance
from pymc_anneal.driver.memory import (
    MEMORY_LIMIT_VARIABLE,
    SPLIT_FRACTION,
    available_memory,
    check_num_steps_budget,
    estimate_memory,
    format_bytes,
)
from pymc_anneal.driver.tuning import (
    AUTO_PILOT_STEPS,
    AUTO_VARIANCE,
    ZeroWeightError,
    auto_variance,
)
from pymc_anneal.estimators import load_pareto_fit
from pymc_anneal.exceptions import AnnealingError, warn
from pymc_anneal.io import load_array_backends, to_datatree
from pymc_anneal.kernels.compound import INNER_KERNELS, STATISTIC_PREFIX
from pymc_anneal.kernels.compound import build_kernel as build_compound_kernel
from pymc_anneal.pymc import bases
from pymc_anneal.pymc.adapter import DISCRETE_ROUTES, initial_point, model_content, model_path
from pymc_anneal.pymc.arviz_groups import add_arviz_groups
from pymc_anneal.pymc.laplace import missed_modes
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

__all__ = ["AUTO_PILOT_STEPS", "AUTO_VARIANCE", "check_run_weights", "nan_log_density",
           "sample_ais"]

@interruptible()  # Ctrl-C stops the call, even when Python would lose it
@waiting_jobs  # while it waits for a loop's compile: the imports and compile it needs later
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
    num_pilot: int = 250,
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
    more than one standard deviation from a higher one), a Gaussian at each with the
    inverse negative Hessian's covariance widened by the factor of 1.0, 1.15, 1.3 or 1.5
    whose mixture best covers the posterior (``laplace_width``), weighted by its Laplace
    mass, mixed with 10 % of the prior (or, where the prior cannot be drawn, of the first
    Gaussian 4 times wider), so the estimate stays unbiased whatever the fit (only where
    the prior's pilot asks for more than
    :data:`~pymc_anneal.pymc.bases.AUTO_LAPLACE_STEPS` temperatures: below, the
    prior's run costs about what the fit would). Where this base's pilot asks for fewer
    temperatures than the prior's it runs: on real models with wide priors and many data,
    20-25 temperatures where the prior needs 700-20,000, and on two modes of unequal width
    that the census found, the right answer where tempering from the prior sees the broad
    mode only. Where another base runs and its particles (the prior's pilot's first, then
    the run's, by their weights) hold less than half the share of a mode that the census
    found, the Laplace base runs instead, or, where it cannot, an ``AnnealingWarning``
    names the mode. A mode that no start reaches is missed by this base as by the prior
    (and by SMC): a model's ``initval`` is one of the starts. The prior's pilot stops early
    where what it has measured already asks for a Laplace base (``prior_pilot`` says where,
    and ``prior_num_steps`` is then its K there), and does not run at all where the spread
    of the log-likelihood at prior draws already predicts that (the Laplace base's loop
    and pilot come first; ``prior_num_steps_predicted`` is the prediction, and the prior's
    pilot runs only where the Laplace base's asks for no fewer temperatures). The
    attributes ``base_reason``, ``prior_num_steps``, ``laplace_num_steps``,
    ``laplace_modes`` and ``laplace_mode_weights`` record the choice (``laplace_reason``
    why no Laplace base could run). A centred hierarchy (``theta ~ Normal(mu, tau)`` with
    ``tau`` a free variable) has a funnel whose neck the optimizer runs into: where it
    does on the model as written, and not in non-centred coordinates, the path holds
    those variables as ``(theta - mu) / tau`` (PyMC's log density at the mapped point plus
    the Jacobian: the same evidence; :mod:`pymc_anneal.pymc.noncentered`), and the
    attributes ``noncentered`` and ``noncentered_reason`` say so.

    Before any loop is built (the prior's included:
    :data:`~pymc_anneal.pymc.bases.AUTO_IMPORTANCE_FIRST`), the Laplace base, fitted from
    the initial point and tempered prior draws, is checked for **importance sampling** alone (and again before the Laplace
    base's loop is built, where it is fitted from the prior pilot's particles): a batch of
    ``draws * chains`` draws of its own from it, whose weights
    must meet the run's target (``log(N / ESS)`` within the target variance) without any of
    the weight warnings (a low ESS, a heavy tail by Pareto k-hat, chains that disagree),
    with k-hat at most 0.25 and a nearly symmetric estimate. Where they do, the run is
    importance sampling from that base (AIS with one step and no transition: ``kernel`` is
    ``"none (importance sampling)"``, ``num_steps`` 1, ``backend`` ``"python"``; no loop is
    compiled, and the reported draws are fresh ones, so the estimate stays unbiased);
    ``base_reason`` and ``laplace_importance_check`` say what the check measured
    (``prior_pilot`` says the prior's pilot did not run). The base
    checked is the fit's with Student-t components (5 degrees of freedom,
    ``laplace_importance_df``), whose tails cover a posterior's where a Gaussian's would
    not. Posteriors with many data (posteriordb's kidscore_momiq, radon_pooled, dogs, Mb)
    take 1-6 s this way. Not where a kernel was named or a checkpoint is written.
    Where the log density has no gradient (the kernel then falls back to Metropolis),
    the fit takes central differences for it (up to 20 dimensions; ``laplace_gradient``
    says so) and the Laplace base is tried before the prior's pilot (``prior_pilot``).
    Where the prior's pilot loses every particle (the likelihood is ``-inf`` or NaN
    wherever the prior puts its mass: an ODE solver that fails far from its data), the
    Laplace base runs instead (``prior_pilot`` says so); where it cannot, the error names
    the likelihood's terms that are undefined at prior draws.

    Where the prior's path is long (``base="auto"``: more than
    :data:`~pymc_anneal.pymc.bases.AUTO_BASE_STEPS` temperatures; or ``base="gaussian"``)
    the base is instead a full-covariance Gaussian
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
        :data:`~pymc_anneal.pymc.bases.AUTO_LAPLACE_WORK`, or a mode of its census was left
        short); else it keeps the prior unless the K it asks for exceeds
        :data:`~pymc_anneal.pymc.bases.AUTO_BASE_STEPS` (1000), where the fitted mixture
        takes over (the prior's
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
    base, base_draws = bases.base_choice(base)
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
    add_waiting_jobs(load_pareto_fit, load_array_backends, mp.output_function)
    ckpt, random_seed = open_checkpoint(checkpoint, lambda: model_content(model), arguments,
                                        random_seed)
    rng, seed_attr = check_random_seed(random_seed)
    if mp.path is None:
        return add_arviz_groups(_exact_sum(model, mp, draws, chains, rng, options.backend,
                                           seed_attr), model, log_likelihood=log_likelihood)
    reparametrized = {}  # a funnel's neck in the model as written: non-centred coordinates
    if base_draws is None and (base == "laplace" or (base == "auto" and auto)):
        mp, reparametrized = bases.noncentered_route(model, mp, discrete, rng)
        if reparametrized:
            add_waiting_jobs(mp.output_function)
    annealed = bases.annealed_discrete(mp)
    if annealed:
        options = _compound_kernel(options, annealed)
    # the fit (base="gaussian") keeps its own schedule; only the estimate is sized
    main_options = options.replace(tuning=dataclasses.replace(
        options.tuning, auto_variance=auto_variance(dlogz, draws * chains))) if auto else options
    path, fit_info, timings = mp.path, {}, {"choose_base": time.perf_counter()}
    if base_draws is not None:  # a base fitted to the user's posterior draws
        route, routed = bases.draws_base(model, mp, base_draws, rng), "draws"
    else:  # asked for, or the prior cannot be drawn: a base found by optimization
        route, routed = bases.laplace_route(model, mp, base, rng), "laplace"
    if route is not None:
        path, fit_info = route[:2]
    importance = None  # where the fitted base alone meets the target: its check's findings
    # not where a transition kernel was asked for, nor where a checkpoint holds the run
    may_skip_annealing = auto_kernel and ckpt is None
    if (route is not None and routed == "laplace" and auto and may_skip_annealing
            and bases.AUTO_IMPORTANCE):  # the fit with Student-t components, checked
        t_path, t_info = bases.importance_base(mp, route[2], fit_info)
        importance = importance_check(t_path, draws=draws, chains=chains,
                                      rng=bases.side_stream(rng),
                                      target_variance=main_options.tuning.auto_variance)
        fit_info = {**fit_info, "laplace_importance_check": importance["reason"]}
        if importance["passed"]:
            path, fit_info = t_path, {**t_info, **fit_info}
        else:
            importance = None
    if route is None and importance is None and auto and base == "auto":
        # the run's memory before the fit's importance check allocates its draws: the
        # refusal (and the split it suggests) is the loop's, as without that check
        check_run(mp.path, main_options, draws=draws, chains=chains, num_steps=betas.size - 1)
    # the prior's path predicted long: the Laplace base first, its loop built alone
    first = None if route is not None else bases.laplace_first(
        model, mp, base, auto, main_options, betas, draws, chains, rng, auto_backend,
        may_skip_annealing)
    fallbacks = {}
    if importance is not None or (first is not None and first[3].importance is not None):
        pass  # importance sampling: no loop
    elif first is not None:  # its loop built (laplace_backend_fallback says if on another)
        main_options = first[3].options
    else:
        # a kernel or backend that cannot build this model's loop is replaced (if "auto")
        # or refused here, before any run
        main_options, fallbacks = choose_loop(path, main_options, draws=draws, chains=chains,
                                              auto_kernel=auto_kernel,
                                              auto_backend=auto_backend)
    options = options.replace(kernel=main_options.kernel, backend=main_options.backend)
    census = laplace = None  # the Laplace fit where the prior's route made one, its modes
    if route is not None:
        base, pilot, choice = routed, None, {}
    elif first is not None:
        base, pilot, choice, laplace = first
        census, path, fit_info = laplace.modes, laplace.path, laplace.info
    else:
        base, pilot, choice, laplace = bases.choose_base(
            model, mp, base, auto, main_options, betas, draws, chains, rng, auto_backend,
            may_skip_annealing, gradient_free="kernel_fallback" in fallbacks)
        census = None if laplace is None else laplace.modes
        if base == "laplace":
            path, fit_info, main_options = laplace.path, laplace.info, laplace.options
    timings = {"choose_base": time.perf_counter() - timings["choose_base"]} if choice else {}
    if base == "gaussian":
        t0 = time.perf_counter()
        base, path, pilot, rng, fit_info, fit_log_w = bases.gaussian_base(
            mp.path, options, main_options, schedule, (fit_steps, fit_draws), betas,
            (draws, chains), rng, ckpt, pilot, choice, laplace)
        timings["fit"] = time.perf_counter() - t0
        if base == "laplace":  # the fewest temperatures: its loop's options
            main_options = laplace.options

    def anneal(path, pilot, importance=None):
        if importance is not None:  # the fitted base alone: importance sampling, no loop
            result = run_importance(path, draws=draws, chains=chains, rng=rng)
        else:
            result = run_annealing(path, betas=betas, draws=draws, chains=chains, rng=rng,
                                   options=main_options, checkpoint=ckpt, pilot=pilot)
        check_run_weights(path, result)
        _name_discrete_acceptance(result, mp.value_slices)
        result.positions = path.to_model(result.positions)
        return result

    if base == "laplace" and laplace is not None and laplace.importance is not None:
        importance = laplace.importance
    try:
        result = anneal(path, pilot, importance)
    except ZeroWeightError as error:  # the pilot lost every particle: name the terms
        raise bases.named_zero_weights(model, error) from error
    if base == "gaussian":
        bases.second_opinion(result.log_weights, fit_log_w, fit_steps)
    missed = [] if census is None or base == "laplace" else missed_modes(
        census, result.positions, result.log_weights)
    if missed and laplace.options is None and ckpt is None:  # the census alone: its loop now
        laplace, more = bases.laplace_pilot(model, mp, main_options, betas, draws, chains,
                                       bases.side_stream(rng), pilot.positions, auto_backend,
                                       may_skip_annealing)
        choice.update(more)
        laplace = laplace or bases.LaplaceFit(None, {}, census, None, None)
    if missed and ckpt is None and (laplace.pilot is not None
                                    or laplace.importance is not None):
        t0 = time.perf_counter()  # again, from the census's base
        choice["base_reason"] = (
            f"the {base} base's run left short {bases.modes_text(missed, census)} of the "
            "optimizer's census; run again from the Laplace base, which has a component there")
        base, path, fit_info, main_options = "laplace", laplace.path, laplace.info, laplace.options
        result = anneal(path, laplace.pilot, laplace.importance)
        timings["rerun"] = time.perf_counter() - t0
    elif missed:
        bases.warn_modes_missed(missed, census)
    result.timings.update(timings)
    variables = mp.to_variables(result.positions, rng)
    tree = _to_datatree(model, result, variables, rng, {
        "schedule": schedule if isinstance(schedule, str) else "custom", "base": base,
        "model_fingerprint": fingerprint(model_content(model)),
        **reparametrized, **fit_info, **choice, **fallbacks, "random_seed": seed_attr,
        "model": model.name or None,
        "summed_discrete": list(mp.summed) or None, "annealed_discrete": annealed or None,
        "discrete_notes": list(mp.discrete_notes) or None})
    return add_arviz_groups(tree, model, log_likelihood=log_likelihood)


def _compound_kernel(options: RunOptions, annealed: list[str]) -> RunOptions:
    """``options`` with its kernel wrapped in the compound kernel that also moves the
    annealed discrete variables ``annealed`` (only an HMC kernel can be wrapped)."""
    check_choice("kernel", options.kernel, INNER_KERNELS, what=(
        f"one of {list(INNER_KERNELS)} (an HMC kernel, composed with a Metropolis step that "
        f"moves the annealed discrete variables {annealed})"))
    return options.replace(kernel=functools.partial(build_compound_kernel, inner=options.kernel))


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
    # compiled once per path (a repeated call on a model reuses it), as importance
    # sampling's weights are
    log_base, log_ratio = log_densities(path)(
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


def _check_exact_sum_memory(model, draws: int, chains: int) -> None:
    """Refuse, before they are made, exact posterior draws and weights that cannot fit
    (the sum itself is over the supports, whatever the number of draws)."""
    values = sum(int(np.prod(v.shape)) for v in initial_point(model).values())
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
