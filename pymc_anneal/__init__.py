"""Annealed importance sampling for PyMC: evidence and partition functions."""

__version__ = "0.1.0"

from pymc_anneal import energy, kernels, plots  # noqa: E402
from pymc_anneal.partition import ais  # noqa: E402
from pymc_anneal.batched import batched_ais  # noqa: E402
from pymc_anneal.comparison import BayesFactor, bayes_factor, compare, evidence_strength  # noqa: E402
from pymc_anneal.evidence import EvidenceEstimate, log_evidence  # noqa: E402
from pymc_anneal.exceptions import AnnealingError, AnnealingWarning  # noqa: E402
from pymc_anneal.pymc.bdmc import bdmc  # noqa: E402
from pymc_anneal.pymc.sampling import sample_ais  # noqa: E402
from pymc_anneal.pymc.smc import HMCKernel  # noqa: E402
from pymc_anneal.reverse import reverse_ais, sandwich  # noqa: E402

__all__ = [
    "AnnealingError",
    "AnnealingWarning",
    "BayesFactor",
    "EvidenceEstimate",
    "HMCKernel",
    "__version__",
    "ais",
    "batched_ais",
    "bayes_factor",
    "bdmc",
    "compare",
    "energy",
    "evidence_strength",
    "kernels",
    "log_evidence",
    "plots",
    "reverse_ais",
    "sample_ais",
    "sandwich",
]
