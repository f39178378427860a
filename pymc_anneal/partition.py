"""``ais``: the partition function of an energy-based model (or of any annealing path).

An entry point, its policy and one call: it checks the user's options
(:mod:`pymc_anneal.validation`, :func:`pymc_anneal.driver.run_options`), asks the model for
its annealing path (:meth:`pymc_anneal.energy.EnergyModel.annealing_path`), runs the driver
(:func:`pymc_anneal.driver.run_annealing`) and returns the result as data, in the model's
space (:meth:`pymc_anneal.paths.Path.to_model`).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import xarray as xr

from pymc_anneal._digest import attribute_content, fingerprint
from pymc_anneal.backends import interruptible
from pymc_anneal.driver import run_annealing, run_options_from
from pymc_anneal.driver.checkpoint import open_checkpoint
from pymc_anneal.driver.memory import check_num_steps_budget
from pymc_anneal.driver.tuning import AUTO_PILOT_STEPS, auto_variance
from pymc_anneal.exceptions import AnnealingError, warn
from pymc_anneal.io import to_datatree
from pymc_anneal.pymc.sampling import check_run_weights
from pymc_anneal.schedules import make_schedule
from pymc_anneal.validation import check_count, check_data_rows, check_num_steps, check_random_seed

__all__ = ["ais"]


@interruptible()  # Ctrl-C stops the call, even when Python would lose it
def ais(
    model,
    *,
    draws: int = 1000,
    chains: int = 4,
    num_steps: int | str | None = "auto",
    schedule="linear",
    kernel: str | None = None,
    base: str | None = None,
    data=None,
    moments=None,
    base_mean=None,
    base_scale=None,
    random_seed=None,
    progressbar: bool = True,
    backend: str = "auto",
    num_leapfrog_steps: int | None = None,
    step_size: float | None = None,
    mass_matrix: str = "adapt",
    num_tuning_bands: int = 8,
    num_pilot: int = 250,
    target_acceptance: float | None = None,
    momentum_refresh: float | None = None,
    checkpoint=None,
    dlogz: float | None = None,
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
        :class:`~pymc_anneal.paths.GibbsPath` (any annealing problem). An energy model
        provides its own path (:meth:`~pymc_anneal.energy.EnergyModel.annealing_path`).
    draws : int, default 1000
        Particles per chain (>= 2).
    chains : int, default 4
        Independent runs; their spread checks the standard error.
    num_steps : int or "auto", default "auto"
        Number of temperatures K (``None`` when ``schedule`` is an array), or ``"auto"``
        (the default with a schedule name): the effort follows the problem, as in
        :func:`pymc_anneal.sample_ais`. A pilot on ``AUTO_PILOT_STEPS`` (256) temperatures
        of ``schedule`` measures the path's thermodynamic length :math:`\mathcal L` and
        the kernel's inefficiency :math:`\tau` (Gibbs sweeps as HMC), and the run takes
        :math:`K = \lceil \tau \mathcal L^2 / \sigma^2 \rceil` temperatures of equal
        thermodynamic length (20 to 20,000), :math:`\sigma^2` = 0.7 the target variance
        of the log weights; a run whose extra check chain misses the target is repeated
        with more temperatures (at most twice), and one still off target warns. K,
        :math:`\mathcal L`, :math:`\tau` and the repeats are in the result's attributes.
    schedule : str or array, default "linear"
        A name from :data:`pymc_anneal.schedules.SCHEDULES` (``"kiwaki_aihara"`` is the
        4-band schedule of the GRBM paper), ``"adaptive"``, or an array from 0 to 1.
    kernel : str, callable or Kernel, optional
        A name in :data:`pymc_anneal.kernels.KERNELS` (``"gibbs"``, ``"hais"``, ``"hmc"``,
        ``"mala"``, ``"metropolis"``), or a kernel builder ``path -> Kernel`` of your own
        (see :mod:`pymc_anneal.kernels`). Default ``"gibbs"`` for RBMs, ``"hais"``
        otherwise. A GaussianRBM can also be annealed with HMC on its visible units (hidden
        units summed out).
    base : str, optional
        BernoulliRBM: ``"uniform"`` (default) or ``"data"`` (visible biases at the smoothed
        base rates of ``data``). GaussianRBM: ``"ais_cov"`` (default, full covariance),
        ``"ais"`` (diagonal, the target's variances) or ``"ais_mean"`` (the target's means,
        the model's sigma), as in Kiwaki & Aihara (2015). LaplacePOE and StudentTPOE:
        ``"student_t"`` (default, a heavy-tailed product of experts, widened by
        ``base_scale``; see :meth:`~pymc_anneal.energy.StudentTPOE.annealing_path`) or
        ``"gaussian"``.
    data : array (N, num_dims), optional
        Training data, for the RBM's base rates or the GRBM base's moments.
    moments : (mean, covariance), optional
        The GRBM target's moments; by default from ``data``, else estimated by 100 Gibbs
        chains of 5000 steps (:func:`pymc_anneal.energy.annealing.grbm_moments`).
    base_mean, base_scale : array, optional
        The Gaussian base of the HMC path (default standard normal).
    random_seed : int, Generator or None
    progressbar : bool, default True
    backend : {"auto", "jax", "numba", "c"}, default "auto"
        As in :func:`pymc_anneal.sample_ais`.
    num_leapfrog_steps, step_size, mass_matrix, num_tuning_bands
        Kernel and tuning settings, as in :func:`pymc_anneal.sample_ais`.
    num_pilot, target_acceptance, momentum_refresh
        Tuning settings, as in :func:`pymc_anneal.sample_ais`.
    checkpoint : str or os.PathLike, optional
        A file that holds the run's state after every chunk of temperatures; calling again
        with it resumes, as in :func:`pymc_anneal.sample_ais`.
    dlogz : float, optional
        With ``num_steps="auto"``: a target standard error of :math:`\log Z`; the target
        variance becomes :math:`\min(0.7, \log(1 + N\,\mathrm{dlogz}^2))` for N
        particles in all, as in :func:`pymc_anneal.sample_ais`.

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
    arguments = dict(locals())
    draws = check_count("draws", draws, 2)
    chains = check_count("chains", chains, 1)
    num_steps, dlogz = check_num_steps(num_steps, schedule, dlogz)
    check_num_steps_budget(num_steps, draws=draws, chains=chains)  # before the schedule
    betas = make_schedule(schedule, AUTO_PILOT_STEPS if num_steps == "auto" else num_steps)
    options = auto_options(run_options_from(locals()), num_steps, dlogz, draws * chains)
    check_data_rows(data)
    ckpt, random_seed = open_checkpoint(checkpoint, lambda: model_parts(model), arguments, random_seed)
    rng, seed_attr = check_random_seed(random_seed)
    moments_rng, rng = rng.spawn(2)
    path, kernel = _annealing_path(model, options.kernel, moments_rng, base=base, data=data,
                                   moments=moments, base_mean=base_mean, base_scale=base_scale)
    if path.info.get("weight_caveat"):  # known before any draw: the base cannot be trusted
        warn(path.info["weight_caveat"])
    result = run_annealing(path, betas=betas, draws=draws, chains=chains, rng=rng,
                           options=options.replace(kernel=kernel), checkpoint=ckpt)
    check_run_weights(path, result, subject="log f",
                      fix="Check that the energy is finite wherever the base puts mass.")
    attrs = {"quantity": "log_partition_function",
             "schedule": schedule if isinstance(schedule, str) else "custom",
             "random_seed": seed_attr, "model": getattr(model, "name", None),
             "dtype": path.dtype, "model_fingerprint": model_fingerprint(model, path),
             **{k: v for k, v in path.info.items() if isinstance(v, str | int | float)}}
    return to_datatree(result, {"x": np.asarray(path.to_model(result.positions))},
                       var_dims={"x": ["x_dim"]}, rng=rng, attrs=attrs)


def auto_options(options, num_steps, dlogz: float | None, num_particles: int):
    """``options`` with the target variance of ``num_steps="auto"`` (:data:`AUTO_VARIANCE`,
    or less for ``dlogz``, the target standard error of ``num_particles`` particles), so
    that the driver's pilot chooses K; ``options`` as they are for a fixed ``num_steps``."""
    if num_steps != "auto":
        return options
    return options.replace(tuning=dataclasses.replace(
        options.tuning, auto_variance=auto_variance(dlogz, num_particles)))


