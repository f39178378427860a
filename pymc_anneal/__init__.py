"""Annealed importance sampling for PyMC: evidence and partition functions."""

from pymc_anneal import distributed, energy, kernels, plots
from pymc_anneal._version import __version__
from pymc_anneal.batched import batched_ais
from pymc_anneal.comparison import BayesFactor, bayes_factor, compare, evidence_strength
from pymc_anneal.evidence import EvidenceEstimate, log_evidence
from pymc_anneal.exceptions import AnnealingError, AnnealingWarning
from pymc_anneal.merge import merge
from pymc_anneal.partition import ais
from pymc_anneal.pymc.bdmc import bdmc
from pymc_anneal.pymc.bridge import bridge_sampling
from pymc_anneal.pymc.sampling import sample_ais
from pymc_anneal.pymc.smc import HMCKernel
from pymc_anneal.reverse import reverse_ais, sandwich

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
    "bridge_sampling",
    "compare",
    "distributed",
    "energy",
    "evidence_strength",
    "kernels",
    "log_evidence",
    "merge",
    "plots",
    "reverse_ais",
    "sample_ais",
    "sandwich",
]
