r"""``batched_ais``: many independent evidences, one per test point, in one compiled loop.

A generative model's test log-likelihood :math:`\log p(\mathbf x_n)` is the normalizing
constant of the posterior over its latents given :math:`\mathbf x_n`, so each point needs
its own AIS run (Sohl-Dickstein & Culpepper 2012, eqs. 28-29). Here all points anneal
together: the model's :meth:`~pymc_anneal.energy.generative.GenerativeModel.evidence_path`
assigns particle :math:`i` to point :math:`i \bmod N`, the driver runs ``chains`` chains of
``draws`` particles per point as one batch, and the log weights are regrouped by point. The
kernel's tuned step sizes are shared by all points (one pilot over all of them).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pymc_anneal.backends import interruptible
from pymc_anneal.diagnostics import weight_warnings
from pymc_anneal.driver import run_annealing, run_options_from
from pymc_anneal.driver.checkpoint import open_checkpoint
from pymc_anneal.driver.memory import check_num_steps_budget
from pymc_anneal.driver.tuning import (
    AUTO_MAX_RERUNS,
    AUTO_MAX_STEPS,
    AUTO_PILOT_STEPS,
    auto_variance,
)
from pymc_anneal.estimators import effective_sample_size, estimate_log_z, pooled_mean
from pymc_anneal.exceptions import AnnealingError, warn
from pymc_anneal.io import point_estimates_tree, result_attrs, schedule_name
from pymc_anneal.partition import forward_schedule, model_fingerprint, model_parts
from pymc_anneal.schedules import make_schedule
from pymc_anneal.validation import (
    check_count,
    check_num_steps,
    check_random_seed,
)

__all__ = ["batched_ais"]

AUTO_POINT_SE = 0.03
"""With ``num_steps="auto"`` and no ``dlogz``, the target standard error of each point's
log-likelihood: a per-point estimate is read on its own (within 0.1 nat at three standard
errors), so the target is tighter than the log-weight variance of
:data:`pymc_anneal.pymc.sampling.AUTO_VARIANCE` (0.7: a standard error of 0.07 for 200
particles)."""
AUTO_SIZING_POINTS = 3
"""With ``num_steps="auto"``, the test points (drawn at random) whose own forward runs
choose K for all points (the largest of their K)."""


@interruptible()  # Ctrl-C stops the call, even when Python would lose it
def batched_ais(
    model,
    data,
    *,
    draws: int = 100,
    chains: int = 2,
    num_steps: int | str | None = "auto",
    schedule="linear",
    kernel: str | None = None,
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
    r"""Estimate :math:`\log p(\mathbf x_n)` for every test point of a generative model.

    Parameters
    ----------
    model : GenerativeModel
        A :class:`~pymc_anneal.energy.LinearGenerative` or
        :class:`~pymc_anneal.energy.BilinearGenerative` (anything with
        ``evidence_path(data)``).
    data : array (N, num_dims)
        The test points.
    draws : int, default 100
        Particles per chain and point.
    chains : int, default 2
        Independent chains per point; their spread checks each point's standard error.
    num_steps : int or "auto", default "auto"
        Number of temperatures K (``None`` when ``schedule`` is an array), or ``"auto"``:
        the weights of different points cannot be pooled to judge K (their ESS would
        measure how the points' evidences differ), so K starts from the largest of the K
        that a forward ``num_steps="auto"`` run (:func:`pymc_anneal.ais`, ``draws`` x
        ``chains`` particles) chooses for each of :data:`AUTO_SIZING_POINTS` test points
        drawn at random, and is scaled up by a check batch (one chain of ``draws`` per
        point) until the point with the most variable log weights meets the target (see
        ``_sized_num_steps``); then all points run through K temperatures of ``schedule``,
        equally spaced as for an explicit K. The sizing runs' particles are dropped, so
        the reported weights never chose K. A point that still needs more warns (see
        Returns).
    dlogz : float, optional
        With ``num_steps="auto"``: the target standard error of each point's estimate
        (``dlogz`` of the sizing runs); default :data:`AUTO_POINT_SE` (0.03).
    schedule, kernel, random_seed, progressbar, backend, checkpoint
        As in :func:`pymc_anneal.ais` (default kernel ``"hais"``).
    num_leapfrog_steps, step_size, mass_matrix, num_tuning_bands, num_pilot, target_acceptance, momentum_refresh
        Kernel and tuning settings, as in :func:`pymc_anneal.sample_ais`.

    Returns
    -------
    xarray.DataTree
        The layout of :func:`pymc_anneal.reverse_ais`: ``sample_stats`` holds per point
        (dimension ``point``) ``log_likelihood``, ``log_likelihood_se``, ``ess`` and
        ``pareto_k``, and the test-set average ``mean_log_likelihood`` with
        ``mean_log_likelihood_se`` (the estimates' error, not the test set's spread);
        ``particles`` the ``log_weight`` per point, chain and draw; ``annealing_stats`` the
        schedule and the tuned step sizes. An :class:`~pymc_anneal.AnnealingWarning` names
        the points whose weights fail :func:`pymc_anneal.diagnostics.weight_warnings`.

    Examples
    --------
    See :class:`~pymc_anneal.energy.LinearGenerative`.
    """
    arguments = dict(locals())
    if not callable(getattr(model, "evidence_path", None)):
        raise AnnealingError(
            "batched_ais needs a generative model with per-point evidences (a "
            "pymc_anneal.energy.LinearGenerative or BilinearGenerative), got "
            f"{type(model).__name__}. For the log Z of an energy model use pymc_anneal.ais.")
    draws = check_count("draws", draws, 2)
    chains = check_count("chains", chains, 1)
    num_steps, dlogz = check_num_steps(num_steps, schedule, dlogz)
    check_num_steps_budget(num_steps, draws=draws, chains=chains)  # before the schedule
    betas = make_schedule(schedule, AUTO_PILOT_STEPS if num_steps == "auto" else num_steps)
    options = run_options_from({**locals(), "kernel": kernel or "hais"})
    ckpt, random_seed = open_checkpoint(checkpoint, lambda: model_parts(model), arguments, random_seed)
    rng, seed_attr = check_random_seed(random_seed)
    path = model.evidence_path(data)
    points = int(path.parameters["data"].shape[0])
    if num_steps == "auto":
        size_rng, rng = rng.spawn(2)
        betas = make_schedule(schedule, _sized_num_steps(
            model, path, options, schedule, draws, chains,
            AUTO_POINT_SE if dlogz is None else dlogz, size_rng, ckpt))
    run = run_annealing(path, betas=betas, draws=draws * points, chains=chains, rng=rng,
                        options=options, label=f"{model.name} ({points} points)",
                        checkpoint=ckpt)
    # particle d of a chain anneals point d mod N: (chains, draws * N) -> (N, chains, draws)
    log_w = run.log_weights.reshape(chains, draws, points).transpose(2, 0, 1)
    _check_weights(log_w)
    estimates = [estimate_log_z(w.ravel()) for w in log_w]
    mean, mean_se = pooled_mean([e.log_z for e in estimates],
                                [e.standard_error for e in estimates])
    attrs = result_attrs("ais", quantity="test_log_likelihood", kernel=run.settings["kernel"],
                         backend=options.backend, num_steps=int(betas.size - 1),
                         num_test_points=points, schedule=schedule_name(schedule),
                         random_seed=seed_attr, model=model.name,
                         model_fingerprint=model_fingerprint(model, path))
    return point_estimates_tree(log_w, estimates, mean, mean_se, run=run, attrs=attrs)


def _sized_num_steps(model, path, options, schedule, draws: int, chains: int,
                     dlogz: float | None, rng: np.random.Generator, checkpoint) -> int:
    r"""K of ``num_steps="auto"``, in two steps that never use the reported weights.

    1. :math:`K_0`: the largest K that forward ``num_steps="auto"`` runs choose for
       :data:`AUTO_SIZING_POINTS` test points drawn at random, each on its own (one point's
       weights judge its K).
    2. Check batches (at most :data:`~pymc_anneal.driver.tuning.AUTO_MAX_RERUNS`): one
       chain of ``draws`` particles per point through K temperatures; with
       :math:`v_n = \log(\mathrm{draws} / \mathrm{ESS}_n)` each point's realized variance
       of the log weights and :math:`\sigma^2` the target, K becomes
       :math:`\lceil K \max_n v_n / \sigma^2 \rceil` (at most
       :data:`~pymc_anneal.driver.tuning.AUTO_MAX_STEPS`) while :math:`\max_n v_n >
       \sigma^2`, so that the hardest point meets the target too.
    """
    data = path.parameters["data"]
    pick_rng, checks_rng, rng = rng.spawn(3)
    rows = np.sort(pick_rng.choice(data.shape[0], size=min(AUTO_SIZING_POINTS, data.shape[0]),
                                   replace=False))
    first = max(forward_schedule(model.evidence_path(data[[n]]), options, schedule,
                                 draws=draws, chains=chains, dlogz=dlogz, rng=point_rng,
                                 checkpoint=checkpoint, label=f"{model.name} (point {n})").size - 1
                for n, point_rng in zip(rows, rng.spawn(rows.size)))
    points, target, num_steps = data.shape[0], auto_variance(dlogz, draws * chains), first
    for check_rng in checks_rng.spawn(AUTO_MAX_RERUNS):
        check = run_annealing(path, betas=make_schedule(schedule, num_steps),
                              draws=draws * points, chains=1, rng=check_rng, options=options,
                              checkpoint=checkpoint,
                              label=f"{model.name} ({points} points, checking K)")
        log_w = check.log_weights.reshape(draws, points).T  # (points, draws)
        realized = max(float(np.log(draws / max(effective_sample_size(w), 1.0)))
                       for w in log_w)
        if realized <= target or num_steps >= AUTO_MAX_STEPS:
            break
        num_steps = int(min(np.ceil(num_steps * realized / target), AUTO_MAX_STEPS))
    return num_steps


def _check_weights(log_w: np.ndarray) -> None:
    """Refuse points whose chains have no weight; warn of points whose weights fail
    :func:`~pymc_anneal.diagnostics.weight_warnings` (``log_w``: (points, chains, draws))."""
    if not np.any(np.isfinite(log_w)):
        raise AnnealingError("every particle has zero weight: the likelihood is -inf or NaN "
                             "at all prior draws. Check the data against the model.")
    dead = ~np.isfinite(log_w).any(axis=2)  # (points, chains)
    if dead.any():
        pairs = [(int(n), int(c)) for n, c in zip(*np.nonzero(dead))]
        raise AnnealingError(
            f"every particle of {len(pairs)} (point, chain) pair(s) {pairs[:10]}"
            f"{'...' if len(pairs) > 10 else ''} has zero weight: the likelihood is -inf or NaN "
            "wherever they went, so the estimates of those points are -inf or rest on the "
            "other chains alone. Increase draws, and check those points against the model.")
    points = log_w.shape[0]
    flagged = [n for n in range(points) if weight_warnings(log_w[n])]
    if flagged:
        warn(
            f"{len(flagged)} of {points} points have unreliable estimates (low weight ESS, a "
            f"heavy tail or chains that disagree; points {flagged[:10]}"
            f"{'...' if len(flagged) > 10 else ''}): their log-likelihoods are likely too low "
            "and their standard errors too small. Increase num_steps.")
