"""The weight diagnostics shared by the entry points: an error when every weight is zero,
:class:`~pymc_anneal.exceptions.AnnealingWarning` when the estimate should not be trusted."""

from __future__ import annotations

import warnings

import numpy as np

from pymc_anneal.estimators import estimate_log_z, log_mean_exp
from pymc_anneal.exceptions import AnnealingError, AnnealingWarning

__all__ = ["CHAIN_DISAGREEMENT", "LOW_ESS_FRACTION", "check_weights"]


LOW_ESS_FRACTION = 0.05
"""Below this fraction of weight ESS to particles, the samplers warn."""
CHAIN_DISAGREEMENT = 3.0
"""The samplers warn when the chains' spread exceeds this many reported standard errors
(a false alarm has probability 0.3% with 2 chains and about 1e-5 with 4 if the error is right)."""


def check_weights(log_w: np.ndarray, stacklevel: int = 3,
                  zero_weight_message: str | None = None) -> None:
    """Error when every weight is zero; :class:`AnnealingWarning` when the weight ESS is low
    or the chains disagree beyond their standard error."""
    if not np.any(np.isfinite(log_w)):
        raise AnnealingError(zero_weight_message or (
            "every particle has zero weight: the log-likelihood is -inf or NaN at all prior "
            "draws. Check the observed data against the likelihood's support, and that the "
            "priors put mass where the data are possible."
        ))
    pooled = estimate_log_z(log_w.ravel())
    per_chain = log_mean_exp(log_w, axis=1)
    if log_w.shape[0] > 1 and np.all(np.isfinite(per_chain)):
        chain_sd = per_chain.std(ddof=1) / np.sqrt(per_chain.size)
        if chain_sd > CHAIN_DISAGREEMENT * pooled.standard_error:
            warnings.warn(
                f"the chains disagree: their log evidence estimates {np.round(per_chain, 3).tolist()} "
                f"spread by {chain_sd:.3g} (sd / sqrt(chains)), more than "
                f"{CHAIN_DISAGREEMENT:g} times the reported standard error "
                f"{pooled.standard_error:.3g}, so that error is too small. Increase num_steps.",
                AnnealingWarning,
                stacklevel=stacklevel,
            )
    ess = pooled.ess
    if ess < LOW_ESS_FRACTION * log_w.size:
        warnings.warn(
            f"the weight ESS is {ess:.1f} of {log_w.size} particles "
            f"({100 * ess / log_w.size:.2g}%): the estimate of log Z (the log evidence) and its "
            "standard error are unreliable. Increase num_steps (more temperatures) before increasing draws.",
            AnnealingWarning,
            stacklevel=stacklevel,
        )
