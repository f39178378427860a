"""Energy-based models as PyTensor graphs: binary and Gaussian RBMs, deep Boltzmann machines,
products of experts (Laplace, Student-t), the mcRBM, linear and bilinear generative models,
and user-supplied energies.

Each analysis model is an :class:`EnergyModel` (an unnormalized density over a batch of
states) with exact log Z where it is tractable (enumeration of a small binary layer,
complete products of experts); the generative models (latent variables, not energy models)
give one evidence per test point (:func:`pymc_anneal.batched_ais`). The trainers in
:mod:`pymc_anneal.energy.training` and the data sets in :mod:`pymc_anneal.energy.data` need
scikit-learn (``pip install 'pymc-anneal[examples]'``); they import it only when called.
"""

from pymc_anneal.energy.base import EnergyModel, FunctionEnergy
from pymc_anneal.energy.data import ImagePatches, binarized_digits, image_patches
from pymc_anneal.energy.dbm import DeepBoltzmannMachine
from pymc_anneal.energy.enumerate import DEFAULT_MAX_STATES
from pymc_anneal.energy.generative import BilinearGenerative, LinearGenerative
from pymc_anneal.energy.grbm import GaussianRBM
from pymc_anneal.energy.mcrbm import MCRBM
from pymc_anneal.energy.poe import LaplacePOE, StudentTPOE
from pymc_anneal.energy.rbm import BernoulliRBM
from pymc_anneal.energy.training import train_grbm, train_rbm

__all__ = [
    "DEFAULT_MAX_STATES",
    "MCRBM",
    "BernoulliRBM",
    "BilinearGenerative",
    "DeepBoltzmannMachine",
    "EnergyModel",
    "FunctionEnergy",
    "GaussianRBM",
    "ImagePatches",
    "LaplacePOE",
    "LinearGenerative",
    "StudentTPOE",
    "binarized_digits",
    "image_patches",
    "train_grbm",
    "train_rbm",
]
