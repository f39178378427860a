"""Annealed importance sampling for PyMC: evidence and partition functions."""

__version__ = "0.1.0"

from pymc_anneal.evidence import EvidenceEstimate, log_evidence  # noqa: E402
from pymc_anneal.exceptions import AnnealingError, AnnealingWarning  # noqa: E402
from pymc_anneal.pymc.sampling import sample_ais  # noqa: E402
from pymc_anneal.pymc.smc import HMCKernel  # noqa: E402

__all__ = [
    "AnnealingError",
    "AnnealingWarning",
    "EvidenceEstimate",
    "HMCKernel",
    "__version__",
    "log_evidence",
    "sample_ais",
]
