"""Pooled evidence estimates from AIS DataTrees."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import xarray as xr

from pymc_anneal.estimators import estimate_log_z, pareto_k
from pymc_anneal.exceptions import AnnealingError
from pymc_anneal.validation import check_count, check_real

__all__ = ["EvidenceEstimate", "log_evidence"]


class _EvidenceFields(NamedTuple):
    """The fields of :class:`EvidenceEstimate`."""

    log_evidence: float
    standard_error: float
    chain_sd: float
    ess: float
    num_particles: int
    pareto_k: float = float("nan")


class EvidenceEstimate(_EvidenceFields):
    r"""The log evidence pooled over all chains' particles.

    Attributes
    ----------
    log_evidence : float
        ``logsumexp(log_weight) - log(N)`` over all N particles of all chains.
    standard_error : float
        Delta-method standard error of ``log_evidence``.
    chain_sd : float
        Standard deviation of the per-chain estimates divided by sqrt(chains): an independent
        check of ``standard_error`` (NaN with one chain).
    ess : float
        Weight effective sample size of the pooled particles.
    num_particles : int
    pareto_k : float
        Pareto :math:`\hat k` of the pooled weights' tail
        (:func:`pymc_anneal.estimators.pareto_k`); above
        :data:`~pymc_anneal.diagnostics.HEAVY_TAIL_K` the weights have a heavy tail and
        ``standard_error`` is too small. NaN when not computed.

    The interval that holds when the samplers raised no warning is
    ``log_evidence ± 1.96 * max(standard_error, chain_sd)`` (see
    :mod:`pymc_anneal.diagnostics`); :func:`pymc_anneal.compare` uses that standard error.

    Built by hand (to compare published figures, say), the fields are checked:
    ``log_evidence`` a number (``-inf`` when every weight is zero, never NaN),
    ``standard_error`` and ``chain_sd`` >= 0, ``ess`` in ``[0, num_particles]`` (each NaN
    if unknown), ``num_particles`` an integer >= 1; an :class:`~pymc_anneal.AnnealingError`
    names a field that is not.
    """

    __slots__ = ()

    def __new__(cls, log_evidence, standard_error, chain_sd, ess, num_particles,
                pareto_k=float("nan")):
        log_evidence = check_real("log_evidence", log_evidence, high=np.inf, high_open=True,
                                  finite=False, what="a number (-inf for zero evidence, "
                                  "never NaN or +inf)")
        standard_error = _nan_or("standard_error", standard_error, low=0.0, finite=False,
                                 what="a number >= 0 (a standard error), or NaN if unknown")
        chain_sd = _nan_or("chain_sd", chain_sd, low=0.0, finite=False,
                           what="a number >= 0 (a standard deviation), or NaN if unknown")
        num_particles = check_count("num_particles", num_particles, 1)
        ess = _nan_or("ess", ess, low=0.0, high=num_particles * (1 + 1e-9),
                      what=f"a number in [0, num_particles = {num_particles}], or NaN if "
                           "unknown")
        pareto_k = _nan_or("pareto_k", pareto_k, what="a finite number, or NaN if unknown")
        return super().__new__(cls, log_evidence, standard_error, chain_sd, ess, num_particles,
                               pareto_k)


def _nan_or(name: str, value, **bounds) -> float:
    """``value`` as a float: NaN (not computed) or a number that passes
    :func:`~pymc_anneal.validation.check_real` with ``bounds``."""
    if isinstance(value, float | np.floating) and np.isnan(value):
        return float("nan")
    return check_real(name, value, **bounds)


def log_evidence(idata: xr.DataTree) -> EvidenceEstimate:
    """Pool all chains of an AIS result into one evidence estimate with its standard error.

    A result of :func:`pymc_anneal.bridge_sampling` gives its pooled estimate instead:
    ``num_particles`` is its number of posterior-side draws, ``ess`` their effective number,
    ``pareto_k`` the proposal-side ratios' and ``chain_sd`` the spread of its chains'
    estimates over sqrt(chains)."""
    if isinstance(idata, xr.DataTree) and idata.attrs.get("method") == "bridge_sampling":
        return _bridge_estimate(idata)
    if not isinstance(idata, xr.DataTree) or "particles" not in idata.children \
            or "log_weight" not in idata["particles"].data_vars:
        raise AnnealingError(
            "log_evidence needs a DataTree returned by pymc_anneal.sample_ais (with a "
            f"'particles' group holding 'log_weight'), got {type(idata).__name__}"
            + (f" with groups {sorted(idata.children)}" if isinstance(idata, xr.DataTree) else "")
            + "."
        )
    log_w = np.asarray(idata["particles"]["log_weight"].values, dtype=np.float64)
    pooled = estimate_log_z(log_w.ravel())
    per_chain = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values, dtype=np.float64)
    chain_sd = float(per_chain.std(ddof=1) / np.sqrt(per_chain.size)) if per_chain.size > 1 else float("nan")
    return EvidenceEstimate(pooled.log_z, pooled.standard_error, chain_sd, pooled.ess,
                            pooled.num_particles, pareto_k(log_w))


def _bridge_estimate(idata: xr.DataTree) -> EvidenceEstimate:
    """The pooled estimate of a :func:`pymc_anneal.bridge_sampling` result (its attributes)."""
    a = idata.attrs
    per_chain = np.asarray(idata["sample_stats"]["log_marginal_likelihood"].values,
                           dtype=np.float64)
    chain_sd = (float(per_chain.std(ddof=1) / np.sqrt(per_chain.size)) if per_chain.size > 1
                else float("nan"))
    return EvidenceEstimate(float(a["log_marginal_likelihood"]),
                            float(a["log_marginal_likelihood_se"]), chain_sd, float(a["ess"]),
                            int(a["num_draws"]), float(a["pareto_k"]))
