"""``ais``: the partition function of an energy-based model (or of any annealing path)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from pymc_anneal.driver import TuningOptions, run_ais
from pymc_anneal.backends import validate_backend
from pymc_anneal.checks import check_count, check_weights
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.io import to_datatree
from pymc_anneal.kernels import CONTINUOUS_KERNELS, KERNELS
from pymc_anneal.paths import GibbsPath, Path
from pymc_anneal.schedules import make_schedule

__all__ = ["ais"]


def _seeded(random_seed) -> tuple[np.random.Generator, str | None]:
    if isinstance(random_seed, np.random.Generator):
        return np.random.default_rng(random_seed.integers(2**63)), None
    return (np.random.default_rng(np.random.SeedSequence(random_seed)),
            None if random_seed is None else str(random_seed))


def _build_path(model, kernel, base, data, moments, base_mean, base_scale, rng):
    """Resolve ``model`` (an energy model or a path) and the options into a path and kernel."""
    from pymc_anneal.energy import BernoulliRBM, EnergyModel, GaussianRBM
    from pymc_anneal.energy.annealing import (
        GRBM_BASES,
        RBM_BASES,
        gaussian_energy_path,
        grbm_moments,
        grbm_path,
        rbm_path,
        _data_moments,
        _given_moments,
    )

    if isinstance(model, (Path, GibbsPath)):
        if any(v is not None for v in (base, data, moments, base_mean, base_scale)):
            raise AnnealingError("base, data, moments, base_mean and base_scale apply to energy "
                                 "models; a Path already carries its base.")
        kernel = kernel or ("gibbs" if isinstance(model, GibbsPath) else "hais")
        return model, kernel
    if not isinstance(model, EnergyModel):
        raise AnnealingError(
            "ais needs an energy model from pymc_anneal.energy (e.g. BernoulliRBM, GaussianRBM, "
            f"FunctionEnergy) or a pymc_anneal.paths.Path, got {type(model).__name__}. For a "
            "PyMC model use pymc_anneal.sample_ais."
        )
    if isinstance(model, BernoulliRBM):
        kernel = kernel or "gibbs"
        if kernel != "gibbs":
            raise AnnealingError(f"a BernoulliRBM has binary units, which only the 'gibbs' kernel "
                                 f"can move; got kernel={kernel!r}.")
        base = base or ("data" if data is not None else "uniform")
        if base not in RBM_BASES:
            raise AnnealingError(f"unknown base {base!r} for a BernoulliRBM; must be one of "
                                 f"{list(RBM_BASES)}.")
        return rbm_path(model, base=base, data=data), kernel
    if isinstance(model, GaussianRBM):
        kernel = kernel or "gibbs"
        if kernel == "gibbs":
            base = base or "ais_cov"
            if base not in GRBM_BASES:
                raise AnnealingError(f"unknown base {base!r} for a GaussianRBM; must be one of "
                                     f"{list(GRBM_BASES)}.")
            return grbm_path(model, base, moments=moments, data=data, rng=rng), kernel
        if base is not None:
            raise AnnealingError(f"base={base!r} applies to the 'gibbs' kernel; with kernel="
                                 f"{kernel!r} give base_mean and base_scale (or moments or data).")
        if base_mean is None and base_scale is None:
            m = (_given_moments(moments, model.num_dims) if moments is not None
                 else _data_moments(data, model.num_dims) if data is not None
                 else grbm_moments(model, rng))
            base_mean, base_scale = m.mean, np.sqrt(np.diag(m.covariance))
        return gaussian_energy_path(model, base_mean, base_scale), kernel
    kernel = kernel or "hais"
    if kernel not in CONTINUOUS_KERNELS:
        raise AnnealingError(f"kernel {kernel!r} needs Gibbs conditionals, which "
                             f"{type(model).__name__} does not have; use one of "
                             f"{sorted(CONTINUOUS_KERNELS)}.")
    if base is not None or moments is not None or data is not None:
        raise AnnealingError("for this energy model give the Gaussian base as base_mean and "
                             "base_scale (base, moments and data apply to RBMs).")
    return gaussian_energy_path(model, base_mean, base_scale), kernel


def ais(
    model,
    *,
    draws: int = 1000,
    chains: int = 4,
    num_steps: int | None = 1000,
    schedule="linear",
    kernel: str | None = None,
    base: str | None = None,
    data=None,
    moments=None,
    base_mean=None,
    base_scale=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "numba",
    num_leapfrog_steps: int = 1,
    step_size: float | None = None,
    mass_matrix: str = "adapt",
    num_tuning_bands: int = 8,
    num_pilot: int = 256,
) -> xr.DataTree:
    r"""Estimate the log partition function :math:`\log Z` of an energy-based model with AIS.

    ``chains`` independent runs of ``draws`` particles each anneal from a tractable base
    (:math:`\beta = 0`, known :math:`Z_0`) to the model (:math:`\beta = 1`) through
    ``num_steps`` temperatures in one compiled loop, exactly as :func:`pymc_anneal.sample_ais`
    does for a PyMC model's evidence, and the result has the same layout.

    Parameters
    ----------
    model : EnergyModel or Path
        A :class:`~pymc_anneal.energy.BernoulliRBM` or :class:`~pymc_anneal.energy.GaussianRBM`
        (annealed in the joint visible-hidden space with Gibbs transitions, Salakhutdinov &
        Murray 2008), any other :class:`~pymc_anneal.energy.EnergyModel` such as a
        :class:`~pymc_anneal.energy.FunctionEnergy` (annealed from a Gaussian base with
        HMC), or a ready-made :class:`~pymc_anneal.paths.Path` /
        :class:`~pymc_anneal.paths.GibbsPath` (any annealing problem).
    draws : int, default 1000
        Particles per chain (>= 2).
    chains : int, default 4
        Independent runs; their spread checks the standard error.
    num_steps : int, default 1000
        Number of temperatures K (``None`` when ``schedule`` is an array).
    schedule : str or array, default "linear"
        A name from :data:`pymc_anneal.schedules.SCHEDULES` (``"kiwaki_aihara"`` is the
        4-band schedule of the GRBM paper), ``"adaptive"``, or an array from 0 to 1.
    kernel : {"gibbs", "hais", "hmc", "metropolis"}, optional
        Default ``"gibbs"`` for RBMs, ``"hais"`` otherwise. A GaussianRBM can also be
        annealed with HMC on its visible units (hidden units summed out).
    base : str, optional
        BernoulliRBM: ``"uniform"`` (default) or ``"data"`` (visible biases at the smoothed
        base rates of ``data``). GaussianRBM: ``"ais_cov"`` (default, full covariance),
        ``"ais"`` (diagonal, the target's variances) or ``"ais_mean"`` (the target's means,
        the model's sigma), as in Kiwaki & Aihara (2015).
    data : array (N, num_dims), optional
        Training data, for the RBM's base rates or the GRBM base's moments.
    moments : (mean, covariance), optional
        The GRBM target's moments; by default from ``data``, else estimated by 100 Gibbs
        chains of 5000 steps (:func:`pymc_anneal.energy.annealing.grbm_moments`).
    base_mean, base_scale : array, optional
        The Gaussian base of the HMC path (default standard normal).
    random_seed : int, Generator or None
    progressbar : bool, default True
    backend : {"numba", "c", "jax"}, default "numba"
    num_leapfrog_steps, step_size, mass_matrix, num_tuning_bands, num_pilot
        HMC settings, as in :func:`pymc_anneal.sample_ais`.

    Returns
    -------
    xarray.DataTree
        As :func:`pymc_anneal.sample_ais`: ``posterior`` (equally weighted samples of the
        model, variable ``x``), ``particles`` (with ``log_weight``), ``sample_stats``
        (per-chain ``log_marginal_likelihood``, which is :math:`\log Z` here, its standard
        error and ESS) and ``annealing_stats``. :func:`pymc_anneal.log_evidence` pools the
        chains; the attribute ``quantity`` is ``"log_partition_function"``.

    References
    ----------
    Neal, R. M. (2001). Annealed importance sampling. *Statistics and Computing* 11.
    Salakhutdinov, R. & Murray, I. (2008). On the quantitative analysis of deep belief
    networks. *ICML*.
    Kiwaki, T. & Aihara, K. (2015). Designing the covariance of base distributions for
    annealed importance sampling of Gaussian RBMs.

    Examples
    --------
    >>> import numpy as np, pymc_anneal as pa
    >>> from pymc_anneal.energy import BernoulliRBM
    >>> rng = np.random.default_rng(0)
    >>> rbm = BernoulliRBM(rng.normal(0, 0.5, (6, 4)), np.zeros(6), np.zeros(4))
    >>> idata = pa.ais(rbm, draws=200, chains=2, num_steps=100, progressbar=False,
    ...                random_seed=1)
    >>> est = pa.log_evidence(idata)
    >>> bool(abs(est.log_evidence - rbm.exact_log_z()) < 4 * est.standard_error + 0.01)
    True
    """
    draws = check_count("draws", draws, 2)
    chains = check_count("chains", chains, 1)
    if num_steps is not None:
        num_steps = check_count("num_steps", num_steps, 1)
    betas = make_schedule(schedule, num_steps)
    if kernel is not None and kernel not in KERNELS:
        raise AnnealingError(f"unknown kernel {kernel!r}; must be one of {sorted(KERNELS)}.")
    backend = validate_backend(backend)
    if mass_matrix not in ("adapt", "base", "identity"):
        raise AnnealingError(
            f"unknown mass_matrix {mass_matrix!r}; must be one of ['adapt', 'base', 'identity'].")
    rng, seed_attr = _seeded(random_seed)
    moments_rng, rng = rng.spawn(2)
    path, kernel = _build_path(model, kernel, base, data, moments, base_mean, base_scale,
                               moments_rng)
    tuning = TuningOptions(step_size=step_size, mass_matrix=mass_matrix,
                           num_bands=num_tuning_bands, num_pilot=num_pilot,
                           adapt_schedule=isinstance(schedule, str) and schedule == "adaptive")
    result = run_ais(path, kernel=kernel, betas=betas, draws=draws, chains=chains, rng=rng,
                     backend=backend, tuning=tuning, num_leapfrog_steps=num_leapfrog_steps,
                     progressbar=progressbar)
    check_weights(result.log_weights, zero_weight_message=(
        "every particle has zero weight: log f is -inf or NaN along the path. Check that the "
        "energy is finite wherever the base puts mass."))
    info = getattr(path, "info", {}) or {}
    attrs = {"quantity": "log_partition_function", "schedule": schedule if isinstance(schedule, str)
             else "custom", "random_seed": seed_attr, "model": getattr(model, "name", None),
             "dtype": getattr(path, "dtype", "float64"),
             **{k: v for k, v in info.items() if isinstance(v, str | int | float)}}
    return to_datatree(result, {"x": np.asarray(result.positions)}, var_dims={"x": ["x_dim"]},
                       rng=rng, attrs=attrs)
