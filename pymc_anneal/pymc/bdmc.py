r"""Bidirectional Monte Carlo (BDMC): does a PyMC model's annealing use enough temperatures?

On data simulated from the model itself, the evidence is bracketed from both sides
(Grosse, Ghahramani & Adams 2015; Burda, Grosse & Salakhutdinov 2015):

1. draw true parameters :math:`\theta^\star` from the prior and data
   :math:`y^\star \sim p(y \mid \theta^\star)`; then :math:`\theta^\star` is an exact draw from
   the posterior :math:`p(\theta \mid y^\star)`;
2. **forward** AIS from the prior to the posterior: :math:`\log \hat Z` is a stochastic
   *lower* bound on :math:`\log p(y^\star)`;
3. **backward** AIS from :math:`\theta^\star` to the prior (reverse weights with mean
   :math:`Z_0 / Z = 1 / p(y^\star)`): :math:`-\log \overline{w}` is a stochastic *upper* bound.

Both bounds tighten as the number of temperatures K grows; their gap bounds the error of
either one (in expectation), so a small gap says that K temperatures suffice for data like
these. Both runs use :func:`pymc_anneal.sample_ais`'s kernels and unbiased tuning (a pilot
on the forward schedule). Every particle of the backward run starts at the one exact
posterior draw :math:`\theta^\star` and first makes ``num_mixing_steps`` transitions at
:math:`\beta = 1`: each particle stays an exact posterior draw, so its reverse weight stays
unbiased for :math:`1/p(y^\star)`, and the particles forget their common start (without
this, the bound holds on average over simulations but a single simulation can land below
the truth by more than its standard error).

References
----------
Grosse, R. B., Ghahramani, Z. & Adams, R. P. (2015). Sandwiching the marginal likelihood
using bidirectional Monte Carlo. arXiv:1511.02543.
Burda, Y., Grosse, R. & Salakhutdinov, R. (2015). Accurate and conservative estimates of
MRF log-likelihood using reverse annealing. *AISTATS*.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from pytensor.graph.replace import graph_replace

from pymc_anneal.driver import TuningOptions, run_annealing
from pymc_anneal.estimators import estimate_log_z
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.io import versions
from pymc_anneal.kernels import KERNELS
from pymc_anneal.pymc.adapter import model_path, refuse_discrete
from pymc_anneal.schedules import make_schedule
from pymc_anneal.validation import (
    check_backend,
    check_choice,
    check_count,
    check_counts,
    check_random_seed,
    check_tuning,
)

__all__ = ["bdmc", "simulate_data"]


def _value_space(model: pm.Model, values: dict[str, np.ndarray]) -> np.ndarray:
    """The flat value-space vector (``model.value_vars`` order) of free-RV values."""
    givens = {rv: pt.constant(np.asarray(values[rv.name]), dtype=rv.dtype)
              for rv in model.free_RVs}
    flat = []
    for rv in model.free_RVs:
        transform = model.rvs_to_transforms.get(rv)
        value = np.asarray(values[rv.name], dtype=np.float64)
        if transform is not None:
            forward = transform.forward(pt.constant(value), *rv.owner.inputs)
            value = np.asarray(graph_replace(forward, givens, strict=False).eval(),
                               dtype=np.float64)
        flat.append(value.ravel())
    return np.concatenate(flat)


def simulate_data(model: pm.Model, rng: np.random.Generator):
    """Draw ``(theta*, y*)`` from the prior predictive and return ``(model conditioned on
    y*, theta* by free-variable name, theta* in the value space, y* by observed name)``."""
    if model.potentials:
        raise AnnealingError(
            f"the model has Potentials {[p.name for p in model.potentials]}; BDMC simulates "
            "data from the prior predictive, of which a Potential is not part. Remove them "
            "or check the number of temperatures on a model without them.")
    free, observed = list(model.free_RVs), list(model.observed_RVs)
    draws = pm.draw(free + observed, random_seed=rng)
    truth = {rv.name: np.asarray(v) for rv, v in zip(free, draws[:len(free)])}
    data = {rv.name: np.asarray(v) for rv, v in zip(observed, draws[len(free):])}
    simulated = pm.observe(model, data)
    return simulated, truth, _value_space(model, truth), data


def bdmc(
    model: pm.Model | None = None,
    *,
    num_steps=(10, 100, 1000),
    num_mixing_steps: int = 100,
    draws: int = 250,
    chains: int = 4,
    schedule: str = "power",
    kernel="hais",
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    num_leapfrog_steps: int | None = None,
    step_size: float | None = None,
    mass_matrix: str = "adapt",
    num_tuning_bands: int = 8,
    num_pilot: int = 256,
    target_acceptance: float | None = None,
    momentum_refresh: float | None = None,
) -> xr.DataTree:
    r"""Bound the log evidence of data simulated from ``model`` from below and above.

    Simulates true parameters and data from the prior predictive, then for each number of
    temperatures K runs forward AIS (a stochastic lower bound on :math:`\log p(y^\star)`)
    and backward AIS from the true parameters (a stochastic upper bound). When the gap is
    small, K temperatures are enough for :func:`pymc_anneal.sample_ais` on data like these.

    Parameters
    ----------
    model : pm.Model, optional
        Defaults to the model on the context stack. Its free variables must be continuous
        with proper priors, and it must have observed variables (which are re-simulated)
        and no Potentials.
    num_steps : int or sequence of int, default (10, 100, 1000)
        The numbers of temperatures K to check (each >= 1).
    num_mixing_steps : int, default 100
        Transitions at the posterior (beta = 1) before the backward run anneals. They keep
        each particle an exact posterior draw and make the particles, which all start at the
        one true parameter, forget their common start; without them the upper bound holds
        only on average over simulations, not for this one.
    draws : int, default 250
        Particles per chain, in each direction.
    chains : int, default 4
    schedule : str, default "power"
        A named schedule (:data:`pymc_anneal.schedules.SCHEDULES`).
    kernel, random_seed, progressbar, backend, num_leapfrog_steps, step_size, mass_matrix
        As in :func:`pymc_anneal.sample_ais`.
    num_tuning_bands, num_pilot, target_acceptance, momentum_refresh
        As in :func:`pymc_anneal.sample_ais`.

    Returns
    -------
    xarray.DataTree
        ``sample_stats`` over the dimension ``num_steps``: ``lower`` and ``upper`` (the two
        bounds on :math:`\log p(y^\star)`), ``gap`` (``upper - lower``), and their standard
        errors ``lower_se`` and ``upper_se``; ``observed_data``: the simulated data;
        ``true_parameters``: the simulated parameters.

    References
    ----------
    Grosse, R. B., Ghahramani, Z. & Adams, R. P. (2015). Sandwiching the marginal
    likelihood using bidirectional Monte Carlo. arXiv:1511.02543.

    Examples
    --------
    >>> import pymc as pm, pymc_anneal as pa
    >>> with pm.Model():
    ...     mu = pm.Normal("mu", 0, 1)
    ...     y = pm.Normal("y", mu, 1, observed=[0.0, 0.0, 0.0])
    ...     result = pa.bdmc(num_steps=[2, 200], draws=100, chains=2, random_seed=1,
    ...                      progressbar=False)
    >>> stats = result["sample_stats"]
    >>> stats["num_steps"].values.tolist(), sorted(stats.data_vars)
    ([2, 200], ['gap', 'lower', 'lower_se', 'upper', 'upper_se'])
    """
    model = pm.modelcontext(model)
    steps = check_counts("num_steps", num_steps, 1)
    num_mixing_steps = check_count("num_mixing_steps", num_mixing_steps, 0)
    draws = check_count("draws", draws, 2)
    chains = check_count("chains", chains, 1)
    if not isinstance(schedule, str):
        raise AnnealingError(f"schedule must be a schedule's name for bdmc (one per K), got "
                             f"{type(schedule).__name__}.")
    make_schedule(schedule, 1)  # validates the name
    if isinstance(kernel, str):
        kernel = check_choice("kernel", kernel, KERNELS)
    backend = check_backend(backend)
    tuning = TuningOptions(**check_tuning(
        step_size=step_size, momentum_refresh=momentum_refresh, mass_matrix=mass_matrix,
        num_tuning_bands=num_tuning_bands, num_pilot=num_pilot,
        target_acceptance=target_acceptance, schedule=schedule))
    refuse_discrete(model, "bdmc")
    model_path(model)  # the model's checks: proper, observed
    rng, seed_attr = check_random_seed(random_seed)
    sim_rng, rng = rng.spawn(2)
    simulated, truth, position, data = simulate_data(model, sim_rng)
    path = model_path(simulated).path
    start = np.tile(position, (draws * chains, 1))
    run = dict(kernel=kernel, backend=backend, tuning=tuning, draws=draws, chains=chains,
               progressbar=progressbar, kernel_options={"num_leapfrog_steps": num_leapfrog_steps})
    rows = []
    for k in steps:
        betas = make_schedule(schedule, k)
        forward_rng, backward_rng = rng.spawn(2)
        forward = run_annealing(path, betas=betas, rng=forward_rng,
                                label=f"{path.name} (BDMC forward, K={k})", **run)
        # the backward run first moves at beta = 1: every particle stays an exact posterior
        # draw, and they forget their common start theta*
        mixed = np.concatenate([betas, np.ones(num_mixing_steps)])
        backward = run_annealing(path, betas=mixed, rng=backward_rng, direction="backward",
                                 initial_positions=start,
                                 label=f"{path.name} (BDMC backward, K={k})", **run)
        low = estimate_log_z(forward.log_weights)
        rev = estimate_log_z(backward.log_weights)
        upper = path.log_base_normalizer - rev.log_z
        if not (np.isfinite(low.log_z) and np.isfinite(upper)):
            raise AnnealingError(
                f"with K={k} every particle of the {'forward' if not np.isfinite(low.log_z) else 'backward'} "
                "run has zero weight (a log-likelihood of -inf or NaN along the path); check "
                "the model's likelihood where the prior puts its mass.")
        rows.append((low.log_z, low.standard_error, upper, rev.standard_error))
    lower, lower_se, upper, upper_se = (np.array(c) for c in zip(*rows))
    coords = {"num_steps": np.array(steps)}
    stats = xr.Dataset(
        {"lower": ("num_steps", lower), "lower_se": ("num_steps", lower_se),
         "upper": ("num_steps", upper), "upper_se": ("num_steps", upper_se),
         "gap": ("num_steps", upper - lower)}, coords=coords)
    observed = xr.Dataset({name: (tuple(f"{name}_dim_{i}" for i in range(v.ndim)), v)
                           for name, v in data.items()})
    true_parameters = xr.Dataset({name: (tuple(f"{name}_dim_{i}" for i in range(v.ndim)), v)
                                  for name, v in truth.items()})
    tree = xr.DataTree.from_dict({"sample_stats": stats, "observed_data": observed,
                                  "true_parameters": true_parameters})
    attrs = {"inference_library": "pymc_anneal", "method": "bdmc",
             "kernel": forward.settings["kernel"], "backend": backend, "schedule": schedule,
             "draws": draws, "chains": chains, "random_seed": seed_attr,
             "model": model.name or None, "versions": versions()}
    tree.attrs.update({k: v for k, v in attrs.items() if v is not None})
    return tree