def forward_schedule(path, options, schedule, *, draws: int, chains: int,
                     dlogz: float | None, rng: np.random.Generator, checkpoint=None,
                     label: str | None = None) -> np.ndarray:
    """The temperatures of ``num_steps="auto"`` for a run that cannot size itself (a
    reverse run, per-point runs in one batch): those that a forward ``num_steps="auto"``
    run of ``path`` with ``draws`` x ``chains`` particles ends with (its pilot on
    :data:`AUTO_PILOT_STEPS` temperatures of ``schedule``, K of equal thermodynamic length,
    its repeats judged on its check chain), from 0 to 1. Only the schedule is kept; the
    run's particles are dropped, so the caller's run is independent of the weights that
    chose it."""
    sizing = run_annealing(path, betas=make_schedule(schedule, AUTO_PILOT_STEPS), draws=draws,
                           chains=chains, rng=rng,
                           options=auto_options(options, "auto", dlogz, draws * chains),
                           checkpoint=checkpoint, label=f"{label or path.name} (choosing K)")
    return np.asarray(sizing.betas, dtype=np.float64)


def model_parts(model) -> list:
    """What defines ``model`` for a fingerprint: an energy model's content; else (a path, a
    generative model) its class, array and scalar attributes, and a path's structure and
    parameters."""
    if callable(getattr(model, "content", None)):
        return model.content()
    parameters = getattr(model, "parameters", {}) or {}
    return [*attribute_content(model), repr(getattr(model, "structure", None)),
            *(x for k in sorted(parameters) for x in (k, np.asarray(parameters[k])))]


def model_fingerprint(model, path) -> str:
    """The ``model_fingerprint`` of a result on ``path``: the energy model's content (or the
    path's structure, for a path given as the model) and the path's parameters (the data of
    a data base, the test points of :func:`pymc_anneal.batched_ais`)."""
    parameters = path.parameters
    return fingerprint([*model_parts(model),
                        *(x for k in sorted(parameters) for x in (k, np.asarray(parameters[k])))])


def _annealing_path(model, kernel, rng, **options):
    """The path and kernel for ``model``: its own path if it is an energy model."""
    from pymc_anneal.energy import EnergyModel

    if isinstance(model, EnergyModel):
        return model.annealing_path(kernel=kernel, rng=rng, **options)
    if callable(getattr(model, "weight_increment", None)) and hasattr(model, "sample_base"):
        given = sorted(k for k, v in options.items() if v is not None)
        if given:
            raise AnnealingError(f"{given} apply to energy models; a path already carries its "
                                 "base.")
        return model, kernel or model.default_kernel
    raise AnnealingError(
        "ais needs an energy model from pymc_anneal.energy (e.g. BernoulliRBM, GaussianRBM, "
        f"FunctionEnergy) or a pymc_anneal.paths.Path, got {type(model).__name__}. For a "
        "PyMC model use pymc_anneal.sample_ais."
    )
