"""Energy-based models as PyTensor graphs: RBMs, Gaussian RBMs, user-supplied energies.

Each model is an :class:`EnergyModel` (an unnormalized density over a batch of states) with
exact log Z where it is tractable (enumeration of a small binary layer). The trainers in
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
    "BernoulliRBM",
    "BilinearGenerative",
    "DeepBoltzmannMachine",
    "EnergyModel",
    "FunctionEnergy",
    "GaussianRBM",
    "ImagePatches",
    "LaplacePOE",
    "LinearGenerative",
    "MCRBM",
    "StudentTPOE",
    "binarized_digits",
    "image_patches",
    "train_grbm",
    "train_rbm",
]
