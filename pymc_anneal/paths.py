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

__all__ = ["GibbsPath", "Path", "PathPoint"]


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


@dataclass(frozen=True)
class GibbsPath:
    r"""A path with tractable blocked-Gibbs conditionals, where ``log f_beta`` may be any
    function of :math:`\beta` (not only linear).

    This is the form of annealing in the joint (visible, hidden) space of restricted
    Boltzmann machines (Salakhutdinov & Murray 2008): the intermediate distributions are
    RBMs with scaled parameters, the hidden (and auxiliary) units are summed or integrated
    out in :math:`\log f_\beta(x)` and sampled afresh in each Gibbs sweep, so the annealed
    state is only the visible vector ``x``. The AIS weight increment of step k is
    :math:`\log f_{\beta_k}(x_{k-1}) - \log f_{\beta_{k-1}}(x_{k-1})`.

    The model's numbers (weights, biases, base moments) are ``parameters``: inputs of the
    compiled loop, not constants baked into it, so every path with the same ``structure``
    shares one compiled function (and Numba's on-disk cache) whatever its sizes and values.

    Parameters
    ----------
    num_dims : int
        Dimension of the state ``x``.
    parameters : dict of str to ndarray
        The numeric inputs, passed to the builders as symbolic tensors of the same names.
    build_log_density : callable
        ``(x (N, d), beta scalar, params) -> (N,)`` float64 graph of :math:`\log f_\beta(x)`,
        up to a constant that may depend on :math:`\beta` only at :math:`0 < \beta < 1`
        (at the endpoints it must be exact: :math:`\log Z_0` is ``log_base_normalizer`` and
        :math:`f_1` is the target). Build the :math:`\beta`-free parts (matrix products) as
        expressions of ``x`` alone so that PyTensor merges them across the two evaluations
        and the Gibbs sweep of a step.
    build_gibbs_sweep : callable
        ``(rng, x (N, d), beta, params) -> (rng, x_new)``: one sweep that leaves
        :math:`p_\beta` invariant.
    sample_base : callable
        ``(rng: numpy.random.Generator, num_draws) -> ndarray (num_draws, d)``: exact draws
        from :math:`p_0`.
    log_base_normalizer : float
        :math:`\log Z_0`.
    structure : tuple
        Hashable; paths with equal structure must build identical graphs from their builders.
    dtype : {"float64", "float32"}
        Dtype of the state (log weights are always float64).
    name : str
    info : dict
        What is worth reporting about the base (numbers go to the result's attributes).
    """

    num_dims: int
    parameters: dict
    build_log_density: Callable
    build_gibbs_sweep: Callable
    sample_base: Callable[[np.random.Generator, int], np.ndarray]
    log_base_normalizer: float
    structure: tuple
    dtype: str = "float64"
    name: str = "path"
    info: dict = field(default_factory=dict)

    base_scale = None

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other
