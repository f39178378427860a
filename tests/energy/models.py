"""Tiny energy models with ground truth by brute force, shared by the tests of this folder.

Brute force here means *directly from the joint energy* E(v, h), never through the
formulas under test (free energies, the Gaussian-integral partition function,
enumeration in chunks).
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.special import logsumexp

from pymc_anneal.energy import BernoulliRBM, GaussianRBM


def all_states(n: int) -> np.ndarray:
    """All 2^n binary vectors of length n, shape (2^n, n), in itertools order."""
    return np.array(list(itertools.product([0.0, 1.0], repeat=n)))


def tiny_rbm(n_visible: int = 5, n_hidden: int = 4, scale: float = 1.0, seed: int = 0,
             dtype: str = "float64") -> BernoulliRBM:
    rng = np.random.default_rng(seed)
    return BernoulliRBM(scale * rng.normal(size=(n_visible, n_hidden)), 0.5 * rng.normal(size=n_visible),
                        0.5 * rng.normal(size=n_hidden), dtype=dtype)


def tiny_grbm(n_visible: int = 2, n_hidden: int = 3, seed: int = 0, dtype: str = "float64") -> GaussianRBM:
    rng = np.random.default_rng(seed)
    return GaussianRBM(rng.normal(size=(n_visible, n_hidden)), rng.normal(size=n_visible),
                       0.5 * rng.normal(size=n_hidden), sigma=rng.uniform(0.5, 1.5, size=n_visible),
                       dtype=dtype)


def rbm_joint_energy(rbm: BernoulliRBM, v: np.ndarray, h: np.ndarray) -> np.ndarray:
    """E(v, h) = -v'Wh - b'v - c'h for every pair: (num_v, num_h)."""
    W, b, c = (np.asarray(p, dtype=np.float64) for p in (rbm.W, rbm.visible_bias, rbm.hidden_bias))
    return -(v @ W @ h.T) - (v @ b)[:, None] - (h @ c)[None, :]


def grbm_joint_energy(grbm: GaussianRBM, v: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Kiwaki & Aihara eq. (1) for every pair: (num_v, num_h)."""
    W, b, a, s = (np.asarray(p, dtype=np.float64)
                  for p in (grbm.W, grbm.visible_bias, grbm.hidden_bias, grbm.sigma))
    quadratic = (((v - b) / s) ** 2).sum(axis=1) / 2
    return quadratic[:, None] - (v / s) @ W @ h.T - (h @ a)[None, :]


def brute_log_unnormalized(energy, model, v: np.ndarray) -> np.ndarray:
    """log sum_h exp(-E(v, h)) by listing all hidden states."""
    return logsumexp(-energy(model, v, all_states(model.n_hidden)), axis=1)


def brute_rbm_log_z(rbm: BernoulliRBM) -> float:
    """log sum over all (v, h) pairs of exp(-E(v, h))."""
    return float(logsumexp(-rbm_joint_energy(rbm, all_states(rbm.n_visible), all_states(rbm.n_hidden))))


def grbm_grid(grbm: GaussianRBM, num_points: int, width: float = 12.0):
    """A regular grid over R^D covering every mixture component +- width sigma, and the
    volume of one cell (for Riemann sums, spectrally accurate for these Gaussian tails)."""
    W, b, s = (np.asarray(p, dtype=np.float64) for p in (grbm.W, grbm.visible_bias, grbm.sigma))
    means = b + s * (all_states(grbm.n_hidden) @ W.T)
    axes = [np.linspace(means[:, j].min() - width * s[j], means[:, j].max() + width * s[j], num_points)
            for j in range(grbm.n_visible)]
    cell = np.prod([ax[1] - ax[0] for ax in axes])
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, grbm.n_visible)
    return grid, cell
