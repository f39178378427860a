r"""Leapfrog (velocity Verlet) integration of Hamiltonian dynamics.

For :math:`H(x, v) = -\log f_\beta(x) + \tfrac12 v^\top M^{-1} v` with diagonal
:math:`M^{-1}` (``inv_mass``), one leapfrog step of size :math:`\epsilon` is

.. math:: v \leftarrow v + \tfrac\epsilon2 \nabla \log f_\beta(x),\quad
          x \leftarrow x + \epsilon M^{-1} v,\quad
          v \leftarrow v + \tfrac\epsilon2 \nabla \log f_\beta(x).

It is volume preserving and time reversible; the gradient at the end point is returned so
the next step reuses it (one gradient evaluation per leapfrog step).

**Reflection at bounds** (Sohl-Dickstein & Culpepper 2012, §2.3). When the path declares
``lower_bounds`` :math:`b`, a position step that crosses one is reflected back into the
support, :math:`x_i \leftarrow 2 b_i - x_i`, and the coordinate's momentum negated. The
reflected map is still volume preserving and time reversible, so the Metropolis correction
is unchanged and the kernel keeps the tempered density (zero outside the support)
invariant.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt

from pymc_anneal.paths import Path, PathPoint


def reflect(path: Path, position, momentum):
    """Reflect ``position`` at the path's ``lower_bounds`` (if any), negating ``momentum``
    in the reflected coordinates."""
    bounds = getattr(path, "lower_bounds", None)
    if bounds is None or not np.any(np.isfinite(bounds)):
        return position, momentum
    bounded = np.isfinite(bounds)
    lower = pt.as_tensor(np.where(bounded, bounds, 0.0).astype(path.dtype))
    crossed = pt.and_(pt.as_tensor(bounded), pt.lt(position, lower))
    return (pt.switch(crossed, 2.0 * lower - position, position),
            pt.switch(crossed, -momentum, momentum))


def leapfrog(path: Path, position, momentum, grad, beta, step_size, inv_mass, num_steps: int,
             params: dict | None = None):
    """Integrate ``num_steps`` leapfrog steps; return ``(position, momentum, point)``.

    ``params`` holds the path's symbolic parameters (see :attr:`Path.parameters`)."""
    point: PathPoint | None = None
    for _ in range(num_steps):
        momentum = momentum + 0.5 * step_size * grad
        position = position + step_size * inv_mass * momentum
        position, momentum = reflect(path, position, momentum)
        point = path.evaluate(position, params=params)
        grad = point.grad_log_base + beta * point.grad_log_ratio
        momentum = momentum + 0.5 * step_size * grad
    return position, momentum, point
