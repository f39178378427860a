r"""Leapfrog (velocity Verlet) integration of Hamiltonian dynamics.

For :math:`H(x, v) = -\log f_\beta(x) + \tfrac12 v^\top M^{-1} v` with diagonal
:math:`M^{-1}` (``inv_mass``), one leapfrog step of size :math:`\epsilon` is

.. math:: v \leftarrow v + \tfrac\epsilon2 \nabla \log f_\beta(x),\quad
          x \leftarrow x + \epsilon M^{-1} v,\quad
          v \leftarrow v + \tfrac\epsilon2 \nabla \log f_\beta(x).

It is volume preserving and time reversible; the gradient at the end point is returned so
the next step reuses it (one gradient evaluation per leapfrog step).
"""

from __future__ import annotations

from pymc_anneal.paths import Path, PathPoint


def leapfrog(path: Path, position, momentum, grad, beta, step_size, inv_mass, num_steps: int,
             params: dict | None = None):
    """Integrate ``num_steps`` leapfrog steps; return ``(position, momentum, point)``.

    ``params`` holds the path's symbolic parameters (see :attr:`Path.parameters`)."""
    point: PathPoint | None = None
    for _ in range(num_steps):
        momentum = momentum + 0.5 * step_size * grad
        position = position + step_size * inv_mass * momentum
        point = path.evaluate(position, params=params)
        grad = point.grad_log_base + beta * point.grad_log_ratio
        momentum = momentum + 0.5 * step_size * grad
    return position, momentum, point
