r"""Annealing paths: a base density, a target, and the tempered log density between them.

Every path here has the form

.. math:: \log f_\beta(x) = \log f_0(x) + \beta \, \ell(x), \qquad 0 \le \beta \le 1,

where :math:`f_0` is the normalized-or-known base and :math:`\ell` the *log ratio* that
annealing switches on. For a PyMC model :math:`f_0` is the prior in the unconstrained value
space (with the transforms' log-Jacobians, so :math:`Z_0 = 1`) and :math:`\ell` the
log-likelihood; for a geometric path between a base :math:`q` and a target :math:`p`,
:math:`\ell = \log p - \log q`. The AIS weight increment of step k is then
:math:`(\beta_k - \beta_{k-1})\,\ell(x_{k-1})`.

A path is a pure graph builder: given a symbolic batch of positions of shape
``(num_particles, num_dims)`` it returns symbolic per-particle log densities. It knows
nothing of kernels or backends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

__all__ = ["Path", "PathPoint"]


class PathPoint(NamedTuple):
    """Log densities and their gradients at a batch of positions."""

    log_base: TensorVariable
    log_ratio: TensorVariable
    grad_log_base: TensorVariable | None
    grad_log_ratio: TensorVariable | None


@dataclass(frozen=True)
class Path:
    """A tempered family ``log f_beta = log_base + beta * log_ratio`` over R^num_dims.

    Parameters
    ----------
    num_dims : int
        Dimension of the (unconstrained) state.
    build_log_densities : callable
        ``position (N, d) -> (log_base (N,), log_ratio (N,))`` as PyTensor graphs.
    sample_base : callable
        ``(rng: numpy.random.Generator, num_draws: int) -> ndarray (num_draws, d)``: exact
        draws from the normalized base.
    log_base_normalizer : float, default 0
        ``log Z_0`` of the base density, added to every log weight.
    base_scale : ndarray, optional
        Per-coordinate scale of the base, a starting point for the mass matrix.
    name : str
        Shown in results and progress bars.
    """

    num_dims: int
    build_log_densities: Callable[[TensorVariable], tuple[TensorVariable, TensorVariable]]
    sample_base: Callable[[np.random.Generator, int], np.ndarray]
    log_base_normalizer: float = 0.0
    base_scale: np.ndarray | None = field(default=None, compare=False)
    name: str = "path"

    def evaluate(self, position: TensorVariable, gradients: bool = True) -> PathPoint:
        """Symbolic log densities (and optionally gradients) at ``position`` (N, d)."""
        log_base, log_ratio = self.build_log_densities(position)
        if not gradients:
            return PathPoint(log_base, log_ratio, None, None)
        grad_base, grad_ratio = pt.grad(log_base.sum(), position), pt.grad(log_ratio.sum(), position)
        return PathPoint(log_base, log_ratio, grad_base, grad_ratio)
