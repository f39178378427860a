"""``sample_ais``: the evidence of a PyMC model by annealed importance sampling."""

from __future__ import annotations

import numpy as np
import pymc as pm
import xarray as xr

from pymc_anneal.driver import TuningOptions, run_ais
from pymc_anneal.backends import validate_backend
from pymc_anneal.checks import (  # noqa: F401  (re-exported for compare and tests)
    CHAIN_DISAGREEMENT,
    LOW_ESS_FRACTION,
    check_count as _check_count,
    check_weights as _check_weights,
)
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.io import to_datatree
from pymc_anneal.kernels import CONTINUOUS_KERNELS
from pymc_anneal.pymc.adapter import model_path
from pymc_anneal.schedules import make_schedule

__all__ = ["sample_ais"]


def sample_ais(
    draws: int = 1000,
    *,
    chains: int = 4,
    num_steps: int | None = 2000,
    schedule="power",
    kernel: str = "hais",
    random_seed=None,
    progressbar: bool = True,
    backend: str = "numba",
    model: pm.Model | None = None,
    num_leapfrog_steps: int = 1,
    step_size: float | None = None,
    mass_matrix: str = "adapt",
    num_tuning_bands: int = 8,
    num_pilot: int = 256,
    target_acceptance: float | None = None,
    momentum_refresh: float | None = None,
) -> xr.DataTree:
    r"""Estimate the log marginal likelihood (evidence) of a PyMC model with AIS.

    The base is the prior in the unconstrained value space and the path tempers the
    likelihood: :math:`f_\beta(\theta) = p(\theta)\, p(y \mid \theta)^\beta`. ``chains``
    independent runs of ``draws`` particles each anneal from :math:`\beta = 0` to 1 through
    ``num_steps`` temperatures, all in one compiled loop. Call it inside ``with pm.Model():``
    or pass ``model=``.

    Parameters
    ----------
    draws : int, default 1000
        Particles per chain (>= 2).
    chains : int, default 4
        Independent runs; their spread is an honest check of the standard error.
    num_steps : int, default 2000
        Number of temperatures K (>= 1); ``num_steps=1`` is plain importance sampling from
        the prior. Ignored (use ``None``) when ``schedule`` is an array.
    schedule : str or array, default "power"
        One of :data:`pymc_anneal.schedules.SCHEDULES` or an array of inverse temperatures
        strictly increasing from 0 to 1.
    kernel : {"hais", "hmc", "metropolis"}, default "hais"
        HMC with persistent momentum (Sohl-Dickstein & Culpepper 2012), HMC with a fresh
        momentum each step, or random-walk Metropolis.
    random_seed : int, Generator or None
        Seed; the same seed gives the same result on a given backend.
    progressbar : bool, default True
    backend : {"numba", "c", "jax"}, default "numba"
    model : pm.Model, optional
        Defaults to the model on the context stack.
    num_leapfrog_steps : int, default 1
        Leapfrog steps per HMC transition.
    step_size : float, optional
        Fix the step size; by default it is tuned per temperature band in a pilot run and
        then frozen (the estimate stays unbiased).
    mass_matrix : {"adapt", "base", "identity"}, default "adapt"
        Diagonal mass matrix from the pilot particles per band, from the prior's scale, or
        the identity.
    num_tuning_bands, num_pilot, target_acceptance, momentum_refresh
        Tuning details; see :class:`pymc_anneal.driver.TuningOptions`.

    Returns
    -------
    xarray.DataTree
        Groups ``posterior`` (resampled, equally weighted), ``particles`` (with
        ``log_weight``), ``sample_stats`` (``log_marginal_likelihood`` per chain, its
        standard error ``log_marginal_likelihood_se`` and weight ``ess``) and
        ``annealing_stats`` (per chain and step). Use :func:`pymc_anneal.log_evidence` for
        the estimate pooled over all chains.

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
    model = pm.modelcontext(model)
    draws = _check_count("draws", draws, 2)
    chains = _check_count("chains", chains, 1)
    if num_steps is not None:
        num_steps = _check_count("num_steps", num_steps, 1)
    betas = make_schedule(schedule, num_steps)
    if kernel not in CONTINUOUS_KERNELS:
        raise AnnealingError(f"unknown kernel {kernel!r} for a PyMC model; must be one of "
                             f"{sorted(CONTINUOUS_KERNELS)}.")
    backend = validate_backend(backend)
    if mass_matrix not in ("adapt", "base", "identity"):
        raise AnnealingError(
            f"unknown mass_matrix {mass_matrix!r}; must be one of ['adapt', 'base', 'identity'].")
    if step_size is not None and not (np.isfinite(step_size) and step_size > 0):
        raise AnnealingError(f"step_size must be a positive float or None, got {step_size!r}.")
    if momentum_refresh is not None and not 0 < momentum_refresh <= 1:
        raise AnnealingError(f"momentum_refresh must be in (0, 1], got {momentum_refresh!r}.")
    mp = model_path(model)
    seed_seq = np.random.SeedSequence(random_seed if not isinstance(random_seed, np.random.Generator)
                                      else random_seed.integers(2**63))
    rng = np.random.default_rng(seed_seq)
    tuning = TuningOptions(step_size=step_size, mass_matrix=mass_matrix,
                           num_bands=num_tuning_bands, num_pilot=num_pilot,
                           target_acceptance=target_acceptance, refresh=momentum_refresh,
                           adapt_schedule=isinstance(schedule, str) and schedule == "adaptive")
    result = run_ais(mp.path, kernel=kernel, betas=betas, draws=draws, chains=chains, rng=rng,
                     backend=backend, tuning=tuning, num_leapfrog_steps=num_leapfrog_steps,
                     progressbar=progressbar)
    _check_weights(result.log_weights)
    variables = mp.to_variables(result.positions, backend)
    var_dims = {name: list(dims) for name, dims in model.named_vars_to_dims.items()
                if name in variables and dims is not None}
    coords = {k: np.asarray(v) for k, v in model.coords.items() if v is not None}
    return to_datatree(result, variables, var_dims=var_dims, coords=coords, rng=rng,
                       attrs={"schedule": schedule if isinstance(schedule, str) else "custom",
                              "random_seed": None if random_seed is None or isinstance(
                                  random_seed, np.random.Generator) else str(random_seed),
                              "model": model.name or None})
