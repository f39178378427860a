"""Pooled evidence estimates from AIS DataTrees."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import xarray as xr

from pymc_anneal.estimators import estimate_log_z, pareto_k
from pymc_anneal.exceptions import AnnealingError

__all__ = ["EvidenceEstimate", "log_evidence"]


class EvidenceEstimate(NamedTuple):
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
    """

    log_evidence: float
    standard_error: float
    chain_sd: float
    ess: float
    num_particles: int
    pareto_k: float = float("nan")


def log_evidence(idata: xr.DataTree) -> EvidenceEstimate:
    """Pool all chains of an AIS result into one evidence estimate with its standard error."""
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
