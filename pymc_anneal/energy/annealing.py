"""Kept for imports written before issue 24: each energy model's annealing path now lives in
its model's module. Import from there:

- :func:`~pymc_anneal.energy.rbm.rbm_path`, :data:`~pymc_anneal.energy.rbm.RBM_BASES`:
  :mod:`pymc_anneal.energy.rbm`;
- :func:`~pymc_anneal.energy.grbm.grbm_path`, :func:`~pymc_anneal.energy.grbm.grbm_moments`,
  :data:`~pymc_anneal.energy.grbm.GRBM_BASES`: :mod:`pymc_anneal.energy.grbm`;
- :func:`~pymc_anneal.energy.base.gaussian_energy_path`,
  :class:`~pymc_anneal.energy.base.Moments`: :mod:`pymc_anneal.energy.base`.
"""

from pymc_anneal.energy.base import Moments, gaussian_energy_path
from pymc_anneal.energy.grbm import GRBM_BASES, grbm_moments, grbm_path
from pymc_anneal.energy.rbm import RBM_BASES, rbm_path

__all__ = [
    "GRBM_BASES",
    "RBM_BASES",
    "Moments",
    "gaussian_energy_path",
    "grbm_moments",
    "grbm_path",
    "rbm_path",
]
